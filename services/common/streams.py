"""The JetStream streams and the runs' bucket as the settings ask for them: set up (safe from several processes at
once, waiting out NATS), waited for, and read; jobs published and purged.

The jobs stream is a work queue (each job is taken by one scorer), the results stream keeps the records the
aggregator folds (and can replay), the dead-letter stream the jobs that could not be done (``subjects``). Message ids
make publishing idempotent within the duplicate window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable

import nats
from nats.js import JetStreamContext, api
from nats.js.errors import APIError, BucketNotFoundError, NoKeysError, NotFoundError, ServiceUnavailableError
from nats.js.kv import KeyValue

from mfscore.errors import MfscoreError
from mfscore.services.common.retry import KV_LISTING, NATS, RetryBudgetSpent, retrying
from mfscore.services.common.settings import Settings
from mfscore.services.common.subjects import (
    DEAD_STREAM,
    JOBS_STREAM,
    MSG_ID_HEADER,
    RESULTS_STREAM,
    RUNS_BUCKET,
    RUNS_STREAM,
    job_filter,
    job_id,
    job_kinds,
    job_subject,
    run_jobs,
    scorer_consumer_name,
)
from mfscore.services.common.transient import nats_unavailable
from mfscore.services.wire import jobs_pb2

DUPLICATE_WINDOW_SECONDS = 120.0
STREAM_SETUP_SECONDS = 60.0  # how long setting up a stream waits out NATS not answering (a quorum forming)
STREAM_NAME_IN_USE = 10058  # NATS' error code of an add whose stream exists (with another configuration)
REPLICAS_CATCH_UP_SECONDS = 60.0  # how long a change of replicas is waited for (the jobs stream's took 11 s)

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


class StreamRefused(MfscoreError):
    """NATS refused a stream or bucket as the settings ask for it (its storage changed, more replicas than servers)."""


class StreamsUnavailable(MfscoreError):
    """NATS did not let the streams be set up within the budget: JetStream without a leader for that long."""


class _PeersOffline(MfscoreError):
    """NATS could not place a stream's replicas because a peer is offline (restarting, or behind under load), not
    because the cluster has too few: waiting fixes it."""


class _NameTaken(Exception):
    """Another process added the stream between this one's look and its add."""


def stream_configs(settings: Settings) -> tuple[api.StreamConfig, ...]:
    """``STREAMS`` with the replicas, storage, age and size limits of ``settings`` (``MFSCORE_STREAM_*``). The
    duplicate window is at most the age limit, as NATS requires."""
    max_age = settings.stream_max_age_seconds
    return tuple(dataclasses.replace(
        config, num_replicas=settings.stream_replicas, storage=api.StorageType(settings.stream_storage),
        max_age=max_age or None, max_bytes=settings.stream_max_bytes,
        duplicate_window=min(DUPLICATE_WINDOW_SECONDS, max_age) if max_age else DUPLICATE_WINDOW_SECONDS,
    ) for config in STREAMS)


def scorer_consumer(kind: str, ack_wait: float) -> api.ConsumerConfig:
    """The durable consumer ``<kind>-scorers`` the scorers of ``kind`` share (and KEDA reads the lag of)."""
    name = scorer_consumer_name(kind)
    return api.ConsumerConfig(name=name, durable_name=name, filter_subject=job_filter(kind),
                              ack_policy=api.AckPolicy.EXPLICIT, ack_wait=ack_wait, max_deliver=-1)


async def ensure_streams(js: JetStreamContext, settings: Settings, *,
                         budget: float = STREAM_SETUP_SECONDS) -> None:
    """Create the jobs, results and dead-letter streams as ``settings`` ask, or bring existing ones to them (more
    or fewer replicas, other limits), then the scorers' durable consumers, so an autoscaler reading their lag
    finds them before any scorer starts. Returns once each stream has its leader and current replicas.

    Safe to run from any number of processes at once (two aggregators starting): a stream is added when missing
    (one another process added meanwhile is taken as found), updated only when its configuration differs, and a
    step NATS does not answer in time (a replicated stream being moved, JetStream without its leader) is tried
    again for ``budget`` seconds (each step its own budget). Raises ``StreamRefused`` for what NATS cannot do:
    change a stream's storage, or place more replicas than it has servers; ``StreamsUnavailable`` once the budget
    is spent."""
    for config in stream_configs(settings):
        await _settling(f"setting up the stream {config.name}", lambda c=config: _ensure_stream(js, c, settings),
                        budget)
    for kind in job_kinds():
        consumer = scorer_consumer(kind, settings.ack_wait_seconds)
        await _settling(f"setting up the consumer {consumer.durable_name}",
                        lambda c=consumer: js.add_consumer(JOBS_STREAM, c), budget)


async def _ensure_stream(js: JetStreamContext, config: api.StreamConfig, settings: Settings) -> None:
    what = f"the stream {config.name}"
    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        try:
            await _configure(js.add_stream(config), what, settings)
        except _NameTaken:
            info = await js.stream_info(config.name)  # another process added it meanwhile: check it as found
        else:
            await _caught_up(js, config.name)  # on a cluster NATS answers before the stream takes messages
            return
    _check_storage(info.config, what, settings)
    if not _differs(info.config, config):
        return
    await _configure(js.update_stream(config), what, settings)
    if info.config.num_replicas != config.num_replicas:
        await _caught_up(js, config.name)


def _differs(current: api.StreamConfig, wanted: api.StreamConfig) -> bool:
    """Whether the stream NATS keeps differs from ``wanted`` in what ``stream_configs`` sets (NATS fills in the rest,
    and reads some values back as plain strings or 0 for none)."""
    def seen(config: api.StreamConfig) -> tuple:
        return (sorted(config.subjects or []), api.RetentionPolicy(config.retention).value,
                api.StorageType(config.storage).value, config.num_replicas or 1, float(config.max_age or 0),
                config.max_bytes if config.max_bytes is not None else -1, float(config.duplicate_window or 0))
    return seen(current) != seen(wanted)


async def _settling(what: str, step: Callable[[], Awaitable], budget: float):
    """``step()``, tried again while NATS is unreachable or JetStream unavailable, for ``budget`` seconds."""
    try:
        return await retrying(what, step, transient=lambda error: nats_unavailable(error)
                              or isinstance(error, _PeersOffline), waiting_for="for NATS", budget=budget, backoff=NATS)
    except RetryBudgetSpent as spent:
        raise StreamsUnavailable(f"{what} did not succeed within {budget:g} s: NATS kept answering {spent.last}") \
            from None


def _check_storage(current: api.StreamConfig, what: str, settings: Settings) -> None:
    kept = api.StorageType(current.storage).value  # nats-py reads it back as a plain string
    if kept != settings.stream_storage:
        raise StreamRefused(
            f"{what} is kept in {kept} storage and NATS cannot change a stream's storage: set "
            f"MFSCORE_STREAM_STORAGE={kept}, or delete it (its messages are lost) to have it made in "
            f"{settings.stream_storage} storage")


async def _configure(request: Awaitable, what: str, settings: Settings):
    """Await a stream create or update, turning NATS's refusal into one sentence naming the settings."""
    try:
        return await request
    except APIError as exc:
        if isinstance(exc, (NotFoundError, ServiceUnavailableError)):
            raise
        if exc.err_code == STREAM_NAME_IN_USE:
            raise _NameTaken(str(exc)) from None
        if "peer offline" in (exc.description or ""):
            raise _PeersOffline(exc.description) from None
        raise StreamRefused(
            f"NATS refused {what} with {settings.stream_replicas} replicas (MFSCORE_STREAM_REPLICAS) in "
            f"{settings.stream_storage} storage: {exc.description or exc}") from None


async def wait_for_streams(js: JetStreamContext, stop: asyncio.Event, *, poll_seconds: float = 0.5) -> bool:
    """Wait until the jobs, results and dead-letter streams exist (the aggregator creates them: a scorer may not);
    False if ``stop`` is set first."""
    log = logging.getLogger("mfscore.nats")
    missing, said = [config.name for config in STREAMS], set()
    while missing:
        try:
            await js.stream_info(missing[0])
        except NotFoundError:
            if missing[0] not in said:
                said.add(missing[0])
                log.info("waiting for the aggregator to create the stream %s", missing[0])
            try:
                await asyncio.wait_for(stop.wait(), poll_seconds)
                return False
            except asyncio.TimeoutError:
                continue
        else:
            missing.pop(0)
    return True


async def bucket_keys(kv: KeyValue, *, attempts: int = 5) -> list[str]:
    """Every live key of ``kv`` (``kv.keys()``), [] for none.

    nats-py's key listing can end before its first key: its watcher puts the "nothing pending" marker first when
    the consumer has delivered every key but none has been handled yet (seen on a loaded machine), and ``keys()``
    then says the bucket has no key, so a restore would miss every run. An empty answer is believed at once only
    when the bucket's stream holds no message; else it is asked again after a short wait (``KV_LISTING``),
    ``attempts`` times in all (a bucket whose keys were all deleted holds only their markers, and answers empty each
    time)."""
    for attempt in range(attempts):
        try:
            return await kv.keys()
        except NoKeysError:
            if (await kv.status()).values == 0:
                return []
            if attempt + 1 < attempts:
                await asyncio.sleep(KV_LISTING.delay(attempt))
    return []


async def runs_bucket(js: JetStreamContext, settings: Settings, *, budget: float = STREAM_SETUP_SECONDS) -> KeyValue:
    """The key-value bucket holding run state, created on first use with the replicas and storage of
    ``settings`` (returned once it has its leader and current replicas), or brought to its replicas
    (``StreamRefused`` as for ``ensure_streams``). No age or size limit: a run's state is kept for the retention
    period, which the aggregator enforces. Safe from any number of processes at once, and tried again as
    ``ensure_streams``' steps are."""
    return await _settling(f"setting up the bucket {RUNS_BUCKET}", lambda: _runs_bucket(js, settings), budget)


async def _runs_bucket(js: JetStreamContext, settings: Settings) -> KeyValue:
    storage = api.StorageType(settings.stream_storage)
    try:
        kv = await js.key_value(RUNS_BUCKET)
    except BucketNotFoundError:
        created = js.create_key_value(bucket=RUNS_BUCKET, history=1, storage=storage, replicas=settings.stream_replicas)
        try:
            kv = await _configure(created, f"the bucket {RUNS_BUCKET}", settings)
        except _NameTaken:
            kv = await js.key_value(RUNS_BUCKET)  # another process made it meanwhile: checked as found
        else:
            await _caught_up(js, RUNS_STREAM)  # as for a new stream: its first put may otherwise find no responder
            return kv
    current = (await kv.status()).stream_info.config
    _check_storage(current, f"the bucket {RUNS_BUCKET}", settings)
    if current.num_replicas != settings.stream_replicas:
        await _configure(js.update_stream(dataclasses.replace(current, num_replicas=settings.stream_replicas)),
                         f"the bucket {RUNS_BUCKET}", settings)
        await _caught_up(js, current.name)
    return kv


async def _caught_up(js: JetStreamContext, stream: str, timeout: float = REPLICAS_CATCH_UP_SECONDS) -> None:
    """Wait until ``stream`` has a leader and every replica is current. Meanwhile NATS may not answer a request on
    it within the client's timeout (an update of the jobs stream, moving its consumers too), and a replica still
    copying does not answer the direct gets a bucket is read with."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = await js.stream_info(stream)
        except nats.errors.TimeoutError:  # the stream is moving: ask again
            continue
        peers = (info.cluster.replicas if info.cluster else None) or []
        leader = info.cluster.leader if info.cluster else "single server"
        if leader and len(peers) == info.config.num_replicas - 1 and all(peer.current for peer in peers):
            return
        await asyncio.sleep(0.1)
    logging.getLogger("mfscore.nats").warning("%s's replicas are not all current after %g s", stream, timeout)


async def publish_job(js: JetStreamContext, kind: str, job: jobs_pb2.Job) -> api.PubAck:
    """Publish a job on its run's subject of its resource class once: a repeat within the duplicate window is
    dropped."""
    return await js.publish(job_subject(kind, job.run_id), job.SerializeToString(),
                            headers={MSG_ID_HEADER: job_id(job)})


async def purge_run_jobs(js: JetStreamContext, run_id: str) -> None:
    """Remove the run's jobs still queued, of every kind, so they are not scored for a run that failed or finished.
    A job a worker holds now is gone too: its record, if any, is dropped by the aggregator."""
    subjects = run_jobs(run_id)  # checked before NATS is asked
    await js.purge_stream(JOBS_STREAM, subject=subjects)
