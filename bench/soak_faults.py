"""The soak's cluster and what befalls it: a local cluster (three NATS nodes, two aggregators, two mask scorers, one
of each other pool, the object store behind a loopback proxy), a stand-in for Kubernetes' kubelet that starts again
a service that is down for good, and the faults (``FAULTS``), each a function of the cluster.

A service killed with SIGKILL is one the cluster's supervisor leaves stopped (services/local/supervisor.py); on
Kubernetes its container would be started again, so ``Kubelet`` does that here RESTART_SECONDS later, on the same
gRPC and metrics ports (Prometheus scrapes fixed targets), unsupervised, as the fault tests do.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.local.faulty_proxy import FaultyProxy
from mfscore.services.local.servers import PRIVATE_UMASK, free_ports
from mfscore.services.local.supervisor import read_state

RESTART_SECONDS = 5.0    # a killed service's container is started again after this (kubelet's first backoff is 10 s)
NATS_DOWN_SECONDS = 10.0
STOPPED_SECONDS = 20.0   # SIGSTOP of the leader
REFUSED_SECONDS = 30.0   # the object store refusing connections
DOWN_SECONDS = 360.0     # a scorer down long enough to page (MfscoreServiceDown has `for: 5m`)
PURGE_AFTER_SECONDS = 60.0  # an operator reads the dead letter and purges the stream


class SoakCluster:
    """A running local cluster and its process table, which the faults and the kubelet change under one lock."""

    def __init__(self, path: Path, environment: dict[str, str] | None = None):
        store_port, proxy_port = free_ports(2)
        self.proxy = FaultyProxy(("127.0.0.1", store_port), port=proxy_port)
        self.path = path
        self.config = commands.up(path, nats_nodes=3, aggregators=2, mask_scorers=2, store_port=store_port,
                                  environment={"MFSCORE_S3_ENDPOINT": f"http://{self.proxy.endpoint}",
                                               **(environment or {})})
        self.lock = threading.RLock()
        self.held: set[str] = set()   # slots a fault keeps down
        self.restarts = 0
        self.timers: list[threading.Timer] = []

    @property
    def state_dir(self) -> Path:
        return Path(self.config.state_dir)

    def slots(self) -> dict[str, dict]:
        """Each service's slot (its first label, ``mask-scorer-3``) and the process now filling it."""
        with self.lock:
            found: dict[str, dict] = {}
            for process in self.config.processes:
                if "service" in process:
                    found[process.get("slot", process["name"])] = process
            return found

    def servers(self) -> dict[str, dict]:
        """The NATS nodes and the object store, by name (``nats-0``, ``seaweedfs``)."""
        with self.lock:
            nodes = [p for p in self.config.processes if p["name"] == "nats-server"]
            others = {p["name"]: p for p in self.config.processes
                      if "service" not in p and p["name"] != "nats-server" and not p.get("supervisor")}
            return {**{f"nats-{i}": p for i, p in enumerate(nodes)}, **others}

    def pid(self, process: dict) -> int | None:
        return commands.current_pid(process)

    def down_for_good(self, process: dict) -> bool:
        """Whether nobody will start this process again: stopped on purpose under the supervisor, or dead outside it."""
        if process.get("supervised"):
            state = read_state(self.state_dir).get(process["name"], {})
            return state.get("pid") is None and state.get("ended", "").startswith("stopped by")
        return not commands.pid_alive(process["pid"])

    def restart(self, slot: str) -> dict:
        """The slot's service started again on its ports, unsupervised; the cluster file learns it."""
        with self.lock:
            old = self.slots()[slot]
            self.restarts += 1
            again = commands.start_service(self.config, self.state_dir, f"{slot}-r{self.restarts}", old["service"],
                                           old["grpc_port"], old["metrics_port"])
            again["slot"] = slot
            self.config.processes.append(again)
            self.config.write(self.path)
            return again

    def leader(self) -> tuple[str, dict]:
        process = commands.wait_leader(list(self.slots().values()))
        return process.get("slot", process["name"]), process

    def kill(self, process: dict, signum=signal.SIGKILL) -> None:
        pid = self.pid(process)
        if pid is not None:
            os.kill(pid, signum)

    def restart_node(self, name: str, seconds: float) -> None:
        """SIGKILL a NATS node, and start it again ``seconds`` later with the command line it had."""
        node = self.servers()[name]
        argv = Path(f"/proc/{node['pid']}/cmdline").read_bytes().decode().rstrip("\0").split("\0")
        os.kill(node["pid"], signal.SIGKILL)
        time.sleep(seconds)
        with open(node["log"], "ab") as log:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, umask=PRIVATE_UMASK)
        with self.lock:
            index = self.config.processes.index(node)
            self.config.processes[index] = {**node, "pid": popen.pid}
            self.config.write(self.path)

    def restart_store(self) -> None:
        with self.lock:
            self.config = commands.restart_store(self.path)

    def purge_dead_letters(self) -> None:
        """What an operator does on MfscoreDeadLettersIncreasing: read the dead letters, then purge them."""
        done = subprocess.run([sys.executable, "-m", "mfscore", "dead-letters", "--purge", "--cluster", str(self.path)],
                              capture_output=True, text=True)
        print(f"  {time.strftime('%H:%M:%S')} operator: {done.stdout.strip() or done.stderr.strip()}", flush=True)

    def dead_letters(self) -> float:
        """When the newest dead letter was dead-lettered (epoch seconds; 0 with none), as the operator reads it."""
        import grpc

        from mfscore.services.wire import dead_letters_pb2, services_pb2_grpc

        for _ in range(60):
            try:
                with self.config.channel() as channel:
                    listed = services_pb2_grpc.AggregatorServiceStub(channel).ListDeadLetters(
                        dead_letters_pb2.ListDeadLettersRequest(limit=1), timeout=30)
                break
            except grpc.RpcError:  # the leader changing hands: asked again
                time.sleep(1.0)
        else:
            raise SystemExit("the aggregator did not list the dead letters for a minute")
        return listed.dead_letters[0].dead_lettered_at.ToNanoseconds() / 1e9 if listed.dead_letters else 0.0

    def later(self, seconds: float, action) -> None:
        """Run ``action`` in ``seconds``, unless the cluster is down by then."""
        timer = threading.Timer(seconds, action)
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def down(self) -> None:
        for timer in self.timers:
            timer.cancel()
        with self.lock:
            commands.down(self.path)
        self.proxy.close()


class Kubelet(threading.Thread):
    """Starts again, RESTART_SECONDS after it went, a service that nobody else will (unless a fault holds it)."""

    def __init__(self, cluster: SoakCluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.stopping = threading.Event()
        self.gone: dict[str, float] = {}

    def run(self) -> None:
        while not self.stopping.wait(1.0):
            for slot, process in self.cluster.slots().items():
                if slot in self.cluster.held or not self.cluster.down_for_good(process):
                    self.gone.pop(slot, None)
                    continue
                since = self.gone.setdefault(slot, time.monotonic())
                if time.monotonic() - since >= RESTART_SECONDS:
                    self.cluster.restart(slot)
                    self.gone.pop(slot, None)


@dataclass
class Fault:
    """One injected fault: its kind, what it hit, when it began and ended (epoch seconds), the alerts it should
    page with."""

    kind: str
    target: str = ""
    start: float = 0.0
    end: float = 0.0
    pages: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": self.kind, "target": self.target, "start": self.start, "end": self.end, "pages": self.pages}


def kill_scorer(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """SIGKILL a scorer; the kubelet starts it again."""
    fault.target = rng.choice(sorted(s for s in cluster.slots() if "scorer" in s))
    cluster.kill(cluster.slots()[fault.target])
    _wait_back(cluster, fault.target)


def scorer_down(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """A mask scorer killed and kept down for DOWN_SECONDS (a node lost, say): pages MfscoreServiceDown."""
    fault.target = rng.choice(sorted(s for s in cluster.slots() if s.startswith("mask-scorer")))
    fault.pages = ["MfscoreServiceDown"]
    cluster.held.add(fault.target)
    try:
        cluster.kill(cluster.slots()[fault.target])
        time.sleep(DOWN_SECONDS)
    finally:
        cluster.held.discard(fault.target)
    _wait_back(cluster, fault.target)


def kill_nats(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """SIGKILL one of the three NATS nodes and start it again NATS_DOWN_SECONDS later."""
    fault.target = rng.choice(sorted(n for n in cluster.servers() if n.startswith("nats-")))
    cluster.restart_node(fault.target, NATS_DOWN_SECONDS)


def kill_leader(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """SIGKILL the leading aggregator: the standby takes the lease; the kubelet starts the killed one again."""
    fault.target, process = cluster.leader()
    cluster.kill(process)
    _wait_back(cluster, fault.target)
    cluster.leader()


def stop_leader(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """SIGSTOP the leading aggregator for STOPPED_SECONDS, then SIGCONT: it finds itself deposed and exits, and is
    started again."""
    fault.target, process = cluster.leader()
    cluster.kill(process, signal.SIGSTOP)
    time.sleep(STOPPED_SECONDS)
    cluster.kill(process, signal.SIGCONT)
    cluster.leader()


def restart_store(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """Stop the object store and start it again on its port and data."""
    fault.target = "seaweedfs"
    cluster.restart_store()


def refuse_store(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """The object store refuses every connection for REFUSED_SECONDS (through the proxy the services use)."""
    fault.target = "seaweedfs"
    cluster.proxy.refuse()
    try:
        time.sleep(REFUSED_SECONDS)
    finally:
        cluster.proxy.accept()


def dead_letter(cluster: SoakCluster, rng: random.Random, fault: Fault) -> None:
    """A job no scorer can read, queued for the mask scorers: dead-lettered at once (MfscoreDeadLettersIncreasing
    pages). The operator reads and purges the dead letters PURGE_AFTER_SECONDS later (``mfscore dead-letters
    --purge``, as the alert's description says), so MfscoreDeadLettersPresent must stay silent."""
    fault.target = "mask-scorers"
    fault.pages = ["MfscoreDeadLettersIncreasing"]
    before = cluster.dead_letters()
    asyncio.run(_publish_junk(cluster.config))
    deadline = time.monotonic() + 600
    while (after := cluster.dead_letters()) == before:  # behind the queued mask jobs: the page is due from here
        if time.monotonic() > deadline:
            raise SystemExit("the job that is no job was not dead-lettered within 10 minutes")
        time.sleep(1.0)
    fault.start = fault.end = after
    cluster.later(PURGE_AFTER_SECONDS, cluster.purge_dead_letters)


async def _publish_junk(config: ClusterConfig) -> None:
    from mfscore.services.common.nats_connection import connect
    from mfscore.services.common.subjects import job_subject

    nc, js = await connect(commands.nats_settings(config, "aggregator"))
    try:
        await js.publish(job_subject("mask", uuid.uuid4().hex), b"\xff not a job")
    finally:
        await nc.close()


def _wait_back(cluster: SoakCluster, slot: str, timeout: float = 120.0) -> None:
    """Until the slot's service answers its health check again (a standby aggregator's NOT_SERVING counts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process = cluster.slots()[slot]
        if cluster.pid(process) and commands.health(f"127.0.0.1:{process['grpc_port']}", timeout=0.5) in (
                "SERVING", "NOT_SERVING"):
            return
        time.sleep(0.5)
    raise SystemExit(f"{slot} did not come back within {timeout:g} s")


FAULTS = {"kill-scorer": kill_scorer, "kill-nats": kill_nats, "kill-leader": kill_leader, "stop-leader": stop_leader,
          "restart-store": restart_store, "refuse-store": refuse_store, "dead-letter": dead_letter,
          "scorer-down": scorer_down}
SHORT_FAULTS = [kind for kind in FAULTS if kind != "scorer-down"]  # what fits in a few minutes


def schedule(minutes: float, seed: int) -> list[tuple[float, str]]:
    """(seconds from the start, kind) of each fault: every kind in a seeded order, again and again, a fault every few
    minutes (after a quiet first minute), the last quarter-hour of an hour-long soak quiet so alerts can clear;
    a short soak has one fault of each kind that fits."""
    rng = random.Random(seed)
    seconds = minutes * 60
    if minutes < 20:
        kinds = rng.sample(SHORT_FAULTS, len(SHORT_FAULTS))
        gap = (seconds - 60) / len(kinds)
        return [(60 + i * gap, kind) for i, kind in enumerate(kinds)]
    found, at, kinds = [], 60.0, []
    quiet_tail = min(900.0, seconds / 4)
    while at < seconds - quiet_tail:
        if not kinds:
            kinds = rng.sample(list(FAULTS), len(FAULTS))
        kind = kinds.pop()
        if kind == "scorer-down" and at + DOWN_SECONDS > seconds - quiet_tail:
            continue
        found.append((at, kind))
        at += rng.uniform(150, 240) + (DOWN_SECONDS if kind == "scorer-down" else 0)
    return found
