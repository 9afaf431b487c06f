"""A cluster run's life: its states and the one table of the moves between them (``MOVES``), its plan, and the
records folded into it (docs/architecture.md "A run's states").

The run decides; the run book (``state.RunBook``) records what it decided in the bucket and tells its watchers, and
the runner (``runner.ClusterRunner``) does the I/O in between. Each transition is a method that says whether the
run moved (False: nothing changed, so nothing is recorded); a move the table has no arrow for raises
``IllegalMove``. A run that has ended stays as it ended: what comes after its end (the runner finishing a run
cancelled meanwhile, a record of a job that was in flight) changes nothing. Only a run's own methods write its
status fields; everyone else reads them (``status``, ``to_status``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Iterable

from google.protobuf.timestamp_pb2 import Timestamp

from mfscore.errors import MfscoreError
from mfscore.records import JobKey, fold
from mfscore.services.common.messages import job_key, outcome
from mfscore.services.wire import records_pb2, runs_pb2
from mfscore.tasks.base import Plan
from mfscore.validation.findings import TRUNCATED

State = runs_pb2.RunState
CREATED, VALIDATING, SCORING = State.RUN_STATE_CREATED, State.RUN_STATE_VALIDATING, State.RUN_STATE_SCORING
REPORTING, DONE, REJECTED = State.RUN_STATE_REPORTING, State.RUN_STATE_DONE, State.RUN_STATE_REJECTED
FAILED, CANCELLED = State.RUN_STATE_FAILED, State.RUN_STATE_CANCELLED

# state -> {the state it may move to: the transitions that move it there}; an ended state has no move out
MOVES: dict[int, dict[int, tuple[str, ...]]] = {
    CREATED: {VALIDATING: ("submit",), CANCELLED: ("cancel",)},
    VALIDATING: {VALIDATING: ("resume",), SCORING: ("planned",), REJECTED: ("end",), FAILED: ("end",),
                 CANCELLED: ("cancel",)},
    SCORING: {SCORING: ("planned", "resume"), REPORTING: ("ready",), FAILED: ("end",), CANCELLED: ("cancel",)},
    REPORTING: {SCORING: ("resume",), DONE: ("done",), FAILED: ("end",), CANCELLED: ("cancel",)},
    REJECTED: {},
    DONE: {},
    FAILED: {},
    CANCELLED: {},
}
TERMINAL = frozenset(state for state, moves in MOVES.items() if not moves)
UNFINISHED = tuple(state for state in State.values() if MOVES.get(state))  # created, or submitted and not ended
RUNNING = tuple(state for state in UNFINISHED if state != CREATED)      # submitted and not ended
log = logging.getLogger("mfscore.aggregator")


def now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


class IllegalMove(RuntimeError):
    """A run was asked to move where ``MOVES`` has no arrow: a bug of the aggregator's, not a user's error."""


class Folded(enum.Enum):
    """What folding a record did to its run (``Run.fold``)."""

    ADDED = "a new outcome: the run's counts moved"
    REPEATED = "an outcome folded already: nothing added"
    DROPPED = "a job the run did not plan, or another task's (logged)"
    PENDING = "kept until the run is planned (Run.take_pending)"
    IGNORED = "the run has ended"
    ENDED = "the record ended the run FAILED"


class Run:
    """One run: its spec, its status fields, its plan (the task, the plan, the trials of each planned key) and the
    outcomes folded so far; beside them what the book and the API keep of it (watchers, writes, uploads)."""

    def __init__(self, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus, *, new: bool = True):
        self.spec = spec
        self._status = runs_pb2.RunStatus()
        self._status.CopyFrom(status)
        self._snapshot: runs_pb2.RunStatus | None = None
        self.new = new           # made by CreateRun, not yet recorded (False: read from the bucket, or recorded)
        self.task = None         # the run's Task, once planned
        self.plan: Plan | None = None
        self.trials: dict = {}   # planned key -> how many trials its job holds (Task.trials): the planned keys
        self.outcomes: dict = {}
        self.pending: list = []  # records that arrived before the run was planned (a replay)
        self.version = 0
        self.changed = asyncio.Condition()  # watchers wait on it for ``version`` to move (RunBook.changed)
        self.saving = asyncio.Lock()        # the run's state writes land one at a time, in order
        self.cleaned = False     # a finished run's jobs, records, inputs and work directory are gone
        self.uploading = 0       # UploadInputs streams under way (a created run)
        self.submission: dict | None = None  # a package run's package, once planned (``package_planned``)

    @classmethod
    def created(cls, spec: runs_pb2.RunSpec, owner: str, role: str, at: Timestamp) -> Run:
        """A run CreateRun makes, owned by the caller ``owner`` of ``role``, not yet recorded."""
        return cls(spec, runs_pb2.RunStatus(run_id=spec.run_id, state=CREATED, submitted_at=at, created_at=at,
                                            owner=owner, owner_role=role))

    # ------------------------------------------------------------------------------------------- reading

    @property
    def run_id(self) -> str:
        return self.spec.run_id

    @property
    def state(self) -> int:
        return self._status.state

    @property
    def state_name(self) -> str:
        """The run's state as a message names it: "scoring", "done"."""
        return State.Name(self.state)[len("RUN_STATE_"):].lower()

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL

    @property
    def running(self) -> bool:
        """Submitted and not ended: what a restarted aggregator resumes."""
        return self.state in RUNNING

    @property
    def trials_planned(self) -> int:
        return self._status.trials_planned

    @property
    def trials_received(self) -> int:
        return self._status.trials_received

    @property
    def status(self) -> runs_pb2.RunStatus:
        """The run's status as it is now (``to_status``), built once per change: a snapshot to read, shared."""
        if self._snapshot is None:
            self._snapshot = self.to_status()
        return self._snapshot

    def to_status(self) -> runs_pb2.RunStatus:
        """The run's status message, the caller's own."""
        status = runs_pb2.RunStatus()
        status.CopyFrom(self._status)
        return status

    def trials_in(self, keys: Iterable) -> int:
        """How many trials the jobs of ``keys`` hold (one a job the plan does not know)."""
        return sum(self.trials.get(key, 1) for key in keys)

    # ------------------------------------------------------------------------------------------- transitions

    def submitted(self, spec: runs_pb2.RunSpec, at: Timestamp | None = None) -> runs_pb2.RunStatus:
        """The status of this run submitted with ``spec`` (VALIDATING), for the book to record before the run takes
        it (``recorded``); the run itself does not change."""
        self._check(VALIDATING, "submit")
        status = self.to_status()
        status.task, status.state = spec.task, VALIDATING
        status.submitted_at.CopyFrom(at or now())
        return status

    def recorded(self, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus) -> None:
        """The bucket took ``spec`` and ``status``: the run as it was created (its first record) or ``submitted``."""
        if not (self.new and status.state == self.state):
            self._check(status.state, "submit")
        self.spec, self.new = spec, False
        self._set(status)

    def cancelled(self, message: str, at: Timestamp | None = None) -> runs_pb2.RunStatus | None:
        """The status of this run cancelled with ``message``, for the book to record before the run takes it
        (``recorded_cancel``); None when it has ended: there is nothing to cancel."""
        if not self._may(CANCELLED, "cancel"):
            return None
        status = self.to_status()
        status.state, status.message = CANCELLED, message
        status.finished_at.CopyFrom(at or now())
        return status

    def recorded_cancel(self, status: runs_pb2.RunStatus) -> bool:
        """The bucket took the cancelled ``status`` (``cancelled``): the run takes it, whatever it did meanwhile (a
        move the runner had yet to record loses, the cancel landed first), but with the counts of the records folded
        meanwhile, which the run took; True when they differ from the recorded ones (to record again). The run keeps
        only its status."""
        counts = self._counts()
        self._status.CopyFrom(status)
        self._status.jobs_received, self._status.trials_received, self._status.trials_dead = counts
        self._snapshot = None
        self._forget_work()
        return counts != (status.jobs_received, status.trials_received, status.trials_dead)

    def package_planned(self, spec: runs_pb2.RunSpec, submission: dict) -> bool:
        """The aggregator planned this package run against its dataset (``packages.complete``): ``spec`` is the run as
        a client planning it itself would have submitted it, and ``submission`` what its provenance says of the
        package. Kept in memory only: the recorded spec stays the one submitted, and a resumed run is planned again
        to the same. False (nothing changed) once the run has ended."""
        if self.ended:
            return False
        self.spec, self.submission = spec, submission
        return True

    def validated(self, report: runs_pb2.ValidationReport) -> bool:
        """Keep the validator's report; one that is not valid ends the run REJECTED, saying why (True)."""
        if self.ended:
            return False
        self._status.validation.CopyFrom(report)
        self._snapshot = None
        if report.valid:
            return False
        errors = [f for f in report.findings if f.severity == "error" and f.code != TRUNCATED]
        more = "".join(f"; {f.message.rstrip('.')}" for f in report.findings if f.code == TRUNCATED)
        return self.end(f"the validator rejected the submission ({len(errors)} error(s){more}); the first: "
                        f"{errors[0].message if errors else 'no message'}", REJECTED)

    def hold_plan(self, task, plan: Plan) -> bool:
        """Keep the run's plan: its task, its jobs' keys and trials, the counts planned. False (nothing kept) when the
        run has ended meanwhile (cancelled while it was planned)."""
        if self.ended:
            return False
        if not any("planned" in by for by in MOVES.get(self.state, {}).values()):
            raise IllegalMove(f"run {self.run_id} is {self.state_name}: it is not planned")
        self.task, self.plan = task, plan
        self.trials = {job.key: task.trials(job.work) for job in plan.jobs}
        self._status.jobs_planned, self._status.trials_planned = len(plan.jobs), sum(self.trials.values())
        self._snapshot = None
        return True

    def scored(self, outcomes: dict) -> bool:
        """The outcomes of every planned job, scored where the run was planned (``scored_where_planned``)."""
        if self.ended:
            return False
        self.outcomes = outcomes
        self._count()
        return True

    def planned(self) -> bool:
        """Planned and its jobs published: SCORING (again, for a resumed run)."""
        return self._move(SCORING, "planned")

    def ready(self) -> bool:
        """Every planned job's record is in: REPORTING. False while one is missing, or before SCORING."""
        if self.plan is None or self.state != SCORING or not self.trials.keys() <= self.outcomes.keys():
            return False
        return self._move(REPORTING, "ready")

    def done(self) -> bool:
        """The reports are stored: DONE. The run keeps only its status."""
        if not self._may(DONE, "done"):
            return False
        self._finish(DONE)
        return True

    def end(self, message: str, state=FAILED) -> bool:
        """The run failed (or was rejected) with one sentence; it keeps only its status."""
        if not self._may(state, "end"):
            return False
        self._status.message = message
        log.warning("run %s: %s: %s", self.run_id, State.Name(state), message)
        self._finish(state)
        return True

    def reported(self, notes: list[str], failure: str | None, provenance_json: str | None) -> bool:
        """Keep what the report said besides its files (``notes``, the run's provenance); a report that failed ends the
        run FAILED with its ``failure`` (True)."""
        if self.ended:
            return False
        self._status.notes[:] = notes
        if provenance_json is not None:
            self._status.provenance_json = provenance_json
        self._snapshot = None
        return failure is not None and self.end(failure)

    def resume(self) -> bool:
        """A run restored unfinished goes on: one VALIDATING starts over (True); one past it is SCORING again, to be
        planned again and its records replayed, its counts received started afresh."""
        over = self.state == VALIDATING
        self._check(VALIDATING if over else SCORING, "resume")
        self._status.state = VALIDATING if over else SCORING
        self._status.trials_received = self._status.jobs_received = 0
        self._snapshot = None
        return over

    def fold(self, record: records_pb2.TrialRecord, *, describe: Callable[[BaseException], str]) -> Folded:
        """Fold a record into the run (``describe`` says in one line why one could not be decoded)."""
        if self.ended:
            return Folded.IGNORED
        if self.task is None:
            self.pending.append(record)
            return Folded.PENDING
        key = job_key(record.key)
        if record.error:
            self._status.trials_dead += self.trials.get(key, 1)
            self.end(f"the job {key} could not be scored: {record.error}")
            return Folded.ENDED
        if key not in self.trials or record.task != self.task.name:
            log.warning("run %s: dropped a %s record for the unplanned job %s", record.run_id, record.task, key)
            return Folded.DROPPED
        return self._merge(key, record, describe)

    def _merge(self, key: JobKey, record: records_pb2.TrialRecord, describe: Callable[[BaseException], str]) -> Folded:
        """Decode the record of the planned job ``key`` and fold its outcome in; one that cannot be decoded, or that
        differs from the outcome folded for that job, ends the run."""
        try:
            decoded = outcome(self.task, record)
        except Exception as error:  # untrusted bytes: whatever the decoder raises, the run cannot go on
            self.end(f"the record of the job {key} could not be decoded ({describe(error)[:300]})")
            return Folded.ENDED
        before = len(self.outcomes)
        try:
            fold([(key, decoded)], into=self.outcomes)
        except MfscoreError as error:
            self.end(error.sentence())
            return Folded.ENDED
        if len(self.outcomes) == before:
            return Folded.REPEATED
        self._status.jobs_received = len(self.outcomes)
        self._status.trials_received += self.trials.get(key, 1)
        self._snapshot = None
        return Folded.ADDED

    def take_pending(self) -> list[records_pb2.TrialRecord]:
        """The records kept before the run was planned, to fold now (``fold``), in the order they came."""
        pending, self.pending = self.pending, []
        return pending

    def mirror(self, spec: runs_pb2.RunSpec, status: runs_pb2.RunStatus | None = None) -> None:
        """Become the run the bucket holds (a restore, a standby following the leader): what the leader decided."""
        self.spec, self.new = spec, False
        if status is not None:
            self._set(status)

    # ------------------------------------------------------------------------------------------- inside

    def _may(self, to: int, by: str) -> bool:
        """Whether the run moves to ``to`` by the transition ``by``: False once it has ended (what comes after a
        run's end changes nothing), ``IllegalMove`` when ``MOVES`` has no such arrow."""
        if self.ended:
            return False
        self._check(to, by)
        return True

    def _check(self, to: int, by: str) -> None:
        if by not in MOVES.get(self.state, {}).get(to, ()):
            raise IllegalMove(f"run {self.run_id}: {by} does not move a run from {State.Name(self.state)} to "
                              f"{State.Name(to)}")

    def _move(self, to: int, by: str) -> bool:
        if not self._may(to, by):
            return False
        self._status.state = to
        self._snapshot = None
        return True

    def _set(self, status: runs_pb2.RunStatus) -> None:
        self._status.CopyFrom(status)
        self._snapshot = None

    def _counts(self) -> tuple[int, int, int]:
        return self._status.jobs_received, self._status.trials_received, self._status.trials_dead

    def _count(self) -> None:
        self._status.jobs_received, self._status.trials_received = len(self.outcomes), self.trials_in(self.outcomes)
        self._snapshot = None

    def _finish(self, state: int) -> None:
        """The run ends in ``state``, now."""
        self._status.finished_at.CopyFrom(now())
        self._status.state = state
        self._snapshot = None
        self._forget_work()

    def _forget_work(self) -> None:
        """A finished run keeps only its status."""
        self.task, self.plan, self.trials, self.outcomes, self.pending = None, None, {}, {}, []
