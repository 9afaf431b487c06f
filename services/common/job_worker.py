"""The job worker every scorer runs: it pulls jobs of one resource class, scores each and publishes its record,
tells failures of the infrastructure from failures of the job, and dead-letters what cannot be done.

Importing it imports no task: the registry is read when a worker is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import nats
from google.protobuf.message import DecodeError
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.services.common.metrics import JOB_DURATION, JOBS_IN_FLIGHT, JOBS_TOTAL, UNKNOWN_TASK, task_label
from mfscore.services.common.retry import JOB_OUTAGE, JOB_REDELIVERY, Backoff, one_line
from mfscore.services.common.run_layout import RUN_ID
from mfscore.services.common.streams import scorer_consumer
from mfscore.services.common.subjects import (
    ERROR_HEADER,
    JOBS_STREAM,
    MSG_ID_HEADER,
    dead_subject,
    job_id,
    jobs_of,
    result_subject,
)
from mfscore.services.common.transient import INFRASTRUCTURE_ERRORS
from mfscore.services.wire import jobs_pb2, records_pb2

MAX_ERROR_CHARS = 1000
OUTCOMES = ("done", "retried", "dead")


def _fields(job: jobs_pb2.Job) -> dict[str, str]:
    """A job's run and key as fields of its log lines (``extra=``): a JSON log line carries them apart."""
    return {"run_id": job.run_id, "job_key": job_id(job)}


class _Interrupted(Exception):
    """The job was cancelled because shutdown's grace period ran out."""


class JobFailed(MfscoreError):
    """A job that failed for good (it exceeded the scorer's wall or memory limit): dead-lettered at once, since
    another attempt would fail alike and hold a scorer as long again."""


@dataclass
class _Failures:
    """One job's failures seen by one worker: since when infrastructure failed it, and how often anything else did."""

    outage_since: float | None = None
    errors: int = 0
    seen: float = 0.0


class JobWorker:
    """Pulls jobs of one kind, scores each with ``handle`` and publishes the record, then acks.

    A failure is of one of two kinds. An infrastructure failure (``INFRASTRUCTURE_ERRORS``: S3 still unavailable
    after the object store's own retries, a connection error or timeout, NATS not taking the record) says nothing
    about the job: the worker takes no job for a pause (``retry_delay_seconds``, doubled per such failure, at most
    ``JOB_OUTAGE.most`` or ``retry_delay_max_seconds``; back to none after a job succeeds), so an outage
    is probed by one job at a time instead of every queued job gathering a backoff of its own, and the job is
    handed back (nak) for that pause; until ``retry_budget_seconds`` have passed since its first such failure, then
    it is dead-lettered, with a sentence saying the budget is spent. These failures never count against
    ``max_deliver``. Any other failure (an input the task cannot take, a bug) is retried with the same delays until
    the job has failed ``max_deliver`` times, then dead-lettered. A ``JobFailed`` (a job past the scorer's limits)
    is dead-lettered at once.

    The budget's start and the failures are counted by this worker, in memory, keyed by the job's stream sequence:
    a delivery's metadata has only the publish time (a job may queue for hours before its first delivery) and the
    count of every delivery, outages included. So a job passed between workers is retried for at least the budget
    (longer by the time its first worker takes to get it back), and a failing input at least ``max_deliver`` times
    (at most that many per worker); a restarted worker starts counting again. JetStream's own limit on deliveries is
    off, since it would count outages too; instead a job delivered more than ``max_deliveries`` times is
    dead-lettered unhandled: a backstop for a job whose worker dies on it each time, which neither limit sees.

    Keyword settings:

    - ``kind``: the resource class (mask, video, json); the worker binds the durable consumer ``<kind>-scorers``
      (updating an existing one to this configuration) and dead-letters a job whose task is unknown or belongs to
      another class.
    - ``service``: the name in metrics labels and in the logger ``mfscore.<service>``.
    - ``handle``: the scorer, ``async (Job) -> TrialRecord``; the worker stamps the job's key on the record.
      It must not block the event loop (run CPU work with ``asyncio.to_thread``), or heartbeats stop.
    - ``ack_wait``: seconds JetStream waits for an ack (or a heartbeat) before redelivering.
    - ``max_deliver``: failures other than infrastructure failures before a job is dead-lettered.
    - ``retry_budget_seconds``: how long a job may keep failing for infrastructure reasons (``MFSCORE_RETRY_BUDGET``).
    - ``max_deliveries``: deliveries of one job, whatever became of them, before it is dead-lettered unhandled;
      by default three times what both limits take on one worker.
    - ``heartbeat_seconds``: interval of ``in_progress`` heartbeats while ``handle`` runs; ``ack_wait / 3``.
    - ``shutdown_grace_seconds``: how long a job in flight at shutdown may still run before it is
      cancelled and handed back (nak); tie it to Kubernetes' termination grace period.
    - ``retry_delay_seconds``: nak delay after a first failure, doubled per delivery, at most
      ``retry_delay_max_seconds`` (``JOB_REDELIVERY`` by default).
    - ``fetch_timeout_seconds``: how long one idle fetch waits, so how late an idle worker notices ``stop``.
    - ``concurrency``: jobs in flight at once; 2 lets one job's objects download while another is scored.
    """

    def __init__(
        self, js: JetStreamContext, *, kind: str, service: str,
        handle: Callable[[jobs_pb2.Job], Awaitable[records_pb2.TrialRecord]],
        ack_wait: float, max_deliver: int, retry_budget_seconds: float = 900.0, max_deliveries: int | None = None,
        heartbeat_seconds: float | None = None, shutdown_grace_seconds: float,
        retry_delay_seconds: float = JOB_REDELIVERY.first, retry_delay_max_seconds: float = JOB_REDELIVERY.most,
        fetch_timeout_seconds: float = 1.0, concurrency: int = 1,
    ):
        jobs_of(kind)
        if max_deliver < 1 or ack_wait <= 0 or concurrency < 1:
            raise ValueError("max_deliver and concurrency must be at least 1 and ack_wait positive")
        if retry_budget_seconds < 0 or retry_delay_seconds <= 0 or retry_delay_max_seconds < retry_delay_seconds:
            raise ValueError("the retry budget must not be negative and the retry delays positive, the first the least")
        self.js = js
        self.kind = kind
        self.service = service
        self.handle = handle
        self.ack_wait = ack_wait
        self.max_deliver = max_deliver
        self.retry_budget_seconds = retry_budget_seconds
        self.heartbeat_seconds = heartbeat_seconds if heartbeat_seconds is not None else ack_wait / 3
        self.shutdown_grace_seconds = shutdown_grace_seconds
        self.retry_delay_seconds = retry_delay_seconds
        self.retry_delay_max_seconds = retry_delay_max_seconds
        self._redelivery = Backoff(retry_delay_seconds, retry_delay_max_seconds)
        self._outage = Backoff(retry_delay_seconds, min(retry_delay_max_seconds, JOB_OUTAGE.most))
        self.max_deliveries = max_deliveries or 3 * (max_deliver + self._deliveries_within(retry_budget_seconds))
        self.fetch_timeout_seconds = fetch_timeout_seconds
        self.concurrency = concurrency
        self.consumer = scorer_consumer(kind, ack_wait).durable_name
        self.log = logging.getLogger(f"mfscore.{service}")
        self._failures: dict[int, _Failures] = {}
        self._outages = 0       # infrastructure failures in a row: the next pause before taking a job is theirs
        self._resume_at = 0.0
        self._pruned = time.monotonic()
        for task in tasks.load_all():  # every series exported from zero: increase() misses a series' first count
            if task.resource == kind:
                for outcome in OUTCOMES:
                    JOBS_TOTAL.labels(service, task.name, outcome)
        JOBS_TOTAL.labels(service, UNKNOWN_TASK, "dead")  # a message that is no job, or no task's

    def _delay(self, delivered: int) -> float:
        return self._redelivery.delay(delivered - 1)

    def _deliveries_within(self, seconds: float) -> int:
        """The deliveries of a job failing at once each time, over ``seconds`` of nak delays."""
        deliveries, waited = 1, 0.0
        while waited < seconds:
            waited += self._delay(deliveries)
            deliveries += 1
        return deliveries

    async def _subscribe(self) -> JetStreamContext.PullSubscription:
        config = scorer_consumer(self.kind, self.ack_wait)
        await self.js.add_consumer(JOBS_STREAM, config)  # creates the consumer, or updates one of another config
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
                if (paused := self._resume_at - time.monotonic()) > 0:  # S3 or NATS is out: no job is taken
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(stop.wait(), paused)
                    continue
                await slots.acquire()
                try:
                    msgs = [] if stop.is_set() else await sub.fetch(1, timeout=self.fetch_timeout_seconds)
                except nats.errors.TimeoutError:
                    msgs = []
                except INFRASTRUCTURE_ERRORS as exc:
                    self.log.warning("could not fetch a %s job, trying again: %s", self.kind, one_line(exc))
                    await asyncio.sleep(self.fetch_timeout_seconds)
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
        try:
            job: jobs_pb2.Job | DecodeError = jobs_pb2.Job.FromString(msg.data)
        except DecodeError as exc:
            job = exc
        labels = (self.service, task_label(job.task if isinstance(job, jobs_pb2.Job) else ""))
        JOBS_IN_FLIGHT.labels(*labels).inc()
        try:
            outcome = await self._settle(msg, job, stop)
        finally:
            JOBS_IN_FLIGHT.labels(*labels).dec()
            JOB_DURATION.labels(*labels).observe(time.monotonic() - started)
        JOBS_TOTAL.labels(*labels, outcome).inc()

    async def _settle(self, msg: Msg, job: jobs_pb2.Job | DecodeError, stop: asyncio.Event) -> str:
        if isinstance(job, DecodeError):
            return await self._dead(msg, None, f"the message is not an mfscore.v1.Job ({job})")
        if not RUN_ID.fullmatch(job.run_id):
            return await self._dead(msg, None, f"the job's run id {job.run_id!r} is not a single NATS subject token")
        if job.task not in tasks.names():
            return await self._dead(msg, job, f"the job's task {job.task!r} is not one of {', '.join(tasks.names())}")
        if tasks.get(job.task).resource != self.kind:
            return await self._dead(msg, job, f"the {job.task} job is not {self.kind} work")
        delivered = msg.metadata.num_delivered
        if delivered > self.max_deliveries:
            return await self._dead(msg, job, f"the job was delivered {delivered} times, more than the "
                                              f"{self.max_deliveries} allowed; a worker may be dying on it")
        try:
            record = await self._score(msg, job, stop)
            await self._publish_record(job, record)
        except _Interrupted:
            self.log.warning("job %s handed back: shutdown grace period ran out", job_id(job), extra=_fields(job))
            return await self._nak(msg, 0)
        except INFRASTRUCTURE_ERRORS as exc:
            return await self._retry_infrastructure(msg, job, exc)
        except JobFailed as exc:
            return await self._dead(msg, job, exc.sentence())
        except Exception as exc:
            failures = self._failures_of(msg)
            failures.errors += 1
            if failures.errors >= self.max_deliver:
                return await self._dead(msg, job, f"failed on attempt {failures.errors} of {self.max_deliver}: "
                                                  f"{one_line(exc)}")
            delay = self._delay(delivered)
            self.log.warning("job %s failed on attempt %d of %d, retrying in %.3g s: %s",
                             job_id(job), failures.errors, self.max_deliver, delay, one_line(exc), extra=_fields(job))
            return await self._nak(msg, delay)
        self._failures.pop(msg.metadata.sequence.stream, None)
        self._outages = 0
        await msg.ack()
        self.log.debug("job %s done", job_id(job), extra=_fields(job))
        return "done"

    async def _retry_infrastructure(self, msg: Msg, job: jobs_pb2.Job, exc: BaseException) -> str:
        """Hand the job back for later, or dead-letter it once the retry budget is spent."""
        failures = self._failures_of(msg)
        now = time.monotonic()
        if failures.outage_since is None:
            failures.outage_since = now
        waited = now - failures.outage_since
        if waited >= self.retry_budget_seconds:
            return await self._dead(msg, job, f"gave up after {waited:.0f} s of retrying: the retry budget of "
                                              f"{self.retry_budget_seconds:g} s (MFSCORE_RETRY_BUDGET) is spent; the "
                                              f"last failure: {one_line(exc)}")
        delay = self._outage.delay(self._outages)
        self._outages += 1
        self._resume_at = now + delay
        self.log.warning("job %s: infrastructure unavailable, retrying in %.3g s (%.0f s of the %g s retry budget "
                         "left): %s", job_id(job), delay, self.retry_budget_seconds - waited,
                         self.retry_budget_seconds, one_line(exc), extra=_fields(job))
        return await self._nak(msg, delay)

    async def _nak(self, msg: Msg, delay: float) -> str:
        try:
            await msg.nak(delay=delay)
        except Exception as exc:  # NATS is away: the job comes back after the ack wait
            self.log.warning("could not hand a job back: %s", one_line(exc))
        return "retried"

    def _failures_of(self, msg: Msg) -> _Failures:
        """This worker's count of the job's failures; entries of jobs not seen for a budget's time are dropped."""
        now = time.monotonic()
        forget_after = self.retry_budget_seconds + self.retry_delay_max_seconds + self.ack_wait
        if now - self._pruned > 60:
            self._pruned = now
            self._failures = {seq: f for seq, f in self._failures.items() if now - f.seen < forget_after}
        failures = self._failures.setdefault(msg.metadata.sequence.stream, _Failures())
        failures.seen = now
        return failures

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
                self.log.warning("heartbeat failed: %s", one_line(exc))

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
            self.log.error("could not dead-letter a job, handing it back: %s", one_line(exc))
            return await self._nak(msg, self.retry_delay_max_seconds)
        self._failures.pop(msg.metadata.sequence.stream, None)
        await msg.term()
        name = job_id(job) if job is not None else f"at stream sequence {msg.metadata.sequence.stream}"
        self.log.error("job %s dead-lettered: %s", name, error, extra=_fields(job) if job is not None else {})
        return "dead"
