"""Jobs through a real nats-server with JetStream: de-duplication, the worker's outcomes, heartbeats, shutdown,
the jobs a worker refuses (an unknown task, or a task of another resource class), infrastructure failures against
the job's own, and a run's subject (purged when the run ends)."""

from __future__ import annotations

import asyncio
import time
import uuid

import nats
import pytest
from nats.js import api

from mfscore import tasks
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.mask_scoring import MaskJob
from mfscore.records import JobKey, encode_outcome
from mfscore.services.common.job_worker import JobWorker
from mfscore.services.common.messages import job, job_key, job_message, outcome
from mfscore.services.common.metrics import REGISTRIES
from mfscore.services.common.object_store import ObjectStoreUnavailable
from mfscore.services.common.streams import publish_job, purge_run_jobs, runs_bucket
from mfscore.services.common.subjects import (
    DEAD_STREAM,
    ERROR_HEADER,
    JOBS_STREAM,
    MSG_ID_HEADER,
    RESULTS_STREAM,
    dead_subject,
    job_filter,
    job_id,
    job_kinds,
    job_subject,
    result_subject,
)
from mfscore.services.wire import jobs_pb2, records_pb2
from mfscore.tasks.base import PLANNER, Job

pytestmark = pytest.mark.integration
MASK = tasks.get("mask")


def mask_job(run_id: str, ordinal: int, role: str = "probe", query: int = 0) -> jobs_pb2.Job:
    work = MaskJob(reference_path=f"ref/{ordinal}.png", system_path=None)
    return job_message(run_id, MASK, Job(JobKey(query, role, ordinal), work), "runs/in/")


def scored(message: jobs_pb2.Job) -> records_pb2.TrialRecord:
    """A record naming the job's reference mask (so a test can tell whose record it is); the worker stamps the rest."""
    work = job(MASK, message).work
    return records_pb2.TrialRecord(outcome=encode_outcome(MaskRecord(status="scored", message=work.reference_path)))


def name(message: jobs_pb2.Job) -> str:
    return str(job_key(message.key))


async def stream_messages(js, stream: str) -> list:
    info = await js.stream_info(stream)
    if info.state.messages == 0:
        return []
    messages = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            messages.append(await js.get_msg(stream, seq))
        except Exception:
            continue
    return messages


async def stream_count(js, stream: str) -> int:
    return (await js.stream_info(stream)).state.messages


async def eventually(check, timeout: float = 10.0, interval: float = 0.05):
    """Poll the async ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(interval)


def outcomes(service: str) -> dict[str, float]:
    """The service's jobs settled by outcome, over every task."""
    samples = [s for family in REGISTRIES["scorer"].collect() for s in family.samples
               if s.name == "mfscore_jobs_total" and s.labels["service"] == service]
    return {outcome: sum(s.value for s in samples if s.labels["outcome"] == outcome)
            for outcome in ("done", "retried", "dead")}


def worker(js, handle, **overrides) -> JobWorker:
    settings = dict(
        kind="mask", service=f"mask-test-{uuid.uuid4().hex[:8]}", handle=handle, ack_wait=5, max_deliver=3,
        shutdown_grace_seconds=5, retry_delay_seconds=0.05, fetch_timeout_seconds=0.2,
    )
    settings.update(overrides)
    return JobWorker(js, **settings)


def test_publish_job_drops_a_repeated_message_id(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            job = mask_job("run1", 1)
            first = await publish_job(js, "mask", job)
            again = await publish_job(js, "mask", job)
            other = await publish_job(js, "mask", mask_job("run1", 2))
            assert (first.duplicate, again.duplicate, other.duplicate) == (None, True, None)
            assert again.seq == first.seq
            assert await stream_count(js, JOBS_STREAM) == 2
            with pytest.raises(ValueError, match="job kind 'planner' is not one of detection, mask, video, json"):
                await publish_job(js, PLANNER, job)

    asyncio.run(scenario())


def test_runs_bucket_is_created_once_and_then_bound(jetstream, cluster_settings):
    async def scenario():
        async with jetstream() as (_, js):
            kv = await runs_bucket(js, cluster_settings)
            await kv.put("run1", b"planned")
            again = await runs_bucket(js, cluster_settings)
            assert (await again.get("run1")).value == b"planned"

    asyncio.run(scenario())


def test_worker_publishes_each_record_keyed_then_acks_the_job(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            jobs = [mask_job("runA", n, role=role) for n in range(3) for role in ("probe", "donor")]
            for job in jobs:
                await publish_job(js, "mask", job)

            async def handle(job):
                return scored(job)

            w = worker(js, handle)
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop))
            assert await eventually(lambda: _at_least(js, RESULTS_STREAM, len(jobs)))
            stop.set()
            await asyncio.wait_for(task, 5)

            results = await stream_messages(js, RESULTS_STREAM)
            assert {m.subject for m in results} == {result_subject("runA")}
            assert sorted(m.headers[MSG_ID_HEADER] for m in results) == sorted(
                f"runA/0/{role}/{n}" for n in range(3) for role in ("probe", "donor")
            )
            for message in results:
                record = records_pb2.TrialRecord.FromString(message.data)
                assert message.headers[MSG_ID_HEADER] == job_id(record) == (
                    f"{record.run_id}/{record.key.query}/{record.key.role}/{record.key.ordinal}")
                assert (record.run_id, record.task, record.scorer, record.error) == ("runA", "mask", w.service, "")
                got = outcome(MASK, record)
                assert got.status == "scored" and got.message == f"ref/{record.key.ordinal}.png"
            assert await eventually(lambda: _exactly(js, JOBS_STREAM, 0))
            assert outcomes(w.service) == {"done": 6, "retried": 0, "dead": 0}

    asyncio.run(scenario())


async def _at_least(js, stream, n):
    return await stream_count(js, stream) >= n


async def run_until(w, condition) -> None:
    """Run the worker until ``condition()`` holds, then stop it."""
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    assert await eventually(condition)
    stop.set()
    await asyncio.wait_for(task, 5)


async def run_until_dead_lettered(js, w) -> None:
    """Run the worker until a job is dead-lettered and its error record published; a moment for a (wrong)
    redelivery to show; then stop it."""
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    assert await eventually(lambda: _at_least(js, DEAD_STREAM, 1))
    assert await eventually(lambda: _at_least(js, RESULTS_STREAM, 1))
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.wait_for(task, 5)


async def _exactly(js, stream, n):
    return await stream_count(js, stream) == n


def test_a_job_that_fails_once_is_redelivered_and_succeeds(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            await publish_job(js, "mask", mask_job("runB", 1))
            calls = []

            async def handle(job):
                calls.append(time.monotonic())
                if len(calls) == 1:
                    raise RuntimeError("transient scorer trouble")
                return scored(job)

            w = worker(js, handle, retry_delay_seconds=0.3)
            await run_until(w, lambda: _at_least(js, RESULTS_STREAM, 1))

            assert len(calls) == 2
            assert calls[1] - calls[0] >= 0.25, "the nak delay was not honoured"
            [message] = await stream_messages(js, RESULTS_STREAM)
            assert not records_pb2.TrialRecord.FromString(message.data).error
            assert await stream_count(js, DEAD_STREAM) == 0
            assert outcomes(w.service) == {"done": 1, "retried": 1, "dead": 0}

    asyncio.run(scenario())


def test_a_job_failing_every_delivery_is_dead_lettered_with_an_error_record(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            job = mask_job("runC", 7, role="donor", query=2)
            await publish_job(js, "mask", job)
            calls = []

            async def handle(job):
                calls.append(name(job))
                raise RuntimeError("mask unreadable:\nbad PNG header")

            w = worker(js, handle, max_deliver=3)
            await run_until_dead_lettered(js, w)

            assert calls == ["2/donor/7"] * 3
            [dead] = await stream_messages(js, DEAD_STREAM)
            assert dead.subject == dead_subject("mask")
            assert jobs_pb2.Job.FromString(dead.data) == job
            assert dead.headers[ERROR_HEADER] == (
                "failed on attempt 3 of 3: RuntimeError: mask unreadable: bad PNG header"
            )
            [result] = await stream_messages(js, RESULTS_STREAM)
            record = records_pb2.TrialRecord.FromString(result.data)
            assert (record.run_id, record.task, job_key(record.key)) == ("runC", "mask", JobKey(2, "donor", 7))
            assert record.error == dead.headers[ERROR_HEADER] and record.scorer == w.service
            assert record.outcome == b""
            assert result.headers[MSG_ID_HEADER] == "runC/2/donor/7"
            assert await eventually(lambda: _exactly(js, JOBS_STREAM, 0))
            assert outcomes(w.service) == {"done": 0, "retried": 2, "dead": 1}

    asyncio.run(scenario())


def test_an_unparseable_job_goes_straight_to_the_dead_letter_stream(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            await js.publish(job_subject("mask", "runJ"), b"\xff\xff\xff not a protobuf")
            calls = []

            async def handle(job):
                calls.append(job)
                return scored(job)

            w = worker(js, handle)
            assert dead_unknown(w.service) == 0.0  # exported from zero, so Prometheus' increase() sees the first
            await run_until(w, lambda: _at_least(js, DEAD_STREAM, 1))

            [dead] = await stream_messages(js, DEAD_STREAM)
            assert dead.data == b"\xff\xff\xff not a protobuf"
            assert dead.headers[ERROR_HEADER].startswith("the message is not an mfscore.v1.Job")
            assert calls == []
            assert await stream_count(js, RESULTS_STREAM) == 0
            assert outcomes(w.service)["dead"] == 1 and dead_unknown(w.service) == 1.0

    asyncio.run(scenario())


def dead_unknown(service: str) -> float | None:
    """The service's count of dead-lettered jobs of no known task, None while it exports no such series."""
    return next((s.value for family in REGISTRIES["scorer"].collect() for s in family.samples
                 if s.name == "mfscore_jobs_total" and s.labels == {"service": service, "task": "unknown",
                                                                     "outcome": "dead"}), None)


def test_job_kinds_are_the_tasks_resource_classes_with_one_subject_and_consumer_each(jetstream):
    resources = {tasks.get(n).resource for n in tasks.names()} - {PLANNER}
    assert set(job_kinds()) == resources == {"detection", "mask", "video", "json"}
    for kind in job_kinds():
        assert (job_subject(kind, "runK"), job_filter(kind), dead_subject(kind)) == (
            f"mfscore.jobs.{kind}.runK", f"mfscore.jobs.{kind}.>", f"mfscore.dead.{kind}")
    with pytest.raises(ValueError):
        job_subject(PLANNER, "runK")  # a PLANNER task's jobs are never published
    with pytest.raises(ValueError, match="not a single NATS subject token"):
        job_subject("mask", "run.K")
    message = mask_job("runK", 4, role="donor", query=1)
    assert job_id(message) == "runK/1/donor/4"
    assert job_id(records_pb2.TrialRecord(run_id="runK", key=message.key)) == job_id(message)

    async def scenario():
        async with jetstream() as (_, js):
            async def handle(job):
                return scored(job)

            for kind in job_kinds():
                w = worker(js, handle, kind=kind)
                assert w.consumer == f"{kind}-scorers"
                stop = asyncio.Event()
                stop.set()
                await asyncio.wait_for(w.run(stop), 5)
                consumer = await js.consumer_info(JOBS_STREAM, f"{kind}-scorers")
                assert consumer.config.filter_subject == job_filter(kind)
                assert consumer.config.max_deliver == -1  # the worker counts failures itself

    asyncio.run(scenario())


async def _refused(jetstream, message: jobs_pb2.Job, kind: str = "mask"):
    """Publish ``message`` on ``kind``'s subject for a ``kind`` worker: (handler calls, dead message, result
    message, the consumer's state, the worker)."""
    async with jetstream() as (_, js):
        await publish_job(js, kind, message)
        calls = []

        async def handle(job):
            calls.append(job)
            return scored(job)

        w = worker(js, handle, kind=kind, max_deliver=3)
        await run_until_dead_lettered(js, w)
        [dead] = await stream_messages(js, DEAD_STREAM)
        [result] = await stream_messages(js, RESULTS_STREAM)
        consumer = await js.consumer_info(JOBS_STREAM, f"{kind}-scorers")
        assert await eventually(lambda: _exactly(js, JOBS_STREAM, 0))
        return calls, dead, result, consumer, w


def _assert_dead_lettered_once(message, kind, calls, dead, result, consumer, w, error):
    assert calls == []
    assert consumer.delivered.consumer_seq == 1  # not retried
    assert dead.subject == dead_subject(kind) and jobs_pb2.Job.FromString(dead.data) == message
    assert dead.headers[ERROR_HEADER] == error
    record = records_pb2.TrialRecord.FromString(result.data)
    assert result.subject == result_subject(message.run_id)
    assert (record.run_id, record.task, record.key, record.scorer, record.error, record.outcome) == (
        message.run_id, message.task, message.key, w.service, error, b"")
    assert result.headers[MSG_ID_HEADER] == job_id(message)
    assert outcomes(w.service) == {"done": 0, "retried": 0, "dead": 1}


def test_a_job_naming_an_unknown_task_is_dead_lettered_not_retried(jetstream):
    message = mask_job("runU", 3, query=1)
    message.task = "no-such-task"
    calls, dead, result, consumer, w = asyncio.run(_refused(jetstream, message))
    _assert_dead_lettered_once(message, "mask", calls, dead, result, consumer, w,
                               f"the job's task 'no-such-task' is not one of {', '.join(tasks.names())}")


@pytest.mark.parametrize("task_name, kind", [("video-spatial", "mask"), ("mask", "video"), ("provenance-graph", "mask"),
                                             ("mask", "json"), ("detection", "mask")])
def test_a_job_of_another_resource_class_is_dead_lettered_not_retried(task_name, kind, jetstream):
    message = mask_job("runV", 5, role="probe")
    message.task = task_name  # the work is never decoded: the task's resource decides
    calls, dead, result, consumer, w = asyncio.run(_refused(jetstream, message, kind))
    _assert_dead_lettered_once(message, kind, calls, dead, result, consumer, w,
                               f"the {task_name} job is not {kind} work")


async def _slow_job_calls(jetstream, heartbeat_seconds):
    """Two workers share the consumer; one slow job (2.5 s) against ack_wait = 1 s.

    Returns the handler calls and the consumer's state once the record is in (``delivered.consumer_seq``
    counts every delivery, redeliveries included)."""
    async with jetstream() as (_, js):
        await publish_job(js, "mask", mask_job("runD", 1))
        calls = []

        async def handle(job):
            calls.append(name(job))
            await asyncio.sleep(2.5)
            return scored(job)

        workers = [
            worker(js, handle, ack_wait=1, heartbeat_seconds=heartbeat_seconds, shutdown_grace_seconds=0.1)
            for _ in range(2)
        ]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(w.run(stop)) for w in workers]
        assert await eventually(lambda: _at_least(js, RESULTS_STREAM, 1))
        consumer = await js.consumer_info(JOBS_STREAM, "mask-scorers")
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        assert await stream_count(js, RESULTS_STREAM) == 1
        return calls, consumer


def test_heartbeats_keep_a_job_longer_than_ack_wait_from_being_redelivered(jetstream):
    calls, consumer = asyncio.run(_slow_job_calls(jetstream, heartbeat_seconds=None))
    assert calls == ["0/probe/1"]
    assert consumer.delivered.consumer_seq == 1


def test_without_heartbeats_the_same_slow_job_is_redelivered(jetstream):
    calls, consumer = asyncio.run(_slow_job_calls(jetstream, heartbeat_seconds=60))
    assert len(calls) >= 2 and set(calls) == {"0/probe/1"}
    assert consumer.delivered.consumer_seq >= 2


def test_stop_returns_promptly_while_idle(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            async def handle(job):
                return scored(job)

            stop = asyncio.Event()
            task = asyncio.create_task(worker(js, handle, fetch_timeout_seconds=0.5).run(stop))
            await asyncio.sleep(0.3)
            assert not task.done()
            started = time.monotonic()
            stop.set()
            await asyncio.wait_for(task, 3)
            assert time.monotonic() - started < 1.0

    asyncio.run(scenario())


def test_stop_lets_the_job_in_flight_finish_and_ack(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            await publish_job(js, "mask", mask_job("runE", 1))
            running = asyncio.Event()

            async def handle(job):
                running.set()
                await asyncio.sleep(1.0)
                return scored(job)

            w = worker(js, handle, shutdown_grace_seconds=5)
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop))
            await asyncio.wait_for(running.wait(), 5)
            stop.set()
            started = time.monotonic()
            await asyncio.wait_for(task, 5)
            assert time.monotonic() - started >= 0.8, "run returned before the job in flight finished"

            assert await stream_count(js, RESULTS_STREAM) == 1
            assert await eventually(lambda: _exactly(js, JOBS_STREAM, 0))
            assert outcomes(w.service) == {"done": 1, "retried": 0, "dead": 0}

    asyncio.run(scenario())


def test_a_job_outliving_the_shutdown_grace_is_cancelled_and_handed_back(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            await publish_job(js, "mask", mask_job("runF", 1))
            running = asyncio.Event()
            cancelled = []

            async def endless(job):
                running.set()
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    cancelled.append(name(job))
                    raise
                return scored(job)

            w = worker(js, endless, shutdown_grace_seconds=0.3)
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop))
            await asyncio.wait_for(running.wait(), 5)
            stop.set()
            started = time.monotonic()
            await asyncio.wait_for(task, 5)
            assert 0.25 <= time.monotonic() - started < 2
            assert cancelled == ["0/probe/1"]
            assert await stream_count(js, RESULTS_STREAM) == 0
            assert outcomes(w.service) == {"done": 0, "retried": 1, "dead": 0}

            async def quick(job):
                return scored(job)

            successor = worker(js, quick)
            stop = asyncio.Event()
            task = asyncio.create_task(successor.run(stop))
            assert await eventually(lambda: _at_least(js, RESULTS_STREAM, 1), timeout=5)
            stop.set()
            await asyncio.wait_for(task, 5)
            assert outcomes(successor.service)["done"] == 1

    asyncio.run(scenario())


def test_the_worker_updates_a_consumer_of_the_old_configuration(jetstream):
    """Before jobs had a subject per run, ``mask-scorers`` filtered ``mfscore.jobs.mask`` and JetStream stopped
    delivering after max_deliver deliveries, outages included; before issue 41 its ack wait was 60 s: a worker
    brings it to the new configuration."""
    async def scenario():
        async with jetstream() as (_, js):
            await js.add_consumer(JOBS_STREAM, api.ConsumerConfig(
                name="mask-scorers", durable_name="mask-scorers", filter_subject="mfscore.jobs.mask",
                ack_policy=api.AckPolicy.EXPLICIT, ack_wait=60, max_deliver=5))
            await publish_job(js, "mask", mask_job("runO", 1))

            async def handle(job):
                return scored(job)

            stop = asyncio.Event()
            task = asyncio.create_task(worker(js, handle).run(stop))
            assert await eventually(lambda: _at_least(js, RESULTS_STREAM, 1))
            stop.set()
            await asyncio.wait_for(task, 5)
            return (await js.consumer_info(JOBS_STREAM, "mask-scorers")).config

    config = asyncio.run(scenario())
    assert (config.filter_subject, config.max_deliver, config.ack_wait) == ("mfscore.jobs.mask.>", -1, 5)


def test_purge_run_jobs_removes_the_queued_jobs_of_that_run_only(jetstream):
    async def scenario():
        async with jetstream() as (_, js):
            for run in ("runP", "runQ"):
                for n in range(3):
                    await publish_job(js, "mask", mask_job(run, n))
            video = mask_job("runP", 9)
            video.task = "video-spatial"
            await publish_job(js, "video", video)
            assert await stream_count(js, JOBS_STREAM) == 7
            await purge_run_jobs(js, "runP")
            left = await stream_messages(js, JOBS_STREAM)
            await purge_run_jobs(js, "runP")  # nothing left of it: no error

            async def handle(job):
                return scored(job)

            stop = asyncio.Event()
            task = asyncio.create_task(worker(js, handle).run(stop))
            assert await eventually(lambda: _at_least(js, RESULTS_STREAM, 3))
            await asyncio.sleep(0.3)
            stop.set()
            await asyncio.wait_for(task, 5)
            return left, await stream_messages(js, RESULTS_STREAM)

    left, results = asyncio.run(scenario())
    assert sorted(m.subject for m in left) == [job_subject("mask", "runQ")] * 3
    assert sorted(m.headers[MSG_ID_HEADER] for m in results) == [f"runQ/0/probe/{n}" for n in range(3)]
    with pytest.raises(ValueError, match="not a single NATS subject token"):
        asyncio.run(purge_run_jobs(None, "run.*"))


def test_infrastructure_failures_do_not_count_against_max_deliver(jetstream):
    """Four infrastructure failures, then two of the job itself, then success, with max_deliver = 3: only the
    job's own failures count, so it is done, not dead-lettered."""
    failures = [ConnectionError("S3 refused the connection"), ObjectStoreUnavailable("S3 failed get 4 times"),
                nats.errors.NoRespondersError(), TimeoutError("NATS did not answer"),
                RuntimeError("mask unreadable"), RuntimeError("mask unreadable")]

    async def scenario():
        async with jetstream() as (_, js):
            await publish_job(js, "mask", mask_job("runI", 1))
            calls = []

            async def handle(job):
                calls.append(name(job))
                if len(calls) <= len(failures):
                    raise failures[len(calls) - 1]
                return scored(job)

            w = worker(js, handle, max_deliver=3, retry_delay_seconds=0.02, retry_delay_max_seconds=0.1)
            await run_until(w, lambda: _at_least(js, RESULTS_STREAM, 1))
            [result] = await stream_messages(js, RESULTS_STREAM)
            return calls, result, await stream_count(js, DEAD_STREAM), w

    calls, result, dead, w = asyncio.run(scenario())
    assert calls == ["0/probe/1"] * 7
    assert not records_pb2.TrialRecord.FromString(result.data).error and dead == 0
    assert outcomes(w.service) == {"done": 1, "retried": 6, "dead": 0}


def test_a_job_delivered_more_than_max_deliveries_times_is_dead_lettered_unhandled(jetstream):
    """A job whose worker dies on it each time is never seen failing: the delivery ceiling stops it."""
    async def scenario():
        async with jetstream() as (_, js):
            message = mask_job("runX", 2)
            await publish_job(js, "mask", message)
            w = worker(js, None, max_deliveries=3)
            sub = await w._subscribe()
            for _ in range(3):  # three workers that took the job and died (handed back at once, to be quick)
                [msg] = await sub.fetch(1, timeout=5)
                await msg.nak()
            await sub.unsubscribe()
            calls = []

            async def handle(job):
                calls.append(job)
                return scored(job)

            w.handle = handle
            await run_until_dead_lettered(js, w)
            [dead] = await stream_messages(js, DEAD_STREAM)
            return calls, dead, w

    calls, dead, w = asyncio.run(scenario())
    assert calls == []
    assert dead.headers[ERROR_HEADER] == "the job was delivered 4 times, more than the 3 allowed; a worker may be dying on it"
    assert outcomes(w.service) == {"done": 0, "retried": 0, "dead": 1}
