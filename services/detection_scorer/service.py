"""Turn detection trials (the system's score text, the reference label) into records."""

from __future__ import annotations

from mfscore.errors import InputFileError
from services.common.scorer_service import ScorerService
from services.wire import jobs_pb2, records_pb2, services_pb2_grpc


def score_job(job: jobs_pb2.Job) -> records_pb2.TrialRecord:
    records = []
    for trial in job.detection.trials:
        try:
            score = float(trial.confidence_score)
        except ValueError:
            raise InputFileError(f"trial {trial.ordinal} has the score {trial.confidence_score!r}, not a number") from None
        records.append(records_pb2.DetectionRecord(ordinal=trial.ordinal, score=score, is_target=trial.is_target == "Y",
                                                   status=trial.status))
    return records_pb2.TrialRecord(run_id=job.run_id, trial_id=job.trial_id, role=job.role, query=job.query,
                                   scorer="detection-scorer", detection=records_pb2.DetectionRecords(records=records))


class DetectionScorer(services_pb2_grpc.DetectionScorerServicer):
    async def ScoreDetection(self, request, context):
        return score_job(request)


def service(settings) -> ScorerService:
    async def handle(job: jobs_pb2.Job) -> records_pb2.TrialRecord:
        return score_job(job)

    return ScorerService(name="detection-scorer", kind="detection", handle=handle, servicer=DetectionScorer(),
                         add_servicer=services_pb2_grpc.add_DetectionScorerServicer_to_server,
                         service_name="mfscore.v1.DetectionScorer")
