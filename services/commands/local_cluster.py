"""``mfscore local-cluster up|down|status``: the whole distributed mode on this machine, on loopback.

``up`` starts a real nats-server with JetStream, a real S3 server (SeaweedFS) and every
service as its own process, each on a free port, under a supervisor that starts again a service that fails
(``services/local/supervisor.py``), waits until every service answers its gRPC health check, and writes the
connection settings where ``submit`` and ``report`` find them.
Everything it keeps is under ``<cluster file>-state/`` (mode 0700; every file in it 0600): logs,
secrets, NATS's store, the object store's data (``s3/``), the services' work directories and, with ``--tls``, its
certificates. ``restart_store`` stops the object store and starts it again on its port and data, as an operator
would after changing its settings; the runs stored in it are still there.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from mfscore.errors import OptionError
from mfscore.services.commands.cluster_config import ClusterConfig, default_cluster_file
from mfscore.services.common import service_specs

START_TIMEOUT = 60.0
START_EXITS = 3  # a supervised service that exits this often while starting is not waited for any longer
BUCKET = "mfscore"
(VALIDATOR,) = service_specs.of_role(service_specs.VALIDATOR)
(AGGREGATOR,) = service_specs.of_role(service_specs.AGGREGATOR)
POOLS = service_specs.of_role(service_specs.SCORER)  # each run as 1 process by default, `--<pool>s N` as N
NATS_ROLES = {spec.name: spec.nats_user for spec in service_specs.SERVICES if spec.nats_user}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("local-cluster", help="start, stop or inspect a cluster on this machine",
                              description="Run NATS JetStream, an S3-compatible server and every mfscore service "
                                          "on loopback, for 'mfscore submit'.")
    p.add_argument("action", choices=("up", "down", "status", "token"),
                   help="token: print a new bearer token for another caller of the running cluster (see --name)")
    p.add_argument("--cluster", help=f"the cluster file (default $MFSCORE_CLUSTER or {default_cluster_file()})")
    for pool in POOLS:
        p.add_argument(f"--{pool.name}s", dest=_count(pool), type=int, default=1,
                       help=f"{pool.name} processes (default 1)")
    p.add_argument("--name", default="client", help="token: the caller's name (default client); it sees its own runs")
    p.add_argument("--role", choices=("client", "operator"), default="client",
                   help="token: client (default) or operator (sees every run)")
    p.add_argument("--out", metavar="FILE",
                   help="token: write a cluster file for the caller (mode 0600: its token, no S3 or NATS credential) "
                        "instead of printing the token")
    p.add_argument("--nats-nodes", type=int, choices=(1, 3), default=1,
                   help="up: nats-server processes (default 1); 3 make one JetStream cluster whose streams and run "
                        "state are replicated on all three (MFSCORE_STREAM_REPLICAS=3)")
    p.add_argument("--aggregators", type=int, choices=(1, 2), default=1,
                   help="up: aggregator processes (default 1); 2 share a lease, one leads, the other stands by")
    p.add_argument("--tls", action="store_true",
                   help="up: make a CA and a certificate for 127.0.0.1, and speak TLS on gRPC, NATS and S3")
    p.set_defaults(run=run)


def _count(pool: service_specs.ServiceSpec) -> str:
    """The keyword of ``up`` (and the flag's dest) giving the processes of ``pool``: ``mask_scorers``."""
    return f"{pool.package}s"


def _cluster_file(args) -> Path:
    return Path(args.cluster or os.environ.get("MFSCORE_CLUSTER") or default_cluster_file())


def run(args) -> int:
    path = _cluster_file(args)
    if args.out and args.action != "token":
        raise OptionError("--out goes with 'token' only")
    if args.action == "up":
        config = up(path, tls=args.tls, aggregators=args.aggregators, nats_nodes=args.nats_nodes,
                    **{_count(pool): getattr(args, _count(pool)) for pool in POOLS})
        print(f"cluster up: aggregator at {config.aggregator_address}, S3 at {config.s3_endpoint}, "
              f"NATS at {config.nats_url}; settings in {path}")
        return 0
    if args.action == "down":
        down(path)
        print(f"cluster down ({path} removed)")
        return 0
    if args.action == "token":
        out = Path(args.out) if args.out else None
        if out and out.resolve() == path.resolve():
            raise OptionError(f"--out {out} is the cluster's own file: name another file for the caller")
        token = add_caller(ClusterConfig.read(path), args.name, args.role, out=out)
        print(f"wrote {out} for the {args.role} {args.name!r}: use it with --cluster {out}" if out else token)
        return 0
    return status(path)


def up(path: Path, *, aggregators: int = 1, tls: bool = False, nats_nodes: int = 1,
       environment: dict[str, str] | None = None, log_s3_requests: bool = False, store_port: int | None = None,
       **pool_processes: int) -> ClusterConfig:
    """Start everything and write ``path``; on any failure stop what was started. Each scorer pool runs as many
    processes as its keyword says (``mask_scorers=2``; 1 when not given). With ``tls`` every server
    (gRPC, NATS, S3) speaks TLS with a certificate of a CA made for this cluster, which the cluster file names.
    With ``nats_nodes`` above 1, NATS is a JetStream cluster of that many servers, every service is given all
    their URLs and keeps the streams and run state on all of them (``MFSCORE_STREAM_REPLICAS``).
    With ``aggregators=2`` two aggregators share the leader's lease (one leads, the other stands by) and the
    cluster file lists both addresses.
    ``environment`` adds ``MFSCORE_*`` settings to every service's (tests and benchmarks: a threshold, say).
    ``log_s3_requests`` has the object store log a line per request (a benchmark counts them). ``store_port``
    (default a free one) is where the object store listens: the soak puts a proxy in front of it, which the services
    reach through ``environment``'s ``MFSCORE_S3_ENDPOINT``."""
    if path.exists() and _alive(ClusterConfig.read(path)):
        raise OptionError(f"a local cluster is already running ({path}); stop it with 'mfscore local-cluster down'")
    names = _service_names(aggregators, _pool_counts(pool_processes))
    if nats_nodes > 1:
        environment = {"MFSCORE_STREAM_REPLICAS": str(nats_nodes), **(environment or {})}
    state_dir = _new_state_dir(path)
    operator_token, nats_users, (ca, cert, key) = _new_secrets(state_dir, tls=tls)
    processes: list[dict] = []
    try:
        nats_url, nats_processes = _start_nats(state_dir, nats_nodes, users=nats_users, tls_cert=cert, tls_key=key)
        processes += nats_processes
        s3 = _start_services_store(state_dir, tls=tls, log_requests=log_s3_requests, port=store_port)
        processes.append(_store_process(s3))
        grpc_ports, metrics_ports = _service_ports(len(names))
        config = ClusterConfig(**_addresses(names, grpc_ports), nats_url=nats_url, s3_endpoint=s3.url, bucket=BUCKET,
                               token=operator_token, tls_ca=ca, state_dir=str(state_dir), processes=processes)
        processes += start_supervised(state_dir, [
            service_command(config, state_dir, f"{name}-{i}", name, grpc_port, metrics_port, environment=environment)
            for i, (name, grpc_port, metrics_port) in enumerate(zip(names, grpc_ports, metrics_ports))])
        _wait_started(processes, aggregators)
        config.write(path)
        return config
    except BaseException:
        _stop_pids(processes)
        raise


def _pool_counts(pool_processes: dict[str, int]) -> dict[str, int]:
    """Each pool's number of processes, from ``up``'s keywords (1 when not given); refuses an unknown keyword."""
    counts = {pool.name: pool_processes.pop(_count(pool), 1) for pool in POOLS}
    if pool_processes:
        raise TypeError(f"up() got unexpected keyword arguments: {', '.join(sorted(pool_processes))}")
    if min(counts.values()) < 1:
        raise OptionError("a cluster needs at least one scorer of each kind")
    return counts


def _service_names(aggregators: int, counts: dict[str, int]) -> list[str]:
    """The service of each process to start, in order (each labelled ``<name>-<index>``)."""
    return [VALIDATOR.name, *[AGGREGATOR.name] * aggregators,
            *(pool.name for pool in POOLS for _ in range(counts[pool.name]))]


def _new_state_dir(path: Path) -> Path:
    """``<cluster file>-state/`` with its ``logs/``, mode 0700."""
    state_dir = path.parent / (path.stem + "-state")
    path.parent.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(mode=0o700, exist_ok=True)
    os.chmod(state_dir, 0o700)  # made by an older mfscore, or by hand: what is inside is private either way
    (state_dir / "logs").mkdir(mode=0o700, exist_ok=True)
    return state_dir


def _new_secrets(state_dir: Path, *, tls: bool) -> tuple[str, dict[str, str], tuple[str, str, str]]:
    """A new cluster's operator token, NATS passwords and (with ``tls``, else empty) CA, certificate and key."""
    return new_callers(state_dir), new_nats_users(state_dir), new_tls(state_dir) if tls else ("", "", "")


def _start_nats(state_dir: Path, nodes: int, **access) -> tuple[str, list[dict]]:
    """The cluster's NATS (one server, or a JetStream cluster of ``nodes``): its URL and its servers' processes."""
    from mfscore.services.local.servers import start_nats_cluster, start_nats_server

    options = {"log_dir": state_dir / "logs", "detach": True, **access}
    if nodes > 1:
        nats = start_nats_cluster(state_dir / "jetstream", nodes, **options)
        servers = nats.nodes
    else:
        nats = start_nats_server(state_dir / "jetstream", **options)
        servers = [nats]
    return nats.url, [{"name": "nats-server", "pid": node.popen.pid, "log": str(node.log_path)} for node in servers]


def _start_services_store(state_dir: Path, *, tls: bool, log_requests: bool, port: int | None):
    """A new cluster's object store, its key written where the services read it (``_service_s3``)."""
    s3 = _start_store(state_dir, tls=tls, log_requests=log_requests, port=port)
    _write_secret(_secrets(state_dir) / "s3-service.json",
                  json.dumps({"access_key": s3.service.access_key, "secret_key": s3.service.secret_key}))
    return s3


def _service_ports(count: int) -> tuple[list[int], list[int]]:
    """A gRPC and a metrics port for each of ``count`` services, all distinct."""
    from mfscore.services.local.servers import free_ports

    ports = free_ports(2 * count)
    return ports[:count], ports[count:]


def _addresses(names: list[str], grpc_ports: list[int]) -> dict[str, str]:
    """The aggregators' and the validator's addresses, given each service's gRPC port (``names`` and ``grpc_ports``)."""
    return {"aggregator_address": ",".join(f"127.0.0.1:{port}" for name, port in zip(names, grpc_ports)
                                           if name == AGGREGATOR.name),
            "validator_address": f"127.0.0.1:{grpc_ports[names.index(VALIDATOR.name)]}"}


def _wait_started(processes: list[dict], aggregators: int) -> None:
    """Wait until every service is healthy (a standby aggregator counts) and, with two aggregators, one leads."""
    for process in processes:
        if "service" in process:
            wait_healthy(process, standby_ok=aggregators > 1 and process["service"] == "aggregator")
    if aggregators > 1:
        wait_leader(processes)


def _start_store(state_dir: Path, *, tls: bool, port: int | None = None, service=None, log_requests: bool = False):
    """The cluster's object store (SeaweedFS) keeping its data in ``<state>/s3``, with the cluster's certificate
    when ``tls``; ``service`` (default a new key) is the one identity it serves."""
    from mfscore.services.local.servers import start_s3_server

    tls_dir = state_dir / "tls"
    files = {"tls_cert": tls_dir / "server.pem", "tls_key": tls_dir / "server.key", "tls_ca": tls_dir / "ca.pem"}
    return start_s3_server(port, data_dir=state_dir / "s3", bucket=BUCKET, service=service,
                           log_dir=state_dir / "logs", log_requests=log_requests, detach=True,
                           **(files if tls else {}))


def _store_process(s3) -> dict:
    from mfscore.services.local.servers import STORE, STORE_STOP_SECONDS

    return {"name": STORE, "pid": s3.popen.pid, "log": str(s3.log_path), "stop_seconds": STORE_STOP_SECONDS,
            "leftovers": s3.leftovers}


def restart_store(path: Path) -> ClusterConfig:
    """Stop the cluster's object store and start it again on the same port, data and key; the services keep
    running (their requests meanwhile are retried as an outage). Rewrites ``path`` with its new process."""
    from mfscore.services.local.servers import STORE, S3Credentials

    config = ClusterConfig.read(path)
    state_dir = Path(config.state_dir)
    entry = next(p for p in config.processes if p["name"] == STORE)
    _stop_pids([entry])
    key = _service_s3(state_dir)
    s3 = _start_store(state_dir, tls=bool(config.tls_ca), port=int(config.s3_endpoint.rsplit(":", 1)[1]),
                      service=S3Credentials(key["access_key"], key["secret_key"]))
    entry.update(_store_process(s3))
    config.write(path)
    return config


def start_service(config: ClusterConfig, state_dir: Path, label: str, name: str, grpc_port: int,
                  metrics_port: int | None = None, *, environment: dict[str, str] | None = None) -> dict:
    """Start service ``name`` as its own process, not supervised (umask 077, logging to ``<state>/logs/<label>.log``,
    mode 0600): what a test does to stand in for a process it stopped. ``service_command`` says how it runs."""
    from mfscore.services.local.servers import PRIVATE_UMASK, private_log

    process, argv, env = service_command(config, state_dir, label, name, grpc_port, metrics_port,
                                         environment=environment)
    with private_log(Path(process["log"])) as log:
        popen = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, umask=PRIVATE_UMASK)
    return {**process, "pid": popen.pid}


def start_supervised(state_dir: Path, services: list[tuple[dict, list[str], dict[str, str]]]) -> list[dict]:
    """Start the cluster's supervisor (services/local/supervisor.py) in a session of its own, handing it
    ``services`` (from ``service_command``) on its standard input; once it has started them, their processes
    (``supervised``: their pids change as it restarts them), then its own."""
    from mfscore.services.local.servers import PRIVATE_UMASK, private_log
    from mfscore.services.local.supervisor import STOP_SECONDS, read_state

    (Path(state_dir) / "supervised.json").unlink(missing_ok=True)
    log_path = Path(state_dir) / "logs" / "supervisor.log"
    with private_log(log_path) as log:
        popen = subprocess.Popen([sys.executable, "-m", "mfscore.services.local.supervisor", str(state_dir)],
                                 stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                 umask=PRIVATE_UMASK)
    supervisor = {"name": "supervisor", "pid": popen.pid, "log": str(log_path), "supervisor": True,
                  "stop_seconds": STOP_SECONDS + 5}
    try:
        popen.stdin.write(json.dumps([{"label": process["name"], "argv": argv, "env": env, "log": process["log"]}
                                      for process, argv, env in services]).encode())
        popen.stdin.close()
    except BrokenPipeError:
        pass  # it died at once: said below, with its log
    deadline = time.monotonic() + START_TIMEOUT
    while len(state := read_state(state_dir)) < len(services):
        if popen.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-1500:]
            raise OptionError(f"the cluster's supervisor did not start the services; its log ends: {tail}")
        time.sleep(0.05)
    return [*({**process, "pid": state[process["name"]]["pid"], "supervised": True} for process, _, _ in services),
            supervisor]


def current_pid(process: dict) -> int | None:
    """The process's pid now: a supervised service's as its supervisor last started it (None while it waits to
    start again), any other's as recorded."""
    if not process.get("supervised"):
        return process["pid"]
    return _supervised(process).get("pid", process["pid"])


def _supervised(process: dict) -> dict:
    """What the supervisor last wrote of a supervised service (its pid, exits, how it last ended); {} before."""
    from mfscore.services.local.supervisor import read_state

    return read_state(Path(process["log"]).parents[1]).get(process["name"], {})


def service_command(config: ClusterConfig, state_dir: Path, label: str, name: str, grpc_port: int,
                    metrics_port: int | None = None, *,
                    environment: dict[str, str] | None = None) -> tuple[dict, list[str], dict[str, str]]:
    """How service ``name`` runs: its process entry (without a pid), command line and environment. With the
    cluster's TLS it serves with the cluster's certificate and trusts only its CA, for S3 too. ``environment``
    adds settings (``MFSCORE_*`` variables) to the ones the cluster gives it."""
    from mfscore.services.local.servers import free_port

    metrics_port = metrics_port or free_port()
    settings = config.settings(grpc_port=grpc_port, metrics_port=metrics_port,
                               work_dir=str(state_dir / "work" / label))
    s3_service = _service_s3(state_dir)
    env = dict(os.environ)
    env.update({"MFSCORE_NATS_URL": settings.nats_url, "MFSCORE_S3_ENDPOINT": settings.s3_endpoint,
                "MFSCORE_S3_ACCESS_KEY": s3_service["access_key"], "MFSCORE_S3_SECRET_KEY": s3_service["secret_key"],
                "MFSCORE_BUCKET": settings.bucket, "MFSCORE_GRPC_PORT": str(grpc_port),
                "MFSCORE_METRICS_PORT": str(metrics_port), "MFSCORE_WORK_DIR": settings.work_dir,
                "MFSCORE_VALIDATOR_ADDRESS": config.validator_address,
                "MFSCORE_AGGREGATOR_ADDRESS": config.aggregator_address,
                "MFSCORE_TOKENS_FILE": str(_secrets(state_dir) / "tokens"),
                "MFSCORE_TOKEN": (_secrets(state_dir) / "aggregator.token").read_text() if name == "aggregator" else ""})
    env.update(environment or {})
    role = NATS_ROLES.get(name, "")
    env.update({"MFSCORE_NATS_USER": role, "MFSCORE_NATS_PASSWORD": _nats_password(state_dir, role) if role else ""})
    if config.tls_ca:  # SSL_CERT_FILE: the CA the S3 client (ObjectStore) checks the S3 server against
        tls = Path(state_dir) / "tls"
        env.update({"MFSCORE_TLS_CERT": str(tls / "server.pem"), "MFSCORE_TLS_KEY": str(tls / "server.key"),
                    "MFSCORE_TLS_CA": config.tls_ca, "SSL_CERT_FILE": config.tls_ca})
    log_path = Path(state_dir) / "logs" / f"{label}.log"
    process = {"name": label, "service": name, "grpc_port": grpc_port, "metrics_port": metrics_port,
               "log": str(log_path), "tls_ca": config.tls_ca}
    return process, [sys.executable, "-m", "mfscore", "serve", name], env


def _secrets(state_dir: Path) -> Path:
    directory = Path(state_dir) / "secrets"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def _write_secret(path: Path, text: str) -> None:
    """Write ``path`` (mode 0600) whole or not at all: a service reading it meanwhile sees the old or the new."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def new_callers(state_dir: Path) -> str:
    """Fresh tokens for a new cluster: its operator's (who ran 'up'; returned, for the cluster file) and the
    aggregator's, for its calls to the validator. The services read only their digests."""
    from mfscore.services.common.auth import new_token, tokens_line

    operator, aggregator = new_token(), new_token()
    _write_secret(_secrets(state_dir) / "tokens", f"{tokens_line('operator', 'operator', operator)}\n"
                                                  f"{tokens_line('aggregator', 'service', aggregator)}\n")
    _write_secret(_secrets(state_dir) / "aggregator.token", aggregator)
    return operator


def new_tls(state_dir: Path) -> tuple[str, str, str]:
    """A fresh CA and a certificate it signs for 127.0.0.1 and localhost, in ``<state>/tls/`` (each file 0600):
    returns the paths of ``ca.pem``, ``server.pem`` and ``server.key``. The CA's key is never written, so nothing
    else can ever be signed with it; a new ``up`` makes a new CA."""
    try:
        from mfscore.services.local.certificates import loopback_certificate
    except ImportError:
        raise OptionError("--tls needs the 'cryptography' package: pip install 'mfscore[local]'") from None

    directory = Path(state_dir) / "tls"
    directory.mkdir(mode=0o700, exist_ok=True)
    files = loopback_certificate()
    for name, data in files.items():
        _write_secret(directory / name, data.decode())
    return tuple(str(directory / name) for name in files)


def new_nats_users(state_dir: Path) -> dict[str, str]:
    """A fresh password per NATS role (services/common/nats_auth.py), one file each in the state directory
    (mode 0600): clients never talk to NATS, so the cluster file carries none."""
    from mfscore.services.common.nats_auth import SERVICE_ROLES

    users = {role: secrets.token_urlsafe(24) for role in SERVICE_ROLES}
    for role, password in users.items():
        _write_secret(_secrets(state_dir) / f"nats-{role}.password", password)
    return users


def _nats_password(state_dir: Path, role: str) -> str:
    try:
        return (_secrets(state_dir) / f"nats-{role}.password").read_text()
    except OSError as exc:
        raise OptionError(f"the local cluster's NATS password of {role!r} cannot be read ({exc.strerror}); restart "
                          "the cluster with 'mfscore local-cluster down' and 'up'") from None


def _service_s3(state_dir: Path) -> dict[str, str]:
    """The services' S3 key (``access_key``, ``secret_key``): no cluster file holds it."""
    return json.loads((_secrets(state_dir) / "s3-service.json").read_text())


def service_s3_settings(config: ClusterConfig, **overrides):
    """Settings reaching the local cluster's object store with the services' key, for tests and benchmarks on this
    machine (what an attacker would need, and no client holds)."""
    s3 = _service_s3(Path(config.state_dir))
    return config.settings(s3_access_key=s3["access_key"], s3_secret_key=s3["secret_key"], **overrides)


def nats_settings(config: ClusterConfig, role: str = "observer"):
    """Settings reaching the local cluster's NATS as ``role`` (default the read-only observer), for tests and
    operators on this machine."""
    return config.settings(nats_user=role, nats_password=_nats_password(Path(config.state_dir), role))


def add_caller(config: ClusterConfig, name: str, role: str, out: Path | None = None) -> str:
    """A new token for ``name`` with ``role``, accepted by the running services within a second; with ``out``
    also a cluster file for that caller there (``caller_file``). A name already there under another role is
    refused: a name belongs to one role (another token for the same name and role is a second key of one
    principal)."""
    from mfscore.services.common.auth import check_name, new_token, tokens_line

    check_name(name)
    tokens = _secrets(Path(config.state_dir)) / "tokens"
    text = tokens.read_text()
    roles = {f[0]: f[1] for f in (line.split("#", 1)[0].split() for line in text.splitlines()) if len(f) == 3}
    if roles.get(name, role) != role:
        raise OptionError(f"{name!r} already has the role {roles[name]} in this cluster, and a name belongs to one "
                          f"role: give the {role} another --name")
    token = new_token()
    if out is not None:
        try:
            caller_file(config, token).write(out)
        except OSError as exc:
            raise OptionError(f"the caller's cluster file cannot be written ({exc.strerror})", path=str(out)) from None
    _write_secret(tokens, text + tokens_line(name, role, token) + "\n")
    return token


def caller_file(config: ClusterConfig, token: str) -> ClusterConfig:
    """What a caller's cluster file holds: where the aggregator and validator are, its token and the cluster's CA.
    No S3 key or NATS password (a client uploads through the aggregator), and no state directory or processes,
    so 'down' with it stops nothing."""
    return ClusterConfig(aggregator_address=config.aggregator_address, validator_address=config.validator_address,
                         nats_url="", s3_endpoint=config.s3_endpoint,
                         bucket=config.bucket, token=token, tls_ca=config.tls_ca)


def health(address: str, timeout: float = 1.0, tls_ca: str = "", service: str = "") -> str:
    """The gRPC health status ("SERVING", ...) of the server at ``address`` (``service`` "") or of one of its
    services, or why it has none; over TLS checked against ``tls_ca`` when set."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from mfscore.services.common.auth import client_channel

    with client_channel(address, tls_ca=tls_ca) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                              timeout=timeout)
        except grpc.RpcError as error:
            return f"unreachable ({error.code().name})"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def wait_healthy(process: dict, *, standby_ok: bool = False) -> None:
    """Wait until the service answers its health check SERVING (or, ``standby_ok``, NOT_SERVING: a standby
    aggregator). A supervised service that exits is waited for as its supervisor starts it again, up to
    START_EXITS times."""
    deadline = time.monotonic() + START_TIMEOUT
    address = f"127.0.0.1:{process['grpc_port']}"
    while time.monotonic() < deadline:
        if (_supervised(process).get("exits", 0) >= START_EXITS if process.get("supervised")
                else not pid_alive(process["pid"])):
            tail = Path(process["log"]).read_text(errors="replace")[-1500:]
            raise OptionError(f"the service {process['name']} exited while starting; its log ends: {tail}")
        if health(address, timeout=0.5, tls_ca=process.get("tls_ca", "")) in (
                ("SERVING", "NOT_SERVING") if standby_ok else ("SERVING",)):
            return
        time.sleep(0.1)
    raise OptionError(f"the service {process['name']} did not become healthy within {START_TIMEOUT:g} s "
                      f"(log: {process['log']})")


def wait_leader(processes: list[dict], timeout: float = START_TIMEOUT) -> dict:
    """The aggregator among ``processes`` that leads (its AggregatorService SERVING), once one does."""
    from mfscore.services.common.auth import LEADER_SERVICE

    aggregators = [p for p in processes if p.get("service") == "aggregator"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in aggregators:
            if health(f"127.0.0.1:{process['grpc_port']}", timeout=0.5, tls_ca=process.get("tls_ca", ""),
                      service=LEADER_SERVICE) == "SERVING":
                return process
        time.sleep(0.05)
    raise OptionError(f"no aggregator took the lead within {timeout:g} s")


def pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
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
    """SIGTERM the supervisor first (it stops the services it runs), then the other services (they drain), servers
    last; SIGKILL whatever outlives ``timeout`` (or its own ``stop_seconds``, shorter); then remove the files a
    process leaves behind (its ``leftovers``)."""
    from mfscore.services.local.servers import remove_files

    supervisors = [p for p in processes if p.get("supervisor")]
    services = [p for p in processes if "service" in p and not p.get("supervised")]
    servers = [p for p in processes if "service" not in p and not p.get("supervisor")]
    for group in (supervisors, services, servers):
        for p in group:
            if pid_alive(p["pid"]):
                os.kill(p["pid"], signal.SIGTERM)
        start = time.monotonic()
        deadlines = {p["pid"]: start + min(timeout, p.get("stop_seconds", timeout)) for p in group}
        while True:
            now = time.monotonic()
            for p in group:
                if now >= deadlines[p["pid"]] and pid_alive(p["pid"]):
                    os.kill(p["pid"], signal.SIGKILL)
            if not any(pid_alive(p["pid"]) for p in group):
                break
            time.sleep(0.05)
    for p in processes:
        remove_files(p.get("leftovers", []))


def down(path: Path) -> None:
    config = ClusterConfig.read(path)
    _stop_pids(config.processes)
    path.unlink(missing_ok=True)


def status(path: Path) -> int:
    config = ClusterConfig.read(path)
    rows = []
    for p in config.processes:
        pid = current_pid(p)
        state = "running" if pid_alive(pid) else "stopped"
        if state == "running" and "grpc_port" in p:
            state = health(f"127.0.0.1:{p['grpc_port']}", tls_ca=p.get("tls_ca", ""))
        rows.append({"name": p["name"], "pid": pid or "-", "state": state, "log": p["log"]})
    for row in rows:
        print(f"{row['name']:<22} pid {row['pid']:<8} {row['state']:<14} {row['log']}")
    print(json.dumps({"aggregator": config.aggregator_address, "s3": config.s3_endpoint, "nats": config.nats_url}))
    return 0 if all(r["state"] in ("running", "SERVING") for r in rows) else 1
