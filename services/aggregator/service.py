"""The Aggregator service: runs from submission to reports.

A run's status and spec live in a JetStream key-value bucket; its records live in the results
stream. On start the aggregator reads every run from the bucket and replays the results stream
from the beginning, so a restart loses nothing: records are keyed (trial, role, query) and
folding one twice changes nothing.
"""

from __future__ import annotations

import asyncio
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

from mfscore.errors import MfscoreError
from mfscore.reports.staged_outputs import files_under
from services.aggregator.task_runs import plan_task, record_key
from services.common import metrics
from services.common.grpc_server import start_grpc_server, stop_grpc_server
from services.common.jetstream import RESULTS_STREAM, connect, ensure_streams, publish_job, result_subject, runs_bucket
from services.common.object_store import ObjectStore
from services.common.settings import Settings
from services.wire import records_pb2, runs_pb2, services_pb2, services_pb2_grpc

log = logging.getLogger("mfscore.aggregator")
State = runs_pb2.RunState
TERMINAL = {State.RUN_STATE_REJECTED, State.RUN_STATE_DONE, State.RUN_STATE_FAILED}
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OUTPUT_NAME = re.compile(r"^[^/\\\0]{0,200}$")
VALIDATION_TIMEOUT = 600


def job_kind(task: str) -> str:
    return {"detection": "detection", "mask": "mask", "provenance-filtering": "provenance",
            "provenance-graph": "provenance"}[task]


def reports_prefix(run_id: str) -> str:
    return f"runs/{run_id}/reports/"


def summary_key(run_id: str) -> str:
    return f"runs/{run_id}/summary.txt"


@dataclass
class RunEntry:
    spec: runs_pb2.RunSpec
    status: runs_pb2.RunStatus
    task_run: object | None = None
    planned: set = field(default_factory=set)
    records: dict = field(default_factory=dict)
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
        try:
            if validate and not await self._validate(entry):
                return
            task_run, jobs = await asyncio.to_thread(self._plan, entry.spec, self._input_dir(run_id))
            if publish:
                for job in jobs:
                    job.run_id, job.bucket, job.input_prefix = run_id, entry.spec.inputs.bucket, entry.spec.inputs.prefix
                    await publish_job(self.js, job_kind(entry.spec.task), job)
            entry.task_run, entry.planned = task_run, {record_key(j) for j in jobs}
            entry.status.trials_planned = len(jobs)
            metrics.RUN_TRIALS_PLANNED.labels(run=run_id).set(len(jobs))
            await self._set_state(entry, State.RUN_STATE_SCORING)
            log.info("run %s: %d jobs planned", run_id, len(jobs))
            await self._maybe_report(entry)
        except MfscoreError as error:
            await self._fail(entry, error.sentence().replace(self._input_dir(run_id) + os.sep, ""))
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

    def _plan(self, spec: runs_pb2.RunSpec, input_dir: str):
        shutil.rmtree(input_dir, ignore_errors=True)
        self.store.download_prefix(spec.inputs.prefix, input_dir, suffixes=(".csv",), max_bytes=2 << 30)
        task_run = plan_task(spec, input_dir, self.store)
        return task_run, task_run.jobs()

    async def on_result(self, msg) -> None:
        """Fold one record (a JetStream message of the results stream)."""
        started = time.perf_counter()
        record = records_pb2.TrialRecord.FromString(msg.data)
        entry = self.runs.get(record.run_id)
        if entry is None or entry.status.state in TERMINAL:
            return
        if record.error:
            await self._fail(entry, f"the job {record.trial_id} could not be scored: {record.error}")
            return
        key = record_key(record)
        seen = entry.records.get(key)
        if seen is not None and seen.SerializeToString(deterministic=True) != record.SerializeToString(deterministic=True):
            await self._fail(entry, f"two different records arrived for the job {record.trial_id}")
            return
        entry.records[key] = record
        entry.status.trials_received = len(entry.records)
        metrics.RUN_TRIALS_RECEIVED.labels(run=record.run_id).set(len(entry.records))
        await self._changed(entry)
        metrics.AGGREGATOR_FOLD_DURATION.observe(time.perf_counter() - started)
        await self._maybe_report(entry)

    async def _maybe_report(self, entry: RunEntry) -> None:
        if (entry.task_run is not None and entry.status.state == State.RUN_STATE_SCORING
                and entry.planned.issubset(entry.records)):
            await self._set_state(entry, State.RUN_STATE_REPORTING)
            self._spawn(self._report(entry))

    async def _report(self, entry: RunEntry) -> None:
        run_id = entry.spec.run_id
        started = time.perf_counter()
        try:
            out_dir = os.path.join(self.settings.work_dir, "runs", run_id, "out")
            records = {k: entry.records[k] for k in entry.planned}
            outcome = await asyncio.to_thread(self._write_report, entry, records, out_dir)
            entry.status.notes[:] = outcome.notes
            entry.status.finished_at.CopyFrom(_now())
            await self._set_state(entry, State.RUN_STATE_DONE)
            metrics.AGGREGATOR_REPORT_DURATION.observe(time.perf_counter() - started)
            log.info("run %s: done in %.2f s of reporting", run_id, time.perf_counter() - started)
            entry.task_run, entry.records = None, {}
            await self.js.purge_stream(RESULTS_STREAM, subject=result_subject(run_id))
        except MfscoreError as error:
            await self._fail(entry, error.sentence())
        except Exception as error:
            log.exception("run %s: reporting failed", run_id)
            await self._fail(entry, f"internal error while reporting: {type(error).__name__}: {error}")

    def _write_report(self, entry: RunEntry, records: dict, out_dir: str):
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        outcome = entry.task_run.write_reports(records, os.path.join(out_dir, entry.spec.output_name))
        prefix = reports_prefix(entry.spec.run_id)
        for name, content in files_under(out_dir).items():
            self.store.put_bytes(prefix + name, content)
        self.store.put_bytes(summary_key(entry.spec.run_id), "\n".join(outcome.summary).encode())
        shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)
        return outcome

    def _read_report(self, run_id: str) -> runs_pb2.Report:
        prefix = reports_prefix(run_id)
        files = [runs_pb2.ReportFile(name=key[len(prefix):], content=self.store.get_bytes(key, max_bytes=4 << 30))
                 for key in sorted(self.store.list_keys(prefix))]
        summary = self.store.get_bytes(summary_key(run_id), max_bytes=64 << 20).decode()
        return runs_pb2.Report(run_id=run_id, files=files, summary=summary)

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
        entry.task_run, entry.records = None, {}

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


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


async def run_aggregator(settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    os.makedirs(settings.work_dir, exist_ok=True)
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
