"""Validate a run: its system output against its index, with ``mfscore.validation`` (validator.md).

Mask files are not fetched here: each is checked when its trial is scored, and an unreadable one
is reported and left unscored exactly as the embedded command does. The pixel-value columns are
checked only when the run uses them (-pppns): the scorers accept a submission without them.

A provenance run is checked by its embedded command's own ``prepare`` (tables, columns, the trial
disparity check, JSON paths confined to -S, journals): the problems that stop that command before it
scores a trial. MediScore's ProvenanceValidator (``validate-provenance``) is not run: it is stricter
than the scorers (a ConfidenceScore and a status column, one row per index probe, every JSON passing
the schema), and a system JSON the scorers cannot use only leaves its trial out, so it would reject
runs the embedded command scores.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile

from mfscore.errors import MfscoreError
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.submission import validate_submission
from services.aggregator.provenance_runs import ProvenanceTaskRun, download_journals
from services.common.grpc_server import start_grpc_server, stop_grpc_server
from services.common.metrics import start_metrics_server
from services.common.object_store import ObjectStore
from services.common.run_arguments import PROVENANCE_TASKS, parse_arguments
from services.common.settings import Settings
from services.wire import runs_pb2, services_pb2_grpc

log = logging.getLogger("mfscore.validator")
MAX_TABLE_BYTES = 2 << 30

# The validator.py type (-vt) of each task, by the task's -t.
VALIDATION_TYPES = {
    "detection": {"manipulation": "SSD", "splice": "DSD", "eventverification": "SSD-event", "camera": "SSD-camera"},
    "mask": {"manipulation": "SSD", "splice": "DSD"},
}


def validate_run(store: ObjectStore, work_dir: str, spec: runs_pb2.RunSpec) -> runs_pb2.ValidationReport:
    """Blocking: fetch the run's tables and validate its system output against its index."""
    with tempfile.TemporaryDirectory(prefix="validate-", dir=work_dir) as directory:
        try:
            store.download_prefix(spec.inputs.prefix, directory, suffixes=(".csv",), max_bytes=MAX_TABLE_BYTES)
            args = parse_arguments(spec.task, list(spec.arguments), directory, spec.inputs)
        except MfscoreError as error:
            return runs_pb2.ValidationReport(valid=False, findings=[
                runs_pb2.Finding(severity="error", code="run.inputs", message=error.sentence())])
        if spec.task in PROVENANCE_TASKS:
            return _validate_provenance(store, spec, args, directory)
        pixel_values_used = bool(getattr(args, "perProbePixelNoScore", False))
        options = ValidatorOptions(kind=VALIDATION_TYPES[spec.task][args.task], neglect_mask=True,
                                   neglect_pixel=not pixel_values_used,
                                   index_filter=bool(getattr(args, "indexFilter", False)),
                                   mediscore_compat=args.mediscore_compat)
        validation = validate_submission(os.path.join(args.sysDir, args.inSys),
                                         os.path.join(args.refDir, args.inIndex), options)
        findings = [runs_pb2.Finding(severity=str(f.severity),
                                     code=f.code, message=f.message,
                                     file=os.path.relpath(f.file, directory) if f.file else "", line=f.line or 0)
                    for f in validation.report.findings]
        return runs_pb2.ValidationReport(valid=validation.report.valid, findings=findings)


def _validate_provenance(store: ObjectStore, spec: runs_pb2.RunSpec, args,
                         directory: str) -> runs_pb2.ValidationReport:
    try:
        download_journals(store, spec.inputs.prefix, directory)
        ProvenanceTaskRun(spec.task, args, directory)
    except MfscoreError as error:
        return runs_pb2.ValidationReport(valid=False, findings=[
            runs_pb2.Finding(severity="error", code="run.inputs", message=error.sentence())])
    return runs_pb2.ValidationReport(valid=True)


class Validator(services_pb2_grpc.ValidatorServicer):
    def __init__(self, store: ObjectStore, work_dir: str):
        self._store = store
        self._work_dir = work_dir

    async def Validate(self, request, context):
        return await asyncio.to_thread(validate_run, self._store, self._work_dir, request.run)


async def run_validator(settings: Settings, stop: asyncio.Event) -> None:
    os.makedirs(settings.work_dir, exist_ok=True)
    metrics_port = start_metrics_server(settings.metrics_port)
    servicer = Validator(ObjectStore(settings), settings.work_dir)
    server, port = await start_grpc_server(
        [(services_pb2_grpc.add_ValidatorServicer_to_server, servicer, "mfscore.v1.Validator")], port=settings.grpc_port)
    log.info("validator: gRPC on %d, metrics on %d", port, metrics_port)
    await stop.wait()
    await stop_grpc_server(server, grace=5)
