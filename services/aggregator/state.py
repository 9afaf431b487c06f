"""Runs as the aggregator holds them: in memory (``RunBook``) and in the JetStream key-value bucket.

``spec.<id>`` and ``status.<id>`` hold a run's RunSpec and RunStatus; ``report.<id>`` holds the SHA-256 (hex) of
the report manifest the aggregator wrote, so a report file changed in the object store afterwards is caught
(``reports.stream_report``). The bucket is the aggregator's alone: no client holds a NATS credential. A state
change is written to the bucket before watchers are told, waiting out a NATS outage, so the bucket ends up saying
what memory says; a restarted aggregator reads every run back (``RunBook.restore``). The bucket also holds the
datasets, ``dataset.<name>=<version>`` (``datasets``), and the leader's lease (``lease``), which the restore of runs
passes over.

With a lease (two aggregators), ``kv`` is the bucket fenced by it (``lease.Fenced``): a write is refused unless
this process leads, and a standby's book follows the bucket (``take_change``) instead of writing it.

The book decides nothing about a run's state: the run does (``run.Run``), the book records and tells.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import nats.errors
from nats.js.errors import KeyNotFoundError, NotFoundError

from mfscore.services.aggregator.lease import Deposed, Lease, NotLeading
from mfscore.services.aggregator.run import RUNNING, Run, State
from mfscore.services.common import metrics
from mfscore.services.common.auth import Caller
from mfscore.services.common.retry import one_line, retrying
from mfscore.services.common.run_layout import check_run_id
from mfscore.services.common.streams import bucket_keys
from mfscore.services.common.transient import nats_unavailable
from mfscore.services.wire import runs_pb2

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


class RunBook:
    """Every run this aggregator knows, by id, and their state in the bucket: it records what the runs decide and
    tells their watchers.

    ``on_end(run)`` is called (as a task) once a run ends: the retention's clean-up."""

    def __init__(self, kv, *, nc=None, lease: Lease | None = None):
        self.kv = kv
        self.nc = nc  # the NATS connection, to wait for it while it is down (None: assume it is up)
        self.lease = lease  # None: the only aggregator, it always leads
        self.read_back = False  # whether the runs were read back since the lease was taken (Aggregator.restore)
        self.runs: dict[str, Run] = {}
        self.abandoned: set[str] = set()  # runs that could not be recorded: whatever part landed is purged
        self.strays: set[str] = set()     # subjects of records of no run: purged by the next sweep
        self.recording = asyncio.Lock()   # new runs' writes and the sweep's purges of unrecorded runs, apart
        self.on_end: Callable[[Run], Awaitable[None]] | None = None
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
        """Whether this book answers as the leader's: a fresh lease, and the runs read back since it was taken. A
        standby that has just taken the lease must not create a run before then: the read-back drops from memory any
        run its listing of the bucket missed (the soak lost two runs so)."""
        return self.lease is None or (self.lease.leading() and self.read_back)

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

    def visible(self, run_id: str, who: Caller, *, owned: bool = False) -> Run | None:
        """The run ``run_id`` if ``who`` may see it (an operator sees every run), or, with ``owned``, if it is
        ``who``'s own (only its own caller uploads into a run or submits it); else None, as for no run at all."""
        run = self.runs.get(run_id)
        if run is None or not (owns(who, run.status) if owned else may_see(who, run.status)):
            return None
        return run

    async def record(self, run: Run, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        """Record the run's new spec and status (``Run.created``'s, ``Run.submitted``) and make them the run's. When
        NATS cannot take them within RECORD_SECONDS it raises ``NotRecorded`` and the run keeps what it had: a run
        that was never recorded is forgotten, and whatever part of it landed is purged later. A run is accepted once
        recorded."""
        run_id, new = spec.run_id, run.new
        if new:
            self.runs[run_id] = run
        try:
            if not self.connected():
                raise nats.errors.ConnectionReconnectingError()
            async with asyncio.timeout(RECORD_SECONDS), self.recording, run.saving:
                await self.kv.put(spec_key(run_id), spec.SerializeToString())
                await self.kv.put(status_key(run_id), status.SerializeToString())
        except (nats.errors.Error, TimeoutError, NotLeading) as error:
            if new:
                if self.runs.get(run_id) is run:
                    del self.runs[run_id]
                self.abandoned.add(run_id)
            if isinstance(error, NotLeading):
                raise
            log.warning("run %s: not recorded, NATS is unavailable: %s", run_id, one_line(error))
            raise NotRecorded(run_id) from None
        run.recorded(spec, status)
        self.abandoned.discard(run_id)
        self.count_states(run)
        await self.changed(run)

    async def save(self, run: Run) -> None:
        """Record the run's status as it is now, waiting out a NATS outage, and tell its watchers, whatever happens:
        after a move of the run (a transition that said it moved). A run that has ended is cleaned up
        (``on_end``)."""
        ended = run.ended
        try:
            async with run.saving:  # each write takes the status as it is when sent: the last to land is the latest
                await self.durably(f"run {run.run_id}: recording {State.Name(run.state)}",
                                   lambda: self.kv.put(status_key(run.run_id), run.status.SerializeToString()))
        finally:
            self.count_states(run)
            await self.changed(run)
        if ended and self.on_end is not None:
            self.spawn(self.on_end(run))

    async def cancel(self, run: Run, message: str) -> bool:
        """Cancel a run that has not ended, with ``message`` (``Run.cancelled``); False (nothing changed) if it has
        ended. The new state is recorded within RECORD_SECONDS or not at all (``NotRecorded``: the run goes on as it
        was). Then the run keeps only its status and is cleaned up (``on_end``: its queued jobs purged); records that
        arrive later are ignored, as for any run that ended."""
        run_id = run.run_id
        try:
            if not self.connected():
                raise nats.errors.ConnectionReconnectingError()
            async with asyncio.timeout(RECORD_SECONDS), run.saving:  # the runner's state writes wait, then see it
                status = run.cancelled(message)
                if status is None:
                    return False
                await self.kv.put(status_key(run_id), status.SerializeToString())
                late = run.recorded_cancel(status)  # records folded while the write was under way count
        except (nats.errors.Error, TimeoutError) as error:  # NotLeading goes through: the caller is told
            log.warning("run %s: not cancelled, NATS is unavailable: %s", run_id, one_line(error))
            raise NotRecorded(run_id) from None
        if late:
            await self.durably(f"run {run_id}: recording its final counts",
                               lambda: self.kv.put(status_key(run_id), run.status.SerializeToString()))
        log.info("run %s: cancelled: %s", run_id, message)
        self.count_states(run)
        await self.changed(run)
        if self.on_end is not None:
            self.spawn(self.on_end(run))
        return True

    async def changed(self, run: Run) -> None:
        async with run.changed:
            run.version += 1
            run.changed.notify_all()

    def count_states(self, *runs: Run) -> None:
        """Bring the runs counted by state (the ``RUNS`` gauge) and by owner (``held``) up to date with ``runs``,
        each as it is now: in the book in its state, or gone from it. O(1) a run, whatever the book holds."""
        for run in runs:
            run_id, status = run.run_id, run.status
            counted = ((status.owner, status.owner_role or "client", status.state)
                       if self.runs.get(run_id) is run else None)
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
        return of(State.RUN_STATE_CREATED), sum(of(state) for state in RUNNING)

    def spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def restore(self) -> list[Run]:
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
            run = self._hold(spec, status)
            if run.running:
                unfinished.append(run)
        for run_id in set(self.runs) - {key[len("status."):] for key in keys if key.startswith("status.")}:
            self.count_states(self.runs.pop(run_id))  # followed by a standby, deleted since
        self.count_states(*self.runs.values())
        log.info("restored %d run(s)", len(self.runs))
        return unfinished

    def _hold(self, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> Run:
        """The run with this spec and status, as the bucket holds it: the one already held (its watchers keep
        watching), or new."""
        run = self.runs.get(spec.run_id)
        if run is None:
            run = self.runs[spec.run_id] = Run(spec, status, new=False)
        else:
            run.mirror(spec, status)
        return run

    async def reclaim(self) -> None:
        """Rewrite the spec and status of every run that has not ended, as read (``restore``): a new leader bumps
        their revisions, so a write of the deposed leader, conditional on the revision it saw, is refused."""
        for run in list(self.runs.values()):
            if not run.ended:
                async with run.saving:
                    await self.durably(f"run {run.run_id}: taking it over", lambda: self._rewrite(run))

    async def _rewrite(self, run: Run) -> None:
        await self.kv.put(spec_key(run.run_id), run.spec.SerializeToString())
        await self.kv.put(status_key(run.run_id), run.status.SerializeToString())

    async def take_change(self, key: str, value: bytes | None) -> None:
        """A standby's book takes a change of the bucket: ``key`` now holds ``value`` (None: deleted). A run appears
        once its status is there (its spec is written first), changes in place (its watchers are told), and goes
        when deleted."""
        kind, _, run_id = key.partition(".")
        if kind not in ("spec", "status"):
            return
        run = self.runs.get(run_id)
        if value is None:
            if run is not None:
                del self.runs[run_id]
                self.count_states(run)
            self._halves.pop(run_id, None)
            return
        if kind == "spec":
            if run is None:
                self._halves[run_id] = runs_pb2.RunSpec.FromString(value)
            else:
                run.mirror(runs_pb2.RunSpec.FromString(value))
            return
        spec = run.spec if run is not None else self._halves.pop(run_id, None)
        if spec is None:
            return
        run = self._hold(spec, runs_pb2.RunStatus.FromString(value))
        self.count_states(run)
        await self.changed(run)


def _waiting_fixes(error: BaseException) -> bool:
    """NATS away, or the lease lapsed while it is (not another aggregator holding it: ``Deposed``)."""
    return nats_unavailable(error) or (isinstance(error, NotLeading) and not isinstance(error, Deposed))
