"""What issue 17 says must keep holding, against real processes (nats-server, SeaweedFS, every service, `mfscore submit`),
after this session changed the worker's retry policy, the job subjects, NATS users and permissions, gRPC
authentication and retention: a mask scorer SIGKILLed mid-run, NATS SIGKILLed and started again mid-run, two runs
submitted at once, and duplicate, unplanned and conflicting records. Each ends as the embedded command does, or
(a conflicting record) fails the run with one sentence. Run with -s to see the figures docs/reliability.md quotes."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError

from integration.equivalence import tree, without_created
from mfscore.services.local.faulty_proxy import FaultyProxy
from integration.test_outages import (
    ENDED,
    State,
    embedded,
    figures,
    freeze_while_reporting,
    get_run,
    kill,
    mask_arguments,
    on_nats,
    process,
    restart,
    restart_nats,
    runs,
    start_submit,
    trials_reported,
    wait_for,
)
from integration.test_s3_outage import replace_through
from mfscore.records import Problem, encode_outcome
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.common.messages import job_key, outcome
from mfscore.services.common.subjects import JOBS_STREAM, MSG_ID_HEADER, RESULTS_STREAM, job_id, result_subject
from mfscore.services.wire import records_pb2, runs_pb2, services_pb2_grpc
from mfscore.tasks import get as get_task

pytestmark = pytest.mark.integration
SHORT_ACK_WAIT = 5  # seconds; MFSCORE_ACK_WAIT is 10 by default
S3_OUTAGE_SECONDS = 4.0  # long enough for the object store's own four attempts to fail


@pytest.fixture
def own_cluster(tmp_path, monkeypatch):
    """``own_cluster(ack_wait=5)``: a local cluster of the test's own (it kills and restarts its processes) whose
    services run with ``MFSCORE_ACK_WAIT`` (None: the default). The variable reaches them, and a service started
    again with ``start_service``, through the environment ``start_service`` passes on. Always stopped."""
    started: list[Path] = []

    def up(ack_wait: int | None = None, **options) -> tuple[Path, ClusterConfig]:
        if ack_wait is None:
            monkeypatch.delenv("MFSCORE_ACK_WAIT", raising=False)
        else:
            monkeypatch.setenv("MFSCORE_ACK_WAIT", str(ack_wait))
        path = tmp_path / "cluster" / "cluster.json"
        started.append(path)
        return path, commands.up(path, **options)

    try:
        yield up
    finally:
        for path in started:
            if path.exists():
                commands.down(path)


def new_run(config: ClusterConfig, known: set[str]) -> runs_pb2.RunStatus:
    """The first run of the cluster not in ``known``."""
    return wait_for(lambda: next((r for r in runs(config) if r.run_id not in known), None), "the run to be submitted")


def once_received(config: ClusterConfig, run_id: str, at_least: int) -> runs_pb2.RunStatus:
    """Follow the run (``WatchRun``) until it is SCORING with ``at_least`` of its trials in, or it ended; its status
    then. (Records fold while the aggregator still publishes a run's jobs, when it says VALIDATING.)"""
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for status in (r.run for r in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=300)):
            scoring = status.state == State.RUN_STATE_SCORING
            if (scoring and status.trials_received >= at_least) or status.state in ENDED:
                return status
    raise AssertionError(f"run {run_id}'s watch ended before it did")


def received_while_publishing(config: ClusterConfig, run_id: str, at_least: int) -> runs_pb2.RunStatus:
    """Follow the run until ``at_least`` of its trials are in, while its jobs are still published (VALIDATING: a
    fast scorer may score all but the last by then) or once they are (SCORING), or until it ended; its status then."""
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for status in (r.run for r in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=300)):
            if status.trials_received >= at_least or status.state in ENDED:
                return status
    raise AssertionError(f"run {run_id}'s watch ended before it did")


def mask_consumer(config: ClusterConfig):
    """The ``mask-scorers`` consumer's info, read as the observer (None until a scorer made it)."""
    async def info(nc, js):
        try:
            return await js.consumer_info(JOBS_STREAM, "mask-scorers")
        except NotFoundError:
            return None
    return on_nats(config, info, role="observer")


def kill_mid_run(config: ClusterConfig, victim: dict) -> tuple[runs_pb2.RunStatus, runs_pb2.RunStatus, float]:
    """SIGKILL ``victim`` once the new run has 3 records in and still scores: the run, its status then, and when."""
    run = new_run(config, set())
    at_kill = once_received(config, run.run_id, 3)
    kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    assert at_kill.state == State.RUN_STATE_SCORING and 0 < at_kill.trials_received < at_kill.trials_planned
    return run, at_kill, killed


def done_as_embedded(config: ClusterConfig, run_id: str, tmp_path: Path, stdout: Path, stderr: Path,
                     said: tuple[str, str]) -> runs_pb2.RunStatus:
    """The run's final status, after checking it is DONE with every trial in and ``mfscore submit`` wrote what the
    embedded command did (into ``tmp_path / "submitted"``)."""
    done = get_run(config, run_id)
    assert done.state == State.RUN_STATE_DONE and done.trials_received == done.trials_planned, done.message
    same_as_embedded(tmp_path, tmp_path / "submitted", stdout, stderr, said)
    return done


def same_as_embedded(tmp_path: Path, out_dir: Path, stdout: Path, stderr: Path, said: tuple[str, str]) -> None:
    """``mfscore submit``'s files, stdout and stderr are the embedded command's."""
    assert tree(out_dir) == tree(tmp_path / "embedded")
    assert stdout.read_text().replace(str(out_dir), str(tmp_path / "embedded")) == said[0]
    assert without_created(stderr.read_text()) == said[1]


@pytest.mark.slow  # a cluster of its own and an ack wait to sit out (22 s); make test: test_jobstream_worker's redelivery
def test_a_sigkilled_scorers_jobs_are_scored_by_another_after_the_ack_wait(tmp_path, capsys, own_cluster):
    """The only mask scorer is SIGKILLed with jobs in hand, some records in and some jobs queued; another scorer
    started in its place takes the queued jobs at once and the killed one's after the ack wait (JetStream redelivers
    them: nothing is lost), and no other job is delivered twice (heartbeats keep a live scorer's jobs its own)."""
    path, config = own_cluster(ack_wait=SHORT_ACK_WAIT)
    consumer = wait_for(lambda: mask_consumer(config), "the scorer to make its consumer", timeout=30)
    assert consumer.config.ack_wait == SHORT_ACK_WAIT  # the environment reached the scorer
    data = generate_mask_dataset(tmp_path / "data", 40)
    arguments = mask_arguments(data)
    said = embedded(tmp_path, arguments, capsys)
    scorer = process(config, "mask-scorer")
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        run, at_kill, killed = kill_mid_run(config, scorer)
        time.sleep(0.5)  # the server notices the closed connection
        held = mask_consumer(config).num_ack_pending  # jobs delivered to the dead scorer, never acked
        assert held >= 1, "the scorer held no job when it was killed: no evidence of a redelivery"
        again = restart(path, config, scorer)
        assert submit.wait(timeout=300) == 0, stderr.read_text()
        recovered = time.monotonic() - killed
    finally:
        if submit.poll() is None:
            submit.kill()
    done = done_as_embedded(config, run.run_id, tmp_path, stdout, stderr, said)
    assert done.trials_dead == 0
    consumer = mask_consumer(config)
    redelivered = consumer.delivered.consumer_seq - done.jobs_planned
    assert redelivered == held, f"{redelivered} redeliveries, {held} jobs held by the killed scorer"
    assert recovered >= SHORT_ACK_WAIT * 2 / 3  # the held jobs waited out the ack wait (less a heartbeat's interval)
    assert "heartbeat failed" not in Path(again["log"]).read_text()
    figures("SIGKILLed mask scorer", trials_planned=done.trials_planned,
            trials_received_at_kill=at_kill.trials_received, jobs_held_by_the_killed_scorer=held,
            redeliveries=redelivered, trials_received=done.trials_received,
            trials_reported=trials_reported(tmp_path / "submitted"), ack_wait=SHORT_ACK_WAIT,
            seconds_from_kill_to_exit=recovered)


@pytest.mark.parametrize(("outage", "ack_wait"), [
    pytest.param(2.0, SHORT_ACK_WAIT, id="2s-ack-wait-5s"),
    pytest.param(15.0, None, id="15s-default-ack-wait", marks=pytest.mark.faults),
])
def test_nats_sigkilled_and_started_again_while_a_run_scores_ends_done(tmp_path, capsys, own_cluster, outage,
                                                                       ack_wait):
    """NATS dies (SIGKILL) with a run SCORING and comes back on the same port and store directory: the aggregator
    keeps the run, scorers wait it out (a record NATS did not take is an infrastructure failure: the job is handed
    back and scored again), and submit exits 0 with the embedded command's files. The aggregator's ordered consumer
    of records lives in the server's memory, so it is gone with it; nats-py makes it again once it has missed two
    idle heartbeats (1 s each: RESULTS_HEARTBEAT), so records flow again within seconds of NATS's return."""
    path, config = own_cluster(ack_wait=ack_wait)
    data = generate_mask_dataset(tmp_path / "data", 30)
    arguments = mask_arguments(data)
    said = embedded(tmp_path, arguments, capsys)
    nats = process(config, "nats-server")
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        run, at_kill, killed = kill_mid_run(config, nats)
        time.sleep(max(0.0, outage - (time.monotonic() - killed)))
        during = get_run(config, run.run_id)  # the aggregator answers from memory meanwhile
        assert during.state == State.RUN_STATE_SCORING and submit.poll() is None
        restart_nats(path, config)
        back = time.monotonic()
        assert submit.wait(timeout=300) == 0, stderr.read_text()
        recovered = time.monotonic() - back
    finally:
        if submit.poll() is None:
            submit.kill()
    done = done_as_embedded(config, run.run_id, tmp_path, stdout, stderr, said)
    assert done.trials_dead == 0
    figures(f"NATS SIGKILLed for {outage:g} s while scoring", trials_planned=done.trials_planned,
            trials_received_at_kill=at_kill.trials_received, trials_received_when_back=during.trials_received,
            trials_received=done.trials_received, trials_reported=trials_reported(tmp_path / "submitted"),
            ack_wait=ack_wait or 60, seconds_nats_down=back - killed, seconds_from_nats_back_to_exit=recovered)


def test_the_object_store_stopped_and_started_again_while_a_run_scores_ends_done(tmp_path, capsys, own_cluster):
    """The object store (SeaweedFS) is stopped with a run SCORING and started again on its port and data directory
    (``local_cluster.restart_store``): what was stored before (the run's inputs, the records so far) is still there,
    the services wait out the gap, and submit exits 0 with the embedded command's files."""
    path, config = own_cluster()
    data = generate_mask_dataset(tmp_path / "data", 40)
    arguments = mask_arguments(data)
    said = embedded(tmp_path, arguments, capsys)
    store = process(config, "seaweedfs")
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        run = new_run(config, set())
        at_stop = once_received(config, run.run_id, 3)
        assert at_stop.state == State.RUN_STATE_SCORING and 0 < at_stop.trials_received < at_stop.trials_planned
        stopped = time.monotonic()
        config = commands.restart_store(path)
        back = time.monotonic()
        assert process(config, "seaweedfs")["pid"] != store["pid"] and not commands.pid_alive(store["pid"])
        assert submit.wait(timeout=300) == 0, stderr.read_text()
        recovered = time.monotonic() - back
    finally:
        if submit.poll() is None:
            submit.kill()
    done = done_as_embedded(config, run.run_id, tmp_path, stdout, stderr, said)
    assert done.trials_dead == 0
    figures("the object store stopped and started again while scoring", trials_planned=done.trials_planned,
            trials_received_at_stop=at_stop.trials_received, trials_reported=trials_reported(tmp_path / "submitted"),
            seconds_store_down=back - stopped, seconds_from_store_back_to_exit=recovered)


def test_two_runs_submitted_at_once_each_end_as_their_embedded_run(tmp_path, capsys, local_cluster):
    path, config = local_cluster
    small = generate_mask_dataset(tmp_path / "small", 24, seed=7)
    large = generate_mask_dataset(tmp_path / "large", 36)
    cases = {"a": mask_arguments(small),
             "b": ["--refDir", str(large.directory), "-r", large.reference, "-x", large.index, "--sysDir",
                   str(large.directory), "-s", large.system, "--sbin", "64", "--eks", "5"]}
    said = {}
    for name, arguments in cases.items():
        said[name] = embedded(tmp_path / name, arguments, capsys)
    known = {r.run_id for r in runs(config)}
    together: list[int] = []  # how many of the new runs were under way, at each look

    def follow(stop: threading.Event) -> None:
        while not stop.is_set():
            mine = [r for r in runs(config) if r.run_id not in known]
            together.append(sum(r.state not in ENDED for r in mine))
            time.sleep(0.05)

    stop = threading.Event()
    follower = threading.Thread(target=follow, args=(stop,), daemon=True)
    started = time.monotonic()
    submits = {name: start_submit(path, arguments, tmp_path / name / "submitted") for name, arguments in cases.items()}
    follower.start()
    try:
        for name, (submit, _, stderr) in submits.items():
            assert submit.wait(timeout=300) == 0, stderr.read_text()
        took = time.monotonic() - started
    finally:
        stop.set()
        for submit, _, _ in submits.values():
            if submit.poll() is None:
                submit.kill()
    follower.join(timeout=10)
    mine = [r for r in runs(config) if r.run_id not in known]
    assert len(mine) == 2 and all(r.state == State.RUN_STATE_DONE for r in mine), [r.message for r in mine]
    assert all(r.trials_received == r.trials_planned for r in mine)
    assert max(together) == 2, "the runs were never under way together"
    for name, (_, stdout, stderr) in submits.items():
        same_as_embedded(tmp_path / name, tmp_path / name / "submitted", stdout, stderr, said[name])
    figures("two runs at once", trials_planned=sorted(r.trials_planned for r in mine),
            trials_received=sorted(r.trials_received for r in mine),
            trials_reported=sorted(trials_reported(tmp_path / name / "submitted") for name in cases),
            seconds_both_submits=took)


def first_record(config: ClusterConfig, run_id: str):
    """A record the scorer published for the run, read from the results stream (as the aggregator, whose role may
    replay it): (TrialRecord, its message id)."""
    async def read(nc, js):
        sub = await js.subscribe(result_subject(run_id), stream=RESULTS_STREAM, ordered_consumer=True,
                                 deliver_policy=DeliverPolicy.ALL)
        try:
            msg = await sub.next_msg(timeout=10)
        finally:
            await sub.unsubscribe()
        return records_pb2.TrialRecord.FromString(msg.data), msg.headers[MSG_ID_HEADER]
    return on_nats(config, read)


def publish_as_scorer(config: ClusterConfig, records: list[tuple[records_pb2.TrialRecord, str]]) -> list[bool]:
    """Publish each record with its message id as the scorers' NATS user; whether JetStream dropped each as a
    duplicate."""
    async def publish(nc, js):
        acks = [await js.publish(result_subject(record.run_id), record.SerializeToString(),
                                 headers={MSG_ID_HEADER: msg_id}) for record, msg_id in records]
        return [bool(ack.duplicate) for ack in acks]
    return on_nats(config, publish, role="scorer")


def stable_status(config: ClusterConfig, run_id: str, quiet: float = 0.5) -> runs_pb2.RunStatus:
    """The run's status once its received count has not moved for ``quiet`` seconds (records already sent land)."""
    last, since = None, time.monotonic()
    while True:
        status = get_run(config, run_id)
        if last is None or status.trials_received != last.trials_received:
            last, since = status, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return status
        time.sleep(0.05)


class Frozen:
    """The cluster's mask scorer stopped (SIGSTOP) once the run has ``at_least`` records in, so the run stays
    SCORING while the test publishes; always let go (SIGCONT)."""

    def __init__(self, config: ClusterConfig, run_id: str, at_least: int = 2):
        self.config, self.run_id, self.at_least = config, run_id, at_least
        self.scorer = process(config, "mask-scorer")

    def __enter__(self) -> runs_pb2.RunStatus:
        try:
            status = received_while_publishing(self.config, self.run_id, self.at_least)
            os.kill(self.scorer["pid"], signal.SIGSTOP)
            assert status.state not in ENDED, "the run ended before the scorer could be stopped"
            status = wait_for(lambda: (s := get_run(self.config, self.run_id)).state != State.RUN_STATE_VALIDATING
                              and s, "the run's jobs to be published", timeout=60)
            assert status.state == State.RUN_STATE_SCORING, "the run ended before the scorer could be stopped"
            return stable_status(self.config, self.run_id)
        except BaseException:
            os.kill(self.scorer["pid"], signal.SIGCONT)
            raise

    def __exit__(self, *exc) -> None:
        os.kill(self.scorer["pid"], signal.SIGCONT)


def aggregator_says(config: ClusterConfig, text: str) -> bool:
    return text in Path(process(config, "aggregator")["log"]).read_text()


def test_duplicate_and_unplanned_records_leave_the_run_unchanged(tmp_path, capsys, local_cluster):
    """A second copy of a record the scorer published, under its message id (JetStream drops it) and under another
    (the aggregator folds it: the fold is idempotent), and a record for a key the run did not plan (dropped): the run
    counts each trial once and its files are the embedded command's."""
    path, config = local_cluster
    data = generate_mask_dataset(tmp_path / "data", 40, seed=11)
    arguments = mask_arguments(data)
    said = embedded(tmp_path, arguments, capsys)
    known = {r.run_id for r in runs(config)}
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        run = new_run(config, known)
        with Frozen(config, run.run_id) as before:
            record, msg_id = first_record(config, run.run_id)
            assert msg_id == job_id(record) and record.scorer and not record.error
            unplanned = records_pb2.TrialRecord()
            unplanned.CopyFrom(record)
            unplanned.key.ordinal = 10**6
            dropped = publish_as_scorer(config, [(record, msg_id), (record, f"{msg_id}/copy-{uuid.uuid4().hex[:6]}"),
                                                 (unplanned, job_id(unplanned))])
            assert dropped == [True, False, False]  # the same id: JetStream drops it; the others reach the aggregator
            wait_for(lambda: aggregator_says(config, f"run {run.run_id}: dropped a mask record for the unplanned job "
                                                     f"{job_key(unplanned.key)}"), "the unplanned record to be dropped",
                     timeout=30)  # the aggregator folds in order: the copy before it
            after = get_run(config, run.run_id)
            assert (after.state, after.trials_received, after.trials_dead) == (State.RUN_STATE_SCORING,
                                                                               before.trials_received, 0)
        assert submit.wait(timeout=300) == 0, stderr.read_text()
    finally:
        if submit.poll() is None:
            submit.kill()
    done = done_as_embedded(config, run.run_id, tmp_path, stdout, stderr, said)
    figures("duplicate and unplanned records", trials_planned=done.trials_planned,
            trials_received_when_published=before.trials_received, records_published=len(dropped),
            dropped_by_jetstream=sum(dropped), trials_received=done.trials_received,
            trials_reported=trials_reported(tmp_path / "submitted"))


def conflicting(record: records_pb2.TrialRecord) -> records_pb2.TrialRecord:
    """The record with another outcome for the same key."""
    task = get_task(record.task)
    value = outcome(task, record)
    if isinstance(value, Problem):
        value = dataclasses.replace(value, message=value.message + " (another outcome)")
    else:
        value = dataclasses.replace(value, region_pixels=value.region_pixels + 1)
    other = records_pb2.TrialRecord()
    other.CopyFrom(record)
    other.outcome = encode_outcome(value)
    assert other.outcome != record.outcome
    return other


def test_a_conflicting_record_fails_the_run_with_one_sentence(tmp_path, local_cluster):
    """Another outcome for a key the run already has (a scorer's bug, or a forger with the scorers' password): the
    aggregator cannot tell which is right, so the run fails, naming the job; no report is written."""
    path, config = local_cluster
    arguments = mask_arguments(generate_mask_dataset(tmp_path / "data", 40, seed=13))
    known = {r.run_id for r in runs(config)}
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        run = new_run(config, known)
        with Frozen(config, run.run_id) as before:
            record, msg_id = first_record(config, run.run_id)
            assert publish_as_scorer(config, [(conflicting(record), f"{msg_id}/other")]) == [False]
            failed = wait_for(lambda: (s := get_run(config, run.run_id)).state in ENDED and s, "the run to end", 30)
        assert submit.wait(timeout=120) == 1
    finally:
        if submit.poll() is None:
            submit.kill()
    sentence = f"two different records arrived for the job {job_key(record.key)}"
    assert failed.state == State.RUN_STATE_FAILED and failed.message == sentence
    assert failed.trials_received == before.trials_received and failed.trials_dead == 0
    assert stderr.read_text() == f"mfscore: run {run.run_id} created\nmfscore: error: run {run.run_id} failed: {sentence}\n"
    assert stdout.read_text() == "" and not any((tmp_path / "submitted").rglob("*.csv"))
    figures("conflicting record", trials_planned=failed.trials_planned,
            trials_received_when_published=before.trials_received, trials_received=failed.trials_received)



REPORT_S3_STEPS = ("reading the digests of its uploads", "fetching the files its report reads", "storing its reports")


@pytest.mark.faults  # about 25 s; make test has the S3 outage of one job (test_s3_outage.py)
def test_s3_down_while_validating_and_while_reporting_is_waited_out(tmp_path, capsys, cluster):
    """S3 refuses the validator (through a proxy of its own) while a run is validated, then the aggregator (through
    another) while it reports (reads its uploads' digests, fetches, stores): each waits for S3 (the validator answers UNAVAILABLE, not a rejection;
    the aggregator asks again) and the run ends DONE with the embedded command's files. The aggregator's S3 stays
    up while the run's inputs are uploaded through it."""
    path, config = cluster
    s3 = ("127.0.0.1", int(config.s3_endpoint.rsplit(":", 1)[1]))
    validators, proxy = FaultyProxy(s3), FaultyProxy(s3)
    try:
        replace_through(config, validators, ("validator",))
        replace_through(config, proxy, ("aggregator",))
        config.write(path)  # so 'down' stops the replacements too
        data = generate_mask_dataset(tmp_path / "data", 24)
        arguments = mask_arguments(data)
        said = embedded(tmp_path, arguments, capsys)
        validators.refuse()
        submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
        try:
            run = wait_for(lambda: next((r for r in runs(config) if r.state == State.RUN_STATE_VALIDATING), None),
                           "the run to be submitted")
            time.sleep(S3_OUTAGE_SECONDS)
            during_validation = get_run(config, run.run_id)
            assert during_validation.state == State.RUN_STATE_VALIDATING and submit.poll() is None
            validators.accept()
            aggregator = process(config, "aggregator")
            if freeze_while_reporting(config, aggregator, run.run_id):
                proxy.refuse()
                os.kill(aggregator["pid"], signal.SIGCONT)
                time.sleep(S3_OUTAGE_SECONDS)
                during_reporting = get_run(config, run.run_id)
                assert during_reporting.state == State.RUN_STATE_REPORTING and submit.poll() is None
                proxy.accept()
            else:  # the run ended before the aggregator could be stopped: the reporting outage was not tried
                os.kill(aggregator["pid"], signal.SIGCONT)
                pytest.fail("the run was not caught while REPORTING")
            back = time.monotonic()
            assert submit.wait(timeout=300) == 0, stderr.read_text()
            recovered = time.monotonic() - back
        finally:
            if submit.poll() is None:
                submit.kill()
    finally:
        validators.close()
        proxy.close()
    done = done_as_embedded(config, run.run_id, tmp_path, stdout, stderr, said)
    log = Path(process(config, "aggregator")["log"]).read_text()
    assert f"run {run.run_id}: validating: waiting" in log
    # the outage meets whichever of the report's S3 steps the aggregator was stopped before (timing decides)
    assert any(f"run {run.run_id}: {step}: waiting" in log for step in REPORT_S3_STEPS), log[-3000:]
    figures("S3 down while validating, then while reporting", trials_planned=done.trials_planned,
            trials_received=done.trials_received, trials_reported=trials_reported(tmp_path / "submitted"),
            seconds_down_each=S3_OUTAGE_SECONDS, seconds_from_s3_back_to_exit=recovered)
