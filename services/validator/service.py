"""Validate a run before anything is queued: its system output against its index (``mfscore.validation``), or,
for a task that declares no submission check, its task's own planning checks.

Mask and JSON files are not fetched here: each is checked when its job is scored, and an unusable
one is reported and left unscored exactly as the embedded command does. The validator may refuse
what the embedded command accepts (a system row for a probe missing from the index, say); a
client that wants the embedded behaviour submits with ``skip_validation``.

A run's resource options above the operator's maxima (``Settings.option_limits``) are refused, and the
reply lists at most ``Settings.max_findings`` findings within ``MAX_REPLY_BYTES``, then one finding counting
the others (``mfscore.validation.findings``): the report is kept in the run's status, a NATS key-value entry.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from mfscore import tasks
from mfscore.errors import MfscoreError
from mfscore.options import check_limits
from mfscore.services.common.grpc_server import start_service_server, stop_grpc_server
from mfscore.services.common.metrics import VALIDATION_DURATION, VALIDATIONS, start_metrics_server, task_label
from mfscore.services.common.object_store import ObjectStore, ObjectStoreUnavailable
from mfscore.services.common.planning import fetch_tables, named_by_key, run_options
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import Unavailable, answers
from mfscore.services.wire import runs_pb2, services_pb2, services_pb2_grpc
from mfscore.validation.findings import Severity, ValidationReport, omitted_finding
from mfscore.validation.submission import validate_submission

log = logging.getLogger("mfscore.validator")


MAX_REPLY_BYTES = 256 << 10   # a reply, kept in the run's status: well under NATS' 1 MB message
MAX_MESSAGE_CHARS = 2000      # of one finding's message (a quoted cell can be long)


def _refused(sentence: str) -> runs_pb2.ValidationReport:
    return runs_pb2.ValidationReport(valid=False, findings=[
        runs_pb2.Finding(severity="error", code="run.inputs", message=sentence)])


def wire_report(report: ValidationReport, directory: str) -> runs_pb2.ValidationReport:
    """The report as the reply: its findings (files by their key in the upload under ``directory``) while they fit
    ``MAX_REPLY_BYTES``, then the finding that counts the others."""
    reply = runs_pb2.ValidationReport(valid=report.valid)
    budget = MAX_REPLY_BYTES - 2 * MAX_MESSAGE_CHARS  # room for the last finding
    for kept, f in enumerate(report.findings):
        finding = runs_pb2.Finding(severity=str(f.severity), code=f.code,
                                   message=named_by_key(f.message, directory)[:MAX_MESSAGE_CHARS],
                                   file=os.path.relpath(f.file, directory) if f.file and directory else f.file or "",
                                   line=f.line or 0)
        budget -= finding.ByteSize() + 4  # the field's tag and length
        if budget < 0:
            left = report.findings[kept:]
            omitted = report.omitted + len(left)
            errors = report.omitted_errors + sum(f.severity is Severity.ERROR for f in left)
            break
        reply.findings.append(finding)
    else:
        omitted, errors = report.omitted, report.omitted_errors
    if omitted:
        last = omitted_finding(omitted, errors, len(reply.findings))
        reply.findings.append(runs_pb2.Finding(severity=str(last.severity), code=last.code, message=last.message))
    return reply


def validate_run(store: ObjectStore, work_dir: str, spec: runs_pb2.RunSpec,
                 settings: Settings) -> runs_pb2.ValidationReport:
    """Blocking: fetch the run's tables and check them, within the operator's maxima (``settings``)."""
    with tempfile.TemporaryDirectory(prefix="validate-", dir=work_dir) as directory:
        try:
            fetch_tables(store, spec, directory)
            task, options = run_options(spec, directory)
            check_limits(options, settings.option_limits)
            submission = task.validation(options)
            if submission is None:
                task.plan(options)
                return runs_pb2.ValidationReport(valid=True)
        except ObjectStoreUnavailable:
            raise  # not the submission's fault: the aggregator asks again when S3 is back
        except MfscoreError as error:
            return _refused(named_by_key(error.sentence(), directory))
        validation = validate_submission(submission.system, submission.index,
                                         replace(submission.options, max_findings=settings.max_findings))
        return wire_report(validation.report, directory)


class Validator(services_pb2_grpc.ValidatorServiceServicer):
    def __init__(self, store: ObjectStore, work_dir: str, settings: Settings):
        self._store = store
        self._work_dir = work_dir
        self._settings = settings

    @answers
    async def Validate(self, request, context):
        task, started, outcome = task_label(request.run.task), time.perf_counter(), "error"
        try:
            report = await asyncio.to_thread(validate_run, self._store, self._work_dir, request.run, self._settings)
            outcome = "valid" if report.valid else "invalid"
        except ObjectStoreUnavailable as error:
            raise Unavailable(f"the validator cannot read the run's tables now: {error.sentence()}") from error
        finally:
            VALIDATIONS.labels(task, outcome).inc()
            VALIDATION_DURATION.labels(task).observe(time.perf_counter() - started)
        log.debug("run %s validated: %s", request.run.run_id, outcome, extra={"run_id": request.run.run_id})
        return services_pb2.ValidateResponse(report=report)


def remove_leftovers(work_dir: str) -> int:
    """Delete the ``validate-*`` folders a validator killed mid-validation left in ``work_dir`` (its own: no two
    validators share one); how many."""
    leftovers = [path for path in Path(work_dir).glob("validate-*") if path.is_dir() and not path.is_symlink()]
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)
    return len(leftovers)


async def run_validator(settings: Settings, stop: asyncio.Event) -> None:
    os.makedirs(settings.work_dir, exist_ok=True)
    if removed := remove_leftovers(settings.work_dir):
        log.info("removed %d folder(s) of validations cut short by an earlier stop", removed)
    tasks.load_all()
    metrics_port = start_metrics_server(settings.metrics_port, settings.metrics_host, role="validator")
    for task in tasks.names():
        for outcome in ("valid", "invalid", "error"):
            VALIDATIONS.labels(task, outcome)
    servicer = Validator(ObjectStore(settings), settings.work_dir, settings)
    server, port = await start_service_server(
        [(services_pb2_grpc.add_ValidatorServiceServicer_to_server, servicer, "mfscore.v1.ValidatorService")], settings)
    log.info("validator: gRPC on %d, metrics on %d", port, metrics_port)
    await stop.wait()
    await stop_grpc_server(server, grace=5)
