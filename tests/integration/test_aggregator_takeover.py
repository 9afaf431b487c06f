"""Two aggregator processes on a local cluster: the leader killed (or paused) mid-run, the standby takes over within
a lease and a little, ``mfscore submit`` through both addresses finishes with the embedded run's files (from a
paused leader its watch moves on by gRPC keepalive), and a paused leader that comes back finds its writes refused,
exits, and is started again by the cluster's supervisor as a standby."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nats.js.errors import KeyNotFoundError

from integration.test_aggregator_restart import queue_drained, stop, wait_for
from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.common.auth import LEADER_SERVICE
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.subjects import RUNS_BUCKET
from mfscore.services.wire import runs_pb2, services_pb2_grpc
from output_files import tree

pytestmark = [pytest.mark.integration, pytest.mark.faults]
LEASE = 3  # seconds (MFSCORE_LEASE_SECONDS)
TAKEOVER_BOUND = LEASE + 5  # seconds from the leader's end to the standby's AggregatorService SERVING
KEEPALIVE_BOUND = 60  # seconds from the new leader's end of the run to submit's exit, the old leader still paused
State = runs_pb2.RunState


def mask_arguments(tmp_path) -> list[str]:
    data = generate_mask_dataset(tmp_path / "data", 12)
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir",
            str(data.directory), "-s", data.system, "--sbin", "120", "-qm", "Purpose==['add']", "Purpose==['clone']"]


def start_submit(config, arguments: list[str], out: str, log) -> subprocess.Popen:
    """``mfscore submit`` in a process of its own, finding both aggregators in MFSCORE_AGGREGATOR_ADDRESS."""
    env = {k: v for k, v in os.environ.items() if k != "MFSCORE_CLUSTER"}
    env.update({"MFSCORE_AGGREGATOR_ADDRESS": config.aggregator_address, "MFSCORE_TOKEN": config.token})
    return subprocess.Popen([sys.executable, "-m", "mfscore", "submit", "mask", *arguments, "-oR", out], env=env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def scoring_run(config):
    with config.channel() as channel:
        runs = services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=5).runs
    return next((run for run in runs if run.state == State.RUN_STATE_SCORING), None)


def stored(config, run_id: str) -> dict[str, tuple[int, bytes]]:
    """The run's keys in the bucket: revision and value."""
    async def read():
        nc, js = await connect(commands.nats_settings(config, "aggregator"))
        try:
            kv = await js.key_value(RUNS_BUCKET)
            found = {}
            for key in (f"spec.{run_id}", f"status.{run_id}", f"report.{run_id}"):
                try:
                    entry = await kv.get(key)
                    found[key] = (entry.revision, entry.value)
                except KeyNotFoundError:
                    found[key] = None
            return found
        finally:
            await nc.close()
    return asyncio.run(read())


def done(keys: dict, run_id: str) -> bool:
    status = keys[f"status.{run_id}"]
    return status is not None and runs_pb2.RunStatus.FromString(status[1]).state == State.RUN_STATE_DONE


def cluster(tmp_path):
    path = tmp_path / "cluster" / "cluster.json"
    return path, commands.up(path, aggregators=2, environment={"MFSCORE_LEASE_SECONDS": str(LEASE)})


def health(process: dict, service: str = "") -> str:
    return commands.health(f"127.0.0.1:{process['grpc_port']}", timeout=2, service=service)


def standing_by(config, leader: dict) -> tuple[dict, tuple[str, str]]:
    """The standby, and its health: the whole server's (alive, serving reads) and its AggregatorService's."""
    [standby] = [p for p in config.processes if p.get("service") == "aggregator" and p is not leader]
    return standby, (health(standby), health(standby, LEADER_SERVICE))


def takeover(standby: dict) -> float:
    """How long from now ``standby``'s AggregatorService takes to turn SERVING (it leads)."""
    started = time.monotonic()
    wait_for(lambda: health(standby, LEADER_SERVICE) == "SERVING", "the standby to take over", timeout=60)
    return time.monotonic() - started


def started_again(process: dict, timeout: float = 60) -> int:
    """The pid of ``process`` once the cluster's supervisor has started it again after it exited by itself."""
    wait_for(lambda: commands.current_pid(process) not in (None, process["pid"]), f"{process['name']} to start again",
             timeout=timeout)
    return commands.current_pid(process)


def test_the_standby_takes_over_a_killed_leaders_run(tmp_path, capsys):
    arguments = mask_arguments(tmp_path)
    assert main(["mask", *arguments, "-oR", str(tmp_path / "embedded" / "x")]) == 0
    path, config = cluster(tmp_path)
    try:
        scorer = next(p for p in config.processes if p.get("service") == "mask-scorer")
        stop(scorer)  # jobs wait in the queue
        leader = commands.wait_leader(config.processes)
        standby, standby_health = standing_by(config, leader)
        with open(tmp_path / "submit.log", "wb") as log:
            submit = start_submit(config, arguments, str(tmp_path / "cluster-out" / "x"), log)
            run = wait_for(lambda: scoring_run(config), "the run to be planned")
            stop(leader, signal.SIGKILL)
            killed = time.monotonic()
            took = takeover(standby)
            restarted = commands.start_service(config, path.parent / "cluster-state", "mask-scorer-again",
                                               "mask-scorer", scorer["grpc_port"])
            config.processes.append(restarted)
            config.write(path)
            wait_for(lambda: done(stored(config, run.run_id), run.run_id), "the new leader to finish the run",
                     timeout=120)
            finished = time.monotonic() - killed
            status = submit.wait(timeout=300)
        said = (tmp_path / "submit.log").read_text()
        assert status == 0, said
        assert run.trials_planned > 0
        print(f"takeover after SIGKILL: {took:.2f} s to AggregatorService SERVING, {finished:.2f} s to DONE")
        assert standby_health == ("SERVING", "NOT_SERVING")
        assert took <= TAKEOVER_BOUND
        assert tree(tmp_path / "cluster-out") == tree(tmp_path / "embedded")
        assert "took it over" in Path(standby["log"]).read_text()
    finally:
        commands.down(path)


def test_a_paused_leader_that_comes_back_finds_its_writes_refused_and_stands_by_again(tmp_path):
    arguments = mask_arguments(tmp_path)
    assert main(["mask", *arguments, "-oR", str(tmp_path / "embedded" / "x")]) == 0
    path, config = cluster(tmp_path)
    try:
        scorer = next(p for p in config.processes if p.get("service") == "mask-scorer")
        stop(scorer)
        leader = commands.wait_leader(config.processes)
        standby, _ = standing_by(config, leader)
        with open(tmp_path / "submit.log", "wb") as log:
            submit = start_submit(config, arguments, str(tmp_path / "cluster-out" / "x"), log)
            run = wait_for(lambda: scoring_run(config), "the run to be planned")
            os.kill(leader["pid"], signal.SIGSTOP)
            try:
                took = takeover(standby)
                restarted = commands.start_service(config, path.parent / "cluster-state", "mask-scorer-again",
                                                   "mask-scorer", scorer["grpc_port"])
                config.processes.append(restarted)
                config.write(path)
                wait_for(lambda: queue_drained(config), "the scorer to empty the queue")
                wait_for(lambda: (stored(config, run.run_id)[f"report.{run.run_id}"] is not None
                                  and done(stored(config, run.run_id), run.run_id)), "the new leader to finish the run")
                before = stored(config, run.run_id)
                # Its watch on the paused leader fails by keepalive (no ping answered): it re-watches on the new one.
                status = submit.wait(timeout=KEEPALIVE_BOUND)
                paused = commands.pid_alive(leader["pid"])
            finally:
                os.kill(leader["pid"], signal.SIGCONT)
            again = started_again(leader)
            wait_for(lambda: health(leader) == "SERVING", "the old leader to stand by again")
            again_health = (health(leader), health(leader, LEADER_SERVICE))
        after = stored(config, run.run_id)
        old_log = Path(leader["log"]).read_text()
        said = (tmp_path / "submit.log").read_text()
        assert status == 0, said
        assert paused  # submit finished while the old leader was still stopped
        assert "reconnecting" in said
        print(f"takeover after SIGSTOP: {took:.2f} s")
        assert took <= TAKEOVER_BOUND
        assert again != leader["pid"] and again_health == ("SERVING", "NOT_SERVING")
        supervisor = Path(next(p for p in config.processes if p.get("supervisor"))["log"]).read_text()
        assert f"{leader['name']} exited with status 1" in supervisor and "starting it again" in supervisor
        assert runs_pb2.RunStatus.FromString(before[f"status.{run.run_id}"][1]).state == State.RUN_STATE_DONE
        assert after == before  # nothing the old leader did after it came back reached the bucket
        assert "deposed: " in old_log  # its one line, then the command's exit status 1 with its sentence:
        assert "mfscore: error: another aggregator took the lease" in old_log
        assert tree(tmp_path / "cluster-out") == tree(tmp_path / "embedded")
    finally:
        commands.down(path)
