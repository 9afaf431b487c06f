"""Between the task protocol's values and the wire envelopes (proto/mfscore/v1): encode and decode, nothing else.

Every task's work and outcome cross in the core's one codec (``mfscore.codec``, and
``mfscore.records`` for outcomes), so this module knows no task.
"""

from __future__ import annotations

from mfscore.codec import decode, encode
from mfscore.records import JobKey, decode_outcome, encode_outcome
from mfscore.services.wire import jobs_pb2, records_pb2
from mfscore.tasks.base import Job


def key_message(key: JobKey) -> jobs_pb2.JobKey:
    return jobs_pb2.JobKey(query=key.query, role=key.role, ordinal=key.ordinal)


def job_key(message: jobs_pb2.JobKey) -> JobKey:
    return JobKey(message.query, message.role, message.ordinal)


def job_message(run_id: str, task, job: Job, input_prefix: str) -> jobs_pb2.Job:
    return jobs_pb2.Job(run_id=run_id, task=task.name, key=key_message(job.key), input_prefix=input_prefix,
                        work=encode(job.work))


def job(task, message: jobs_pb2.Job) -> Job:
    return Job(job_key(message.key), decode(task.work_type, message.work))


def record_message(job: jobs_pb2.Job, outcome, scorer: str, *, local_dir: str = "") -> records_pb2.TrialRecord:
    """The record of ``job``: its key, and the outcome its task's score gave. Paths under ``local_dir`` (where a
    worker fetched the job's files) are named by their key in the upload."""
    encoded = encode_outcome(outcome)
    if local_dir:
        encoded = encoded.replace(local_dir.rstrip("/").encode() + b"/", b"")
    return records_pb2.TrialRecord(run_id=job.run_id, task=job.task, key=job.key, outcome=encoded, scorer=scorer)


def outcome(task, record: records_pb2.TrialRecord):
    return decode_outcome(task.record_type, record.outcome)
