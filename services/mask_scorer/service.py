"""Fetch a job's two masks from S3, score them with ``mfscore.masks.mask_scoring.score_mask``, return the record.

A worker keeps two jobs in flight: the masks of one download (on I/O threads) while the other is
scored on the worker's single scoring thread, so one worker uses one core for scoring.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

from mfscore.masks.mask_scoring import score_mask
from services.common.messages import mask_job, mask_record_message
from services.common.object_store import ObjectMissing, ObjectStore
from services.common.scorer_service import ScorerService
from services.wire import jobs_pb2, records_pb2, services_pb2_grpc

MAX_MASK_BYTES = 512 << 20
JOBS_IN_FLIGHT = 2


def _fetch(store: ObjectStore, prefix: str, key: str, directory: str) -> str | None:
    """The local path of a mask, or of where it would be when the object is missing (the core then says so)."""
    if not key:
        return None
    path = os.path.join(directory, *key.split("/"))
    try:
        store.download_file(prefix + key, path, max_bytes=MAX_MASK_BYTES)
    except ObjectMissing:
        pass
    return path


class MaskJobScorer:
    """``await scorer(job)``: the job's TrialRecord."""

    def __init__(self, store: ObjectStore, work_dir: str):
        self.store = store
        self.work_dir = work_dir
        self.cpu = ThreadPoolExecutor(1, thread_name_prefix="mask-scoring")

    async def __call__(self, job: jobs_pb2.Job) -> records_pb2.TrialRecord:
        directory = tempfile.mkdtemp(prefix="mask-", dir=self.work_dir)
        try:
            reference, system = await asyncio.gather(
                *(asyncio.to_thread(_fetch, self.store, job.input_prefix, key, directory)
                  for key in (job.mask.reference_key, job.mask.system_key)))
            core_job = mask_job(job.mask, reference, system)
            record = await asyncio.get_running_loop().run_in_executor(self.cpu, score_mask, core_job)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        message = mask_record_message(record)
        message.message = message.message.replace(directory + os.sep, "")  # name files by their key in the upload
        return records_pb2.TrialRecord(run_id=job.run_id, trial_id=job.trial_id, role=job.role, query=job.query,
                                       scorer="mask-scorer", mask=message)


class MaskScorer(services_pb2_grpc.MaskScorerServicer):
    def __init__(self, handle):
        self._handle = handle

    async def ScoreMask(self, request, context):
        return await self._handle(request)


def service(settings) -> ScorerService:
    handle = MaskJobScorer(ObjectStore(settings), settings.work_dir)
    return ScorerService(name="mask-scorer", kind="mask", handle=handle, servicer=MaskScorer(handle),
                         add_servicer=services_pb2_grpc.add_MaskScorerServicer_to_server,
                         service_name="mfscore.v1.MaskScorer", concurrency=JOBS_IN_FLIGHT)
