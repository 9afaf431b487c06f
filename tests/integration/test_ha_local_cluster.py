"""A highly available local cluster (three NATS nodes, two aggregators) that starts, and survives NATS losing its
quorum: ``local-cluster up --nats-nodes 3 --aggregators 2`` starts every time (both aggregators set the streams up
at once), and a run in which two of the three NATS nodes are killed for 20 s, then started again, ends DONE with the
embedded command's files, with nobody restarting anything by hand (the cluster's supervisor restarts an aggregator
that exits). docs/reliability.md "Two aggregators" quotes these."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from integration.equivalence import tree
from integration.test_outages import embedded, figures, mask_arguments, start_submit, the_run, wait_for
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.local.servers import PRIVATE_UMASK
from mfscore.services.wire import runs_pb2

pytestmark = pytest.mark.integration
OUTAGE = 20.0  # seconds NATS is without its quorum
GRPC_CORE_LINE = ("goaway", "chttp2_transport", "absl::InitializeLog")  # what gRPC's C core prints by itself


def ha_up(path: Path):
    return commands.up(path, nats_nodes=3, aggregators=2, mask_scorers=2)


def test_a_cluster_of_three_nats_nodes_and_two_aggregators_starts(tmp_path):
    """Both aggregators set the streams up at once, the second one's updates racing the first one's."""
    path = tmp_path / "cluster" / "cluster.json"
    config = ha_up(path)
    try:
        leader = commands.wait_leader(config.processes)
        aggregators = [p for p in config.processes if p.get("service") == "aggregator"]
        assert len(aggregators) == 2 and leader in aggregators
        assert all(commands.pid_alive(p["pid"]) for p in config.processes)
    finally:
        commands.down(path)


@pytest.mark.faults
@pytest.mark.parametrize("attempt", range(3))
def test_the_ha_cluster_starts_every_time(tmp_path, attempt):
    test_a_cluster_of_three_nats_nodes_and_two_aggregators_starts(tmp_path)


def restart_node(node: dict, argv: list[str]) -> dict:
    """nats-server again with the ``argv`` it had (its port, store directory and configuration), logging where it
    did; the new process."""
    with open(node["log"], "ab") as log:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, umask=PRIVATE_UMASK)
    return {**node, "pid": popen.pid}


def lose_quorum(path: Path, config, nodes: list[int], seconds: float) -> None:
    """SIGKILL the NATS ``nodes`` (two of three: JetStream has no quorum), wait ``seconds``, start them again; the
    cluster file learns their new processes (so 'down' stops them)."""
    servers = [p for p in config.processes if p["name"] == "nats-server"]
    argvs = {i: Path(f"/proc/{servers[i]['pid']}/cmdline").read_bytes().decode().rstrip("\0").split("\0")
             for i in nodes}
    for i in nodes:
        os.kill(servers[i]["pid"], signal.SIGKILL)
    time.sleep(seconds)
    for i in nodes:
        again = restart_node(servers[i], argvs[i])
        config.processes[config.processes.index(servers[i])] = again
    config.write(path)


def scoring(config, submit: subprocess.Popen, stderr: Path):
    """The run once it scores and has records in; submit's stderr if it ended before."""
    assert submit.poll() is None, stderr.read_text()
    return next((r for r in [the_run(config, runs_pb2.RUN_STATE_SCORING)] if r and r.trials_received > 0), None)


@pytest.mark.faults
def test_runs_survive_nats_losing_its_quorum_five_times(tmp_path, capsys):
    """Five runs in a row, each losing two of the three NATS nodes for 20 s while it scores: each ends DONE with
    the embedded command's files, and submit's stderr carries nothing gRPC's C core printed."""
    data = generate_mask_dataset(tmp_path / "data", 120)
    arguments = mask_arguments(data)
    embedded(tmp_path, arguments, capsys)
    path = tmp_path / "cluster" / "cluster.json"
    config = ha_up(path)
    try:
        for attempt in range(5):
            out_dir = tmp_path / f"run-{attempt}"
            submit, _, stderr = start_submit(path, arguments, out_dir)
            try:
                at_loss = wait_for(lambda: scoring(config, submit, stderr), "the first records", 300, 0.05)
                started = time.monotonic()
                lose_quorum(path, config, [attempt % 3, (attempt + 1) % 3], OUTAGE)
                status = submit.wait(timeout=600)
                seconds = time.monotonic() - started
            finally:
                if submit.poll() is None:
                    submit.kill()
            said = stderr.read_text()
            assert status == 0, said
            assert at_loss.trials_received < at_loss.trials_planned, "the quorum was lost mid-run"
            assert tree(out_dir) == tree(tmp_path / "embedded") and tree(out_dir)
            assert not [line for line in said.splitlines() if any(word in line for word in GRPC_CORE_LINE)], said
            figures(f"NATS without quorum for {OUTAGE:g} s, run {attempt + 1} of 5", seconds_to_exit=seconds,
                    trials_at_loss=at_loss.trials_received, trials_planned=at_loss.trials_planned)
    finally:
        commands.down(path)
