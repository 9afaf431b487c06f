"""A scorer pool: pull the jobs of its resource classes, fetch each job's files from S3, score the job with its
task (found through the registry), publish the record. One pool serves any task whose ``resource`` it pulls.

A task that reads its files from memory (``Task.blobs_in_memory``: image masks) gets each object's bytes; the
others get local copies in a temporary directory per job.

A pool keeps two jobs in flight per resource: one job's files download (on I/O threads) while the
other is scored on the pool's single scoring thread, so a pool uses one core for scoring. That thread hands each
job to a child process held to the operator's wall and memory limits (``MFSCORE_JOB_SECONDS``,
``MFSCORE_JOB_MEMORY_BYTES``; ``mfscore.run.limited``): a job past either is dead-lettered with a sentence naming its
files, the run fails with it, and the pool goes on with the next job.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mfscore import tasks
from mfscore.formats.images import ImageBytes
from mfscore.run.allocator import keep_freed_memory
from mfscore.run.collector import collect_less
from mfscore.run.limited import LimitedScorer, LimitExceeded, Limits, ScoringStopped
from mfscore.services.common.grpc_server import track_health, start_service_server, stop_grpc_server
from mfscore.services.common.job_worker import JobFailed, JobWorker
from mfscore.services.common.messages import job, record_message
from mfscore.services.common.metrics import start_metrics_server
from mfscore.services.common.nats_connection import connect, public_url
from mfscore.services.common.queue_lag import watch_lag
from mfscore.services.common.object_store import (
    ObjectMissing,
    ObjectStore,
    ObjectTooLarge,
    confined,
)
from mfscore.services.common.run_layout import BadName, check_object_key, input_prefix
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import InvalidArgument, answers
from mfscore.services.common.streams import wait_for_streams
from mfscore.services.common.subjects import scorer_consumer_name
from mfscore.services.wire import jobs_pb2, records_pb2, services_pb2, services_pb2_grpc

log = logging.getLogger("mfscore.services")
MAX_BLOB_BYTES = 4 << 30   # the core checks each file's own limits (pixels, elements, JSON bytes) when it reads it
JOBS_IN_FLIGHT = 2


@dataclass(frozen=True)
class ScorerPool:
    """A deployable pool: its name (metrics, logs) and the resource classes it pulls (``Task.resource``)."""

    name: str
    resources: tuple[str, ...]


def _fetch(store: ObjectStore, message: jobs_pb2.Job, name: str, directory: str) -> str:
    """The local copy of the job file ``name`` ('' for none), at ``directory/name``, from its object (or from under
    the run's input prefix). A missing object leaves no file and an object over the limit an empty sparse file of
    its size: the core then reports either in its own words."""
    if not name:
        return ""
    path = str(confined(directory, name))
    try:
        store.download_file(message.objects.get(name) or message.input_prefix + name, path, max_bytes=MAX_BLOB_BYTES)
    except ObjectMissing:
        pass
    except ObjectTooLarge as error:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(error.size if error.size is not None else MAX_BLOB_BYTES + 1)
    return path


def _fetch_bytes(store: ObjectStore, message: jobs_pb2.Job, name: str, limit: int) -> ImageBytes | str:
    """The job file ``name`` in memory ('' for none), named as in the run. A missing object is an ``ImageBytes``
    without data, and one over ``limit`` bytes one with its size: the core then reports either in its own words."""
    if not name:
        return ""
    key = message.objects.get(name) or message.input_prefix + name
    identity = key if name in message.objects else None  # an object's key names its bytes for good (their SHA-256)
    try:
        return ImageBytes(name, store.get_bytes(key, max_bytes=limit), identity=identity)
    except ObjectMissing:
        return ImageBytes(name, None)
    except ObjectTooLarge as error:
        return ImageBytes(name, None, error.size if error.size is not None else limit + 1, limit)


class JobRefused(InvalidArgument):
    """A job naming inputs outside its own run's upload: whoever sent it, it is not the aggregator's plan."""


def check_inputs(message: jobs_pb2.Job) -> None:
    """Refuse a job whose files are neither objects (``objects/<role>/<name>/<sha256>``, from its run's input
    manifest) nor under ``runs/<its run id>/inputs/``, so no job can make a scorer read another run's files, a
    report or any other key of the bucket."""
    try:
        own = input_prefix(message.run_id)
    except BadName:
        raise JobRefused(f"the job's run id {message.run_id[:80]!r} is not 1-64 letters, digits, '-' or '_'") from None
    if message.input_prefix != own:
        raise JobRefused(f"the job's input prefix {message.input_prefix[:200]!r} is not its run's upload ({own})")
    for key in message.objects.values():
        try:
            check_object_key(key)
        except BadName:
            raise JobRefused(f"the job names {key[:200]!r} as a file's object, which is not an object key "
                             "(objects/<role>/<name>/<sha256>)") from None


class JobScorer:
    """``await scorer(job)``: the job's TrialRecord. Messages name files by their name in the run.

    With ``limits`` (any not 0) each job is scored in a child process held to them, and a job past one raises
    ``JobFailed``; without, on the scoring thread itself."""

    def __init__(self, store: ObjectStore, work_dir: str, name: str, limits: Limits | None = None):
        self.store = store
        self.work_dir = work_dir
        self.name = name
        self.cpu = ThreadPoolExecutor(1, thread_name_prefix=f"{name}-scoring")
        self.limited = LimitedScorer(limits) if limits and (limits.seconds or limits.memory_bytes) else None

    def close(self) -> None:
        if self.limited is not None:
            self.limited.close()

    async def _scored(self, task, work, what: str):
        """The outcome of ``task.score(work)``, on the scoring thread (in the child process, with limits)."""
        if self.limited is None:
            return await asyncio.get_running_loop().run_in_executor(self.cpu, task.score, work)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.cpu, self.limited.score, task.name, work,
                                                                    what)
        except LimitExceeded as exceeded:
            raise JobFailed(exceeded.sentence()) from None

    async def __call__(self, message: jobs_pb2.Job) -> records_pb2.TrialRecord:
        check_inputs(message)
        task = tasks.get(message.task)
        work = job(task, message).work
        what = ", ".join(name for name in task.blobs(work).values() if name) or f"the {task.name} job"
        limit = task.blobs_in_memory(work)
        if limit is not None:
            blobs = task.blobs(work)
            fetched = await asyncio.gather(*(asyncio.to_thread(_fetch_bytes, self.store, message, name, limit)
                                             for name in blobs.values()))
            work = task.with_blobs(work, dict(zip(blobs, fetched)))
            return record_message(message, await self._scored(task, work, what), self.name)
        directory = os.path.realpath(tempfile.mkdtemp(prefix="job-", dir=self.work_dir))
        try:
            blobs = task.blobs(work)
            local = await asyncio.gather(*(asyncio.to_thread(_fetch, self.store, message, name, directory)
                                           for name in blobs.values()))
            work = task.with_blobs(work, dict(zip(blobs, local)))
            outcome = await self._scored(task, work, what)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return record_message(message, outcome, self.name, local_dir=directory)


class Scorer(services_pb2_grpc.ScorerServiceServicer):
    """``Score``: one job of the pool's resource classes, now."""

    def __init__(self, handle: JobScorer, pool: ScorerPool):
        self._handle = handle
        self._pool = pool

    @answers
    async def Score(self, request, context):
        job = request.job
        if job.task not in tasks.names() or tasks.get(job.task).resource not in self._pool.resources:
            raise InvalidArgument(f"the {self._pool.name} pool scores {', '.join(self._pool.resources)} jobs, "
                                  f"not a {job.task or 'task-less'} job")
        check_inputs(job)
        return services_pb2.ScoreResponse(record=await self._handle(job))


async def run_pool(pool: ScorerPool, settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set; then stop pulling, finish (or nak) the jobs in hand, and close."""
    os.makedirs(settings.work_dir, exist_ok=True)
    tasks.load_all()
    keep_freed_memory()
    collect_less()
    metrics_port = start_metrics_server(settings.metrics_port, settings.metrics_host, role="scorer")
    handle = JobScorer(ObjectStore(settings), settings.work_dir, pool.name,
                       Limits(seconds=settings.job_seconds, memory_bytes=settings.job_memory_bytes))
    server, port = await start_service_server([(services_pb2_grpc.add_ScorerServiceServicer_to_server,
                                                Scorer(handle, pool), "mfscore.v1.ScorerService")], settings)
    nc, js = await connect(settings)
    health = asyncio.create_task(track_health(server, lambda: nc.is_connected,
                                               f"NATS at {public_url(settings.nats_url)}"))
    lag = asyncio.create_task(watch_lag(js, [scorer_consumer_name(resource) for resource in pool.resources]))
    try:
        if handle.limited is not None:
            try:
                await asyncio.to_thread(handle.limited.start)
            except ScoringStopped as error:
                log.warning("%s: %s; the first job starts it again", pool.name, error.sentence())
        if not await wait_for_streams(js, stop):
            return
        log.info("%s: gRPC on %d, metrics on %d, pulling %s jobs", pool.name, port, metrics_port,
                 ", ".join(pool.resources))
        workers = [JobWorker(js, kind=resource, service=pool.name, handle=handle,
                             ack_wait=settings.ack_wait_seconds, max_deliver=settings.max_deliver,
                             retry_budget_seconds=settings.retry_budget_seconds,
                             shutdown_grace_seconds=settings.ack_wait_seconds, concurrency=JOBS_IN_FLIGHT)
                   for resource in pool.resources]
        await asyncio.gather(*(worker.run(stop) for worker in workers))
    finally:
        health.cancel()
        lag.cancel()
        await stop_grpc_server(server, grace=5)
        await nc.drain()
        handle.close()
        log.info("%s: stopped", pool.name)
