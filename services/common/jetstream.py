"""NATS JetStream for mfscore: the streams, their subjects, and the job worker every scorer runs.

Jobs go to a work-queue stream (each job is taken by one scorer), per-trial records to a
results stream the aggregator folds (and can replay), jobs that could not be done to a
dead-letter stream. Message ids make publishing idempotent within the duplicate window.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import nats
from google.protobuf.message import DecodeError
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    NoKeysError,
    NoStreamResponseError,
    NotFoundError,
    ServiceUnavailableError,
)
from nats.js.kv import KeyValue

from mfscore import tasks
from mfscore.errors import MfscoreError, OptionError
from mfscore.services.common.metrics import JOB_DURATION, JOBS_IN_FLIGHT, JOBS_TOTAL, task_label
from mfscore.services.common.object_store import ObjectStoreUnavailable
from mfscore.services.common.run_layout import RUN_ID
from mfscore.services.common.settings import Settings
from mfscore.services.wire import jobs_pb2, records_pb2

JOBS_STREAM = "MFSCORE_JOBS"
RESULTS_STREAM = "MFSCORE_RESULTS"
DEAD_STREAM = "MFSCORE_DEAD"
RUNS_BUCKET = "mfscore_runs"
RUNS_STREAM = f"KV_{RUNS_BUCKET}"  # the stream NATS keeps the bucket in
JOB_KINDS = tasks.resources()  # the registered tasks' resource classes (Task.resource; every job kind is a task's)
DUPLICATE_WINDOW_SECONDS = 120.0
STREAM_SETUP_SECONDS = 60.0  # how long setting up a stream waits out NATS not answering (a quorum forming)
STREAM_NAME_IN_USE = 10058  # NATS' error code of an add whose stream exists (with another configuration)
REPLICAS_CATCH_UP_SECONDS = 60.0  # how long a change of replicas is waited for (the jobs stream's took 11 s)
ERROR_HEADER = "Mfscore-Error"
MSG_ID_HEADER = "Nats-Msg-Id"
MAX_ERROR_CHARS = 1000
OUTCOMES = ("done", "retried", "dead")
OUTAGE_PAUSE_MAX_SECONDS = 5.0  # the longest a worker waits before it tries S3 or NATS again with a job
# Failures of the infrastructure, not of the job: retried for a time budget, never counted against max_deliver.
INFRASTRUCTURE_ERRORS = (
    ObjectStoreUnavailable, ConnectionError, TimeoutError, nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError, nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError, NoStreamResponseError, ServiceUnavailableError,
)

# Setting up a stream or consumer is tried again on these: NATS not answering in time, or JetStream without a leader.
SETUP_TRANSIENT = (TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
                   nats.errors.StaleConnectionError, NoStreamResponseError, ServiceUnavailableError)

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



def _jobs_of(kind: str) -> str:
    if kind not in JOB_KINDS:
        raise ValueError(f"job kind {kind!r} is not one of {', '.join(JOB_KINDS)}")
    return f"mfscore.jobs.{kind}"


def _run_token(run_id: str) -> str:
    """A run id as one NATS subject token: the aggregator's ids (run_layout.RUN_ID) are, and nothing else is taken."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run id {run_id[:80]!r} is not a single NATS subject token of an mfscore run")
    return run_id


def job_subject(kind: str, run_id: str) -> str:
    """The subject a run's jobs of resource class ``kind`` (mask, video, json) are published on: one subject per
    run, so the queued jobs of a run that failed or finished can be purged (``purge_run_jobs``)."""
    return f"{_jobs_of(kind)}.{_run_token(run_id)}"


def job_filter(kind: str) -> str:
    """The subjects of every run's jobs of ``kind``: what the ``<kind>-scorers`` consumer pulls."""
    return f"{_jobs_of(kind)}.>"


def dead_subject(kind: str) -> str:
    """The dead-letter subject for jobs of ``kind``."""
    _jobs_of(kind)
    return f"mfscore.dead.{kind}"


def result_subject(run_id: str) -> str:
    """The subject a run's trial records are published on."""
    return f"mfscore.results.{_run_token(run_id)}"


def job_id(message: jobs_pb2.Job | records_pb2.TrialRecord) -> str:
    """The de-duplication id of a job, and of its record: the run and the job's key (query, role, ordinal)."""
    key = message.key
    return f"{message.run_id}/{key.query}/{key.role}/{key.ordinal}"


class NatsRefused(MfscoreError):
    """NATS refused this process's user, password or certificate check: retrying cannot help."""


class StreamRefused(MfscoreError):
    """NATS refused a stream or bucket as the settings ask for it (its storage changed, more replicas than servers)."""


class StreamsUnavailable(MfscoreError):
    """NATS did not let the streams be set up within the budget: JetStream without a leader for that long."""


class _NameTaken(Exception):
    """Another process added the stream between this one's look and its add."""


class _Refused(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


_USER = re.compile(r"[A-Za-z0-9_-]{1,64}")


def inbox_prefix(user: str) -> str:
    """Where ``user``'s replies arrive: an inbox prefix of its own, so its permissions can name its replies alone."""
    return f"_INBOX.{user}" if user else "_INBOX"


def nats_servers(url: str) -> list[str]:
    """The servers ``MFSCORE_NATS_URL`` names: one URL, or several separated by commas (a cluster's nodes; the
    client connects to any and moves to another when it goes)."""
    servers = [part.strip() for part in url.split(",") if part.strip()]
    if not servers:
        raise OptionError("MFSCORE_NATS_URL names no NATS server")
    return servers


def public_url(url: str) -> str:
    """``url`` (one URL or a comma-separated list) without a user or password in it, for logs and messages."""
    return re.sub(r"//[^/@,]*@", "//", url)


def nats_tls(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context for NATS, trusting ``settings.tls_ca`` (the system's CAs for ``tls://`` URLs without one);
    None for ``nats://`` URLs and no CA."""
    if not settings.tls_ca and all(urlsplit(url).scheme != "tls" for url in nats_servers(settings.nats_url)):
        return None
    try:
        return ssl.create_default_context(cafile=settings.tls_ca or None)
    except (OSError, ssl.SSLError) as exc:
        raise OptionError(f"the CA file {settings.tls_ca} (MFSCORE_TLS_CA) cannot be used: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


async def connect(settings: Settings, *, name: str = "mfscore") -> tuple[Client, JetStreamContext]:
    """Connect to a server of ``settings.nats_url`` as ``settings.nats_user``, reconnecting for ever after a loss (to
    any server listed, or any the cluster announces); returns (nc, js).

    With TLS (``nats_tls``) the handshake comes first, before the server says anything, so nobody between
    can make the client send its password in the clear. A server refusing the user or failing the certificate
    check raises ``NatsRefused`` at once; an unreachable one is waited for.
    """
    log = logging.getLogger("mfscore.nats")
    servers, user = nats_servers(settings.nats_url), settings.nats_user
    url = public_url(", ".join(servers))
    if user and not _USER.fullmatch(user):
        raise OptionError("MFSCORE_NATS_USER must be 1 to 64 letters, digits, '-' or '_'")
    tls = nats_tls(settings)
    connected = False

    async def disconnected() -> None:
        if not nc.is_closed:
            log.warning("disconnected from NATS at %s", url)

    async def reconnected() -> None:
        log.info("reconnected to NATS at %s", url)

    async def error(exc: Exception) -> None:
        if not connected and (isinstance(exc, ssl.SSLError) or "authorization violation" in str(exc).lower()):
            raise _Refused(exc)
        log.warning("NATS connection error: %s", exc)

    credentials = {"user": user, "password": settings.nats_password} if user else {}
    nc = Client()
    try:
        await nc.connect(
            servers=servers, name=name, connect_timeout=5, reconnect_time_wait=1,
            max_reconnect_attempts=-1, disconnected_cb=disconnected, reconnected_cb=reconnected, error_cb=error,
            tls=tls, tls_handshake_first=tls is not None, inbox_prefix=inbox_prefix(user), **credentials,
        )
    except _Refused as refused:
        with contextlib.suppress(Exception):  # after a failed TLS handshake nats-py's close waits for ever
            await asyncio.wait_for(nc.close(), 1)
        who = (f"the user {user!r}" if user
               else "a connection without a user (set MFSCORE_NATS_USER and MFSCORE_NATS_PASSWORD)")
        reason = " ".join(str(refused.cause).replace("nats: ", "").strip("'").split())
        raise NatsRefused(f"NATS at {url} refused {who}: {reason}") from None
    connected = True
    return nc, nc.jetstream()


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
    name = f"{kind}-scorers"
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
    for kind in JOB_KINDS:
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
    log = logging.getLogger("mfscore.nats")
    deadline, delay, said = time.monotonic() + budget, 0.2, False
    while True:
        try:
            return await step()
        except SETUP_TRANSIENT as exc:
            if time.monotonic() + delay > deadline:
                raise StreamsUnavailable(f"{what} did not succeed within {budget:g} s: NATS kept answering "
                                         f"{_one_line(exc)}") from None
            if not said:
                said = True
                log.warning("%s: NATS is not ready, trying again (%s)", what, _one_line(exc))
            await asyncio.sleep(delay)
            delay = min(2 * delay, 2.0)


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
    when the bucket's stream holds no message; else it is asked again, ``attempts`` times in all (a bucket whose
    keys were all deleted holds only their markers, and answers empty each time)."""
    for attempt in range(attempts):
        try:
            return await kv.keys()
        except NoKeysError:
            if (await kv.status()).values == 0:
                return []
            await asyncio.sleep(0.05 * (attempt + 1))
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
    subjects = f"mfscore.jobs.*.{_run_token(run_id)}"
    await js.purge_stream(JOBS_STREAM, subject=subjects)


def _one_line(exc: BaseException) -> str:
    text = exc.sentence() if isinstance(exc, MfscoreError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:MAX_ERROR_CHARS]


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
    ``OUTAGE_PAUSE_MAX_SECONDS`` or ``retry_delay_max_seconds``; back to none after a job succeeds), so an outage
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
      ``retry_delay_max_seconds``.
    - ``fetch_timeout_seconds``: how long one idle fetch waits, so how late an idle worker notices ``stop``.
    - ``concurrency``: jobs in flight at once; 2 lets one job's objects download while another is scored.
    """

    def __init__(
        self, js: JetStreamContext, *, kind: str, service: str,
        handle: Callable[[jobs_pb2.Job], Awaitable[records_pb2.TrialRecord]],
        ack_wait: float, max_deliver: int, retry_budget_seconds: float = 900.0, max_deliveries: int | None = None,
        heartbeat_seconds: float | None = None, shutdown_grace_seconds: float, retry_delay_seconds: float = 1.0,
        retry_delay_max_seconds: float = 30.0, fetch_timeout_seconds: float = 1.0, concurrency: int = 1,
    ):
        _jobs_of(kind)
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
        self.max_deliveries = max_deliveries or 3 * (max_deliver + self._deliveries_within(retry_budget_seconds))
        self.fetch_timeout_seconds = fetch_timeout_seconds
        self.concurrency = concurrency
        self.consumer = scorer_consumer(kind, ack_wait).durable_name
        self.log = logging.getLogger(f"mfscore.{service}")
        self._failures: dict[int, _Failures] = {}
        self._pause = 0.0       # how long the worker waits after an infrastructure failure before taking a job
        self._resume_at = 0.0
        self._pruned = time.monotonic()
        for task in tasks.load_all():
            if task.resource == kind:
                for outcome in OUTCOMES:
                    JOBS_TOTAL.labels(service, task.name, outcome)

    def _delay(self, delivered: int) -> float:
        return min(self.retry_delay_max_seconds, self.retry_delay_seconds * 2 ** min(delivered - 1, 64))

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
                    self.log.warning("could not fetch a %s job, trying again: %s", self.kind, _one_line(exc))
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
                                                  f"{_one_line(exc)}")
            delay = self._delay(delivered)
            self.log.warning("job %s failed on attempt %d of %d, retrying in %.3g s: %s",
                             job_id(job), failures.errors, self.max_deliver, delay, _one_line(exc), extra=_fields(job))
            return await self._nak(msg, delay)
        self._failures.pop(msg.metadata.sequence.stream, None)
        self._pause = 0.0
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
                                              f"last failure: {_one_line(exc)}")
        self._pause = min(self.retry_delay_max_seconds, OUTAGE_PAUSE_MAX_SECONDS,
                          max(self.retry_delay_seconds, 2 * self._pause))
        self._resume_at = now + self._pause
        delay = self._pause
        self.log.warning("job %s: infrastructure unavailable, retrying in %.3g s (%.0f s of the %g s retry budget "
                         "left): %s", job_id(job), delay, self.retry_budget_seconds - waited,
                         self.retry_budget_seconds, _one_line(exc), extra=_fields(job))
        return await self._nak(msg, delay)

    async def _nak(self, msg: Msg, delay: float) -> str:
        try:
            await msg.nak(delay=delay)
        except Exception as exc:  # NATS is away: the job comes back after the ack wait
            self.log.warning("could not hand a job back: %s", _one_line(exc))
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
            self.log.error("could not dead-letter a job, handing it back: %s", _one_line(exc))
            return await self._nak(msg, self.retry_delay_max_seconds)
        self._failures.pop(msg.metadata.sequence.stream, None)
        await msg.term()
        name = job_id(job) if job is not None else f"at stream sequence {msg.metadata.sequence.stream}"
        self.log.error("job %s dead-lettered: %s", name, error, extra=_fields(job) if job is not None else {})
        return "dead"
