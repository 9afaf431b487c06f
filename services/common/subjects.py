"""The names mfscore's NATS is laid out with: streams, subjects, consumers, headers and inboxes.

Jobs go to a work-queue stream on a subject per resource class and run (each job is taken by one scorer), per-trial
records to a results stream the aggregator folds (and can replay), jobs that could not be done to a dead-letter
stream. The job kinds are the registered tasks' resource classes, read from the task registry on first use, so
naming a stream or a subject imports no task.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from mfscore import tasks
from mfscore.services.common.run_layout import RUN_ID

if TYPE_CHECKING:
    from mfscore.services.wire import jobs_pb2, records_pb2

JOBS_STREAM = "MFSCORE_JOBS"
RESULTS_STREAM = "MFSCORE_RESULTS"
DEAD_STREAM = "MFSCORE_DEAD"
RUNS_BUCKET = "mfscore_runs"
RUNS_STREAM = f"KV_{RUNS_BUCKET}"  # the stream NATS keeps the bucket in
ERROR_HEADER = "Mfscore-Error"
MSG_ID_HEADER = "Nats-Msg-Id"


@functools.cache
def job_kinds() -> tuple[str, ...]:
    """The registered tasks' resource classes (``Task.resource``; every job kind is a task's). Imports every task."""
    return tasks.resources()


def jobs_of(kind: str) -> str:
    """The subject prefix of the jobs of ``kind``; ``ValueError`` for what is no job kind."""
    if kind not in job_kinds():
        raise ValueError(f"job kind {kind!r} is not one of {', '.join(job_kinds())}")
    return f"mfscore.jobs.{kind}"


def _run_token(run_id: str) -> str:
    """A run id as one NATS subject token: the aggregator's ids (run_layout.RUN_ID) are, and nothing else is taken."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run id {run_id[:80]!r} is not a single NATS subject token of an mfscore run")
    return run_id


def job_subject(kind: str, run_id: str) -> str:
    """The subject a run's jobs of resource class ``kind`` (mask, video, json) are published on: one subject per
    run, so the queued jobs of a run that failed or finished can be purged (``run_jobs``)."""
    return f"{jobs_of(kind)}.{_run_token(run_id)}"


def job_filter(kind: str) -> str:
    """The subjects of every run's jobs of ``kind``: what the ``<kind>-scorers`` consumer pulls."""
    return f"{jobs_of(kind)}.>"


def run_jobs(run_id: str) -> str:
    """The subjects of a run's jobs, of every kind."""
    return f"mfscore.jobs.*.{_run_token(run_id)}"


def dead_subject(kind: str) -> str:
    """The dead-letter subject for jobs of ``kind``."""
    jobs_of(kind)
    return f"mfscore.dead.{kind}"


def result_subject(run_id: str) -> str:
    """The subject a run's trial records are published on."""
    return f"mfscore.results.{_run_token(run_id)}"


def scorer_consumer_name(kind: str) -> str:
    """The durable consumer the scorers of ``kind`` share (and KEDA reads the lag of)."""
    return f"{kind}-scorers"


def job_id(message: jobs_pb2.Job | records_pb2.TrialRecord) -> str:
    """The de-duplication id of a job, and of its record: the run and the job's key (query, role, ordinal)."""
    key = message.key
    return f"{message.run_id}/{key.query}/{key.role}/{key.ordinal}"


def inbox_prefix(user: str) -> str:
    """Where ``user``'s replies arrive: an inbox prefix of its own, so its permissions can name its replies alone."""
    return f"_INBOX.{user}" if user else "_INBOX"
