"""Fetch a job's two masks from S3, score them with ``mfscore.masks.mask_scoring.score_mask``, return the record."""

from __future__ import annotations

import asyncio
import os
import tempfile

from mfscore.masks.mask_scoring import score_mask
from services.common.messages import mask_job, mask_record_message
from services.common.object_store import ObjectMissing, ObjectStore
from services.common.scorer_service import ScorerService
from services.wire import jobs_pb2, records_pb2, services_pb2_grpc

MAX_MASK_BYTES = 512 << 20


def _fetch(store: ObjectStore, prefix: str, key: str, directory: str) -> str | None:
    """The local path of a mask, or of where it would be when the object is missing (the core then says so)."""
    if not key:
        return None
    path = os.path.join(directory, *key.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        store.download_file(prefix + key, path, max_bytes=MAX_MASK_BYTES)
    except ObjectMissing:
        pass
    return path


def score_job(store: ObjectStore, work_dir: str, job: jobs_pb2.Job) -> records_pb2.TrialRecord:
    """Blocking: run in a worker thread."""
    with tempfile.TemporaryDirectory(prefix="mask-", dir=work_dir) as directory:
        reference = _fetch(store, job.input_prefix, job.mask.reference_key, directory)
        system = _fetch(store, job.input_prefix, job.mask.system_key, directory)
        record = score_mask(mask_job(job.mask, reference, system))
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
    store = ObjectStore(settings)

    async def handle(job: jobs_pb2.Job) -> records_pb2.TrialRecord:
        return await asyncio.to_thread(score_job, store, settings.work_dir, job)

    return ScorerService(name="mask-scorer", kind="mask", handle=handle, servicer=MaskScorer(handle),
                         add_servicer=services_pb2_grpc.add_MaskScorerServicer_to_server,
                         service_name="mfscore.v1.MaskScorer")
