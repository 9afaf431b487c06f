"""``mfscore submit <task> <the embedded command's options>``: the same run, scored by a cluster.

The local inputs the run reads are uploaded to S3 under ``runs/<id>/inputs/`` (the reference
tables under ``ref/``, the system output's under ``sys/``), the run is submitted to the
aggregator, a progress bar follows ``WatchRun``, and the reports land where the embedded command
would have written them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mfscore.cli.main import build_parser
from mfscore.errors import InputFileError, MfscoreError
from services.common.run_arguments import TASKS

UPLOAD_THREADS = 8


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "submit", help="score on a cluster: the embedded command's options, the same report files",
        description="Upload the run's inputs, score them on the cluster (the one 'mfscore local-cluster up' started, "
                    "or --cluster / $MFSCORE_CLUSTER / $MFSCORE_AGGREGATOR_ADDRESS) and write the reports where "
                    "'mfscore <task>' would. Example: mfscore submit mask --refDir ref -r r.csv -x i.csv -s s.csv -oR out/x")
    p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    p.add_argument("--skip-validation", action="store_true",
                   help="do not run the validator first: score whatever the embedded command would score")
    p.add_argument("task", choices=TASKS, help="the embedded command to run on the cluster")
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="its options, exactly as for 'mfscore <task>'")
    p.set_defaults(run=run)


def _inside(root: str, path: str, what: str) -> str:
    relative = os.path.relpath(path, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        raise InputFileError(f"the {what} {path} is outside {root}; the cluster receives only files under it")
    return relative.replace(os.sep, "/")


def run_inputs(task: str, args) -> list[tuple[str, str]]:
    """(local path, key under the run's input prefix) of every file the run reads.

    The tables are read exactly as the embedded command reads them, so bad input fails here, before any upload.
    """
    ref_dir, sys_dir = args.refDir, os.path.dirname(os.path.join(args.sysDir, args.inSys)) or "."
    tables = [os.path.join(ref_dir, args.inRef), os.path.join(ref_dir, args.inIndex)]
    from mfscore.formats.journal import journal_paths
    tables += [str(p) for p in journal_paths(ref_dir, args.inRef, mediscore_compat=args.mediscore_compat)
               if Path(p).is_file()]
    files = [(path, "ref/" + _inside(ref_dir, path, "table")) for path in tables]
    files.append((os.path.join(args.sysDir, args.inSys), "sys/" + os.path.basename(args.inSys)))
    if task == "detection":
        from mfscore.cli import detection as detection_cli
        detection_cli.prepare(args)
    if task == "mask":
        from mfscore.cli import mask as mask_cli
        for plan in mask_cli.prepare(args).plans:
            for job in plan.jobs:
                if job.reference_path and os.path.isfile(job.reference_path):
                    files.append((job.reference_path, "ref/" + _inside(ref_dir, job.reference_path, "reference mask")))
                if job.system_path and os.path.isfile(job.system_path):
                    files.append((job.system_path, "sys/" + _inside(sys_dir, job.system_path, "system mask")))
    return list(dict.fromkeys(files))


def run(args) -> int:
    from services.commands.cluster_config import resolve
    from services.common.object_store import ObjectStore
    from services.wire import runs_pb2

    embedded = build_parser().parse_args([args.task, *args.arguments])
    files = run_inputs(args.task, embedded)
    config = resolve(args.cluster)
    store = ObjectStore(config.settings())
    store.ensure_bucket()
    run_id = uuid.uuid4().hex
    prefix = f"runs/{run_id}/inputs/"
    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        list(pool.map(lambda f: store.put_file(prefix + f[1], f[0]), files))
    spec = runs_pb2.RunSpec(
        task=args.task, arguments=args.arguments, run_id=run_id, output_name=os.path.basename(embedded.outRoot),
        submitted_by=os.environ.get("USER", ""), skip_validation=args.skip_validation,
        inputs=runs_pb2.InputLocation(bucket=config.bucket, prefix=prefix, reference_dir="ref",
                                      index=embedded.inIndex, reference=embedded.inRef, system_dir="sys",
                                      system=os.path.basename(embedded.inSys)))
    sys_dir = os.path.dirname(os.path.join(embedded.sysDir, embedded.inSys)) or "."
    return follow_run(config, spec, embedded.outRoot, {"ref": embedded.refDir, "sys": sys_dir})


_UPLOADED_NAME = re.compile(r"(?<![\w/.])(ref|sys)/")


def localize(text: str, directories: dict[str, str]) -> str:
    """Messages from the cluster name files by their key in the upload (``sys/mask/a.png``); name the local file."""
    return _UPLOADED_NAME.sub(lambda m: directories[m.group(1)].rstrip("/") + "/", text)


def follow_run(config, spec, out_root: str, directories: dict[str, str]) -> int:
    """Submit, watch, and write the reports under ``out_root``'s directory; exit status as the embedded command."""
    import grpc

    from services.commands.report import fetch_and_write, watch
    from services.wire import runs_pb2, services_pb2_grpc

    with grpc.insecure_channel(config.aggregator_address) as channel:
        stub = services_pb2_grpc.AggregatorStub(channel)
        try:
            stub.SubmitRun(spec, timeout=60)
            final = watch(stub, spec.run_id, interactive=sys.stderr.isatty())
        except grpc.RpcError as error:
            raise MfscoreError(f"the aggregator at {config.aggregator_address} did not take the run: "
                               f"{error.details() or error.code().name}") from None
        if final.state != runs_pb2.RUN_STATE_DONE:
            for finding in final.validation.findings:
                where = f" [{finding.file}" + (f", line {finding.line}" if finding.line else "") + "]" if finding.file else ""
                print(f"{finding.severity.upper()}: {finding.message}{where}", file=sys.stderr)
            raise MfscoreError(f"run {spec.run_id} {runs_pb2.RunState.Name(final.state)[10:].lower()}: "
                               f"{localize(final.message, directories)}")
        for line in final.notes:
            print(localize(line, directories), file=sys.stderr)
        return fetch_and_write(stub, spec.run_id, out_root)
