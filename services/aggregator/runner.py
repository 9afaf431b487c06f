"""The cluster runner: a submitted run validated, planned, its jobs published, its records folded, its reports
written and stored. The same four steps as the local runner (``mfscore/run/local.py``), so the same bytes come out.

Records are keyed (run, query, role, ordinal) and folding one twice changes nothing, so a restarted aggregator
plans a run again and the replayed records fold back in (``resume``). The runner does the I/O; the run
(``run.Run``) says where it stands and what may come next.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import shutil
import time

import grpc
from google.protobuf.message import DecodeError

from mfscore.errors import MfscoreError
from mfscore.run.local import report_into, score_plan
from mfscore.run_record import ABSENT, run_record
from mfscore.services.aggregator import packages, reports, run_gauges, uploads
from mfscore.services.aggregator.campaigns import CampaignBook
from mfscore.services.aggregator.datasets import DatasetBook, is_run_of, owner_space
from mfscore.services.aggregator.run import Folded, Run
from mfscore.services.aggregator.state import RunBook, seal_report
from mfscore.services.common import input_manifest, metrics
from mfscore.services.common.messages import job_message
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.planning import named_by_key, plan_run
from mfscore.services.common.retry import one_line, retrying
from mfscore.services.common.run_layout import work_dir
from mfscore.services.common.scorer_pool import MAX_BLOB_BYTES
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import publish_job
from mfscore.services.common.transient import s3_or_validator_unavailable
from mfscore.services.wire import records_pb2, services_pb2
from mfscore.tasks.base import Job, report_files, scored_where_planned

VALIDATION_TIMEOUT = 600
VALIDATOR_LOSSES = 2  # a run whose check loses the validator this often fails
LOST_CONNECTION = ("Socket closed", "Connection reset", "Broken pipe")  # gRPC's words for a call cut mid-way
LOSS_SETTLE_SECONDS = 1.0  # after a lost call, so the next one is not cut by the same broken connection
log = logging.getLogger("mfscore.aggregator")


class ClusterRunner:
    """A run's I/O, step by step (validate, plan, publish, replay, fold, report); what each step may do next is the
    run's to say (``run.Run``), and what it decides the book records (``RunBook.save``)."""

    def __init__(self, settings: Settings, store: ObjectStore, js, book: RunBook, validator, datasets: DatasetBook,
                 campaigns: CampaignBook):
        self.settings, self.store, self.js, self.book, self.validator = settings, store, js, book, validator
        self.datasets, self.campaigns = datasets, campaigns
        run_gauges.watch_book(book)

    def start(self, run: Run) -> None:
        """Run a run just submitted: validate (unless the spec skips it), plan, publish its jobs."""
        self.book.spawn(self._start(run, validate=not run.spec.skip_validation, publish=True))

    def resume(self, run: Run) -> None:
        """Run again a run restored unfinished: a run still VALIDATING is started over; a run past it is planned
        again (the same jobs and keys) without publishing, and its records replay from the results stream."""
        over = run.resume()
        self.book.spawn(self._start(run, validate=over and not run.spec.skip_validation, publish=over))

    async def _outlasting(self, what: str, call):
        """``call()``, waiting out S3 or the validator being unavailable for up to MFSCORE_RETRY_BUDGET."""
        return await retrying(what, call, transient=s3_or_validator_unavailable, waiting_for="for it to be available",
                              budget=self.settings.retry_budget_seconds)

    def _dir(self, run_id: str, part: str) -> str:
        return work_dir(self.settings.work_dir, run_id, part)

    async def _end(self, run: Run, message: str) -> None:
        """The run failed with one sentence (unless it has ended already)."""
        if run.end(message):
            await self.book.save(run)

    async def _start(self, run: Run, *, validate: bool, publish: bool) -> None:
        """A run's steps up to its report: validate, plan, score here or publish, replay; an error ends it FAILED."""
        input_dir = self._dir(run.run_id, "inputs")
        try:
            findings = await self._plan_package(run) if run.spec.package else None
            if run.ended:
                return
            at_validation = validate or (findings is not None and publish)  # publish: not yet past validation
            if at_validation and not await self._validate(run, findings, ask=validate):
                return
            inputs = await self._plan(run, input_dir)
            if inputs is None:
                return
            if scored_where_planned(run.task, run.plan, self.settings.pool_min_trials):  # see Task.resource, .portable
                await self._score_here(run)
            elif publish and not await self._publish(run, inputs, input_dir):
                return
            if run.planned():
                await self.book.save(run)
                await self._replay(run)
        except MfscoreError as error:
            await self._end(run, named_by_key(error.sentence(), input_dir))
        except Exception as error:  # a bug: the run fails with one sentence, the log keeps the traceback
            log.exception("run %s: planning failed", run.run_id)
            await self._end(run, f"internal error while planning: {type(error).__name__}: {error}")

    async def _validate(self, run: Run, package: runs_pb2.ValidationReport | None = None, *, ask: bool = True) -> bool:
        """Have the validator check the submission (unless not ``ask``), with the findings on its ``package``; whether
        the run goes on (not rejected, nor ended meanwhile)."""
        report = (await self._validated(run)).report if ask else runs_pb2.ValidationReport(valid=True)
        if package is not None:
            report.findings.extend(package.findings)
            report.valid = report.valid and package.valid
        if run.validated(report):
            await self.book.save(run)
        return not run.ended

    async def _plan_package(self, run: Run) -> runs_pb2.ValidationReport | None:
        """Plan a package run against its dataset (``packages.complete``) and record the files it reads in its input
        manifest; the findings on the package's description (None when the run ended: its dataset is gone)."""
        run_id = run.run_id
        dataset = self.datasets.datasets.get(run.spec.dataset)
        if dataset is None or not is_run_of(run.spec, dataset):
            await self._end(run, f"the dataset {run.spec.dataset} the package is scored against is gone")
            return None
        files = await self._outlasting(f"run {run_id}: reading its dataset's files",
                                       lambda: self.datasets.files(dataset))
        work, split = self._dir(run_id, "package"), self._split(run)
        try:
            completed = await self._outlasting(f"run {run_id}: planning its package", lambda: asyncio.to_thread(
                packages.complete, self.store, run.spec, files, owner_space(dataset), work, split=split))
        except MfscoreError as error:  # its files named as in the run: package/..., dataset/...
            await self._end(run, named_by_key(error.sentence(), work))
            return None
        await self._outlasting(f"run {run_id}: recording its inputs", lambda: asyncio.to_thread(
            self._record_package, run.spec.input_prefix, run_id, completed))
        return completed.findings if run.package_planned(completed.spec, completed.submission()) else None

    def _record_package(self, input_prefix: str, run_id: str, completed: packages.Completed) -> None:
        """Store the tables planning made (read by their names under the run's inputs) and record the files the run
        reads in its input manifest (blocking)."""
        for key, path in completed.made.items():
            self.store.put_file(input_prefix + key, path)
        input_manifest.write(self.store, run_id, completed.files)

    def _split(self, run: Run):
        """The public/private split of a campaign run's phase (``mfscore.campaigns.Split``), or None."""
        phase = self.campaigns.phase_of(run.spec)
        return phase.split if phase is not None else None

    async def _validated(self, run: Run) -> services_pb2.ValidateResponse:
        """The validator's answer. While it is unreachable (restarting) it is waited for, for the retry budget; a
        validator lost in the middle of the check (it crashed on the submission, say) is asked again once, and a
        second loss, or no answer within VALIDATION_TIMEOUT, fails the run."""
        run_id = run.run_id
        request = services_pb2.ValidateRequest(run=run.spec)
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

    async def _plan(self, run: Run, input_dir: str) -> input_manifest.Inputs | None:
        """Plan the run from its inputs (fetched into ``input_dir``); its input manifest, or None when the run ended
        while it was planned."""
        run_id = run.run_id
        inputs = await self._outlasting(f"run {run_id}: reading its input manifest",
                                        lambda: asyncio.to_thread(input_manifest.read, self.store, run_id))
        task, plan = await self._outlasting(f"run {run_id}: fetching its tables", lambda: asyncio.to_thread(
            plan_run, self.store, run.spec, input_dir, inputs))
        return inputs if run.hold_plan(task, plan) else None

    async def _score_here(self, run: Run) -> None:
        """Score every job where the run was planned (a task whose jobs take less than shipping them)."""
        outcomes = await asyncio.to_thread(score_plan, run.task, run.plan)
        metrics.TRIALS_RECEIVED.inc(run.trials_in(outcomes))
        run.scored(outcomes)

    async def _publish(self, run: Run, inputs: input_manifest.Inputs, input_dir: str) -> bool:
        """Store the files the plan made and publish the run's jobs; False when the run ended meanwhile (failed on a
        record of a job already out, say)."""
        run_id, task, plan = run.run_id, run.task, run.plan
        await self._outlasting(f"run {run_id}: storing its planned files", lambda: asyncio.to_thread(
            self._store_generated, run.spec.input_prefix, plan.generated))
        for job in plan.jobs:
            if run.ended:
                return False
            wire = job_message(run_id, task, Job(job.key, _on_wire(task, job.work, input_dir, plan.generated)),
                               run.spec.input_prefix)
            wire.objects.update(input_manifest.objects_for(inputs, task.blobs(job.work).values(), input_dir))
            await self.book.durably(f"run {run_id}: publishing its jobs",
                                    lambda: publish_job(self.js, task.resource, wire))
        return True

    async def _replay(self, run: Run) -> None:
        """Fold the records that came before the run was planned, count its trials planned, and report it if every
        record is in."""
        for record in run.take_pending():
            if run.ended:
                return
            await self._fold(run, record)
        metrics.TRIALS_PLANNED.inc(run.trials_planned)
        log.info("run %s: %d jobs planned (%d trials)", run.run_id, run.status.jobs_planned, run.trials_planned,
                 extra={"run_id": run.run_id})
        await self._report_if_ready(run)

    async def on_result(self, msg) -> None:
        """Fold one record (a JetStream message of the results stream)."""
        started = time.perf_counter()
        try:
            record = records_pb2.TrialRecord.FromString(msg.data)
        except DecodeError:
            log.warning("dropped a message on %s that is not a trial record", msg.subject[:200])
            self.book.strays.add(msg.subject)
            return
        run = self.book.runs.get(record.run_id)
        if run is None:
            self.book.strays.add(msg.subject)
            return
        folded = await self._fold(run, record)
        if folded is Folded.IGNORED:
            run.cleaned = False  # a record of a finished run (a job in flight when it ended): purged again
        if folded in (Folded.IGNORED, Folded.PENDING):
            return
        metrics.AGGREGATOR_FOLD_DURATION.observe(time.perf_counter() - started)
        await self._report_if_ready(run)

    async def _fold(self, run: Run, record: records_pb2.TrialRecord) -> Folded:
        """Fold a record into the run (``Run.fold``) and record or tell what it changed."""
        received = run.trials_received
        folded = run.fold(record, describe=one_line)
        if folded is Folded.ADDED:
            metrics.TRIALS_RECEIVED.inc(run.trials_received - received)
        if folded is Folded.ENDED:
            await self.book.save(run)
        elif folded in (Folded.ADDED, Folded.REPEATED):
            await self.book.changed(run)
        return folded

    async def _report_if_ready(self, run: Run) -> None:
        if run.ready():
            await self.book.save(run)
            self.book.spawn(self._report(run))

    async def _report(self, run: Run) -> None:
        """Write the run's reports, store them and record their digest: DONE."""
        run_id = run.run_id
        started = time.perf_counter()
        try:
            if not await self._write(run):
                return
            await self._store(run_id)
            if run.done():
                await self.book.save(run)
            metrics.AGGREGATOR_REPORT_DURATION.observe(time.perf_counter() - started)
            log.info("run %s: done in %.2f s of reporting", run_id, time.perf_counter() - started,
                     extra={"run_id": run_id})
        except MfscoreError as error:  # named as the client knows its files, like a planning error
            await self._end(run, named_by_key(error.sentence(), self._dir(run_id, "inputs")))
        except Exception as error:
            log.exception("run %s: reporting failed", run_id)
            await self._end(run, f"internal error while reporting: {type(error).__name__}: {error}")

    async def _write(self, run: Run) -> bool:
        """Write the run's reports into its work directory; whether they are to be stored (False: the report failed,
        or the run was cancelled while it was written)."""
        run_id = run.run_id
        digests = await self._outlasting(f"run {run_id}: reading the digests of its uploads",
                                         lambda: asyncio.to_thread(uploads.uploaded_digests, self.store, run_id))
        await self._outlasting(f"run {run_id}: fetching the files its report reads", lambda: asyncio.to_thread(
            self._fetch_report_files, run))
        started = run.status.submitted_at.ToNanoseconds() / 1e9
        notes, failure, provenance_json = await asyncio.to_thread(self._write_report, run, digests, started)
        if run.reported(notes, failure, provenance_json):
            await self.book.save(run)
        return not run.ended

    async def _store(self, run_id: str) -> None:
        """Store the written reports, as the leader, and record their manifest's digest; the work directory goes."""
        await self.book.durably(f"run {run_id}: holding the lease to store its reports", self.book.holding_lease)
        seal = await self._outlasting(f"run {run_id}: storing its reports",
                                      lambda: asyncio.to_thread(self._store_report, run_id))
        await self.book.durably(f"run {run_id}: recording its report's digest",
                                lambda: seal_report(self.book.kv, run_id, seal))
        shutil.rmtree(self._dir(run_id, ""), ignore_errors=True)

    def _fetch_report_files(self, run: Run) -> None:
        """Fetch the job files the report reads again (``Task.report_blobs``: a mask run's visuals) to where the plan
        names them under the run's inputs, from the objects its input manifest names (blocking)."""
        run_id, input_dir = run.run_id, self._dir(run.run_id, "inputs")
        paths = report_files(run.task, run.plan, run.outcomes)
        if not paths:
            return
        inputs = input_manifest.read(self.store, run_id)
        names = [os.path.relpath(path, input_dir).replace(os.sep, "/") for path in paths]
        self.store.download_objects({name: input_manifest.stored_key(run.spec.input_prefix, inputs, name)
                                     for name in names}, input_dir, max_bytes=MAX_BLOB_BYTES)

    def _write_report(self, run: Run, digests: dict[str, str], started: float
                      ) -> tuple[list[str], str | None, str | None]:
        """Report into a scratch directory, with what the command says beside it and the run's provenance (the job
        files' SHA-256s are ``digests``, from the uploads; the run started at ``started``, a Unix time): the notes
        (what the command prints on stderr), the sentence of a report's error if any, and the provenance (blocking)."""
        run_id = run.run_id
        input_dir, out_dir = self._dir(run_id, "inputs"), self._dir(run_id, "out")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        plan, task = run.plan, run.task
        record = lambda: dataclasses.replace(run_record(  # noqa: E731
            task, plan, task.inputs(plan.options), runner="cluster", started=started, finished=time.time(),
            file_digest=lambda key, path: digests.get(key, ABSENT)), submission=run.submission)
        lines = report_into(task, plan, run.outcomes, os.path.join(out_dir, run.spec.output_name), record=record)
        notes = [named_by_key(line, input_dir) for line in plan.stderr + lines.stderr]
        if lines.error is not None:
            return notes, named_by_key(lines.error.sentence(), input_dir), None
        said = {"stdout": [named_by_key(line, input_dir) for line in plan.stdout + lines.stdout],
                "status": lines.status}
        with open(self._dir(run_id, "said.json"), "w") as f:
            json.dump(said, f)
        return notes, None, lines.record.to_json().decode()

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
