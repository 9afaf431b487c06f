"""The cluster runner: a submitted run validated, planned, its jobs published, its records folded, its reports
written and stored. The same four steps as the local runner (``mfscore/run/local.py``), so the same bytes come out.

Records are keyed (run, query, role, ordinal) and folding one twice changes nothing, so a restarted aggregator
plans a run again and the replayed records fold back in (``resume``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time

import grpc
from google.protobuf.message import DecodeError

from mfscore.errors import MfscoreError
from mfscore.records import fold
from mfscore.run.local import report_into, score_plan
from mfscore.run_record import ABSENT, run_record
from mfscore.services.aggregator import reports, run_gauges, uploads
from mfscore.services.aggregator.retry import one_line, retrying, s3_or_validator_unavailable
from mfscore.services.aggregator.state import TERMINAL, RunBook, RunEntry, State, now, seal_report
from mfscore.services.common import input_manifest, metrics
from mfscore.services.common.jetstream import publish_job
from mfscore.services.common.messages import job_key, job_message, outcome
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.planning import named_by_key, plan_run
from mfscore.services.common.run_layout import work_dir
from mfscore.services.common.scorer_pool import MAX_BLOB_BYTES
from mfscore.services.common.settings import Settings
from mfscore.services.wire import records_pb2, services_pb2
from mfscore.tasks.base import Job, report_files, scored_where_planned
from mfscore.validation.findings import TRUNCATED

VALIDATION_TIMEOUT = 600
VALIDATOR_LOSSES = 2  # a run whose check loses the validator this often fails
LOST_CONNECTION = ("Socket closed", "Connection reset", "Broken pipe")  # gRPC's words for a call cut mid-way
LOSS_SETTLE_SECONDS = 1.0  # after a lost call, so the next one is not cut by the same broken connection
log = logging.getLogger("mfscore.aggregator")


class ClusterRunner:
    def __init__(self, settings: Settings, store: ObjectStore, js, book: RunBook, validator):
        self.settings, self.store, self.js, self.book, self.validator = settings, store, js, book, validator
        run_gauges.follow(book)

    def start(self, entry: RunEntry) -> None:
        """Run a run just submitted: validate (unless the spec skips it), plan, publish its jobs."""
        self.book.spawn(self._start(entry, validate=not entry.spec.skip_validation, publish=True))

    def resume(self, entry: RunEntry) -> None:
        """Run again a run restored unfinished: a run still VALIDATING is started over; a run past it is planned
        again (the same jobs and keys) without publishing, and its records replay from the results stream."""
        validating = entry.status.state == State.RUN_STATE_VALIDATING
        entry.status.state = State.RUN_STATE_VALIDATING if validating else State.RUN_STATE_SCORING
        entry.status.trials_received = entry.status.jobs_received = 0
        self.book.spawn(self._start(entry, validate=validating and not entry.spec.skip_validation,
                                    publish=validating))

    async def _outlasting(self, what: str, call):
        """``call()``, waiting out S3 or the validator being unavailable for up to MFSCORE_RETRY_BUDGET."""
        return await retrying(what, call, transient=s3_or_validator_unavailable, waiting_for="for it to be available",
                              budget=self.settings.retry_budget_seconds)

    def _dir(self, run_id: str, part: str) -> str:
        return work_dir(self.settings.work_dir, run_id, part)

    async def _start(self, entry: RunEntry, *, validate: bool, publish: bool) -> None:
        run_id = entry.spec.run_id
        input_dir = self._dir(run_id, "inputs")
        try:
            if validate and not await self._validate(entry):
                return
            inputs = await self._outlasting(f"run {run_id}: reading its input manifest",
                                            lambda: asyncio.to_thread(input_manifest.read, self.store, run_id))
            task, plan = await self._outlasting(f"run {run_id}: fetching its tables", lambda: asyncio.to_thread(
                plan_run, self.store, entry.spec, input_dir, inputs))
            if entry.status.state in TERMINAL:  # cancelled while it was planned
                return
            entry.task, entry.plan, entry.planned = task, plan, {job.key for job in plan.jobs}
            entry.trials = {job.key: task.trials(job.work) for job in plan.jobs}
            entry.status.jobs_planned, entry.status.trials_planned = len(plan.jobs), sum(entry.trials.values())
            if scored_where_planned(task, plan, self.settings.pool_min_trials):  # see Task.resource, Task.portable
                entry.outcomes = await asyncio.to_thread(score_plan, task, plan)
                metrics.TRIALS_RECEIVED.inc(sum(entry.trials.get(key, 1) for key in entry.outcomes))
            elif publish:
                await self._outlasting(f"run {run_id}: storing its planned files", lambda: asyncio.to_thread(
                    self._store_generated, entry.spec.input_prefix, plan.generated))
                for job in plan.jobs:
                    if entry.status.state in TERMINAL:  # failed meanwhile (a record of a job already out)
                        return
                    wire = job_message(run_id, task, Job(job.key, _on_wire(task, job.work, input_dir, plan.generated)),
                                       entry.spec.input_prefix)
                    wire.objects.update(input_manifest.objects_for(inputs, task.blobs(job.work).values(), input_dir))
                    await self.book.durably(f"run {run_id}: publishing its jobs",
                                            lambda: publish_job(self.js, task.resource, wire))
            if entry.status.state in TERMINAL:
                return
            await self.book.set_state(entry, State.RUN_STATE_SCORING)
            pending, entry.pending = entry.pending, []
            for record in pending:
                if entry.status.state in TERMINAL:
                    return
                await self._fold(entry, record)
            entry.status.jobs_received = len(entry.outcomes)
            entry.status.trials_received = sum(entry.trials.get(key, 1) for key in entry.outcomes)
            metrics.TRIALS_PLANNED.inc(entry.status.trials_planned)
            log.info("run %s: %d jobs planned (%d trials)", run_id, len(plan.jobs), entry.status.trials_planned,
                     extra={"run_id": run_id})
            await self._maybe_report(entry)
        except MfscoreError as error:
            await self.book.end(entry, named_by_key(error.sentence(), input_dir))
        except Exception as error:  # a bug: the run fails with one sentence, the log keeps the traceback
            log.exception("run %s: planning failed", run_id)
            await self.book.end(entry, f"internal error while planning: {type(error).__name__}: {error}")

    async def _validate(self, entry: RunEntry) -> bool:
        report = (await self._validated(entry)).report
        entry.status.validation.CopyFrom(report)
        if report.valid:
            return True
        errors = [f for f in report.findings if f.severity == "error" and f.code != TRUNCATED]
        more = "".join(f"; {f.message.rstrip('.')}" for f in report.findings if f.code == TRUNCATED)
        await self.book.end(entry, f"the validator rejected the submission ({len(errors)} error(s){more}); the "
                                   f"first: {errors[0].message if errors else 'no message'}",
                            state=State.RUN_STATE_REJECTED)
        return False

    async def _validated(self, entry: RunEntry) -> services_pb2.ValidateResponse:
        """The validator's answer. While it is unreachable (restarting) it is waited for, for the retry budget; a
        validator lost in the middle of the check (it crashed on the submission, say) is asked again once, and a
        second loss, or no answer within VALIDATION_TIMEOUT, fails the run."""
        run_id = entry.spec.run_id
        request = services_pb2.ValidateRequest(run=entry.spec)
        for attempt in range(1, VALIDATOR_LOSSES + 1):
            try:
                return await retrying(f"run {run_id}: validating",
                                      lambda: self.validator.Validate(request, timeout=VALIDATION_TIMEOUT),
                                      transient=lambda error: s3_or_validator_unavailable(error)
                                      and not _validator_lost(error),
                                      waiting_for="for it to be available", budget=self.settings.retry_budget_seconds)
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise MfscoreError(f"the validator did not finish checking the submission within "
                                       f"{VALIDATION_TIMEOUT} s") from None
                if not _validator_lost(error):
                    raise
                log.warning("run %s: the validator stopped while checking the submission (%d of %d): %s", run_id,
                            attempt, VALIDATOR_LOSSES, one_line(error), extra={"run_id": run_id})
                if attempt < VALIDATOR_LOSSES:  # one death once: asked at once, the dead connection cut it again
                    await asyncio.sleep(LOSS_SETTLE_SECONDS)
        raise MfscoreError(f"the validator stopped while checking the submission, {VALIDATOR_LOSSES} times; the "
                           "submission may be what stops it")

    async def on_result(self, msg) -> None:
        """Fold one record (a JetStream message of the results stream)."""
        started = time.perf_counter()
        try:
            record = records_pb2.TrialRecord.FromString(msg.data)
        except DecodeError:
            log.warning("dropped a message on %s that is not a trial record", msg.subject[:200])
            self.book.strays.add(msg.subject)
            return
        entry = self.book.runs.get(record.run_id)
        if entry is None:
            self.book.strays.add(msg.subject)
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
            entry.status.trials_dead += entry.trials.get(key, 1)
            await self.book.end(entry, f"the job {key} could not be scored: {record.error}")
            return
        if key not in entry.planned or record.task != entry.task.name:
            log.warning("run %s: dropped a %s record for the unplanned job %s", record.run_id, record.task, key)
            return
        before = len(entry.outcomes)
        try:
            decoded = outcome(entry.task, record)
        except Exception as error:  # untrusted bytes: whatever the decoder raises, the run cannot go on
            await self.book.end(entry, f"the record of the job {key} could not be decoded ({one_line(error)[:300]})")
            return
        try:
            fold([(key, decoded)], into=entry.outcomes)
        except MfscoreError as error:
            await self.book.end(entry, error.sentence())
            return
        if len(entry.outcomes) > before:  # a repeated record adds nothing
            entry.status.jobs_received = len(entry.outcomes)
            entry.status.trials_received += entry.trials.get(key, 1)
            metrics.TRIALS_RECEIVED.inc(entry.trials.get(key, 1))
        await self.book.changed(entry)

    async def _maybe_report(self, entry: RunEntry) -> None:
        if (entry.plan is not None and entry.status.state == State.RUN_STATE_SCORING
                and entry.planned.issubset(entry.outcomes)):
            await self.book.set_state(entry, State.RUN_STATE_REPORTING)
            self.book.spawn(self._report(entry))

    async def _report(self, entry: RunEntry) -> None:
        run_id = entry.spec.run_id
        started = time.perf_counter()
        try:
            digests = await self._outlasting(f"run {run_id}: reading the digests of its uploads",
                                             lambda: asyncio.to_thread(uploads.uploaded_digests, self.store, run_id))
            await self._outlasting(f"run {run_id}: fetching the files its report reads", lambda: asyncio.to_thread(
                self._fetch_report_files, entry))
            failure = await asyncio.to_thread(self._write_report, entry, digests)
            if failure is not None:
                await self.book.end(entry, failure)
                return
            if entry.status.state in TERMINAL:  # cancelled while its report was written: nothing is stored
                return
            await self.book.durably(f"run {run_id}: holding the lease to store its reports", self.book.holding_lease)
            seal = await self._outlasting(f"run {run_id}: storing its reports",
                                          lambda: asyncio.to_thread(self._store_report, run_id))
            await self.book.durably(f"run {run_id}: recording its report's digest",
                                    lambda: seal_report(self.book.kv, run_id, seal))
            shutil.rmtree(self._dir(run_id, ""), ignore_errors=True)
            entry.status.finished_at.CopyFrom(now())
            await self.book.set_state(entry, State.RUN_STATE_DONE)
            metrics.AGGREGATOR_REPORT_DURATION.observe(time.perf_counter() - started)
            log.info("run %s: done in %.2f s of reporting", run_id, time.perf_counter() - started,
                     extra={"run_id": run_id})
            entry.forget_work()
        except MfscoreError as error:  # named as the client knows its files, like a planning error
            await self.book.end(entry, named_by_key(error.sentence(), self._dir(run_id, "inputs")))
        except Exception as error:
            log.exception("run %s: reporting failed", run_id)
            await self.book.end(entry, f"internal error while reporting: {type(error).__name__}: {error}")

    def _fetch_report_files(self, entry: RunEntry) -> None:
        """Fetch the job files the report reads again (``Task.report_blobs``: a mask run's visuals) to where the plan
        names them under the run's inputs, from the objects its input manifest names (blocking)."""
        run_id, input_dir = entry.spec.run_id, self._dir(entry.spec.run_id, "inputs")
        paths = report_files(entry.task, entry.plan, entry.outcomes)
        if not paths:
            return
        inputs = input_manifest.read(self.store, run_id)
        names = [os.path.relpath(path, input_dir).replace(os.sep, "/") for path in paths]
        self.store.download_objects({name: input_manifest.stored_key(entry.spec.input_prefix, inputs, name)
                                     for name in names}, input_dir, max_bytes=MAX_BLOB_BYTES)

    def _write_report(self, entry: RunEntry, digests: dict[str, str]) -> str | None:
        """Report into a scratch directory, with what the command says beside it and the run's provenance (the job
        files' SHA-256s are ``digests``, from the uploads); the sentence of a report's error, if any."""
        run_id = entry.spec.run_id
        input_dir, out_dir = self._dir(run_id, "inputs"), self._dir(run_id, "out")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        plan, task = entry.plan, entry.task
        record = lambda: run_record(task, plan, task.inputs(plan.options), runner="cluster",  # noqa: E731
                                    started=entry.status.submitted_at.ToNanoseconds() / 1e9, finished=time.time(),
                                    file_digest=lambda key, path: digests.get(key, ABSENT))
        lines = report_into(task, plan, entry.outcomes, os.path.join(out_dir, entry.spec.output_name), record=record)
        entry.status.notes[:] = [named_by_key(line, input_dir) for line in plan.stderr + lines.stderr]
        if lines.error is not None:
            return named_by_key(lines.error.sentence(), input_dir)
        entry.status.provenance_json = lines.record.to_json().decode()
        said = {"stdout": [named_by_key(line, input_dir) for line in plan.stdout + lines.stdout],
                "status": lines.status}
        with open(self._dir(run_id, "said.json"), "w") as f:
            json.dump(said, f)
        return None

    def _store_generated(self, input_prefix: str, generated: dict[str, bytes]) -> None:
        """Store the files the plan made for its jobs (``Plan.generated``) with the run's inputs (blocking)."""
        for key, data in generated.items():
            self.store.put_bytes(input_prefix + key, data)

    def _store_report(self, run_id: str) -> str:
        """Store what ``_write_report`` wrote, with its manifest (blocking; again after an S3 outage, whole); the
        manifest's SHA-256."""
        with open(self._dir(run_id, "said.json")) as f:
            said = json.load(f)
        return reports.store_report(self.store, run_id, self._dir(run_id, "out"), said["stdout"], said["status"])


def _validator_lost(error: BaseException) -> bool:
    """Whether a call to the validator failed because its connection broke in the middle of the call (the process
    died or was killed), rather than because no validator could be reached."""
    if not isinstance(error, grpc.aio.AioRpcError) or error.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    details = error.details() or ""
    return not details.startswith("failed to connect") and any(sign in details for sign in LOST_CONNECTION)


def _on_wire(task, work, input_dir: str, generated: dict[str, bytes]):
    """A job's work naming its files by their key in the upload (where the plan's own files are stored too, under
    their keys), for a worker to fetch."""
    keys = {}
    for name, path in task.blobs(work).items():
        if path in generated:
            keys[name] = path
            continue
        relative = os.path.relpath(path, input_dir) if path else ""
        if relative.split(os.sep)[0] == os.pardir:
            raise MfscoreError(f"the file {path} is outside the run's uploaded inputs")
        keys[name] = relative.replace(os.sep, "/")
    return task.with_blobs(work, keys)
