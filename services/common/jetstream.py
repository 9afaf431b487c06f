"""NATS JetStream for mfscore: the streams, their subjects, and the job worker every scorer runs.

Jobs go to a work-queue stream (each job is taken by one scorer), per-trial records to a
results stream the aggregator folds (and can replay), jobs that could not be done to a
dead-letter stream. Message ids make publishing idempotent within the duplicate window.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable

import nats
from google.protobuf.message import DecodeError
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.services.common.metrics import JOB_DURATION, JOBS_IN_FLIGHT, JOBS_TOTAL
from mfscore.services.common.settings import Settings
from mfscore.services.wire import jobs_pb2, records_pb2

JOBS_STREAM = "MFSCORE_JOBS"
RESULTS_STREAM = "MFSCORE_RESULTS"
DEAD_STREAM = "MFSCORE_DEAD"
RUNS_BUCKET = "mfscore_runs"
JOB_KINDS = ("mask", "video", "json")  # the resource classes of the tasks (Task.resource)
DUPLICATE_WINDOW_SECONDS = 120.0
ERROR_HEADER = "Mfscore-Error"
MSG_ID_HEADER = "Nats-Msg-Id"
MAX_ERROR_CHARS = 1000
OUTCOMES = ("done", "retried", "dead")

STREAMS = (
    api.StreamConfig(
        name=JOBS_STREAM, subjects=["mfscore.jobs.>"], retention=api.RetentionPolicy.WORK_QUEUE,
        storage=api.StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_SECONDS,
    ),
    api.StreamConfig(
        name=RESULTS_STREAM, subjects=["mfscore.results.>"], retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_SECONDS,
    ),
    api.StreamConfig(
        name=DEAD_STREAM, subjects=["mfscore.dead.>"], retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_SECONDS,
    ),
)

_TOKEN = re.compile(r"[^\s.*>]+")


def job_subject(kind: str) -> str:
    """The subject jobs of resource class ``kind`` (mask, video, json) are published on."""
    if kind not in JOB_KINDS:
        raise ValueError(f"job kind {kind!r} is not one of {', '.join(JOB_KINDS)}")
    return f"mfscore.jobs.{kind}"


def dead_subject(kind: str) -> str:
    """The dead-letter subject for jobs of ``kind``."""
    job_subject(kind)
    return f"mfscore.dead.{kind}"


def result_subject(run_id: str) -> str:
    """The subject a run's trial records are published on."""
    if not _TOKEN.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} is not a single NATS subject token")
    return f"mfscore.results.{run_id}"


def job_id(message: jobs_pb2.Job | records_pb2.TrialRecord) -> str:
    """The de-duplication id of a job, and of its record: the run and the job's key (query, role, ordinal)."""
    key = message.key
    return f"{message.run_id}/{key.query}/{key.role}/{key.ordinal}"


async def connect(settings: Settings, *, name: str = "mfscore") -> tuple[Client, JetStreamContext]:
    """Connect to ``settings.nats_url``, reconnecting for ever after a loss; returns (nc, js)."""
    log = logging.getLogger("mfscore.nats")

    async def disconnected() -> None:
        if not nc.is_closed:
            log.warning("disconnected from NATS at %s", settings.nats_url)

    async def reconnected() -> None:
        log.info("reconnected to NATS at %s", settings.nats_url)

    async def error(exc: Exception) -> None:
        log.warning("NATS connection error: %s", exc)

    nc = await nats.connect(
        servers=[settings.nats_url], name=name, connect_timeout=5, reconnect_time_wait=1,
        max_reconnect_attempts=-1, disconnected_cb=disconnected, reconnected_cb=reconnected, error_cb=error,
    )
    return nc, nc.jetstream()


async def ensure_streams(js: JetStreamContext) -> None:
    """Create the jobs, results and dead-letter streams, or bring existing ones to this configuration."""
    for config in STREAMS:
        try:
            await js.stream_info(config.name)
        except NotFoundError:
            await js.add_stream(config)
        else:
            await js.update_stream(config)


async def runs_bucket(js: JetStreamContext) -> KeyValue:
    """The key-value bucket holding run state, created on first use."""
    try:
        return await js.key_value(RUNS_BUCKET)
    except BucketNotFoundError:
        return await js.create_key_value(bucket=RUNS_BUCKET, history=1, storage=api.StorageType.FILE)


async def publish_job(js: JetStreamContext, kind: str, job: jobs_pb2.Job) -> api.PubAck:
    """Publish a job on its resource class's subject once: a repeat within the duplicate window is dropped."""
    return await js.publish(job_subject(kind), job.SerializeToString(), headers={MSG_ID_HEADER: job_id(job)})


def _one_line(exc: BaseException) -> str:
    text = exc.sentence() if isinstance(exc, MfscoreError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:MAX_ERROR_CHARS]


class _Interrupted(Exception):
    """The job was cancelled because shutdown's grace period ran out."""


class JobWorker:
    """Pulls jobs of one kind, scores each with ``handle`` and publishes the record, then acks.

    Keyword settings:

    - ``kind``: the resource class (mask, video, json); the worker binds the durable consumer ``<kind>-scorers``
      and dead-letters a job whose task is unknown or belongs to another class.
    - ``service``: the name in metrics labels and in the logger ``mfscore.<service>``.
    - ``handle``: the scorer, ``async (Job) -> TrialRecord``; the worker stamps the job's key on the record.
      It must not block the event loop (run CPU work with ``asyncio.to_thread``), or heartbeats stop.
    - ``ack_wait``: seconds JetStream waits for an ack (or a heartbeat) before redelivering.
    - ``max_deliver``: deliveries before a failing job is dead-lettered.
    - ``heartbeat_seconds``: interval of ``in_progress`` heartbeats while ``handle`` runs; ``ack_wait / 3``.
    - ``shutdown_grace_seconds``: how long a job in flight at shutdown may still run before it is
      cancelled and handed back (nak); tie it to Kubernetes' termination grace period.
    - ``retry_delay_seconds``: nak delay after a first failure, doubled per delivery, at most
      ``retry_delay_max_seconds``.
    - ``fetch_timeout_seconds``: how long one idle fetch waits, so how late an idle worker notices ``stop``.
    - ``concurrency``: jobs in flight at once; 2 lets one job's objects download while another is scored.
    """

    def __init__(
        self, js: JetStreamContext, *, kind: str, service: str,
        handle: Callable[[jobs_pb2.Job], Awaitable[records_pb2.TrialRecord]],
        ack_wait: float, max_deliver: int, heartbeat_seconds: float | None = None,
        shutdown_grace_seconds: float, retry_delay_seconds: float = 1.0, retry_delay_max_seconds: float = 60.0,
        fetch_timeout_seconds: float = 1.0, concurrency: int = 1,
    ):
        job_subject(kind)
        if max_deliver < 1 or ack_wait <= 0 or concurrency < 1:
            raise ValueError("max_deliver and concurrency must be at least 1 and ack_wait positive")
        self.js = js
        self.kind = kind
        self.service = service
        self.handle = handle
        self.ack_wait = ack_wait
        self.max_deliver = max_deliver
        self.heartbeat_seconds = heartbeat_seconds if heartbeat_seconds is not None else ack_wait / 3
        self.shutdown_grace_seconds = shutdown_grace_seconds
        self.retry_delay_seconds = retry_delay_seconds
        self.retry_delay_max_seconds = retry_delay_max_seconds
        self.fetch_timeout_seconds = fetch_timeout_seconds
        self.concurrency = concurrency
        self.consumer = f"{kind}-scorers"
        self.log = logging.getLogger(f"mfscore.{service}")
        for outcome in OUTCOMES:
            JOBS_TOTAL.labels(service, outcome)

    async def _subscribe(self) -> JetStreamContext.PullSubscription:
        config = api.ConsumerConfig(
            name=self.consumer, durable_name=self.consumer, filter_subject=job_subject(self.kind),
            ack_policy=api.AckPolicy.EXPLICIT, ack_wait=self.ack_wait, max_deliver=self.max_deliver,
        )
        await self.js.add_consumer(JOBS_STREAM, config)
        return await self.js.pull_subscribe_bind(durable=self.consumer, stream=JOBS_STREAM)

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set; a job in flight then finishes (within the grace period)."""
        sub = await self._subscribe()
        self.log.info("pulling %s jobs as consumer %s", self.kind, self.consumer)
        slots = asyncio.Semaphore(self.concurrency)
        in_flight: set[asyncio.Task] = set()

        def finished(task: asyncio.Task) -> None:
            in_flight.discard(task)
            slots.release()

        try:
            while not stop.is_set():
                await slots.acquire()
                try:
                    msgs = [] if stop.is_set() else await sub.fetch(1, timeout=self.fetch_timeout_seconds)
                except nats.errors.TimeoutError:
                    msgs = []
                if not msgs:
                    slots.release()
                    continue
                msg = msgs[0]
                if stop.is_set():
                    await msg.nak()
                    slots.release()
                    self.log.info("handed back a job fetched during shutdown")
                    continue
                task = asyncio.create_task(self._process(msg, stop))
                in_flight.add(task)
                task.add_done_callback(finished)
            await asyncio.gather(*in_flight, return_exceptions=True)
        finally:
            await sub.unsubscribe()
        self.log.info("stopped pulling %s jobs", self.kind)

    async def _process(self, msg: Msg, stop: asyncio.Event) -> None:
        started = time.monotonic()
        JOBS_IN_FLIGHT.labels(self.service).inc()
        try:
            outcome = await self._settle(msg, stop)
        finally:
            JOBS_IN_FLIGHT.labels(self.service).dec()
            JOB_DURATION.labels(self.service).observe(time.monotonic() - started)
        JOBS_TOTAL.labels(self.service, outcome).inc()

    async def _settle(self, msg: Msg, stop: asyncio.Event) -> str:
        try:
            job = jobs_pb2.Job.FromString(msg.data)
        except DecodeError as exc:
            return await self._dead(msg, None, f"the message is not an mfscore.v1.Job ({exc})")
        if not _TOKEN.fullmatch(job.run_id):
            return await self._dead(msg, None, f"the job's run id {job.run_id!r} is not a single NATS subject token")
        if job.task not in tasks.names():
            return await self._dead(msg, job, f"the job's task {job.task!r} is not one of {', '.join(tasks.names())}")
        if tasks.get(job.task).resource != self.kind:
            return await self._dead(msg, job, f"the {job.task} job is not {self.kind} work")
        try:
            record = await self._score(msg, job, stop)
            await self._publish_record(job, record)
        except _Interrupted:
            await msg.nak()
            self.log.warning("job %s handed back: shutdown grace period ran out", job_id(job))
            return "retried"
        except Exception as exc:
            delivered = msg.metadata.num_delivered
            if delivered >= self.max_deliver:
                return await self._dead(msg, job, f"failed on delivery {delivered} of {self.max_deliver}: {_one_line(exc)}")
            delay = min(self.retry_delay_max_seconds, self.retry_delay_seconds * 2 ** (delivered - 1))
            await msg.nak(delay=delay)
            self.log.warning(
                "job %s failed on delivery %d of %d, retrying in %.3g s: %s",
                job_id(job), delivered, self.max_deliver, delay, _one_line(exc),
            )
            return "retried"
        await msg.ack()
        self.log.info("job %s done", job_id(job))
        return "done"

    async def _score(self, msg: Msg, job: jobs_pb2.Job, stop: asyncio.Event) -> records_pb2.TrialRecord:
        """Run ``handle`` with heartbeats; at shutdown, give it the grace period, then cancel it."""
        work = asyncio.ensure_future(self.handle(job))
        beat = asyncio.ensure_future(self._heartbeat(msg))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                await asyncio.wait({work}, timeout=self.shutdown_grace_seconds)
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
                raise _Interrupted
            return work.result()
        finally:
            for task in (work, beat, stopping):
                task.cancel()
            await asyncio.gather(work, beat, stopping, return_exceptions=True)

    async def _heartbeat(self, msg: Msg) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                await msg.in_progress()
            except Exception as exc:
                self.log.warning("heartbeat failed: %s", _one_line(exc))

    async def _publish_record(self, job: jobs_pb2.Job, record: records_pb2.TrialRecord) -> None:
        if not isinstance(record, records_pb2.TrialRecord):
            raise TypeError(f"the handler returned {type(record).__name__}, not a TrialRecord")
        record.run_id, record.task = job.run_id, job.task
        record.key.CopyFrom(job.key)
        if not record.scorer:
            record.scorer = self.service
        await self.js.publish(
            result_subject(job.run_id), record.SerializeToString(), headers={MSG_ID_HEADER: job_id(record)}
        )

    async def _dead(self, msg: Msg, job: jobs_pb2.Job | None, error: str) -> str:
        """Dead-letter the job, tell the aggregator with an error record, and stop redelivery."""
        error = " ".join(error.split())[:MAX_ERROR_CHARS]
        try:
            await self.js.publish(dead_subject(self.kind), msg.data, headers={ERROR_HEADER: error})
            if job is not None:
                record = records_pb2.TrialRecord(run_id=job.run_id, task=job.task, key=job.key, scorer=self.service,
                                                 error=error)
                await self.js.publish(result_subject(job.run_id), record.SerializeToString(),
                                      headers={MSG_ID_HEADER: job_id(record)})
        except Exception as exc:
            await msg.nak(delay=self.retry_delay_max_seconds)
            self.log.error("could not dead-letter a job, handed it back: %s", _one_line(exc))
            return "retried"
        await msg.term()
        name = job_id(job) if job is not None else f"at stream sequence {msg.metadata.sequence.stream}"
        self.log.error("job %s dead-lettered: %s", name, error)
        return "dead"
