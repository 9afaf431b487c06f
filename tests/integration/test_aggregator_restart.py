"""The aggregator keeps no state of its own: killed with a run in flight and started again, it reads the
run from the key-value bucket, replays the records from the results stream and writes the same reports."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import grpc
import pytest

from integration.equivalence import tree
from mfscore import tasks
from mfscore.cli.main import build_parser, main
from mfscore.codec import encode
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.submit import run_inputs
from mfscore.services.commands.upload import upload_run
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.run_layout import input_prefix
from mfscore.services.common.subjects import JOBS_STREAM
from mfscore.services.wire import runs_pb2, services_pb2_grpc
from mfscore.tasks.base import relocated

pytestmark = pytest.mark.integration
State = runs_pb2.RunState


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop(process: dict, signum=signal.SIGTERM) -> None:
    os.kill(process["pid"], signum)
    wait_for(lambda: not commands.pid_alive(process["pid"]), f"{process['name']} to stop")


def restart_after_the_queue_drains(config, path, scorer: dict, aggregator: dict) -> None:
    """Start the stopped ``scorer`` again, let it empty the queue (its records wait in the stream), then start the
    killed ``aggregator`` again; the cluster file names the new processes."""
    restarted = [commands.start_service(config, path.parent / "cluster-state", "mask-scorer-again", "mask-scorer",
                                         scorer["grpc_port"])]
    commands.wait_healthy(restarted[0])
    wait_for(lambda: queue_drained(config), "the scorer to empty the queue")
    restarted.append(commands.start_service(config, path.parent / "cluster-state", "aggregator-again",
                                             "aggregator", aggregator["grpc_port"]))
    config.processes += restarted
    config.write(path)
    commands.wait_healthy(restarted[1])


def wait_for_the_end(config, run_id: str) -> runs_pb2.RunStatus:
    """The run's status once it is DONE or FAILED, asking again while the restarted aggregator stands by (until the
    killed one's lease lapses)."""
    def ended():
        try:
            run = stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            return None
        return run.state in (State.RUN_STATE_DONE, State.RUN_STATE_FAILED) and run

    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        return wait_for(ended, "the run to finish")


def queue_drained(config) -> bool:
    async def check():
        nc, js = await connect(commands.nats_settings(config))
        try:
            info = await js.consumer_info(JOBS_STREAM, "mask-scorers")
            return info.num_pending == 0 and info.num_ack_pending == 0
        finally:
            await nc.close()
    return asyncio.run(check())


@pytest.mark.slow  # a cluster of its own, killed and restarted (27 s); make test: test_outages' aggregator restart
def test_a_restarted_aggregator_rebuilds_the_run_from_the_streams(tmp_path, capsys):
    data = generate_mask_dataset(tmp_path / "data", 12)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--sbin", "120", "-qm", "Purpose==['add']",
                 "Purpose==['clone']"]
    assert main(["mask", *arguments, "-oR", str(tmp_path / "embedded" / "x")]) == 0
    path = tmp_path / "cluster" / "cluster.json"
    config = commands.up(path)
    try:
        by_service = {p.get("service"): p for p in config.processes}
        scorer, aggregator = by_service["mask-scorer"], by_service["aggregator"]
        stop(scorer)  # jobs wait in the queue

        args = build_parser().parse_args(["mask", *arguments, "-oR", "x"])
        task, options = tasks.get(args.task_name), args.task_options(args).options
        files, tables = run_inputs(task, options)
        run_id = upload_run(config, files)
        prefix = input_prefix(run_id)
        inputs = task.inputs(options)
        spec = runs_pb2.RunSpec(task=task.name, options=encode(relocated(options, inputs, {n: n for n in inputs.roots})),
                                tables=tables, input_prefix=prefix, output_name="x", run_id=run_id)
        with config.channel() as channel:
            stub = services_pb2_grpc.AggregatorServiceStub(channel)
            stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=30)
            planned = wait_for(lambda: (s := stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run).state
                               == State.RUN_STATE_SCORING and s, "the run to be planned")
        assert planned.trials_planned > 0 and planned.trials_received == 0
        stop(aggregator, signal.SIGKILL)
        restart_after_the_queue_drains(config, path, scorer, aggregator)
        done = wait_for_the_end(config, run_id)
        assert done.state == State.RUN_STATE_DONE, done.message
        assert done.trials_received == planned.trials_planned
        capsys.readouterr()
        assert main(["report", "--cluster", str(path), run_id, "-o", str(tmp_path / "fetched")]) == 0
        assert tree(tmp_path / "fetched") == tree(tmp_path / "embedded")
    finally:
        commands.down(path)
