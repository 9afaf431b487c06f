"""Fetch a job's system JSON from S3, score it with the embedded command's own ``score_job``, return the record.

A trial whose JSON cannot be scored (missing, too large, not JSON, failing the schema) still gives a
record, carrying the message the embedded command prints for it, so the run completes; a problem
with the run as a whole (a system cycle without ``-c``, an absent ``--nodetype``) gives a record
carrying that error, which stops the run when the aggregator reaches the trial.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

from mfscore.cli.provenance_arguments import TrialOutcome
from mfscore.errors import MfscoreError
from services.common.object_store import ObjectMissing, ObjectStore, ObjectTooLarge
from services.common.scorer_service import ScorerService
from services.provenance_scorer.messages import outcome_message, planned_job
from services.wire import jobs_pb2, records_pb2, services_pb2_grpc

JOBS_IN_FLIGHT = 2


def _fetch(store: ObjectStore, key: str, directory: str, max_bytes: int) -> str:
    """A local copy of the system JSON, for the core to read as it reads a local file.

    A missing object leaves no file; an object over ``max_bytes`` is left unread and stands as an
    empty sparse file of its size: the core then reports either in its own words.
    """
    path = os.path.join(directory, "system.json")
    try:
        data = store.get_bytes(key, max_bytes=max_bytes)
    except ObjectMissing:
        return path
    except ObjectTooLarge as error:
        with open(path, "wb") as f:
            f.truncate(error.size if error.size is not None else max(max_bytes, 0) + 1)
        return path
    with open(path, "wb") as f:
        f.write(data)
    return path


def _score(module, job, path: str) -> TrialOutcome:
    try:
        return module.score_job(job, read_from=path)
    except MfscoreError as error:
        return TrialOutcome(job.ordinal, error=error)


class ProvenanceJobScorer:
    """``await scorer(job)``: the job's TrialRecord."""

    def __init__(self, store: ObjectStore, work_dir: str):
        self.store = store
        self.work_dir = work_dir
        self.cpu = ThreadPoolExecutor(1, thread_name_prefix="provenance-scoring")

    async def __call__(self, job: jobs_pb2.Job) -> records_pb2.TrialRecord:
        module, core_job, key = planned_job(job.provenance)
        directory = tempfile.mkdtemp(prefix="provenance-", dir=self.work_dir)
        try:
            path = await asyncio.to_thread(_fetch, self.store, job.input_prefix + key, directory,
                                           core_job.max_json_bytes)
            outcome = await asyncio.get_running_loop().run_in_executor(self.cpu, _score, module, core_job, path)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return records_pb2.TrialRecord(run_id=job.run_id, trial_id=job.trial_id, role=job.role, query=job.query,
                                       scorer="provenance-scorer", provenance=outcome_message(module.MODE, outcome))


class ProvenanceScorer(services_pb2_grpc.ProvenanceScorerServicer):
    def __init__(self, handle):
        self._handle = handle

    async def ScoreProvenance(self, request, context):
        return await self._handle(request)


def service(settings) -> ScorerService:
    handle = ProvenanceJobScorer(ObjectStore(settings), settings.work_dir)
    return ScorerService(name="provenance-scorer", kind="provenance", handle=handle,
                         servicer=ProvenanceScorer(handle),
                         add_servicer=services_pb2_grpc.add_ProvenanceScorerServicer_to_server,
                         service_name="mfscore.v1.ProvenanceScorer", concurrency=JOBS_IN_FLIGHT)
