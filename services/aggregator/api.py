"""AggregatorService's gRPC API (proto/mfscore/v1/services.proto): what a caller may do with its runs.

Every run belongs to the principal that created it; another caller's run answers NOT_FOUND to every call, as a run
that never was (an operator sees every run and may cancel or delete it, but uploads into and submits only its own).
A run's input files are objects of its owner's namespace or of its dataset, recorded in its input manifest
(DeclareInputs, UploadInputs; docs/datasets.md).
Every name a caller sends is checked whole before it is used (``run_layout``). Status codes as AIP-193 says: a
call on a run in the wrong state is FAILED_PRECONDITION, a bad field INVALID_ARGUMENT naming it, NATS or S3 away
UNAVAILABLE, a stored report that is not what the aggregator wrote DATA_LOSS. A standby aggregator (one that does
not hold the leader's lease) serves the reads of runs that have ended and of datasets, and answers UNAVAILABLE to
the calls that change state and to reads of runs in progress (ListRuns included), whose progress only the leader
knows.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import os
import uuid

import grpc
import nats.errors

from mfscore import options_schema, tasks
from mfscore.errors import MfscoreError, OptionError
from mfscore.options import check_limits
from mfscore.results import Results
from mfscore.services.aggregator import paging, reports, uploads
from mfscore.services.aggregator.datasets import DatasetBook, DatasetTampered, is_run_of, owner_space
from mfscore.services.aggregator.lease import leader_only
from mfscore.services.aggregator.objects import Objects
from mfscore.services.aggregator.quotas import QuotaExceeded, Quotas
from mfscore.services.aggregator.retention import Retention
from mfscore.services.aggregator.retry import one_line
from mfscore.services.aggregator.runner import ClusterRunner
from mfscore.services.aggregator.state import (
    TERMINAL,
    NotRecorded,
    RunBook,
    RunEntry,
    State,
    created_ns,
    may_see,
    now,
    report_seal,
)
from mfscore.services.common import input_manifest, metrics
from mfscore.services.common.auth import Caller, caller
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError, ObjectStoreUnavailable
from mfscore.services.common.run_layout import (
    BadName,
    check_file_name,
    check_output_name,
    check_run_id,
    input_prefix,
    namespace,
    object_key,
    parse_dataset,
    work_dir,
)
from mfscore.services.common.results_wire import leaderboard_message, results_message
from mfscore.services.common.settings import Settings
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2_grpc

MAX_RUN_SPEC_BYTES = 512 << 10  # a run's state (spec and status) must fit a 1 MiB NATS key-value entry
MAX_RESULTS_BYTES = 32 << 20    # a results file GetResults sends in one message (FetchReport streams any size)
PAGE_BYTES = 3 << 20            # a ListRuns page stops growing past this, so a default client (4 MiB) takes it
FOLLOWING = ("this aggregator is a standby, behind the leader on the runs in progress; the leading aggregator "
             "answers for them, try another address")
log = logging.getLogger("mfscore.aggregator")


class AggregatorApi(services_pb2_grpc.AggregatorServiceServicer):
    def __init__(self, settings: Settings, store: ObjectStore, book: RunBook, runner: ClusterRunner,
                 retention: Retention, datasets: DatasetBook, objects: Objects):
        self.settings, self.store, self.book, self.runner, self.retention = settings, store, book, runner, retention
        self.datasets, self.objects = datasets, objects
        self.quotas = Quotas(settings)
        # one caller's CreateRun and SubmitRun, each from its quota check to its record: parallel calls cannot all
        # pass the check before any is counted
        self.counting: collections.defaultdict[Caller, asyncio.Lock] = collections.defaultdict(asyncio.Lock)

    @leader_only
    async def CreateRun(self, request, context):
        who = caller()
        dataset = await readable_dataset(self.datasets, request.dataset, who, context) if request.dataset else None
        async with self.counting[who]:
            try:
                self.quotas.check_runs(who, *self.book.held(who), submitting=False)
                self.quotas.create_run.take(who, f"{who.name} called CreateRun")
            except QuotaExceeded as error:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, error.sentence())
            run_id = uuid.uuid4().hex
            created = now()
            spec = runs_pb2.RunSpec(run_id=run_id, input_prefix=input_prefix(run_id), submitted_by=who.name,
                                    dataset=request.dataset,
                                    dataset_creation_id=dataset.creation_id if dataset is not None else "")
            status = runs_pb2.RunStatus(run_id=run_id, state=State.RUN_STATE_CREATED, submitted_at=created,
                                        created_at=created, owner=who.name, owner_role=who.role)
            await self._record(RunEntry(spec, status), context, spec, status)
        log.info("run %s: created", run_id)
        return runs_pb2.CreateRunResponse(run_id=run_id, input_prefix=spec.input_prefix)

    @leader_only
    async def UploadInputs(self, request_iterator, context):
        try:
            with self.quotas.uploads.stream(caller()) as holding:
                return await self._upload_inputs(
                    uploads.idle_bounded(request_iterator, self.settings.upload_idle_seconds), holding, context)
        except QuotaExceeded as error:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, error.sentence())

    async def _upload_inputs(self, request_iterator, holding, context):
        try:
            first = await anext(request_iterator, None)
        except MfscoreError as error:
            await context.abort(_upload_code(error), error.sentence())
        if first is None:
            return runs_pb2.UploadInputsResponse()
        entry = await self._entry(first.run_id, context, owned=True)
        run_id = entry.spec.run_id
        if entry.status.state != State.RUN_STATE_CREATED:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is {_state(entry)}, not "
                                                                     "created; its inputs cannot change")
        space = await caller_space(context)
        spool_dir = work_dir(self.settings.work_dir, run_id, "uploading")
        os.makedirs(spool_dir, exist_ok=True)

        stored = runs_pb2.UploadInputsResponse()
        recorded: list[runs_pb2.InputFile] = []
        entry.uploading += 1
        with self.objects.pinning() as pin:
            async def put(declared, data):
                key = object_key(space, declared.sha256)
                pin(key)  # stored, not yet named by the run's manifest
                await asyncio.to_thread(self.objects.put, key, data, declared.size,
                                        lacking=self.objects.take_lacking(run_id, key))
                stored.files.append(declared)
                recorded.append(runs_pb2.InputFile(name=declared.name, size=declared.size, sha256=declared.sha256,
                                                   key=key))

            try:
                await uploads.receive(_chained(first, request_iterator), run_id, put, holding=holding,
                                      max_bytes=self.settings.max_upload_bytes, spool_dir=spool_dir)
            except MfscoreError as error:
                await context.abort(_upload_code(error), f"run {run_id}: {error.sentence()}")
            finally:
                try:
                    if recorded:  # what was stored, even by a stream refused later on
                        async with self.objects.lock(space):
                            await asyncio.to_thread(input_manifest.write, self.store, run_id, recorded)
                finally:
                    entry.uploading -= 1  # only once recorded: SubmitRun plans from the manifest
        return stored

    @leader_only
    async def DeclareInputs(self, request, context):
        entry = await self._entry(request.run_id, context, owned=True)
        run_id = entry.spec.run_id
        if entry.status.state != State.RUN_STATE_CREATED:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is {_state(entry)}, not "
                                                                     "created; its inputs cannot change")
        try:
            for declared in request.files:
                uploads.check_declared(declared, self.settings.max_upload_bytes)
            uploads.Names(declared.name for declared in request.files)
        except MfscoreError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"run {run_id}: {error.sentence()}")
        space = await caller_space(context)
        in_dataset: dict[tuple[str, int], str] = {}  # (SHA-256, size) -> its object, of the run's dataset
        dataset = self.datasets.datasets.get(entry.spec.dataset) if entry.spec.dataset else None
        if dataset is not None and is_run_of(entry.spec, dataset):
            files = await dataset_files(self.datasets, dataset, context)
            in_dataset = {(file.sha256, file.size): object_key(owner_space(dataset), file.sha256) for file in files}
        entry.uploading += 1  # SubmitRun waits for what is found to be recorded
        try:
            missing = await self._declare(run_id, space, request.files, in_dataset, context)
        finally:
            entry.uploading -= 1
        return runs_pb2.DeclareInputsResponse(missing=missing)

    async def _declare(self, run_id: str, space: str, files, in_dataset: dict, context) -> list[str]:
        """Record in the run's manifest the ``files`` the caller's namespace or the run's dataset (``in_dataset``)
        holds, under the namespace's lock (no collection deletes one before it is recorded); the names of the
        others."""
        found, missing, lacking = [], [], set()
        async with self.objects.lock(space):
            try:
                held = await asyncio.to_thread(self.objects.held, space, {
                    declared.sha256: declared.size for declared in files
                    if (declared.sha256, declared.size) not in in_dataset})
            except ObjectStoreError as error:
                await context.abort(_upload_code(error), f"run {run_id}: {error.sentence()}")
            for declared in files:
                key = in_dataset.get((declared.sha256, declared.size)) or (
                    object_key(space, declared.sha256) if declared.sha256 in held else None)
                if key is None:
                    missing.append(declared.name)
                    lacking.add(object_key(space, declared.sha256))
                else:
                    found.append(runs_pb2.InputFile(name=declared.name, size=declared.size, sha256=declared.sha256,
                                                    key=key))
            if found:
                await asyncio.to_thread(input_manifest.write, self.store, run_id, found)
        self.objects.lacking(run_id, lacking)
        return missing

    @leader_only
    async def SubmitRun(self, request, context):
        request = request.spec
        try:
            check_output_name(request.output_name)
            for table in request.tables:
                check_file_name(table, "table name")
        except BadName as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        entry = await self._entry(request.run_id, context, owned=True)
        if entry.status.state != State.RUN_STATE_CREATED:
            # submitted already: the same run (a client resubmits after a reconnection)
            return runs_pb2.SubmitRunResponse(run=entry.status)
        run_id = entry.spec.run_id
        if request.task not in tasks.names():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{request.task[:64]!r} is not a task; the tasks are {', '.join(sorted(tasks.names()))}")
        if request.ByteSize() > MAX_RUN_SPEC_BYTES:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the run spec is {request.ByteSize()} bytes, more "
                                f"than the limit of {MAX_RUN_SPEC_BYTES}; nothing was recorded")
        try:
            check_limits(tasks.decode_options(tasks.get(request.task), request.options), self.settings.option_limits)
            options_schema.check(request.task, request.options)  # the published contract (docs/distributed.md)
        except OptionError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the run's options: {error.sentence()}; nothing "
                                                                  "was recorded")
        if request.input_prefix != entry.spec.input_prefix:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"a run's inputs are under "
                                f"{entry.spec.input_prefix!r}, its own prefix, not {request.input_prefix[:200]!r}")
        await self._inputs_named_apart(run_id, context)
        if request.dataset:
            await readable_dataset(self.datasets, request.dataset, caller(), context)
            if request.dataset != entry.spec.dataset:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"run {run_id} was created "
                                    + (f"with the dataset {entry.spec.dataset}" if entry.spec.dataset else
                                       "without a dataset") + f", not {request.dataset}; its inputs were declared so")
        async with self.counting[caller()]:  # the checks after every wait, so none of them is stale
            if entry.status.state != State.RUN_STATE_CREATED:  # submitted meanwhile by the same caller's retry
                return runs_pb2.SubmitRunResponse(run=entry.status)
            if entry.uploading:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is still receiving inputs; "
                                                                         "submit it once they are uploaded")
            try:
                self.quotas.check_runs(caller(), *self.book.held(caller()), submitting=True)
            except QuotaExceeded as error:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, error.sentence())
            spec = runs_pb2.RunSpec()
            spec.CopyFrom(request)
            spec.submitted_by, spec.dataset = entry.spec.submitted_by, entry.spec.dataset
            spec.dataset_creation_id = entry.spec.dataset_creation_id
            status = runs_pb2.RunStatus()
            status.CopyFrom(entry.status)
            status.task, status.state = spec.task, State.RUN_STATE_VALIDATING
            status.submitted_at.CopyFrom(now())
            await self._record(entry, context, spec, status)
        self.runner.start(entry)
        log.info("run %s: %s submitted", run_id, spec.task)
        return runs_pb2.SubmitRunResponse(run=entry.status)

    async def _inputs_named_apart(self, run_id: str, context) -> None:
        """INVALID_ARGUMENT when a name of the run's inputs is a directory of another (``sys/a``, ``sys/a/b``),
        uploaded or declared by separate calls."""
        try:
            inputs = await asyncio.to_thread(input_manifest.read, self.store, run_id)
            uploads.Names(inputs)
        except uploads.UploadRefused as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"run {run_id}: {error.sentence()}; nothing was "
                                                                  "submitted")
        except ObjectStoreError as error:
            await context.abort(_upload_code(error), f"run {run_id}: its inputs cannot be read now: "
                                                     f"{error.sentence()}")

    async def GetRun(self, request, context):
        return runs_pb2.GetRunResponse(run=(await self._ended_or_current(request.run_id, context)).status)

    async def WatchRun(self, request, context):
        entry = await self._ended_or_current(request.run_id, context)
        seen = -1
        while True:
            async with entry.changed:
                await entry.changed.wait_for(lambda: entry.version != seen)
                seen = entry.version
                snapshot = runs_pb2.RunStatus()
                snapshot.CopyFrom(entry.status)
            yield runs_pb2.WatchRunResponse(run=snapshot)
            if snapshot.state in TERMINAL:
                return
            await asyncio.sleep(0.1)  # coalesce bursts of records into one update

    async def ListRuns(self, request, context):
        if not self.book.current():
            await context.abort(grpc.StatusCode.UNAVAILABLE, FOLLOWING)
        who = caller()
        try:
            size = paging.page_size(request.page_size)
            after = paging.read_page_token(request.page_token, request.state)
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except paging.BadPageToken as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        visible = (((created_ns(e.status), run_id), e.status) for run_id, e in list(self.book.runs.items())
                   if may_see(who, e.status)
                   and (request.state == State.RUN_STATE_UNSPECIFIED or e.status.state == request.state))
        runs, last = paging.page(visible, size, after, budget=PAGE_BYTES, cost=lambda status: status.ByteSize())
        return runs_pb2.ListRunsResponse(runs=runs, next_page_token=paging.page_token(request.state, last)
                                         if last is not None else "")

    @leader_only
    async def CancelRun(self, request, context):
        entry = await self._entry(request.run_id, context)
        run_id = entry.spec.run_id
        try:
            cancelled = await self.book.cancel(entry, f"cancelled by {caller().name}")
        except NotRecorded:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the aggregator cannot reach NATS, so run {run_id} was "
                                                             "not cancelled; try again")
        if not cancelled:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is {_state(entry)}: it has ended, "
                                                                     "so there is nothing to cancel")
        return runs_pb2.CancelRunResponse(run=entry.status)

    @leader_only
    async def DeleteRun(self, request, context):
        entry = await self._entry(request.run_id, context)
        run_id = entry.spec.run_id
        if entry.status.state not in TERMINAL:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"run {run_id} is {_state(entry)}: it has not "
                                                                     "ended; cancel it first (CancelRun)")
        if not self.book.connected():
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the aggregator cannot reach NATS, so run {run_id} was "
                                                             "not deleted; try again")
        try:
            await self.retention.delete(entry, f"as {caller().name} asked")
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"run {run_id} could not be deleted now "
                                                             f"({one_line(error)}); try again")
        return runs_pb2.DeleteRunResponse()

    async def FetchReport(self, request, context):
        entry = await self._done(request.run_id, context)
        run_id = entry.spec.run_id
        async with self._reading_report(run_id, context):
            seal = await self._seal(run_id, context)
            async for message in reports.stream_report(self.store, run_id, seal):
                yield message

    async def GetResults(self, request, context):
        entry = await self._done(request.run_id, context)
        results = await self._results(entry, context)
        return results_pb2.GetResultsResponse(results=results_message(results, entry.status.provenance_json))

    async def GetLeaderboard(self, request, context):
        """The DONE runs of the task on this very dataset (not on one deleted before it under the same name),
        whoever submitted them, that report the metric asked for (by default the primary most owners rank by),
        ranked (mfscore.leaderboard): derived on each call from the recorded runs and their sealed results, so
        nothing is kept to go stale. A run ranked by another metric is on that metric's board (``metrics`` names
        them all), and no refusal names another caller's run."""
        from mfscore import leaderboard as lb

        dataset = await readable_dataset(self.datasets, request.dataset, caller(), context)
        if request.task not in tasks.names():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{request.task[:64]!r} is not a task; the tasks are {', '.join(sorted(tasks.names()))}")
        runs = [entry for entry in list(self.book.runs.values())
                if is_run_of(entry.spec, dataset) and entry.spec.task == request.task
                and entry.status.state == State.RUN_STATE_DONE]
        entries = [lb.Entry(entry.spec.run_id, entry.status.owner, _iso(entry.status.submitted_at),
                            entry.spec.output_name or entry.spec.run_id, await self._results(entry, context))
                   for entry in runs]
        entries = [entry for entry in entries if entry.results.task == request.task]
        boards = lb.primaries(entries)
        metric = request.metric or (boards[0] if boards else None)
        try:
            board = lb.leaderboard(lb.reporting(entries, metric) if metric else [], dataset=request.dataset,
                                   task=request.task, metric=metric)
        except ValueError as error:  # the metric has no direction, or two: the sentence names no run
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"no leaderboard of {request.task} on "
                                                                  f"{request.dataset} by {metric}: {error}")
        return results_pb2.GetLeaderboardResponse(leaderboard=leaderboard_message(board),
                                                  json=lb.to_json(board).decode(), metrics=boards)

    async def _results(self, entry: RunEntry, context) -> Results:
        """A DONE run's results, read from its sealed results file."""
        run_id = entry.spec.run_id
        async with self._reading_report(run_id, context):
            manifest = await reports.read_manifest(self.store, run_id, await self._seal(run_id, context))
            declared = reports.results_file(manifest)
            if declared is None:
                await context.abort(grpc.StatusCode.NOT_FOUND, f"run {run_id} has no results file")
            if declared.size > MAX_RESULTS_BYTES:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the results of run {run_id} are "
                                    f"{declared.size} bytes, more than one message carries; FetchReport sends "
                                    f"{declared.name}")
            content = await reports.read_file(self.store, run_id, declared)
        try:
            results = Results.from_json(content)
        except (ValueError, KeyError, TypeError) as error:
            await context.abort(grpc.StatusCode.INTERNAL, f"the results of run {run_id} cannot be read: "
                                                          f"{one_line(error)}")
        return results

    async def _done(self, run_id: str, context) -> RunEntry:
        """The caller's run ``run_id`` (``_entry``), which must be DONE: FAILED_PRECONDITION otherwise."""
        entry = await self._entry(run_id, context)
        if entry.status.state != State.RUN_STATE_DONE:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"run {entry.spec.run_id} is {_state(entry)}, not done")
        return entry

    async def _seal(self, run_id: str, context) -> str:
        """The recorded digest of the run's report manifest; NOT_FOUND when none was recorded."""
        seal = await report_seal(self.book.kv, run_id)
        if seal is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no report of run {run_id} was recorded")
        return seal

    @contextlib.asynccontextmanager
    async def _reading_report(self, run_id: str, context):
        """Reading a run's stored report: a file that is not what the aggregator wrote is DATA_LOSS (and counted),
        NATS or S3 away UNAVAILABLE, another store error INTERNAL."""
        try:
            yield
        except reports.ReportTampered as error:
            metrics.REPORTS_TAMPERED.inc()
            log.error("run %s: %s", run_id, error.sentence())
            await context.abort(grpc.StatusCode.DATA_LOSS, f"{error.sentence()}; nothing of it should be used")
        except (ObjectStoreUnavailable, nats.errors.Error, TimeoutError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the report of run {run_id} cannot be read now: "
                                                             f"{one_line(error)}")
        except ObjectStoreError as error:
            await context.abort(grpc.StatusCode.INTERNAL, f"the report of run {run_id} cannot be read: "
                                                          f"{error.sentence()}")

    async def _entry(self, run_id: str, context, *, owned: bool = False) -> RunEntry:
        """The caller's run ``run_id`` (``RunBook.visible``); NOT_FOUND otherwise."""
        try:
            check_run_id(run_id)
        except BadName as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        entry = self.book.visible(run_id, caller(), owned=owned)
        if entry is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"there is no run {run_id!r}" +
                                ("; make one with CreateRun" if owned else ""))
        return entry

    async def _ended_or_current(self, run_id: str, context) -> RunEntry:
        """The caller's run, if it has ended or this aggregator's book is current (``RunBook.current``): a
        standby's copy of a run in progress is behind the leader's."""
        entry = await self._entry(run_id, context)
        if entry.status.state not in TERMINAL and not self.book.current():
            await context.abort(grpc.StatusCode.UNAVAILABLE, FOLLOWING)
        return entry

    async def _record(self, entry: RunEntry, context, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        try:
            await self.book.record(entry, spec, status)
        except NotRecorded:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the aggregator cannot reach NATS, so run {spec.run_id} "
                                                             "was not recorded; try again")


async def caller_space(context) -> str:
    """The caller's namespace of objects; FAILED_PRECONDITION for a caller whose name cannot be one."""
    who = caller()
    try:
        return namespace(who.role, who.name)
    except BadName as error:
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{error.sentence()}; such a caller stores nothing "
                                                                 "(its name in the tokens file must change)")


async def readable_dataset(datasets: DatasetBook, name: str, who: Caller, context):
    """The dataset ``name`` (``name@version``) the caller may read: INVALID_ARGUMENT for a malformed name, NOT_FOUND
    for none, or another caller's private one (never PERMISSION_DENIED, which would say it exists)."""
    try:
        parse_dataset(name)
    except BadName as error:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
    dataset = datasets.readable(who, name)
    if dataset is None:
        await context.abort(grpc.StatusCode.NOT_FOUND, f"there is no dataset {name!r}")
    return dataset


async def dataset_files(datasets: DatasetBook, dataset, context) -> list:
    """The dataset's files; DATA_LOSS when the stored list is not what was recorded, UNAVAILABLE when S3 is away."""
    try:
        return await datasets.files(dataset)
    except DatasetTampered as error:
        log.error("%s", error.sentence())
        await context.abort(grpc.StatusCode.DATA_LOSS, error.sentence())
    except ObjectStoreError as error:
        await context.abort(_upload_code(error), f"the files of the dataset cannot be read now: {error.sentence()}")


def _upload_code(error: MfscoreError) -> grpc.StatusCode:
    """S3 away is UNAVAILABLE, another store error INTERNAL (the store, not the file), a quota exceeded
    RESOURCE_EXHAUSTED, a stream gone quiet DEADLINE_EXCEEDED, a file not as declared INVALID_ARGUMENT."""
    return (grpc.StatusCode.UNAVAILABLE if isinstance(error, ObjectStoreUnavailable)
            else grpc.StatusCode.INTERNAL if isinstance(error, ObjectStoreError)
            else grpc.StatusCode.RESOURCE_EXHAUSTED if isinstance(error, QuotaExceeded)
            else grpc.StatusCode.DEADLINE_EXCEEDED if isinstance(error, uploads.UploadIdle)
            else grpc.StatusCode.INVALID_ARGUMENT)


def _iso(stamp) -> str:
    """A timestamp as ISO 8601 in UTC, to the microsecond: when a leaderboard's run was submitted."""
    return stamp.ToDatetime().replace(tzinfo=datetime.timezone.utc).isoformat(timespec="microseconds")


def _state(entry: RunEntry) -> str:
    """The run's state as a message names it: "scoring", "done"."""
    return State.Name(entry.status.state)[len("RUN_STATE_"):].lower()


async def _chained(first, rest):
    yield first
    async for item in rest:
        yield item
