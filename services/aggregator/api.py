"""AggregatorService's gRPC API (proto/mfscore/v1/services.proto): what a caller may do with its runs.

Every run belongs to the principal that created it; another caller's run answers NOT_FOUND to every call, as a run
that never was (an operator sees every run and may cancel or delete it, but uploads into and submits only its own).
A run's input files are objects of its owner's namespace or of its dataset, recorded in its input manifest
(DeclareInputs, UploadInputs; docs/datasets.md).
Every name a caller sends is checked whole before it is used (``run_layout``). A handler raises a refusal, which
``status_codes`` answers with its code as AIP-193 says: a call on a run in the wrong state is FAILED_PRECONDITION, a
bad field INVALID_ARGUMENT naming it, NATS or S3 away UNAVAILABLE, a stored report that is not what the aggregator
wrote DATA_LOSS. A standby aggregator (one that does not hold the leader's lease) serves the reads of runs that have
ended and of datasets, and answers UNAVAILABLE to the calls that change state and to reads of runs in progress
(ListRuns included), whose progress only the leader knows. A run against a dataset whose reference the caller may
not read answers as the dataset's release policy says (``releasing``, docs/release.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import os
import uuid

import nats.errors

from mfscore import options_schema, release, tasks
from mfscore.errors import MfscoreError, OptionError
from mfscore.options import check_limits
from mfscore.results import Results
from mfscore.services.aggregator import campaigns, packages, paging, releasing, reports, uploads
from mfscore.services.aggregator.access import caller_space, dataset_files, readable_dataset
from mfscore.services.aggregator.campaigns import CampaignBook, clock
from mfscore.services.aggregator.datasets import DatasetBook, is_run_of, may_read_reference, owner_space
from mfscore.services.aggregator.dead_letters_api import DeadLetterApi
from mfscore.services.aggregator.lease import leader_only
from mfscore.services.aggregator.objects import Objects
from mfscore.services.aggregator.quotas import Quotas
from mfscore.services.aggregator.retention import Retention
from mfscore.services.aggregator.run import Run, State, now
from mfscore.services.aggregator.runner import ClusterRunner
from mfscore.services.aggregator.state import NotRecorded, RunBook, created_ns, may_see, report_seal
from mfscore.services.common import input_manifest, metrics
from mfscore.services.common.auth import Caller, caller
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError, ObjectStoreUnavailable
from mfscore.services.common.results_wire import leaderboard_message, results_message
from mfscore.services.common.retry import one_line
from mfscore.services.common.run_layout import (
    check_file_name,
    check_output_name,
    check_run_id,
    input_prefix,
    object_key,
    work_dir,
)
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import (
    DataLoss,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Refusal,
    ResourceExhausted,
    Unavailable,
    answers,
    restated,
)
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2_grpc

MAX_RUN_SPEC_BYTES = 512 << 10  # a run's state (spec and status) must fit a 1 MiB NATS key-value entry
MAX_RESULTS_BYTES = 32 << 20    # a results file GetResults sends in one message (FetchReport streams any size)
FOLLOWING = ("this aggregator is a standby, behind the leader on the runs in progress; the leading aggregator "
             "answers for them, try another address")
log = logging.getLogger("mfscore.aggregator")


class AggregatorApi(DeadLetterApi, services_pb2_grpc.AggregatorServiceServicer):
    def __init__(self, settings: Settings, store: ObjectStore, book: RunBook, runner: ClusterRunner,
                 retention: Retention, datasets: DatasetBook, objects: Objects, campaigns: CampaignBook, *, js=None,
                 nc=None):
        self.settings, self.store, self.book, self.runner, self.retention = settings, store, book, runner, retention
        self.datasets, self.objects, self.campaigns = datasets, objects, campaigns
        self.js, self.nc = js, nc  # the aggregator's NATS, for the operator's dead letters (DeadLetterApi)
        self.quotas = Quotas(settings)
        # one caller's CreateRun and SubmitRun, each from its quota check to its record: parallel calls cannot all
        # pass the check before any is counted
        self.counting: collections.defaultdict[Caller, asyncio.Lock] = collections.defaultdict(asyncio.Lock)

    @answers
    @leader_only
    async def CreateRun(self, request, context):
        who = caller()
        entering = (campaigns.entering(self.campaigns, request, who, clock(self.settings.clock_offset_seconds))
                    if request.campaign else None)
        name = entering.competition.dataset if entering is not None else request.dataset
        dataset = readable_dataset(self.datasets, name, who) if name else None
        team = self.counting[entering.team_key] if entering is not None else contextlib.nullcontext()
        async with self.counting[who], team:  # a team's racing submissions are counted one at a time
            self.quotas.check_runs(who, *self.book.held(who), submitting=False)
            if entering is not None:
                campaigns.check_quota(entering, who, self.book.runs.values(), self.settings.clock_offset_seconds)
            self.quotas.create_run.take(who, f"{who.name} called CreateRun")
            run_id = uuid.uuid4().hex
            spec = runs_pb2.RunSpec(run_id=run_id, input_prefix=input_prefix(run_id), submitted_by=who.name,
                                    dataset=name, dataset_creation_id=dataset.creation_id if dataset is not None else "")
            if entering is not None:
                spec.campaign, spec.competition = request.campaign, request.competition
                spec.phase, spec.late = entering.phase.name, entering.late
            run = Run.created(spec, who.name, who.role, now())
            await self._record(run, spec, run.status)
        log.info("run %s: created", run_id)
        return runs_pb2.CreateRunResponse(run_id=run_id, input_prefix=spec.input_prefix)

    @answers
    @leader_only
    async def UploadInputs(self, request_iterator, context):
        with self.quotas.uploads.stream(caller()) as holding:
            return await self._upload_inputs(
                uploads.idle_bounded(request_iterator, self.settings.upload_idle_seconds), holding)

    async def _upload_inputs(self, request_iterator, holding):
        first = await anext(request_iterator, None)
        if first is None:
            return runs_pb2.UploadInputsResponse()
        entry = self._created(first.run_id)
        run_id = entry.spec.run_id
        space = caller_space()
        spool_dir = work_dir(self.settings.work_dir, run_id, "uploading")
        os.makedirs(spool_dir, exist_ok=True)

        stored = runs_pb2.UploadInputsResponse()
        recorded: list[runs_pb2.InputFile] = []
        entry.uploading += 1
        with self.objects.pinning() as pin:
            async def put(declared, data):
                key = object_key(space, declared.sha256)
                pin(key)  # stored, not yet named by the run's manifest
                await asyncio.to_thread(self.objects.put, key, data, declared.size, declared.sha256,
                                        lacking=self.objects.take_lacking(run_id, key))
                stored.files.append(declared)
                recorded.append(runs_pb2.InputFile(name=declared.name, size=declared.size, sha256=declared.sha256,
                                                   key=key))

            try:
                await uploads.receive(_chained(first, request_iterator), run_id, put, holding=holding,
                                      max_bytes=self.settings.max_upload_bytes, spool_dir=spool_dir)
            except Refusal as error:
                raise restated(error, f"run {run_id}: {error.sentence()}") from error
            finally:
                try:
                    if recorded:  # what was stored, even by a stream refused later on
                        async with self.objects.lock(space):
                            await asyncio.to_thread(input_manifest.write, self.store, run_id, recorded)
                finally:
                    entry.uploading -= 1  # only once recorded: SubmitRun plans from the manifest
        return stored

    @answers
    @leader_only
    async def DeclareInputs(self, request, context):
        entry = self._created(request.run_id)
        run_id = entry.spec.run_id
        try:
            for declared in request.files:
                uploads.check_declared(declared, self.settings.max_upload_bytes)
            uploads.Names(declared.name for declared in request.files)
        except MfscoreError as error:
            raise InvalidArgument(f"run {run_id}: {error.sentence()}") from error
        space = caller_space()
        in_dataset: dict[tuple[str, int], str] = {}  # (SHA-256, size) -> its object, of the run's dataset
        dataset = self.datasets.datasets.get(entry.spec.dataset) if entry.spec.dataset else None
        if dataset is not None and is_run_of(entry.spec, dataset) and may_read_reference(caller(), dataset):
            files = await dataset_files(self.datasets, dataset)  # a sealed reference is no digest oracle
            in_dataset = {(file.sha256, file.size): object_key(owner_space(dataset), file.sha256) for file in files}
        entry.uploading += 1  # SubmitRun waits for what is found to be recorded
        try:
            missing = await self._declare(run_id, space, request.files, in_dataset)
        finally:
            entry.uploading -= 1
        return runs_pb2.DeclareInputsResponse(missing=missing)

    async def _declare(self, run_id: str, space: str, files, in_dataset: dict) -> list[str]:
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
                raise restated(error, f"run {run_id}: {error.sentence()}") from error
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

    @answers
    @leader_only
    async def SubmitRun(self, request, context):
        request = request.spec
        check_output_name(request.output_name)
        for table in request.tables:
            check_file_name(table, "table name")
        entry = self._entry(request.run_id, owned=True)
        if entry.state != State.RUN_STATE_CREATED:
            # submitted already: the same run (a client resubmits after a reconnection)
            return runs_pb2.SubmitRunResponse(run=self._shown(entry))
        run_id = entry.spec.run_id
        if entry.spec.campaign:
            request = campaigns.campaign_spec(self.campaigns, request, entry.spec)
        self._check_spec(request, entry)
        await self._inputs_named_apart(run_id)
        if request.dataset:
            readable_dataset(self.datasets, request.dataset, caller())
            _check_dataset(request, entry)
            self._check_release(request, entry)
        elif request.package:
            raise InvalidArgument("a package run is scored against a dataset (RunSpec.dataset): its reference is "
                                  "there")
        async with self.counting[caller()]:  # the checks after every wait, so none of them is stale
            if entry.state != State.RUN_STATE_CREATED:  # submitted meanwhile by the same caller's retry
                return runs_pb2.SubmitRunResponse(run=self._shown(entry))
            if entry.uploading:
                raise FailedPrecondition(f"run {run_id} is still receiving inputs; submit it once they are uploaded")
            self.quotas.check_runs(caller(), *self.book.held(caller()), submitting=True)
            spec = runs_pb2.RunSpec()
            spec.CopyFrom(request)
            spec.submitted_by, spec.dataset = entry.spec.submitted_by, entry.spec.dataset
            spec.dataset_creation_id = entry.spec.dataset_creation_id
            spec.campaign, spec.competition = entry.spec.campaign, entry.spec.competition
            spec.phase, spec.late = entry.spec.phase, entry.spec.late
            await self._record(entry, spec, entry.submitted(spec))
        self.runner.start(entry)
        log.info("run %s: %s submitted", run_id, spec.task)
        return runs_pb2.SubmitRunResponse(run=self._shown(entry))

    def _check_spec(self, request: runs_pb2.RunSpec, entry: Run) -> None:
        """INVALID_ARGUMENT, nothing recorded, for a spec naming no task, too large, with options the task or the
        operator's maxima refuse, or another run's input prefix."""
        _check_task(request.task)
        if request.ByteSize() > MAX_RUN_SPEC_BYTES:
            raise InvalidArgument(f"the run spec is {request.ByteSize()} bytes, more than the limit of "
                                  f"{MAX_RUN_SPEC_BYTES}; nothing was recorded")
        try:
            check_limits(tasks.decode_options(tasks.get(request.task), request.options), self.settings.option_limits)
            options_schema.check(request.task, request.options)  # the published contract (docs/distributed.md)
        except OptionError as error:
            raise InvalidArgument(f"the run's options: {error.sentence()}; nothing was recorded") from error
        if request.input_prefix != entry.spec.input_prefix:
            raise InvalidArgument(f"a run's inputs are under {entry.spec.input_prefix!r}, its own prefix, not "
                                  f"{request.input_prefix[:200]!r}")

    def _check_release(self, request: runs_pb2.RunSpec, entry: Run) -> None:
        """INVALID_ARGUMENT for a package spec that is not one; PERMISSION_DENIED for a run whose caller receives only
        aggregates (``releasing.tier``) but whose options select trials by the reference: a query matching one probe
        would read its ground truth out of the aggregates."""
        if request.package:
            try:
                packages.check_package_spec(request)
            except OptionError as error:
                raise InvalidArgument(f"run {entry.spec.run_id}: {error.sentence()}; nothing was submitted") from error
        if entry.spec.campaign or self._tier(entry.spec) != release.AGGREGATE:  # a campaign's options are its own
            return
        selecting = release.selecting_options(tasks.decode_options(tasks.get(request.task), request.options))
        if selecting:
            raise PermissionDenied(f"the dataset {request.dataset} releases aggregate results only, so a run may not "
                                   f"select trials by its reference ({', '.join(selecting)}); the evaluation's "
                                   "queries are its operator's")

    async def _inputs_named_apart(self, run_id: str) -> None:
        """INVALID_ARGUMENT when a name of the run's inputs is a directory of another (``sys/a``, ``sys/a/b``),
        uploaded or declared by separate calls."""
        try:
            inputs = await asyncio.to_thread(input_manifest.read, self.store, run_id)
            uploads.Names(inputs)
        except uploads.UploadRefused as error:
            raise InvalidArgument(f"run {run_id}: {error.sentence()}; nothing was submitted") from error
        except ObjectStoreError as error:
            raise restated(error, f"run {run_id}: its inputs cannot be read now: {error.sentence()}") from error

    @answers
    async def GetRun(self, request, context):
        return runs_pb2.GetRunResponse(run=self._shown(self._ended_or_current(request.run_id)))

    @answers
    async def WatchRun(self, request, context):
        entry = self._ended_or_current(request.run_id)
        seen = -1
        while True:
            async with entry.changed:
                await entry.changed.wait_for(lambda: entry.version != seen)
                seen, snapshot, ended = entry.version, self._shown(entry), entry.ended
            yield runs_pb2.WatchRunResponse(run=snapshot)
            if ended:
                return
            await asyncio.sleep(0.1)  # coalesce bursts of records into one update

    @answers
    async def ListRuns(self, request, context):
        if not self.book.current():
            raise Unavailable(FOLLOWING)
        who = caller()
        size = paging.page_size(request.page_size)
        after = paging.read_page_token(request.page_token, request.state)
        visible = (((created_ns(e.status), run_id), self._shown(e)) for run_id, e in list(self.book.runs.items())
                   if may_see(who, e.status)
                   and (request.state == State.RUN_STATE_UNSPECIFIED or e.status.state == request.state))
        runs, last = paging.page(visible, size, after, budget=paging.PAGE_BYTES, cost=lambda status: status.ByteSize())
        return runs_pb2.ListRunsResponse(runs=runs, next_page_token=paging.page_token(request.state, last)
                                         if last is not None else "")

    @answers
    @leader_only
    async def CancelRun(self, request, context):
        entry = self._entry(request.run_id)
        run_id = entry.spec.run_id
        try:
            cancelled = await self.book.cancel(entry, f"cancelled by {caller().name}")
        except NotRecorded as error:
            raise Unavailable(f"the aggregator cannot reach NATS, so run {run_id} was not cancelled; "
                              "try again") from error
        if not cancelled:
            raise FailedPrecondition(f"run {run_id} is {entry.state_name}: it has ended, so there is nothing to cancel")
        return runs_pb2.CancelRunResponse(run=self._shown(entry))

    @answers
    @leader_only
    async def DeleteRun(self, request, context):
        entry = self._entry(request.run_id)
        run_id = entry.spec.run_id
        if not entry.ended:
            raise FailedPrecondition(f"run {run_id} is {entry.state_name}: it has not ended; cancel it first "
                                     "(CancelRun)")
        if entry.spec.campaign and not caller().operator:
            raise FailedPrecondition(f"run {run_id} is a submission to the campaign {entry.spec.campaign}, kept as "
                                     "its record (and its quotas' count); its operator may delete it")
        if not self.book.connected():
            raise Unavailable(f"the aggregator cannot reach NATS, so run {run_id} was not deleted; try again")
        try:
            await self.retention.delete(entry, f"as {caller().name} asked")
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            raise Unavailable(f"run {run_id} could not be deleted now ({one_line(error)}); try again") from error
        return runs_pb2.DeleteRunResponse()

    @answers
    async def FetchReport(self, request, context):
        entry = self._done(request.run_id)
        run_id = entry.spec.run_id
        level = self._tier(entry.spec)
        with _reading_report(run_id):
            seal = await self._seal(run_id)
            async for message in reports.stream_report(
                    self.store, run_id, seal,
                    lambda manifest: releasing.shown_manifest(manifest, tasks.get(entry.spec.task), level)):
                yield message

    @answers
    async def GetResults(self, request, context):
        entry = self._done(request.run_id)
        level = self._tier(entry.spec)
        results = releasing.shown_results(tasks.get(entry.spec.task), await self.results(entry), level)
        return results_pb2.GetResultsResponse(results=results_message(
            results, releasing.shown_status(entry.status, level).provenance_json), json=results.to_json().decode())

    @answers
    async def GetLeaderboard(self, request, context):
        """The DONE runs of the task on this very dataset (not on one deleted before it under the same name),
        whoever submitted them, that report the metric asked for (by default the primary most owners rank by),
        ranked (mfscore.leaderboard): derived on each call from the recorded runs and their sealed results, so
        nothing is kept to go stale. A run ranked by another metric is on that metric's board (``metrics`` names
        them all), and no refusal names another caller's run."""
        from mfscore import leaderboard as lb

        dataset = readable_dataset(self.datasets, request.dataset, caller())
        _check_task(request.task)
        runs = [entry for entry in list(self.book.runs.values())
                if is_run_of(entry.spec, dataset) and entry.spec.task == request.task and not entry.spec.campaign
                and entry.state == State.RUN_STATE_DONE]
        entries = [lb.Entry(entry.spec.run_id, entry.status.owner, _iso(entry.status.submitted_at),
                            entry.spec.output_name or entry.spec.run_id, await self.results(entry))
                   for entry in runs]
        entries = [entry for entry in entries if entry.results.task == request.task]
        boards = lb.primaries(entries)
        metric = request.metric or (boards[0] if boards else None)
        try:
            board = lb.leaderboard(lb.reporting(entries, metric) if metric else [], dataset=request.dataset,
                                   task=request.task, metric=metric)
        except ValueError as error:  # the metric has no direction, or two: the sentence names no run
            raise InvalidArgument(f"no leaderboard of {request.task} on {request.dataset} by {metric}: "
                                  f"{error}") from error
        return results_pb2.GetLeaderboardResponse(leaderboard=leaderboard_message(board),
                                                  json=lb.to_json(board).decode(), metrics=boards)

    async def results(self, entry: Run) -> Results:
        """A DONE run's results, read from its sealed results file."""
        run_id = entry.spec.run_id
        with _reading_report(run_id):
            manifest = await reports.read_manifest(self.store, run_id, await self._seal(run_id))
            declared = reports.results_file(manifest)
            if declared is None:
                raise NotFound(f"run {run_id} has no results file")
            if declared.size > MAX_RESULTS_BYTES:
                raise ResourceExhausted(f"the results of run {run_id} are {declared.size} bytes, more than one "
                                        f"message carries; FetchReport sends {declared.name}")
            content = await reports.read_file(self.store, run_id, declared)
        try:
            results = Results.from_json(content)
        except (ValueError, KeyError, TypeError) as error:
            raise Internal(f"the results of run {run_id} cannot be read: {one_line(error)}") from error
        return results

    def _shown(self, entry: Run) -> runs_pb2.RunStatus:
        """The run's status as the caller may see it (``releasing``)."""
        return releasing.shown_status(entry.status, self._tier(entry.spec))

    def _tier(self, spec: runs_pb2.RunSpec) -> str:
        """What the caller receives of the run ``spec`` (``releasing.tier``), a campaign run's on the campaign clock."""
        return releasing.tier(self.datasets, caller(), spec, self.campaigns.phase_of(spec),
                              clock(self.settings.clock_offset_seconds))

    def _done(self, run_id: str) -> Run:
        """The caller's run ``run_id`` (``_entry``), which must be DONE: FAILED_PRECONDITION otherwise."""
        entry = self._entry(run_id)
        if entry.state != State.RUN_STATE_DONE:
            raise FailedPrecondition(f"run {entry.spec.run_id} is {entry.state_name}, not done")
        return entry

    def _created(self, run_id: str) -> Run:
        """The caller's own run ``run_id`` (``_entry``), whose inputs may still change: FAILED_PRECONDITION once it
        is submitted."""
        entry = self._entry(run_id, owned=True)
        if entry.state != State.RUN_STATE_CREATED:
            raise FailedPrecondition(f"run {entry.spec.run_id} is {entry.state_name}, not created; its inputs cannot "
                                     "change")
        return entry

    async def _seal(self, run_id: str) -> str:
        """The recorded digest of the run's report manifest; NOT_FOUND when none was recorded."""
        seal = await report_seal(self.book.kv, run_id)
        if seal is None:
            raise NotFound(f"no report of run {run_id} was recorded")
        return seal

    def _entry(self, run_id: str, *, owned: bool = False) -> Run:
        """The caller's run ``run_id`` (``RunBook.visible``); NOT_FOUND otherwise."""
        check_run_id(run_id)
        entry = self.book.visible(run_id, caller(), owned=owned)
        if entry is None:
            raise NotFound(f"there is no run {run_id!r}" + ("; make one with CreateRun" if owned else ""))
        return entry

    def _ended_or_current(self, run_id: str) -> Run:
        """The caller's run, if it has ended or this aggregator's book is current (``RunBook.current``): a
        standby's copy of a run in progress is behind the leader's."""
        entry = self._entry(run_id)
        if not entry.ended and not self.book.current():
            raise Unavailable(FOLLOWING)
        return entry

    async def _record(self, entry: Run, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        try:
            await self.book.record(entry, spec, status)
        except NotRecorded as error:
            raise Unavailable(f"the aggregator cannot reach NATS, so run {spec.run_id} was not recorded; "
                              "try again") from error


@contextlib.contextmanager
def _reading_report(run_id: str):
    """Reading a run's stored report: a file that is not what the aggregator wrote is DATA_LOSS (and counted),
    NATS or S3 away UNAVAILABLE, another store error INTERNAL."""
    try:
        yield
    except reports.ReportTampered as error:
        metrics.REPORTS_TAMPERED.inc()
        log.error("run %s: %s", run_id, error.sentence())
        raise DataLoss(f"{error.sentence()}; nothing of it should be used") from error
    except (ObjectStoreUnavailable, nats.errors.Error, TimeoutError) as error:
        raise Unavailable(f"the report of run {run_id} cannot be read now: {one_line(error)}") from error
    except ObjectStoreError as error:
        raise Internal(f"the report of run {run_id} cannot be read: {error.sentence()}") from error


def _check_task(name: str) -> None:
    """INVALID_ARGUMENT unless ``name`` is a task's."""
    if name not in tasks.names():
        raise InvalidArgument(f"{name[:64]!r} is not a task; the tasks are {', '.join(sorted(tasks.names()))}")


def _check_dataset(request: runs_pb2.RunSpec, entry: Run) -> None:
    """INVALID_ARGUMENT when the spec names another dataset than the run was created with: its inputs were declared
    against that one."""
    if request.dataset != entry.spec.dataset:
        raise InvalidArgument(f"run {entry.spec.run_id} was created "
                              + (f"with the dataset {entry.spec.dataset}" if entry.spec.dataset else
                                 "without a dataset") + f", not {request.dataset}; its inputs were declared so")


def _iso(stamp) -> str:
    """A timestamp as ISO 8601 in UTC, to the microsecond: when a leaderboard's run was submitted."""
    return stamp.ToDatetime().replace(tzinfo=datetime.timezone.utc).isoformat(timespec="microseconds")


async def _chained(first, rest):
    yield first
    async for item in rest:
        yield item
