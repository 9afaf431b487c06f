"""Runs as the aggregator holds them: in memory (``RunBook``) and in the JetStream key-value bucket.

``spec.<id>`` and ``status.<id>`` hold a run's RunSpec and RunStatus; ``report.<id>`` holds the SHA-256 (hex) of
the report manifest the aggregator wrote, so a report file changed in the object store afterwards is caught
(``reports.stream_report``). The bucket is the aggregator's alone: no client holds a NATS credential. A state
change is written to the bucket before watchers are told, waiting out a NATS outage, so the bucket ends up saying
what memory says; a restarted aggregator reads every run back (``RunBook.restore``). The bucket also holds the
datasets, ``dataset.<name>=<version>`` (``datasets``), and the leader's lease (``lease``), which the restore of runs
passes over.

With a lease (two aggregators), ``kv`` is the bucket fenced by it (``lease.Fenced``): a write is refused unless
this process leads, and a standby's book follows the bucket (``follow``) instead of writing it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats.errors
from google.protobuf.timestamp_pb2 import Timestamp
from nats.js.errors import KeyNotFoundError, NotFoundError

from mfscore.services.aggregator.lease import Deposed, Lease, NotLeading
from mfscore.services.aggregator.retry import nats_unavailable, one_line, retrying
from mfscore.services.common import metrics
from mfscore.services.common.auth import Caller
from mfscore.services.common.jetstream import bucket_keys
from mfscore.services.common.run_layout import check_run_id
from mfscore.services.wire import runs_pb2
from mfscore.tasks.base import Plan

State = runs_pb2.RunState
TERMINAL = {State.RUN_STATE_REJECTED, State.RUN_STATE_DONE, State.RUN_STATE_FAILED, State.RUN_STATE_CANCELLED}
RECORD_SECONDS = 10.0  # how long CreateRun and SubmitRun try to record a run before answering UNAVAILABLE
log = logging.getLogger("mfscore.aggregator")


def spec_key(run_id: str) -> str:
    return f"spec.{check_run_id(run_id)}"


def status_key(run_id: str) -> str:
    return f"status.{check_run_id(run_id)}"


def seal_key(run_id: str) -> str:
    return f"report.{check_run_id(run_id)}"


async def seal_report(kv, run_id: str, manifest_sha256: str) -> None:
    """Record the digest of the report manifest just written: from now on only what matches it is served."""
    await kv.put(seal_key(run_id), manifest_sha256.encode())


async def report_seal(kv, run_id: str) -> str | None:
    """The recorded digest of the run's report manifest; None when no report was recorded."""
    try:
        return (await kv.get(seal_key(run_id))).value.decode()
    except (KeyNotFoundError, NotFoundError):
        return None


async def purge(kv, run_id: str) -> None:
    """Forget the run: its report seal, status and spec (status before spec, as a restore reads them)."""
    for key in (seal_key(run_id), status_key(run_id), spec_key(run_id)):
        await kv.purge(key)


def now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def created_ns(status: runs_pb2.RunStatus) -> int:
    """When the run was created, in nanoseconds: what ListRuns orders by (a run recorded before ``created_at``
    existed has its submission time)."""
    return (status.created_at if status.HasField("created_at") else status.submitted_at).ToNanoseconds()


def owns(who: Caller, status: runs_pb2.RunStatus) -> bool:
    """A run belongs to the principal that created it: its name and its role."""
    return status.owner == who.name and (status.owner_role or "client") == who.role


def may_see(who: Caller, status: runs_pb2.RunStatus) -> bool:
    return who.operator or owns(who, status)


class NotRecorded(Exception):
    """NATS did not take a new state of a run in time; the run is as it was."""


@dataclass
class RunEntry:
    spec: runs_pb2.RunSpec
    status: runs_pb2.RunStatus
    task: object | None = None       # the run's Task, once planned
    plan: Plan | None = None
    planned: set = field(default_factory=set)
    trials: dict = field(default_factory=dict)   # planned key -> how many trials its job holds (Task.trials)
    outcomes: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)  # records that arrived before the run was planned (a replay)
    version: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    saving: asyncio.Lock = field(default_factory=asyncio.Lock)  # a run's state writes land one at a time, in order
    cleaned: bool = False  # a finished run's jobs, records, inputs and work directory are gone
    uploading: int = 0     # UploadInputs streams under way (a created run)

    def forget_work(self) -> None:
        """A finished run keeps only its status."""
        self.task, self.plan, self.planned, self.outcomes, self.pending = None, None, set(), {}, []
        self.trials = {}


class RunBook:
    """Every run this aggregator knows, by id, and their state in the bucket.

    ``on_end(entry)`` is called (as a task) once a run ends: the retention's clean-up."""

    def __init__(self, kv, *, nc=None, lease: Lease | None = None):
        self.kv = kv
        self.nc = nc  # the NATS connection, to wait for it while it is down (None: assume it is up)
        self.lease = lease  # None: the only aggregator, it always leads
        self.runs: dict[str, RunEntry] = {}
        self.abandoned: set[str] = set()  # runs that could not be recorded: whatever part landed is purged
        self.strays: set[str] = set()     # subjects of records of no run: purged by the next sweep
        self.recording = asyncio.Lock()   # new runs' writes and the sweep's purges of unrecorded runs, apart
        self.on_end: Callable[[RunEntry], Awaitable[None]] | None = None
        self._tasks: set[asyncio.Task] = set()
        self._halves: dict[str, runs_pb2.RunSpec] = {}  # a standby's runs whose spec came, not yet their status
        self._counted: dict[str, tuple[str, str, int]] = {}  # run id -> (owner, role, state) as last counted
        self.states: dict[int, int] = {}                   # state -> runs in it
        self.owned: dict[tuple[str, str, int], int] = {}   # (owner, role, state) -> runs in it
        for state in State.values():
            metrics.RUNS.labels(state=State.Name(state)).set(0)

    def connected(self) -> bool:
        return self.nc is None or self.nc.is_connected

    def leading(self) -> bool:
        return self.lease is None or self.lease.leading()

    def current(self) -> bool:
        """Whether this book holds the runs' progress: the leader's book, also while its lease lapses in a NATS
        outage; a standby's follows the bucket, which holds states, not each record's count."""
        return self.lease is None or self.lease.taken()

    async def holding_lease(self) -> None:
        """Raise ``NotLeading`` (``Deposed``) unless this aggregator holds a fresh lease: before storing reports."""
        if self.lease is not None:
            self.lease.check()

    async def durably(self, what: str, operation: Callable[[], Awaitable]) -> None:
        """Run the NATS ``operation`` until it succeeds, waiting out an outage (nats-py reconnects for ever) and a
        lapsed lease (renewed once NATS is back); ``Deposed`` ends it."""
        await retrying(what, operation, transient=_waiting_fixes, waiting_for="for NATS and the lease",
                       ready=self.connected)

    def visible(self, run_id: str, who: Caller, *, owned: bool = False) -> RunEntry | None:
        """The run ``run_id`` if ``who`` may see it (an operator sees every run), or, with ``owned``, if it is
        ``who``'s own (only its own caller uploads into a run or submits it); else None, as for no run at all."""
        entry = self.runs.get(run_id)
        if entry is None or not (owns(who, entry.status) if owned else may_see(who, entry.status)):
            return None
        return entry

    async def record(self, entry: RunEntry, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        """Record the run's new spec and status and make them the entry's. When NATS cannot take them within
        RECORD_SECONDS it raises ``NotRecorded`` and the entry keeps what it had: a run that was never recorded is
        forgotten, and whatever part of it landed is purged later. A run is accepted once recorded."""
        run_id = spec.run_id
        new = entry.status.state == State.RUN_STATE_CREATED and status.state == State.RUN_STATE_CREATED
        if new:
            self.runs[run_id] = entry
        try:
            if not self.connected():
                raise nats.errors.ConnectionReconnectingError()
            async with asyncio.timeout(RECORD_SECONDS), self.recording, entry.saving:
                await self.kv.put(spec_key(run_id), spec.SerializeToString())
                await self.kv.put(status_key(run_id), status.SerializeToString())
        except (nats.errors.Error, TimeoutError, NotLeading) as error:
            if new:
                if self.runs.get(run_id) is entry:
                    del self.runs[run_id]
                self.abandoned.add(run_id)
            if isinstance(error, NotLeading):
                raise
            log.warning("run %s: not recorded, NATS is unavailable: %s", run_id, one_line(error))
            raise NotRecorded(run_id) from None
        entry.spec, entry.status = spec, status
        self.abandoned.discard(run_id)
        self.count_states(entry)
        await self.changed(entry)

    async def set_state(self, entry: RunEntry, state) -> None:
        """Change the run's state, record it (waiting out a NATS outage) and tell its watchers, whatever happens.
        A run that ends is cleaned up (``on_end``). A run that has ended stays as it ended (a run cancelled while
        its report was being written does not become DONE)."""
        if entry.status.state in TERMINAL:
            return
        entry.status.state = state
        try:
            async with entry.saving:  # each write takes the status as it is when sent: the last to land is the latest
                await self.durably(f"run {entry.spec.run_id}: recording {State.Name(entry.status.state)}",
                                   lambda: self.kv.put(status_key(entry.spec.run_id), entry.status.SerializeToString()))
        finally:
            self.count_states(entry)
            await self.changed(entry)
        if state in TERMINAL and self.on_end is not None:
            self.spawn(self.on_end(entry))

    async def end(self, entry: RunEntry, message: str, state=State.RUN_STATE_FAILED) -> None:
        """The run failed (or was rejected) with one sentence; it keeps only its status. A run that has ended
        already (cancelled, say) stays as it ended."""
        if entry.status.state in TERMINAL:
            return
        entry.status.message = message
        entry.status.finished_at.CopyFrom(now())
        log.warning("run %s: %s: %s", entry.spec.run_id, State.Name(state), message)
        await self.set_state(entry, state)
        entry.forget_work()

    async def cancel(self, entry: RunEntry, message: str) -> bool:
        """End a run that has not ended as CANCELLED with ``message``; False (nothing changed) if it has ended. The
        new state is recorded within RECORD_SECONDS or not at all (``NotRecorded``: the run goes on as it was).
        Then the run keeps only its status and is cleaned up (``on_end``: its queued jobs purged); records that
        arrive later are ignored, as for any run that ended."""
        run_id = entry.spec.run_id
        try:
            if not self.connected():
                raise nats.errors.ConnectionReconnectingError()
            async with asyncio.timeout(RECORD_SECONDS), entry.saving:  # the runner's state writes wait, then see it
                if entry.status.state in TERMINAL:
                    return False
                status = runs_pb2.RunStatus()
                status.CopyFrom(entry.status)
                status.state, status.message = State.RUN_STATE_CANCELLED, message
                status.finished_at.CopyFrom(now())
                await self.kv.put(status_key(run_id), status.SerializeToString())
                folded = entry.status  # records folded while the write was under way count: the run took them
                counted = (folded.jobs_received, folded.trials_received, folded.trials_dead)
                late = counted != (status.jobs_received, status.trials_received, status.trials_dead)
                status.jobs_received, status.trials_received, status.trials_dead = counted
                entry.status = status
        except (nats.errors.Error, TimeoutError) as error:  # NotLeading goes through: the caller is told
            log.warning("run %s: not cancelled, NATS is unavailable: %s", run_id, one_line(error))
            raise NotRecorded(run_id) from None
        if late:
            await self.durably(f"run {run_id}: recording its final counts",
                               lambda: self.kv.put(status_key(run_id), entry.status.SerializeToString()))
        log.info("run %s: cancelled: %s", run_id, message)
        entry.forget_work()
        self.count_states(entry)
        await self.changed(entry)
        if self.on_end is not None:
            self.spawn(self.on_end(entry))
        return True

    async def changed(self, entry: RunEntry) -> None:
        async with entry.changed:
            entry.version += 1
            entry.changed.notify_all()

    def count_states(self, *entries: RunEntry) -> None:
        """Bring the runs counted by state (the ``RUNS`` gauge) and by owner (``held``) up to date with ``entries``,
        each as it is now: in the book in its state, or gone from it. O(1) a run, whatever the book holds."""
        for entry in entries:
            run_id, status = entry.spec.run_id, entry.status
            counted = ((status.owner, status.owner_role or "client", status.state)
                       if self.runs.get(run_id) is entry else None)
            before = self._counted.pop(run_id, None)
            if counted is not None:
                self._counted[run_id] = counted
            if before == counted:
                continue
            for key, step in ((before, -1), (counted, 1)):
                if key is not None:
                    state = key[2]
                    self.states[state] = self.states.get(state, 0) + step
                    self.owned[key] = self.owned.get(key, 0) + step
                    if not self.owned[key]:
                        del self.owned[key]
                    metrics.RUNS.labels(state=State.Name(state)).set(self.states[state])

    def held(self, who: Caller) -> tuple[int, int]:
        """How many of ``who``'s runs are created and not submitted, and how many submitted and not ended (as
        last counted: ``count_states``)."""
        def of(state) -> int:
            return self.owned.get((who.name, who.role, state), 0)
        created = of(State.RUN_STATE_CREATED)
        ended = sum(of(state) for state in TERMINAL)
        total = sum(of(state) for state in State.values())
        return created, total - created - ended

    def spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def restore(self) -> list[RunEntry]:
        """Read every run from the bucket; the unfinished ones that were submitted, to resume (their records replay
        from the stream)."""
        keys = await bucket_keys(self.kv)
        present = set(keys)
        self.abandoned.update(key[len("spec."):] for key in keys
                              if key.startswith("spec.") and f"status.{key[len('spec.'):]}" not in present)
        unfinished = []
        for key in keys:
            if not key.startswith("status."):
                continue
            run_id = key[len("status."):]
            try:
                status = runs_pb2.RunStatus.FromString((await self.kv.get(key)).value)
                spec = runs_pb2.RunSpec.FromString((await self.kv.get(spec_key(run_id))).value)
            except NotFoundError:
                log.warning("run %s: half of its state is missing from the bucket; the rest is purged", run_id)
                self.abandoned.add(run_id)
                continue
            entry = self._hold(spec, status)
            if status.state not in TERMINAL and status.state != State.RUN_STATE_CREATED:
                unfinished.append(entry)
        for run_id in set(self.runs) - {key[len("status."):] for key in keys if key.startswith("status.")}:
            self.count_states(self.runs.pop(run_id))  # followed by a standby, deleted since
        self.count_states(*self.runs.values())
        log.info("restored %d run(s)", len(self.runs))
        return unfinished

    def _hold(self, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> RunEntry:
        """The run's entry with this spec and status: the one already held (its watchers keep watching), or new."""
        entry = self.runs.get(spec.run_id)
        if entry is None:
            entry = self.runs[spec.run_id] = RunEntry(spec, status)
        else:
            entry.spec, entry.status = spec, status
        return entry

    async def reclaim(self) -> None:
        """Rewrite the spec and status of every run that has not ended, as read (``restore``): a new leader bumps
        their revisions, so a write of the deposed leader, conditional on the revision it saw, is refused."""
        for entry in list(self.runs.values()):
            if entry.status.state not in TERMINAL:
                async with entry.saving:
                    await self.durably(f"run {entry.spec.run_id}: taking it over", lambda: self._rewrite(entry))

    async def _rewrite(self, entry: RunEntry) -> None:
        await self.kv.put(spec_key(entry.spec.run_id), entry.spec.SerializeToString())
        await self.kv.put(status_key(entry.spec.run_id), entry.status.SerializeToString())

    async def follow(self, key: str, value: bytes | None) -> None:
        """A standby's book takes a change of the bucket: ``key`` now holds ``value`` (None: deleted). A run appears
        once its status is there (its spec is written first), changes in place (its watchers are told), and goes
        when deleted."""
        kind, _, run_id = key.partition(".")
        if kind not in ("spec", "status"):
            return
        entry = self.runs.get(run_id)
        if value is None:
            if entry is not None:
                del self.runs[run_id]
                self.count_states(entry)
            self._halves.pop(run_id, None)
            return
        if kind == "spec":
            if entry is None:
                self._halves[run_id] = runs_pb2.RunSpec.FromString(value)
            else:
                entry.spec = runs_pb2.RunSpec.FromString(value)
            return
        spec = entry.spec if entry is not None else self._halves.pop(run_id, None)
        if spec is None:
            return
        self._hold(spec, runs_pb2.RunStatus.FromString(value))
        self.count_states(self.runs[run_id])
        await self.changed(self.runs[run_id])


def _waiting_fixes(error: BaseException) -> bool:
    """NATS away, or the lease lapsed while it is (not another aggregator holding it: ``Deposed``)."""
    return nats_unavailable(error) or (isinstance(error, NotLeading) and not isinstance(error, Deposed))
