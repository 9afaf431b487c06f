"""The Aggregator service: runs from submission to reports.

A run's status and spec live in a JetStream key-value bucket; its records live in the results
stream. On start the aggregator reads every run from the bucket and replays the results stream
from the beginning, so a restart loses nothing: records are keyed (run, query, role, ordinal) and
folding one twice changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from nats.js.api import DeliverPolicy

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.records import fold
from mfscore.reports import figure_process
from mfscore.reports.staged_outputs import files_under
from mfscore.run.local import report_into, score_plan
from mfscore.services.common import metrics
from mfscore.services.common.grpc_server import start_grpc_server, stop_grpc_server
from mfscore.services.common.jetstream import (
    RESULTS_STREAM,
    connect,
    ensure_streams,
    publish_job,
    result_subject,
    runs_bucket,
)
from mfscore.services.common.messages import job_key, job_message, outcome
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.planning import named_by_key, plan_run
from mfscore.services.common.settings import Settings
from mfscore.services.wire import records_pb2, runs_pb2, services_pb2, services_pb2_grpc
from mfscore.tasks.base import PLANNER, Job, Plan

log = logging.getLogger("mfscore.aggregator")
State = runs_pb2.RunState
TERMINAL = {State.RUN_STATE_REJECTED, State.RUN_STATE_DONE, State.RUN_STATE_FAILED}
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OUTPUT_NAME = re.compile(r"^[^/\\\0]{0,200}$")
MAX_RUN_SPEC_BYTES = 512 << 10  # a run's state (spec and status) must fit a 1 MiB NATS key-value entry
VALIDATION_TIMEOUT = 600


def reports_prefix(run_id: str) -> str:
    return f"runs/{run_id}/reports/"


def summary_key(run_id: str) -> str:
    return f"runs/{run_id}/summary.json"


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


class Aggregator(services_pb2_grpc.AggregatorServicer):
    def __init__(self, settings: Settings, store: ObjectStore, js, kv, validator):
        self.settings = settings
        self.store = store
        self.js = js
        self.kv = kv
        self.validator = validator
        self.runs: dict[str, RunEntry] = {}
        self._tasks: set[asyncio.Task] = set()

    # --- gRPC ---------------------------------------------------------------------------------

    async def SubmitRun(self, request, context):
        run_id = request.run_id or uuid.uuid4().hex
        if not _RUN_ID.match(run_id):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the run id {run_id!r} is not 1-64 letters, digits, '-' or '_'")
        if not _OUTPUT_NAME.match(request.output_name) or request.output_name == "..":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the output name {request.output_name!r} is not a file name")
        if request.task not in tasks.names():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{request.task[:64]!r} is not a task; the tasks are {', '.join(sorted(tasks.names()))}")
        if request.ByteSize() > MAX_RUN_SPEC_BYTES:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the run spec is {request.ByteSize()} bytes, more "
                                f"than the limit of {MAX_RUN_SPEC_BYTES}; nothing was recorded")
        if run_id in self.runs:
            return self.runs[run_id].status
        spec = runs_pb2.RunSpec()
        spec.CopyFrom(request)
        spec.run_id = run_id
        status = runs_pb2.RunStatus(run_id=run_id, task=spec.task, state=State.RUN_STATE_VALIDATING,
                                    submitted_at=_now())
        entry = RunEntry(spec, status)
        self.runs[run_id] = entry
        await self._save(entry)
        self._spawn(self._start(entry, validate=not spec.skip_validation, publish=True))
        log.info("run %s: %s submitted", run_id, spec.task)
        return status

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

    async def GetReport(self, request, context):
        entry = await self._entry(request.run_id, context)
        if entry.status.state != State.RUN_STATE_DONE:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"run {request.run_id} is {State.Name(entry.status.state)}, not done")
        return await asyncio.to_thread(self._read_report, request.run_id)

    async def ListRuns(self, request, context):
        runs = [e.status for e in self.runs.values()
                if request.state == State.RUN_STATE_UNSPECIFIED or e.status.state == request.state]
        return runs_pb2.ListRunsResponse(runs=sorted(runs, key=lambda s: s.submitted_at.ToNanoseconds()))

    # --- the flow -----------------------------------------------------------------------------

    async def _start(self, entry: RunEntry, *, validate: bool, publish: bool) -> None:
        run_id = entry.spec.run_id
        input_dir = self._input_dir(run_id)
        try:
            if validate and not await self._validate(entry):
                return
            task, plan = await asyncio.to_thread(plan_run, self.store, entry.spec, input_dir)
            entry.task, entry.plan, entry.planned = task, plan, {job.key for job in plan.jobs}
            if task.resource == PLANNER:  # microseconds per job: scored here (see Task.resource)
                entry.outcomes = await asyncio.to_thread(score_plan, task, plan)
            elif publish:
                for job in plan.jobs:
                    wire = job_message(run_id, task, Job(job.key, _on_wire(task, job.work, input_dir)),
                                       entry.spec.input_prefix)
                    await publish_job(self.js, task.resource, wire)
            entry.status.trials_planned = len(plan.jobs)
            await self._set_state(entry, State.RUN_STATE_SCORING)
            pending, entry.pending = entry.pending, []
            for record in pending:
                if entry.status.state in TERMINAL:
                    return
                await self._fold(entry, record)
            entry.status.trials_received = len(entry.outcomes)
            metrics.RUN_TRIALS_PLANNED.labels(run=run_id).set(len(plan.jobs))
            log.info("run %s: %d jobs planned", run_id, len(plan.jobs))
            await self._maybe_report(entry)
        except MfscoreError as error:
            await self._fail(entry, named_by_key(error.sentence(), input_dir))
        except Exception as error:  # a bug: the run fails with one sentence, the log keeps the traceback
            log.exception("run %s: planning failed", run_id)
            await self._fail(entry, f"internal error while planning: {type(error).__name__}: {error}")

    async def _validate(self, entry: RunEntry) -> bool:
        request = services_pb2.ValidateRequest(run=entry.spec)
        report = await self.validator.Validate(request, timeout=VALIDATION_TIMEOUT)
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
        record = records_pb2.TrialRecord.FromString(msg.data)
        entry = self.runs.get(record.run_id)
        if entry is None or entry.status.state in TERMINAL:
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
            await self._fail(entry, f"the job {key} could not be scored: {record.error}")
            return
        if key not in entry.planned or record.task != entry.task.name:
            log.warning("run %s: dropped a %s record for the unplanned job %s", record.run_id, record.task, key)
            return
        try:
            fold([(key, outcome(entry.task, record))], into=entry.outcomes)
        except MfscoreError as error:
            await self._fail(entry, error.sentence())
            return
        entry.status.trials_received = len(entry.outcomes)
        metrics.RUN_TRIALS_RECEIVED.labels(run=record.run_id).set(len(entry.outcomes))
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
            entry.status.finished_at.CopyFrom(_now())
            await self._set_state(entry, State.RUN_STATE_DONE)
            metrics.AGGREGATOR_REPORT_DURATION.observe(time.perf_counter() - started)
            log.info("run %s: done in %.2f s of reporting", run_id, time.perf_counter() - started)
            self._forget(entry)
            await self.js.purge_stream(RESULTS_STREAM, subject=result_subject(run_id))
        except MfscoreError as error:
            await self._fail(entry, error.sentence())
        except Exception as error:
            log.exception("run %s: reporting failed", run_id)
            await self._fail(entry, f"internal error while reporting: {type(error).__name__}: {error}")

    def _write_report(self, entry: RunEntry) -> str | None:
        """Report into a scratch directory and store the files; the sentence of a report's error, if any."""
        run_id = entry.spec.run_id
        input_dir = self._input_dir(run_id)
        out_dir = os.path.join(self.settings.work_dir, "runs", run_id, "out")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        plan = entry.plan
        lines = report_into(entry.task, plan, entry.outcomes, os.path.join(out_dir, entry.spec.output_name))
        entry.status.notes[:] = [named_by_key(line, input_dir) for line in plan.stderr + lines.stderr]
        if lines.error is not None:
            return named_by_key(lines.error.sentence(), input_dir)
        prefix = reports_prefix(run_id)
        for name, content in files_under(out_dir).items():
            self.store.put_bytes(prefix + name, content)
        said = {"stdout": [named_by_key(line, input_dir) for line in plan.stdout + lines.stdout],
                "status": lines.status}
        self.store.put_bytes(summary_key(run_id), json.dumps(said).encode())
        shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)
        return None

    def _read_report(self, run_id: str) -> runs_pb2.Report:
        prefix = reports_prefix(run_id)
        files = [runs_pb2.ReportFile(name=key[len(prefix):], content=self.store.get_bytes(key, max_bytes=4 << 30))
                 for key in sorted(self.store.list_keys(prefix))]
        said = json.loads(self.store.get_bytes(summary_key(run_id), max_bytes=64 << 20))
        return runs_pb2.Report(run_id=run_id, files=files, stdout=said["stdout"], exit_status=said["status"])

    # --- state --------------------------------------------------------------------------------

    async def restore(self) -> None:
        """Read every run from the bucket; resume the unfinished ones (their records replay from the stream)."""
        try:
            keys = await self.kv.keys()
        except Exception:  # nats raises NoKeysError on an empty bucket
            keys = []
        for key in keys:
            if not key.startswith("status."):
                continue
            run_id = key[len("status."):]
            status = runs_pb2.RunStatus.FromString((await self.kv.get(key)).value)
            spec = runs_pb2.RunSpec.FromString((await self.kv.get(f"spec.{run_id}")).value)
            entry = RunEntry(spec, status)
            self.runs[run_id] = entry
            if status.state not in TERMINAL:
                validating = status.state == State.RUN_STATE_VALIDATING
                entry.status.state = State.RUN_STATE_VALIDATING if validating else State.RUN_STATE_SCORING
                entry.status.trials_received = 0
                self._spawn(self._start(entry, validate=validating and not spec.skip_validation, publish=validating))
        self._count_states()
        log.info("restored %d run(s)", len(self.runs))

    async def _entry(self, run_id: str, context) -> RunEntry:
        entry = self.runs.get(run_id)
        if entry is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"there is no run {run_id!r}")
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
        entry.status.state = state
        await self._save(entry)
        self._count_states()
        await self._changed(entry)

    async def _changed(self, entry: RunEntry) -> None:
        async with entry.changed:
            entry.version += 1
            entry.changed.notify_all()

    async def _save(self, entry: RunEntry) -> None:
        await self.kv.put(f"spec.{entry.spec.run_id}", entry.spec.SerializeToString())
        await self.kv.put(f"status.{entry.spec.run_id}", entry.status.SerializeToString())

    def _count_states(self) -> None:
        for value in State.values():
            metrics.RUNS.labels(state=State.Name(value)).set(sum(e.status.state == value for e in self.runs.values()))

    def _spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


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


async def run_aggregator(settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    os.makedirs(settings.work_dir, exist_ok=True)
    tasks.load_all()
    figure_process.import_drawing()
    metrics_port = metrics.start_metrics_server(settings.metrics_port)
    store = ObjectStore(settings)
    await asyncio.to_thread(store.ensure_bucket)
    nc, js = await connect(settings)
    channel = grpc.aio.insecure_channel(settings.validator_address)
    try:
        await ensure_streams(js)
        aggregator = Aggregator(settings, store, js, await runs_bucket(js), services_pb2_grpc.ValidatorStub(channel))
        await aggregator.restore()
        await js.subscribe("mfscore.results.>", stream=RESULTS_STREAM, ordered_consumer=True,
                           deliver_policy=DeliverPolicy.ALL, cb=aggregator.on_result)
        server, port = await start_grpc_server(
            [(services_pb2_grpc.add_AggregatorServicer_to_server, aggregator, "mfscore.v1.Aggregator")],
            port=settings.grpc_port)
        log.info("aggregator: gRPC on %d, metrics on %d", port, metrics_port)
        await stop.wait()
        await stop_grpc_server(server, grace=5)
    finally:
        await channel.close()
        await nc.drain()
