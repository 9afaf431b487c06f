"""The Aggregator service: runs from creation to reports.

A client creates a run, streams its inputs here (``uploads``: checked, then stored with the aggregator's own
key) and submits it; its reports are stored with a sealed manifest and served only as written (``reports``).
A run's status, spec and report seal live in a JetStream key-value bucket (``state``); its records live in the
stream. On start the aggregator reads every run from the bucket and replays the results stream
from the beginning, so a restart loses nothing: records are keyed (run, query, role, ordinal) and
folding one twice changes nothing. A state change waits out a NATS outage before watchers are told; a run
that ends is cleaned up, and deleted after the retention period (docs/distributed.md, "Retention").
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import grpc
import nats.errors
from google.protobuf.message import DecodeError
from google.protobuf.timestamp_pb2 import Timestamp
from nats.js.api import DeliverPolicy
from nats.js.errors import NoKeysError, NoStreamResponseError, NotFoundError, ServiceUnavailableError

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.records import fold
from mfscore.reports import figure_process
from mfscore.run.local import report_into, score_plan
from mfscore.services.common import metrics
from mfscore.services.common.auth import Caller, aio_client_channel, caller
from mfscore.services.common.grpc_server import (
    MESSAGE_OPTIONS,
    follow_health,
    start_service_server,
    stop_grpc_server,
)
from mfscore.services.common.jetstream import (
    RESULTS_STREAM,
    connect,
    ensure_streams,
    publish_job,
    purge_run_jobs,
    result_subject,
    runs_bucket,
)
from mfscore.services.common.messages import job_key, job_message, outcome
from mfscore.services.aggregator import reports, state, uploads
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError, ObjectStoreUnavailable
from mfscore.services.common.planning import named_by_key, plan_run
from mfscore.services.common.run_layout import (
    BadName,
    check_file_name,
    check_output_name,
    check_run_id,
    input_prefix,
    run_prefix,
)
from mfscore.services.common.settings import Settings
from mfscore.services.wire import records_pb2, runs_pb2, services_pb2, services_pb2_grpc
from mfscore.tasks.base import PLANNER, Job, Plan

log = logging.getLogger("mfscore.aggregator")
T = TypeVar("T")
State = runs_pb2.RunState
TERMINAL = {State.RUN_STATE_REJECTED, State.RUN_STATE_DONE, State.RUN_STATE_FAILED}
MAX_RUN_SPEC_BYTES = 512 << 10  # a run's state (spec and status) must fit a 1 MiB NATS key-value entry
VALIDATION_TIMEOUT = 600
RESULTS_HEARTBEAT = 1.0  # seconds between the server's heartbeats on the replay of records
STATE_RETRY_SECONDS = (0.2, 5.0)  # the first and the longest wait between attempts to write a run's state
SUBMIT_WRITE_SECONDS = 10.0       # how long SubmitRun tries to record a new run before answering UNAVAILABLE
SWEEP_SECONDS = 60.0              # how often clean-ups that failed are retried and expired runs deleted
STORAGE_SWEEP_SECONDS = 3600.0    # how often uploads no run claims are looked for
ORPHAN_UPLOAD_SECONDS = 86400.0   # a run created this long ago and never submitted is deleted (a client gave up)
DAY_SECONDS = 86400


@dataclass
class RunEntry:
    spec: runs_pb2.RunSpec
    status: runs_pb2.RunStatus
    task: object | None = None       # the run's Task, once planned
    plan: Plan | None = None
    planned: set = field(default_factory=set)
    outcomes: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)  # records that arrived before the run was planned (a replay)
    version: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    saving: asyncio.Lock = field(default_factory=asyncio.Lock)  # a run's state writes land one at a time, in order
    cleaned: bool = False  # a finished run's jobs, records, inputs and work directory are gone
    uploading: int = 0     # UploadInputs streams under way (a created run)


class Aggregator(services_pb2_grpc.AggregatorServicer):
    def __init__(self, settings: Settings, store: ObjectStore, js, kv, validator, *, nc=None):
        self.settings = settings
        self.store = store
        self.js = js
        self.kv = kv
        self.validator = validator
        self.nc = nc  # the NATS connection, to wait for it while it is down (None: assume it is up)
        self.runs: dict[str, RunEntry] = {}
        self._tasks: set[asyncio.Task] = set()
        self._cleaning: set[str] = set()
        self._abandoned: set[str] = set()  # runs SubmitRun could not record: whatever part landed is purged
        self._strays: set[str] = set()     # subjects of records of no run: purged by the next sweep
        self._storage_swept = 0.0
        self._recording = asyncio.Lock()  # SubmitRun's writes and the sweep's purges of unrecorded runs, apart

    # --- gRPC ---------------------------------------------------------------------------------

    async def CreateRun(self, request, context):
        who = caller()
        run_id = uuid.uuid4().hex
        spec = runs_pb2.RunSpec(run_id=run_id, input_prefix=input_prefix(run_id), submitted_by=who.name)
        status = runs_pb2.RunStatus(run_id=run_id, state=State.RUN_STATE_CREATED, submitted_at=_now(),
                                    owner=who.name, owner_role=who.role)
        entry = RunEntry(spec, status)
        self.runs[run_id] = entry
        await self._record(entry, context, spec, status)
        log.info("run %s: created", run_id)
        return runs_pb2.CreateRunResponse(run_id=run_id, input_prefix=spec.input_prefix)

    async def UploadInputs(self, request_iterator, context):
        first = await anext(aiter(request_iterator), None)
        if first is None:
            return runs_pb2.UploadInputsResponse()
        entry = await self._entry(first.run_id, context, owned=True)
        if entry.status.state != State.RUN_STATE_CREATED:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {first.run_id} is submitted; its inputs "
                                                                     "cannot change")
        run_id = entry.spec.run_id
        spool_dir = os.path.join(self._work_dir(run_id), "uploading")
        os.makedirs(spool_dir, exist_ok=True)

        async def put(name, data, size):
            await asyncio.to_thread(self.store.put_stream, input_prefix(run_id) + name, data, size)

        entry.uploading += 1
        try:
            stored = await uploads.receive(_chained(first, request_iterator), run_id, put,
                                           max_bytes=self.settings.max_upload_bytes, spool_dir=spool_dir)
        except MfscoreError as error:
            code = grpc.StatusCode.UNAVAILABLE if isinstance(error, ObjectStoreUnavailable) else \
                grpc.StatusCode.INVALID_ARGUMENT
            await context.abort(code, f"run {run_id}: {error.sentence()}")
        finally:
            entry.uploading -= 1
        return runs_pb2.UploadInputsResponse(files=stored)

    async def SubmitRun(self, request, context):
        try:
            check_output_name(request.output_name)
            for table in request.tables:
                check_file_name(table, "table name")
        except BadName as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        entry = await self._entry(request.run_id, context, owned=True)
        if entry.status.state != State.RUN_STATE_CREATED:
            return entry.status  # submitted already: the same run (a client resubmits after a reconnection)
        run_id = entry.spec.run_id
        if request.task not in tasks.names():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{request.task[:64]!r} is not a task; the tasks are {', '.join(sorted(tasks.names()))}")
        if request.ByteSize() > MAX_RUN_SPEC_BYTES:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the run spec is {request.ByteSize()} bytes, more "
                                f"than the limit of {MAX_RUN_SPEC_BYTES}; nothing was recorded")
        if request.input_prefix != entry.spec.input_prefix:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"a run's inputs are under "
                                f"{entry.spec.input_prefix!r}, its own prefix, not {request.input_prefix[:200]!r}")
        if entry.uploading:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is still receiving inputs; "
                                                                     "submit it once they are uploaded")
        spec = runs_pb2.RunSpec()
        spec.CopyFrom(request)
        spec.submitted_by = entry.spec.submitted_by
        status = runs_pb2.RunStatus()
        status.CopyFrom(entry.status)
        status.task, status.state = spec.task, State.RUN_STATE_VALIDATING
        status.submitted_at.CopyFrom(_now())
        await self._record(entry, context, spec, status)
        self._spawn(self._start(entry, validate=not spec.skip_validation, publish=True))
        log.info("run %s: %s submitted", run_id, spec.task)
        return entry.status

    async def GetRun(self, request, context):
        return (await self._entry(request.run_id, context)).status

    async def WatchRun(self, request, context):
        entry = await self._entry(request.run_id, context)
        seen = -1
        while True:
            async with entry.changed:
                await entry.changed.wait_for(lambda: entry.version != seen)
                seen = entry.version
                snapshot = runs_pb2.RunStatus()
                snapshot.CopyFrom(entry.status)
            yield snapshot
            if snapshot.state in TERMINAL:
                return
            await asyncio.sleep(0.1)  # coalesce bursts of records into one update

    async def FetchReport(self, request, context):
        entry = await self._entry(request.run_id, context)
        run_id = entry.spec.run_id
        if entry.status.state != State.RUN_STATE_DONE:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"run {run_id} is {State.Name(entry.status.state)}, not done")
        try:
            seal = await state.report_seal(self.kv, run_id)
            if seal is None:
                await context.abort(grpc.StatusCode.NOT_FOUND, f"no report of run {run_id} was recorded")
            async for message in reports.stream_report(self.store, run_id, seal):
                yield message
        except reports.ReportTampered as error:
            metrics.REPORTS_TAMPERED.inc()
            log.error("run %s: %s", run_id, error.sentence())
            await context.abort(grpc.StatusCode.DATA_LOSS, f"{error.sentence()}; nothing of it should be used")
        except (ObjectStoreUnavailable, nats.errors.Error, TimeoutError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the report of run {run_id} cannot be read now: "
                                                             f"{_one_line(error)}")
        except ObjectStoreError as error:
            await context.abort(grpc.StatusCode.INTERNAL, f"the report of run {run_id} cannot be read: "
                                                          f"{error.sentence()}")

    async def ListRuns(self, request, context):
        who = caller()
        runs = [e.status for e in self.runs.values()
                if _may_see(who, e.status)
                and (request.state == State.RUN_STATE_UNSPECIFIED or e.status.state == request.state)]
        return runs_pb2.ListRunsResponse(runs=sorted(runs, key=lambda s: s.submitted_at.ToNanoseconds()))

    # --- the flow -----------------------------------------------------------------------------

    async def _start(self, entry: RunEntry, *, validate: bool, publish: bool) -> None:
        run_id = entry.spec.run_id
        input_dir = self._input_dir(run_id)
        try:
            if validate and not await self._validate(entry):
                return
            task, plan = await self._outlasting(f"run {run_id}: fetching its tables",
                                                lambda: asyncio.to_thread(plan_run, self.store, entry.spec, input_dir))
            entry.task, entry.plan, entry.planned = task, plan, {job.key for job in plan.jobs}
            if task.resource == PLANNER:  # microseconds per job: scored here (see Task.resource)
                entry.outcomes = await asyncio.to_thread(score_plan, task, plan)
            elif publish:
                for job in plan.jobs:
                    if entry.status.state in TERMINAL:  # failed meanwhile (a record of a job already out)
                        return
                    wire = job_message(run_id, task, Job(job.key, _on_wire(task, job.work, input_dir)),
                                       entry.spec.input_prefix)
                    await self._durably(f"run {run_id}: publishing its jobs",
                                        lambda: publish_job(self.js, task.resource, wire))
            entry.status.trials_planned = len(plan.jobs)
            if entry.status.state in TERMINAL:
                return
            await self._set_state(entry, State.RUN_STATE_SCORING)
            pending, entry.pending = entry.pending, []
            for record in pending:
                if entry.status.state in TERMINAL:
                    return
                await self._fold(entry, record)
            entry.status.trials_received = len(entry.outcomes)
            metrics.TRIALS_PLANNED.inc(len(plan.jobs))
            log.info("run %s: %d jobs planned", run_id, len(plan.jobs))
            await self._maybe_report(entry)
        except MfscoreError as error:
            await self._fail(entry, named_by_key(error.sentence(), input_dir))
        except Exception as error:  # a bug: the run fails with one sentence, the log keeps the traceback
            log.exception("run %s: planning failed", run_id)
            await self._fail(entry, f"internal error while planning: {type(error).__name__}: {error}")

    async def _validate(self, entry: RunEntry) -> bool:
        request = services_pb2.ValidateRequest(run=entry.spec)
        report = await self._outlasting(f"run {entry.spec.run_id}: validating",
                                        lambda: self.validator.Validate(request, timeout=VALIDATION_TIMEOUT))
        entry.status.validation.CopyFrom(report)
        if report.valid:
            return True
        errors = [f for f in report.findings if f.severity == "error"]
        await self._fail(entry, f"the validator rejected the submission ({len(errors)} error(s)); the first: "
                                f"{errors[0].message if errors else 'no message'}", state=State.RUN_STATE_REJECTED)
        return False

    def _input_dir(self, run_id: str) -> str:
        return os.path.join(self.settings.work_dir, "runs", run_id, "inputs")

    async def on_result(self, msg) -> None:
        """Fold one record (a JetStream message of the results stream)."""
        started = time.perf_counter()
        try:
            record = records_pb2.TrialRecord.FromString(msg.data)
        except DecodeError:
            log.warning("dropped a message on %s that is not a trial record", msg.subject[:200])
            self._strays.add(msg.subject)
            return
        entry = self.runs.get(record.run_id)
        if entry is None:
            self._strays.add(msg.subject)
            return
        if entry.status.state in TERMINAL:
            entry.cleaned = False  # a record of a finished run (a job in flight when it ended): purged again
            return
        if entry.task is None:
            entry.pending.append(record)
            return
        await self._fold(entry, record)
        metrics.AGGREGATOR_FOLD_DURATION.observe(time.perf_counter() - started)
        await self._maybe_report(entry)

    async def _fold(self, entry: RunEntry, record: records_pb2.TrialRecord) -> None:
        key = job_key(record.key)
        if record.error:
            entry.status.trials_dead += 1
            await self._fail(entry, f"the job {key} could not be scored: {record.error}")
            return
        if key not in entry.planned or record.task != entry.task.name:
            log.warning("run %s: dropped a %s record for the unplanned job %s", record.run_id, record.task, key)
            return
        before = len(entry.outcomes)
        try:
            decoded = outcome(entry.task, record)
        except Exception as error:  # untrusted bytes: whatever the decoder raises, the run cannot go on
            await self._fail(entry, f"the record of the job {key} could not be decoded ({_one_line(error)[:300]})")
            return
        try:
            fold([(key, decoded)], into=entry.outcomes)
        except MfscoreError as error:
            await self._fail(entry, error.sentence())
            return
        entry.status.trials_received = len(entry.outcomes)
        metrics.TRIALS_RECEIVED.inc(len(entry.outcomes) - before)  # a repeated record adds nothing
        await self._changed(entry)

    async def _maybe_report(self, entry: RunEntry) -> None:
        if (entry.plan is not None and entry.status.state == State.RUN_STATE_SCORING
                and entry.planned.issubset(entry.outcomes)):
            await self._set_state(entry, State.RUN_STATE_REPORTING)
            self._spawn(self._report(entry))

    async def _report(self, entry: RunEntry) -> None:
        run_id = entry.spec.run_id
        started = time.perf_counter()
        try:
            failure = await asyncio.to_thread(self._write_report, entry)
            if failure is not None:
                await self._fail(entry, failure)
                return
            seal = await self._outlasting(f"run {run_id}: storing its reports",
                                          lambda: asyncio.to_thread(self._store_report, run_id))
            await self._durably(f"run {run_id}: recording its report's digest",
                                lambda: state.seal_report(self.kv, run_id, seal))
            shutil.rmtree(self._work_dir(run_id), ignore_errors=True)
            entry.status.finished_at.CopyFrom(_now())
            await self._set_state(entry, State.RUN_STATE_DONE)
            metrics.AGGREGATOR_REPORT_DURATION.observe(time.perf_counter() - started)
            log.info("run %s: done in %.2f s of reporting", run_id, time.perf_counter() - started)
            self._forget(entry)
        except MfscoreError as error:
            await self._fail(entry, error.sentence())
        except Exception as error:
            log.exception("run %s: reporting failed", run_id)
            await self._fail(entry, f"internal error while reporting: {type(error).__name__}: {error}")

    def _out_dir(self, run_id: str) -> str:
        return os.path.join(self.settings.work_dir, "runs", run_id, "out")

    def _write_report(self, entry: RunEntry) -> str | None:
        """Report into a scratch directory, with what the command says beside it; the sentence of a report's error,
        if any."""
        run_id = entry.spec.run_id
        input_dir = self._input_dir(run_id)
        out_dir = self._out_dir(run_id)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        plan = entry.plan
        lines = report_into(entry.task, plan, entry.outcomes, os.path.join(out_dir, entry.spec.output_name))
        entry.status.notes[:] = [named_by_key(line, input_dir) for line in plan.stderr + lines.stderr]
        if lines.error is not None:
            return named_by_key(lines.error.sentence(), input_dir)
        said = {"stdout": [named_by_key(line, input_dir) for line in plan.stdout + lines.stdout],
                "status": lines.status}
        with open(out_dir + ".json", "w") as f:
            json.dump(said, f)
        return None

    def _store_report(self, run_id: str) -> str:
        """Store what ``_write_report`` wrote, with its manifest (blocking; again after an S3 outage, whole); the
        manifest's SHA-256."""
        out_dir = self._out_dir(run_id)
        with open(out_dir + ".json") as f:
            said = json.load(f)
        return reports.store_report(self.store, run_id, out_dir, said["stdout"], said["status"])

    # --- state --------------------------------------------------------------------------------

    async def restore(self) -> None:
        """Read every run from the bucket; resume the unfinished ones (their records replay from the stream)."""
        try:
            keys = await self.kv.keys()
        except NoKeysError:
            keys = []
        present = set(keys)
        self._abandoned.update(key[len("spec."):] for key in keys
                               if key.startswith("spec.") and f"status.{key[len('spec.'):]}" not in present)
        for key in keys:
            if not key.startswith("status."):
                continue
            run_id = key[len("status."):]
            try:
                spec, status = await state.load(self.kv, run_id)
            except NotFoundError:
                log.warning("run %s: half of its state is missing from the bucket; the rest is purged", run_id)
                self._abandoned.add(run_id)
                continue
            entry = RunEntry(spec, status)
            self.runs[run_id] = entry
            if status.state not in TERMINAL and status.state != State.RUN_STATE_CREATED:
                validating = status.state == State.RUN_STATE_VALIDATING
                entry.status.state = State.RUN_STATE_VALIDATING if validating else State.RUN_STATE_SCORING
                entry.status.trials_received = 0
                self._spawn(self._start(entry, validate=validating and not spec.skip_validation, publish=validating))
        self._count_states()
        log.info("restored %d run(s)", len(self.runs))

    async def _entry(self, run_id: str, context, *, owned: bool = False) -> RunEntry:
        """The caller's run ``run_id``; another caller's run is as unknown as a run that never was. An operator sees
        every run, but only the run's own caller (``owned``) may upload into it or submit it."""
        try:
            check_run_id(run_id)
        except BadName as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        entry = self.runs.get(run_id)
        who = caller()
        if entry is None or not (_owns(who, entry.status) if owned else _may_see(who, entry.status)):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"there is no run {run_id[:80]!r}" +
                                ("; make one with CreateRun" if owned else ""))
        return entry

    async def _fail(self, entry: RunEntry, message: str, state=State.RUN_STATE_FAILED) -> None:
        entry.status.message = message
        entry.status.finished_at.CopyFrom(_now())
        log.warning("run %s: %s: %s", entry.spec.run_id, State.Name(state), message)
        await self._set_state(entry, state)
        self._forget(entry)

    def _forget(self, entry: RunEntry) -> None:
        """A finished run keeps only its status."""
        entry.task, entry.plan, entry.planned, entry.outcomes, entry.pending = None, None, set(), {}, []

    async def _set_state(self, entry: RunEntry, state) -> None:
        """Change the run's state, record it (waiting out a NATS outage, so the bucket ends up saying what memory
        says) and tell its watchers, whatever happens. A run that ends is cleaned up."""
        entry.status.state = state
        try:
            await self._save(entry)
        finally:
            self._count_states()
            await self._changed(entry)
        if state in TERMINAL:
            self._spawn(self._clean_up(entry))

    async def _changed(self, entry: RunEntry) -> None:
        async with entry.changed:
            entry.version += 1
            entry.changed.notify_all()

    async def _save(self, entry: RunEntry) -> None:
        """Write the run's status to the bucket (its spec was written when it was recorded), waiting out a NATS
        outage. Each write takes the status as it is when it is sent, so the last one to land is the latest."""
        run_id = entry.spec.run_id
        async with entry.saving:
            await self._durably(f"run {run_id}: recording {State.Name(entry.status.state)}",
                                lambda: state.save_status(self.kv, entry.status))

    async def _record(self, entry: RunEntry, context, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        """Record the run's new spec and status and make them the entry's. When NATS cannot take them within
        SUBMIT_WRITE_SECONDS the caller is told UNAVAILABLE and the entry keeps what it had: a run that was never
        recorded is forgotten, and whatever part of it landed is purged later. A run is accepted once recorded."""
        run_id = spec.run_id
        try:
            if not self._connected():
                raise nats.errors.ConnectionReconnectingError()
            async with asyncio.timeout(SUBMIT_WRITE_SECONDS), self._recording, entry.saving:
                await state.save_spec(self.kv, spec)
                await state.save_status(self.kv, status)
        except (nats.errors.Error, TimeoutError) as error:
            if entry.status.state == State.RUN_STATE_CREATED and status.state == State.RUN_STATE_CREATED:
                if self.runs.get(run_id) is entry:
                    del self.runs[run_id]
                self._abandoned.add(run_id)
            log.warning("run %s: not recorded, NATS is unavailable: %s", run_id, _one_line(error))
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the aggregator cannot reach NATS, so run {run_id} "
                                                             "was not recorded; try again")
        entry.spec, entry.status = spec, status
        self._abandoned.discard(run_id)
        self._count_states()
        await self._changed(entry)

    async def _outlasting(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, again with backoff while S3 or the validator is unavailable (``ObjectStoreUnavailable``, gRPC
        UNAVAILABLE), for up to the retry budget (MFSCORE_RETRY_BUDGET); then, or for any other error, it raises."""
        delay, longest = STATE_RETRY_SECONDS
        since = time.monotonic()
        while True:
            try:
                result = await call()
            except (ObjectStoreUnavailable, grpc.aio.AioRpcError) as error:
                if isinstance(error, grpc.aio.AioRpcError) and error.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                waited = time.monotonic() - since
                why = error.sentence() if isinstance(error, MfscoreError) else f"the validator: {error.details()}"
                if waited >= self.settings.retry_budget_seconds:
                    raise MfscoreError(f"{what} failed for {waited:.0f} s, the retry budget (MFSCORE_RETRY_BUDGET): "
                                       f"{why}") from None
                if delay == STATE_RETRY_SECONDS[0]:
                    log.warning("%s: waiting for it to be available (%s)", what, " ".join(why.split()))
                await asyncio.sleep(delay)
                delay = min(longest, delay * 2)
            else:
                if delay != STATE_RETRY_SECONDS[0]:
                    log.info("%s: done, after %.1f s waiting", what, time.monotonic() - since)
                return result

    def _connected(self) -> bool:
        return self.nc is None or self.nc.is_connected

    async def _durably(self, what: str, operation: Callable[[], Awaitable]) -> None:
        """Run the NATS ``operation`` until it succeeds, waiting out an outage (nats-py reconnects for ever) with
        backoff; an error waiting cannot fix is raised."""
        delay, longest = STATE_RETRY_SECONDS
        since = None
        while True:
            why = "not connected"
            if self._connected():
                try:
                    await operation()
                except Exception as error:
                    if not _nats_unavailable(error):
                        raise
                    why = _one_line(error)
                else:
                    if since is not None:
                        log.info("%s: done, after %.1f s waiting for NATS", what, time.monotonic() - since)
                    return
            if since is None:
                since = time.monotonic()
                log.warning("%s: waiting for NATS (%s)", what, why)
            await asyncio.sleep(delay)
            delay = min(longest, delay * 2)

    def _count_states(self) -> None:
        for value in State.values():
            metrics.RUNS.labels(state=State.Name(value)).set(sum(e.status.state == value for e in self.runs.values()))

    def _spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- retention ----------------------------------------------------------------------------

    def _work_dir(self, run_id: str) -> str:
        return os.path.join(self.settings.work_dir, "runs", run_id)

    async def _clean_up(self, entry: RunEntry) -> None:
        """Remove what a finished run no longer needs: its queued jobs, its records, its uploaded inputs and its
        work directory. When NATS or S3 is down the run is left to the next sweep; the run itself is not touched."""
        run_id = entry.spec.run_id
        if run_id in self._cleaning:
            return
        self._cleaning.add(run_id)
        entry.cleaned = True  # first: a record that arrives meanwhile sets it back
        try:
            await purge_run_jobs(self.js, run_id)
            await self.js.purge_stream(RESULTS_STREAM, subject=result_subject(run_id))
            await asyncio.to_thread(self.store.delete_prefix, input_prefix(run_id))
            await asyncio.to_thread(shutil.rmtree, self._work_dir(run_id), ignore_errors=True)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            entry.cleaned = False
            log.warning("run %s: clean-up left to the next sweep: %s", run_id, _one_line(error))
        finally:
            self._cleaning.discard(run_id)

    async def sweep(self, now: float | None = None) -> None:
        """Retry the clean-ups that failed; purge the records of runs with no state and what landed of runs SubmitRun
        could not record; delete the runs whose retention period is over (``now`` is a Unix time, default now);
        now and then, delete uploads no run claims."""
        if not self._connected():
            return
        now = time.time() if now is None else now
        expired_before = now - self.settings.retention_days * DAY_SECONDS
        for entry in list(self.runs.values()):
            if entry.status.state == State.RUN_STATE_CREATED and not entry.uploading \
                    and entry.status.submitted_at.ToSeconds() < now - ORPHAN_UPLOAD_SECONDS:
                await self._expire(entry, "created a day ago and never submitted")
                continue
            if entry.status.state not in TERMINAL:
                continue
            if not entry.cleaned:
                await self._clean_up(entry)
            ended = entry.status.finished_at if entry.status.HasField("finished_at") else entry.status.submitted_at
            if ended.ToSeconds() < expired_before:
                await self._expire(entry, f"its retention period of {self.settings.retention_days} day(s) is over")
        try:
            for subject in list(self._strays):
                await self.js.purge_stream(RESULTS_STREAM, subject=subject)
                self._strays.discard(subject)
            for run_id in list(self._abandoned):
                async with self._recording:
                    if run_id not in self.runs:
                        await state.purge(self.kv, run_id)
                    self._abandoned.discard(run_id)
            if now - self._storage_swept >= STORAGE_SWEEP_SECONDS:
                await self._sweep_storage(now)
                self._storage_swept = now
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            log.warning("the sweep stopped, the next one goes on: %s", _one_line(error))

    async def _expire(self, entry: RunEntry, why: str) -> None:
        """Delete a run: its files (inputs, reports), its work directory, then its state in the bucket."""
        run_id = entry.spec.run_id
        try:
            await asyncio.to_thread(self.store.delete_prefix, run_prefix(run_id))
            await state.purge(self.kv, run_id)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            log.warning("run %s: %s; deleting it is left to the next sweep: %s", run_id, why, _one_line(error))
            return
        await asyncio.to_thread(shutil.rmtree, self._work_dir(run_id), ignore_errors=True)
        if self.runs.get(run_id) is entry:
            del self.runs[run_id]
        self._count_states()
        log.info("run %s: deleted, %s", run_id, why)

    async def _sweep_storage(self, now: float) -> None:
        """Delete the uploads under ``runs/`` that no run claims (a submit that gave up before its run was recorded)
        once nothing was written under them for ORPHAN_UPLOAD_SECONDS, and the bucket's old deletion markers."""
        for folder in await asyncio.to_thread(self.store.folders, "runs/"):
            run_id = folder[len("runs/"):].rstrip("/")
            if run_id in self.runs or run_id in self._cleaning:
                continue
            deleted = await asyncio.to_thread(self.store.delete_prefix, folder,
                                              written_before=now - ORPHAN_UPLOAD_SECONDS)
            if deleted:
                log.info("deleted %d uploaded file(s) under %s, which no run claims", deleted, folder)
        await self.kv.purge_deletes(olderthan=int(STORAGE_SWEEP_SECONDS))

    async def sweep_periodically(self, interval: float = SWEEP_SECONDS) -> None:
        """``sweep`` every ``interval`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # a bug: logged, and the next sweep tries again
                log.exception("the sweep failed")


def _owns(who: Caller, status: runs_pb2.RunStatus) -> bool:
    """A run belongs to the principal that created it: its name and its role."""
    return status.owner == who.name and (status.owner_role or "client") == who.role


def _may_see(who: Caller, status: runs_pb2.RunStatus) -> bool:
    return who.operator or _owns(who, status)


async def _chained(first, rest):
    yield first
    async for item in rest:
        yield item


def _on_wire(task, work, input_dir: str):
    """A job's work naming its files by their key in the upload, for a worker to fetch."""
    keys = {}
    for name, path in task.blobs(work).items():
        relative = os.path.relpath(path, input_dir) if path else ""
        if relative.split(os.sep)[0] == os.pardir:
            raise MfscoreError(f"the file {path} is outside the run's uploaded inputs")
        keys[name] = relative.replace(os.sep, "/")
    return task.with_blobs(work, keys)


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def _nats_unavailable(error: BaseException) -> bool:
    """Whether a NATS call failed because the server is out of reach or its JetStream not ready: waiting fixes it."""
    return isinstance(error, (TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
                              nats.errors.OutboundBufferLimitError, nats.errors.StaleConnectionError,
                              NoStreamResponseError, ServiceUnavailableError))


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


async def run_aggregator(settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    os.makedirs(settings.work_dir, exist_ok=True)
    tasks.load_all()
    figure_process.import_drawing()
    metrics_port = metrics.start_metrics_server(settings.metrics_port, settings.metrics_host)
    store = ObjectStore(settings)
    await asyncio.to_thread(store.ensure_bucket)
    nc, js = await connect(settings)
    channel = aio_client_channel(settings.validator_address, token=settings.token, tls_ca=settings.tls_ca,
                                 options=MESSAGE_OPTIONS)
    try:
        await ensure_streams(js)
        aggregator = Aggregator(settings, store, js, await runs_bucket(js), services_pb2_grpc.ValidatorStub(channel),
                                nc=nc)
        await aggregator.restore()
        # The ordered consumer lives in the server's memory: after NATS restarts, two missed heartbeats make the
        # client recreate it, so records flow again within seconds.
        await js.subscribe("mfscore.results.>", stream=RESULTS_STREAM, ordered_consumer=True,
                           deliver_policy=DeliverPolicy.ALL, cb=aggregator.on_result, idle_heartbeat=RESULTS_HEARTBEAT)
        server, port = await start_service_server(
            [(services_pb2_grpc.add_AggregatorServicer_to_server, aggregator, "mfscore.v1.Aggregator")], settings)
        log.info("aggregator: gRPC on %d, metrics on %d", port, metrics_port)
        healthy = follow_health(server, lambda: nc.is_connected, f"NATS at {settings.nats_url}")
        background = [asyncio.create_task(healthy), asyncio.create_task(aggregator.sweep_periodically())]
        await stop.wait()
        for task in background:
            task.cancel()
        await stop_grpc_server(server, grace=5)
    finally:
        await channel.close()
        await nc.drain()
