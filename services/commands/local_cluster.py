"""``mfscore local-cluster up|down|status``: the whole distributed mode on this machine, on loopback.

``up`` starts a real nats-server with JetStream, a real S3-compatible server (moto) and every
service as its own process, each on a free port, waits until every service answers its gRPC
health check, and writes the connection settings where ``submit`` and ``report`` find them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mfscore.errors import OptionError
from mfscore.services.commands.cluster_config import ClusterConfig, default_cluster_file

START_TIMEOUT = 60.0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("local-cluster", help="start, stop or inspect a cluster on this machine",
                              description="Run NATS JetStream, an S3-compatible server and every mfscore service "
                                          "on loopback, for 'mfscore submit'.")
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--cluster", help=f"the cluster file (default $MFSCORE_CLUSTER or {default_cluster_file()})")
    p.add_argument("--mask-scorers", type=int, default=1, help="mask-scorer processes (default 1)")
    p.add_argument("--provenance-scorers", type=int, default=1, help="provenance-scorer processes (default 1)")
    p.set_defaults(run=run)


def _cluster_file(args) -> Path:
    return Path(args.cluster or os.environ.get("MFSCORE_CLUSTER") or default_cluster_file())


def run(args) -> int:
    path = _cluster_file(args)
    if args.action == "up":
        config = up(path, mask_scorers=args.mask_scorers, provenance_scorers=args.provenance_scorers)
        print(f"cluster up: aggregator at {config.aggregator_address}, S3 at {config.s3_endpoint}, "
              f"NATS at {config.nats_url}; settings in {path}")
        return 0
    if args.action == "down":
        down(path)
        print(f"cluster down ({path} removed)")
        return 0
    return status(path)


def up(path: Path, *, mask_scorers: int = 1, provenance_scorers: int = 1) -> ClusterConfig:
    """Start everything and write ``path``; on any failure stop what was started."""
    from mfscore.services.common.processes import (
        free_ports,
        start_nats_server,
        start_s3_server,
    )

    if path.exists() and _alive(ClusterConfig.read(path)):
        raise OptionError(f"a local cluster is already running ({path}); stop it with 'mfscore local-cluster down'")
    if min(mask_scorers, provenance_scorers) < 1:
        raise OptionError("a cluster needs at least one scorer of each kind")
    state_dir = path.parent / (path.stem + "-state")
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    processes: list[dict] = []
    nats = s3 = None
    try:
        nats = start_nats_server(state_dir / "jetstream", log_dir=state_dir / "logs", detach=True)
        processes.append({"name": "nats-server", "pid": nats.popen.pid, "log": str(nats.log_path)})
        s3 = start_s3_server(log_dir=state_dir / "logs", detach=True)
        processes.append({"name": "moto_server", "pid": s3.popen.pid, "log": str(s3.log_path)})
        names = ["validator", "aggregator", *["mask-scorer"] * mask_scorers, *["provenance-scorer"] * provenance_scorers]
        ports = free_ports(2 * len(names))  # a gRPC and a metrics port per service, all distinct
        grpc_ports, metrics_ports = ports[:len(names)], ports[len(names):]
        config = ClusterConfig(
            aggregator_address=f"127.0.0.1:{grpc_ports[1]}", validator_address=f"127.0.0.1:{grpc_ports[0]}",
            nats_url=nats.url, s3_endpoint=s3.url, s3_access_key="mfscore", s3_secret_key="mfscore-local",
            bucket="mfscore", state_dir=str(state_dir), processes=processes)
        for i, (name, grpc_port, metrics_port) in enumerate(zip(names, grpc_ports, metrics_ports)):
            processes.append(start_service(config, state_dir, f"{name}-{i}", name, grpc_port, metrics_port))
        for process in processes[2:]:
            wait_healthy(process)
        config.write(path)
        return config
    except BaseException:
        _stop_pids(processes)
        raise


def start_service(config: ClusterConfig, state_dir: Path, label: str, name: str, grpc_port: int,
                  metrics_port: int | None = None) -> dict:
    from mfscore.services.common.processes import free_port

    metrics_port = metrics_port or free_port()
    settings = config.settings(grpc_port=grpc_port, metrics_port=metrics_port,
                               work_dir=str(state_dir / "work" / label))
    env = dict(os.environ)
    env.update({"MFSCORE_NATS_URL": settings.nats_url, "MFSCORE_S3_ENDPOINT": settings.s3_endpoint,
                "MFSCORE_S3_ACCESS_KEY": settings.s3_access_key, "MFSCORE_S3_SECRET_KEY": settings.s3_secret_key,
                "MFSCORE_BUCKET": settings.bucket, "MFSCORE_GRPC_PORT": str(grpc_port),
                "MFSCORE_METRICS_PORT": str(metrics_port), "MFSCORE_WORK_DIR": settings.work_dir,
                "MFSCORE_VALIDATOR_ADDRESS": config.validator_address,
                "MFSCORE_AGGREGATOR_ADDRESS": config.aggregator_address})
    log_path = state_dir / "logs" / f"{label}.log"
    with open(log_path, "ab") as log:
        popen = subprocess.Popen([sys.executable, "-m", "mfscore", "serve", name], env=env, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return {"name": label, "service": name, "pid": popen.pid, "grpc_port": grpc_port, "metrics_port": metrics_port,
            "log": str(log_path)}


def health(address: str, timeout: float = 1.0) -> str:
    """The gRPC health status of a service ("SERVING", ...), or why it has none."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        except grpc.RpcError as error:
            return f"unreachable ({error.code().name})"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def wait_healthy(process: dict) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    address = f"127.0.0.1:{process['grpc_port']}"
    while time.monotonic() < deadline:
        if not pid_alive(process["pid"]):
            tail = Path(process["log"]).read_text(errors="replace")[-1500:]
            raise OptionError(f"the service {process['name']} exited while starting; its log ends: {tail}")
        if health(address, timeout=0.5) == "SERVING":
            return
        time.sleep(0.1)
    raise OptionError(f"the service {process['name']} did not become healthy within {START_TIMEOUT:g} s "
                      f"(log: {process['log']})")


def pid_alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _alive(config: ClusterConfig) -> bool:
    return any(pid_alive(p["pid"]) for p in config.processes)


def _stop_pids(processes: list[dict], timeout: float = 30.0) -> None:
    """SIGTERM services first (they drain), servers last; SIGKILL whatever outlives ``timeout``."""
    services = [p for p in processes if "service" in p]
    for group in (services, [p for p in processes if "service" not in p]):
        for p in group:
            if pid_alive(p["pid"]):
                os.kill(p["pid"], signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(pid_alive(p["pid"]) for p in group) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in group:
            if pid_alive(p["pid"]):
                os.kill(p["pid"], signal.SIGKILL)


def down(path: Path) -> None:
    config = ClusterConfig.read(path)
    _stop_pids(config.processes)
    path.unlink(missing_ok=True)


def status(path: Path) -> int:
    config = ClusterConfig.read(path)
    rows = []
    for p in config.processes:
        state = "running" if pid_alive(p["pid"]) else "stopped"
        if state == "running" and "grpc_port" in p:
            state = health(f"127.0.0.1:{p['grpc_port']}")
        rows.append({"name": p["name"], "pid": p["pid"], "state": state, "log": p["log"]})
    for row in rows:
        print(f"{row['name']:<22} pid {row['pid']:<8} {row['state']:<14} {row['log']}")
    print(json.dumps({"aggregator": config.aggregator_address, "s3": config.s3_endpoint, "nats": config.nats_url}))
    return 0 if all(r["state"] in ("running", "SERVING") for r in rows) else 1
