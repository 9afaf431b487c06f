"""A task small enough to fold by hand (what ``Run.fold`` needs of a task), its plans and its jobs' records, for the
tests of a run's states without a cluster (test_run_machine.py, test_aggregator_runs.py)."""

from __future__ import annotations

from dataclasses import dataclass

from mfscore.records import JobKey, encode_outcome
from mfscore.services.aggregator.run import Run
from mfscore.services.common.messages import key_message
from mfscore.services.wire import records_pb2, runs_pb2
from mfscore.tasks.base import Job, Plan


@dataclass(frozen=True)
class Tally:
    """A job's record: what its trials added up to."""

    total: int


class TallyTask:
    name = "tally"
    record_type = Tally

    def trials(self, work: int) -> int:
        """A job's work is how many trials it holds."""
        return work


TASK = TallyTask()


def key(ordinal: int) -> JobKey:
    return JobKey(0, "r", ordinal)


def plan(*trials: int) -> Plan:
    """A plan of one job a number of ``trials``, keyed ``key(0)``, ``key(1)``..."""
    return Plan(options=None, jobs=[Job(key(ordinal), n) for ordinal, n in enumerate(trials)])


def record(ordinal: int, total: int = 1, *, run_id: str = "r1", task: str = "tally", error: str = "",
           outcome: bytes | None = None) -> records_pb2.TrialRecord:
    """The record of job ``key(ordinal)``: a tally of ``total``, or an ``error``, or the bytes ``outcome``."""
    data = encode_outcome(Tally(total)) if outcome is None else outcome
    return records_pb2.TrialRecord(run_id=run_id, task=task, key=key_message(key(ordinal)), outcome=b"" if error
                                   else data, error=error)


def run_in(state, run_id: str = "r1", **fields) -> Run:
    """A run read back from the bucket in ``state``, its status holding ``fields`` too."""
    return Run(runs_pb2.RunSpec(run_id=run_id, task="tally"),
               runs_pb2.RunStatus(run_id=run_id, state=state, **fields), new=False)
