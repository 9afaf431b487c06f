"""S3 refusing connections while scorers work (issue 17): a real nats-server, a real S3 server (SeaweedFS) behind a proxy
that can refuse connections, and the scorer pool's own job scorer. A job waits out an outage and scores as without
one; an outage longer than the retry budget, or an input no retry can fix, dead-letters it and the run counts it."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from integration.equivalence import without_created
from mfscore.services.local.faulty_proxy import FaultyProxy
from integration.uploads import stored
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.aggregator.run import Run
from mfscore.services.aggregator.service import Aggregator
from mfscore.services.common.job_worker import JobWorker
from mfscore.services.common.messages import job_key, outcome
from mfscore.services.common.metrics import REGISTRIES
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.scorer_pool import JobScorer
from mfscore.services.common.streams import publish_job, runs_bucket
from mfscore.services.common.subjects import DEAD_STREAM, ERROR_HEADER, JOBS_STREAM, RESULTS_STREAM
from mfscore.services.wire import records_pb2, runs_pb2

pytestmark = pytest.mark.integration
OUTAGE_SECONDS = 8.0
MAX_DELIVER = 3


@pytest.fixture
def proxy(s3_server):
    proxy = FaultyProxy(("127.0.0.1", s3_server.port))
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def mask_run(cluster_settings, tmp_path):
    data = generate_mask_dataset(tmp_path / "data", 4)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--sbin", "120", "-oR", "unused/x"]
    return stored(cluster_settings, "mask", arguments)


def scored_job(run):
    """The run's first job with both a reference and a system mask: its fetch reads two objects."""
    return next(job for job in run.plan.jobs if all(run.task.blobs(job.work).values()))


def outcomes(service: str) -> dict[str, float]:
    """The service's jobs settled by outcome, over every task."""
    samples = [s for family in REGISTRIES["scorer"].collect() for s in family.samples
               if s.name == "mfscore_jobs_total" and s.labels["service"] == service]
    return {name: sum(s.value for s in samples if s.labels["outcome"] == name) for name in ("done", "retried", "dead")}


async def messages(js, stream: str) -> list:
    info = await js.stream_info(stream)
    if info.state.messages == 0:
        return []
    return [await js.get_msg(stream, seq) for seq in range(info.state.first_seq, info.state.last_seq + 1)]


async def work_one(js, settings, message, *, on_call=None, timeout: float = 60.0, **overrides):
    """Publish ``message`` and run a mask worker with the pool's job scorer on ``settings`` until the job's record
    (or its error record) is published; (result message, handler call times, worker)."""
    os.makedirs(settings.work_dir, exist_ok=True)
    scorer = JobScorer(ObjectStore(settings), settings.work_dir, "mask-scorer")
    calls: list[float] = []

    async def handle(job):
        calls.append(time.monotonic())
        if on_call is not None:
            on_call(len(calls))
        return await scorer(job)

    await publish_job(js, "mask", message)
    options = dict(ack_wait=10, max_deliver=MAX_DELIVER, shutdown_grace_seconds=5, fetch_timeout_seconds=0.2,
                   retry_delay_seconds=0.25, retry_delay_max_seconds=2.0, retry_budget_seconds=60)
    worker = JobWorker(js, kind="mask", service=f"outage-{uuid.uuid4().hex[:8]}", handle=handle,
                       **{**options, **overrides})
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        deadline = time.monotonic() + timeout
        while (await js.stream_info(RESULTS_STREAM)).state.messages == 0:
            assert time.monotonic() < deadline, "no record within the time allowed"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
    [result] = await messages(js, RESULTS_STREAM)
    return result, calls, worker


def test_a_job_waits_out_an_s3_outage_and_scores_as_without_it(jetstream, cluster_settings, proxy, mask_run):
    via_proxy = dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint)
    planned = scored_job(mask_run)
    message = mask_run.wire(planned)
    outage: dict[str, float] = {}

    def s3_goes_down(call: int) -> None:
        if call == 1:  # as the job's fetch begins
            proxy.refuse()
            outage["from"] = time.monotonic()
            # the end is noted before S3 is back, so no call can succeed before it, however late this thread runs
            threading.Timer(OUTAGE_SECONDS, lambda: (outage.setdefault("to", time.monotonic()), proxy.accept())).start()

    async def scenario():
        async with jetstream() as (_, js):
            baseline, calls, _ = await work_one(js, via_proxy, message)
            assert len(calls) == 1
        async with jetstream() as (_, js):
            result, calls, worker = await work_one(js, via_proxy, message, on_call=s3_goes_down)
            consumer = await js.consumer_info(JOBS_STREAM, "mask-scorers")
            dead = (await js.stream_info(DEAD_STREAM)).state.messages
        return baseline, result, calls, worker, consumer, dead

    baseline, result, calls, worker, consumer, dead = asyncio.run(scenario())
    expected = records_pb2.TrialRecord.FromString(baseline.data)
    record = records_pb2.TrialRecord.FromString(result.data)
    assert record == expected and not record.error
    assert outcome(mask_run.task, record).status == "scored"
    assert dead == 0
    assert len(calls) > MAX_DELIVER, "the outage ended before the job had failed max_deliver times: no evidence"
    assert consumer.delivered.consumer_seq == len(calls)
    assert outcomes(worker.service) == {"done": 1, "retried": len(calls) - 1, "dead": 0}
    assert calls[-1] >= outage["to"] - 0.1  # scored only once S3 was back
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    assert max(gaps) >= 1.5 * gaps[0], f"the retries did not back off: {gaps}"


def test_an_outage_longer_than_the_retry_budget_dead_letters_the_job_saying_so(jetstream, cluster_settings, proxy,
                                                                                mask_run):
    via_proxy = dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint)
    message = mask_run.wire(scored_job(mask_run))
    proxy.refuse()

    async def scenario():
        async with jetstream() as (_, js):
            result, calls, worker = await work_one(js, via_proxy, message, retry_budget_seconds=4,
                                                   retry_delay_seconds=0.2, retry_delay_max_seconds=0.5)
            [dead] = await messages(js, DEAD_STREAM)
        return result, calls, worker, dead

    result, calls, worker, dead = asyncio.run(scenario())
    record = records_pb2.TrialRecord.FromString(result.data)
    assert re.fullmatch(r"gave up after \d+ s of retrying: the retry budget of 4 s \(MFSCORE_RETRY_BUDGET\) is spent; "
                        rf"the last failure: S3 at http://{re.escape(proxy.endpoint)} failed get of '\S+' 4 times: .+",
                        record.error), record.error
    assert dead.headers[ERROR_HEADER] == record.error and record.outcome == b""
    assert len(calls) > MAX_DELIVER  # outage failures never count against max_deliver
    assert 3 <= calls[-1] - calls[0] < 30
    assert outcomes(worker.service) == {"done": 0, "retried": len(calls) - 1, "dead": 1}


def test_a_poison_job_dead_letters_after_max_deliver_attempts_and_its_run_counts_it_dead(jetstream, cluster_settings,
                                                                                         proxy, mask_run):
    via_proxy = dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint)
    planned = scored_job(mask_run)
    message = mask_run.wire(planned)
    message.work = b'{"reference": 7}'  # not a mask job's work: no retry can fix it

    async def scenario():
        async with jetstream() as (_, js):
            result, calls, worker = await work_one(js, via_proxy, message)
            [dead] = await messages(js, DEAD_STREAM)
            kv = await runs_bucket(js, cluster_settings)
            aggregator = Aggregator(cluster_settings, ObjectStore(cluster_settings), js, kv, validator=None)
            run_id = mask_run.run_id
            entry = Run(mask_run.spec(run_id=run_id),
                        runs_pb2.RunStatus(run_id=run_id, task="mask", state=runs_pb2.RUN_STATE_SCORING), new=False)
            entry.hold_plan(mask_run.task, mask_run.plan)
            aggregator.runs[run_id] = entry
            await aggregator.on_result(result)
            stored = runs_pb2.RunStatus.FromString((await kv.get(f"status.{run_id}")).value)
        return result, calls, worker, dead, entry.status, stored

    result, calls, worker, dead, status, stored = asyncio.run(scenario())
    record = records_pb2.TrialRecord.FromString(result.data)
    assert len(calls) == MAX_DELIVER
    assert record.error.startswith(f"failed on attempt {MAX_DELIVER} of {MAX_DELIVER}: TypeError: ")
    assert dead.headers[ERROR_HEADER] == record.error and job_key(record.key) == planned.key
    assert outcomes(worker.service) == {"done": 0, "retried": MAX_DELIVER - 1, "dead": 1}
    for run in (status, stored):
        assert (run.state, run.trials_dead, run.trials_received) == (runs_pb2.RUN_STATE_FAILED, 1, 0)
        assert run.message == f"the job {planned.key} could not be scored: {record.error}"


CLUSTER_OUTAGE_SECONDS = 30.0


class OutageDuringRun(threading.Thread):
    """Once a new run has some records in, S3 refuses connections for ``seconds``; then the run is followed to its
    end. Figures: trials received when S3 went down and came back, and how long the run took to recover."""

    def __init__(self, config, proxy: FaultyProxy, seconds: float, known_runs: set[str], timeout: float = 600.0):
        super().__init__(daemon=True)
        self.config, self.proxy, self.seconds, self.known, self.timeout = config, proxy, seconds, known_runs, timeout
        self.figures: dict[str, float] = {}
        self.final: runs_pb2.RunStatus | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        from mfscore.services.wire import services_pb2_grpc

        try:
            with self.config.channel() as channel:
                self._follow(services_pb2_grpc.AggregatorServiceStub(channel))
        except BaseException as failure:  # the test thread reports it
            self.failure = failure
            self.proxy.accept()

    def _follow(self, stub) -> None:
        deadline = time.monotonic() + self.timeout

        def status() -> runs_pb2.RunStatus:
            assert time.monotonic() < deadline, "the run did not finish in time"
            runs = [r for r in stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=10).runs if r.run_id not in self.known]
            return runs[0] if runs else runs_pb2.RunStatus()

        while (now := status()).trials_received < 3:
            assert now.state not in (runs_pb2.RUN_STATE_DONE, runs_pb2.RUN_STATE_FAILED), "the run ended too soon"
            time.sleep(0.02)
        self.proxy.refuse()
        down = time.monotonic()
        self.figures.update(planned=now.trials_planned, received_at_outage_start=now.trials_received)
        time.sleep(self.seconds)
        self.figures["received_at_outage_end"] = status().trials_received
        self.proxy.accept()
        up = time.monotonic()
        self.figures["outage_seconds"] = up - down
        while (now := status()).trials_received <= self.figures["received_at_outage_end"]:
            time.sleep(0.05)
        self.figures["first_record_after_seconds"] = time.monotonic() - up
        while (now := status()).state not in (runs_pb2.RUN_STATE_DONE, runs_pb2.RUN_STATE_FAILED):
            time.sleep(0.05)
        self.figures["done_after_seconds"] = time.monotonic() - up
        self.final = now


def replace_through(config, proxy: FaultyProxy, services: tuple[str, ...]) -> None:
    """Restart the cluster's ``services`` (same ports) with S3 reached through ``proxy``."""
    from mfscore.services.commands import local_cluster as commands

    proxied = dataclasses.replace(config, s3_endpoint=f"http://{proxy.endpoint}")
    for process in [p for p in config.processes if p.get("service") in services]:
        os.kill(process["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 60
        while commands.pid_alive(process["pid"]):
            assert time.monotonic() < deadline, f"{process['name']} did not stop"
            time.sleep(0.1)
        again = commands.start_service(proxied, Path(config.state_dir), f"{process['name']}-via-proxy",
                                       process["service"], process["grpc_port"])
        config.processes.append(again)
        commands.wait_healthy(again)


@pytest.mark.faults
def test_a_run_through_a_30_s_s3_outage_writes_the_reports_of_a_run_without_one(tmp_path, capsys):
    """The issue's case: S3 refuses connections for 30 s in the middle of a run (aggregator and scorer reach it
    through the proxy). The run finishes DONE, nothing dead, with the files and lines of the same run without
    an outage."""
    from output_files import tree

    from mfscore.cli.main import main
    from mfscore.services.commands import local_cluster as commands

    data = generate_mask_dataset(tmp_path / "data", 60)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--sbin", "120"]
    path = tmp_path / "cluster" / "cluster.json"
    config = commands.up(path)
    proxy = None
    try:
        s3_port = int(config.s3_endpoint.rsplit(":", 1)[1])
        proxy = FaultyProxy(("127.0.0.1", s3_port))
        replace_through(config, proxy, ("aggregator", "mask-scorer"))
        config.write(path)
        submit = ["submit", "--cluster", str(path), "mask", *arguments, "-oR"]
        capsys.readouterr()
        started = time.monotonic()
        assert main([*submit, str(tmp_path / "without" / "x")]) == 0
        took_without = time.monotonic() - started
        without = capsys.readouterr()
        with config.channel() as channel:
            from mfscore.services.wire import services_pb2_grpc
            known = {r.run_id for r in services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(
                runs_pb2.ListRunsRequest(), timeout=10).runs}
        outage = OutageDuringRun(config, proxy, CLUSTER_OUTAGE_SECONDS, known)
        outage.start()
        started = time.monotonic()
        status = main([*submit, str(tmp_path / "with" / "x")])
        took = time.monotonic() - started
        outage.join(60)
        with_outage = capsys.readouterr()
        assert outage.failure is None, outage.failure
        assert status == 0, with_outage.err
        final, figures = outage.final, outage.figures
        assert final.state == runs_pb2.RUN_STATE_DONE and final.trials_dead == 0
        assert final.trials_received == final.trials_planned == figures["planned"]
        assert figures["received_at_outage_end"] < figures["planned"], "the run finished during the outage"
        files = tree(tmp_path / "with")
        assert files == tree(tmp_path / "without")
        assert with_outage.out.replace(str(tmp_path / "with"), str(tmp_path / "without")) == without.out
        assert without_created(with_outage.err) == without_created(without.err)
        [perimage] = [name for name in files if name.endswith("_mask_scores_perimage.csv")]
        reported = len(files[perimage].decode().splitlines()) - 1
        with capsys.disabled():
            print(f"\nS3 outage of {figures['outage_seconds']:.1f} s: trials planned {figures['planned']}, received "
                  f"{figures['received_at_outage_start']} when S3 went down and {figures['received_at_outage_end']} "
                  f"when it came back, {final.trials_received} in the end, {reported} rows reported; first record "
                  f"{figures['first_record_after_seconds']:.1f} s and run done {figures['done_after_seconds']:.1f} s "
                  f"after S3 came back; the submission took {took:.1f} s ({took_without:.1f} s without the outage)")
    finally:
        if proxy is not None:
            proxy.close()
        commands.down(path)
