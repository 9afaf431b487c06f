"""Validate a run before anything is queued: its system output against its index (``mfscore.validation``), or,
for a task that declares no submission check, its task's own planning checks.

Mask and JSON files are not fetched here: each is checked when its job is scored, and an unusable
one is reported and left unscored exactly as the embedded command does. The validator may refuse
what the embedded command accepts (a system row for a probe missing from the index, say); a
client that wants the embedded behaviour submits with ``skip_validation``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time

import grpc

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.services.common.grpc_server import start_service_server, stop_grpc_server
from mfscore.services.common.metrics import VALIDATION_DURATION, VALIDATIONS, start_metrics_server, task_label
from mfscore.services.common.object_store import ObjectStore, ObjectStoreUnavailable
from mfscore.services.common.planning import fetch_tables, named_by_key, run_options
from mfscore.services.common.settings import Settings
from mfscore.services.wire import runs_pb2, services_pb2, services_pb2_grpc
from mfscore.validation.submission import validate_submission

log = logging.getLogger("mfscore.validator")


def _refused(sentence: str) -> runs_pb2.ValidationReport:
    return runs_pb2.ValidationReport(valid=False, findings=[
        runs_pb2.Finding(severity="error", code="run.inputs", message=sentence)])


def validate_run(store: ObjectStore, work_dir: str, spec: runs_pb2.RunSpec) -> runs_pb2.ValidationReport:
    """Blocking: fetch the run's tables and check them."""
    with tempfile.TemporaryDirectory(prefix="validate-", dir=work_dir) as directory:
        try:
            fetch_tables(store, spec, directory)
            task, options = run_options(spec, directory)
            submission = task.validation(options)
            if submission is None:
                task.plan(options)
                return runs_pb2.ValidationReport(valid=True)
        except ObjectStoreUnavailable:
            raise  # not the submission's fault: the aggregator asks again when S3 is back
        except MfscoreError as error:
            return _refused(named_by_key(error.sentence(), directory))
        validation = validate_submission(submission.system, submission.index, submission.options)
        findings = [runs_pb2.Finding(severity=str(f.severity), code=f.code, message=named_by_key(f.message, directory),
                                     file=os.path.relpath(f.file, directory) if f.file else "", line=f.line or 0)
                    for f in validation.report.findings]
        return runs_pb2.ValidationReport(valid=validation.report.valid, findings=findings)


class Validator(services_pb2_grpc.ValidatorServiceServicer):
    def __init__(self, store: ObjectStore, work_dir: str):
        self._store = store
        self._work_dir = work_dir

    async def Validate(self, request, context):
        task, started, outcome = task_label(request.run.task), time.perf_counter(), "error"
        try:
            report = await asyncio.to_thread(validate_run, self._store, self._work_dir, request.run)
            outcome = "valid" if report.valid else "invalid"
        except ObjectStoreUnavailable as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the validator cannot read the run's tables now: "
                                                             f"{error.sentence()}")
        finally:
            VALIDATIONS.labels(task, outcome).inc()
            VALIDATION_DURATION.labels(task).observe(time.perf_counter() - started)
        log.debug("run %s validated: %s", request.run.run_id, outcome, extra={"run_id": request.run.run_id})
        return services_pb2.ValidateResponse(report=report)


async def run_validator(settings: Settings, stop: asyncio.Event) -> None:
    os.makedirs(settings.work_dir, exist_ok=True)
    tasks.load_all()
    metrics_port = start_metrics_server(settings.metrics_port, settings.metrics_host, role="validator")
    for task in tasks.names():
        for outcome in ("valid", "invalid", "error"):
            VALIDATIONS.labels(task, outcome)
    servicer = Validator(ObjectStore(settings), settings.work_dir)
    server, port = await start_service_server(
        [(services_pb2_grpc.add_ValidatorServiceServicer_to_server, servicer, "mfscore.v1.ValidatorService")], settings)
    log.info("validator: gRPC on %d, metrics on %d", port, metrics_port)
    await stop.wait()
    await stop_grpc_server(server, grace=5)
