"""``mfscore submit <task> <the embedded command's options>``: the same run, scored by a cluster.

The local inputs the run reads are uploaded to S3 under ``runs/<id>/inputs/`` (the reference
tables under ``ref/``, the system output's under ``sys/``; a provenance run's journals under
``ref/``, its system JSONs under ``sys/`` and its five tables under ``tables/``), the run is
submitted to the aggregator, a progress bar follows ``WatchRun``, and the reports land where the
embedded command would have written them (``-oR``/``-o`` DIR/PREFIX, or provenance's ``-o`` DIR).
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
from mfscore.errors import MfscoreError
from services.common.run_arguments import (
    PROVENANCE_DIRECTORIES,
    PROVENANCE_TABLES,
    PROVENANCE_TASKS,
    TASKS,
    key_under,
)

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


def run_inputs(task: str, args) -> list[tuple[str, str]]:
    """(local path, key under the run's input prefix) of every file the run reads.

    The tables are read exactly as the embedded command reads them, so bad input fails here, before any upload.
    """
    if task in PROVENANCE_TASKS:
        return _provenance_inputs(task, args)
    ref_dir, sys_dir = args.refDir, os.path.dirname(os.path.join(args.sysDir, args.inSys)) or "."
    tables = [os.path.join(ref_dir, args.inRef), os.path.join(ref_dir, args.inIndex)]
    from mfscore.formats.journal import journal_paths
    tables += [str(p) for p in journal_paths(ref_dir, args.inRef, mediscore_compat=args.mediscore_compat)
               if Path(p).is_file()]
    files = [(path, "ref/" + key_under(ref_dir, path, "table")) for path in tables]
    files.append((os.path.join(args.sysDir, args.inSys), "sys/" + os.path.basename(args.inSys)))
    if task == "detection":
        from mfscore.cli import detection as detection_cli
        detection_cli.prepare(args)
    if task == "mask":
        from mfscore.cli import mask as mask_cli
        for plan in mask_cli.prepare(args).plans:
            for job in plan.jobs:
                if job.reference_path and os.path.isfile(job.reference_path):
                    files.append((job.reference_path, "ref/" + key_under(ref_dir, job.reference_path, "reference mask")))
                if job.system_path and os.path.isfile(job.system_path):
                    files.append((job.system_path, "sys/" + key_under(sys_dir, job.system_path, "system mask")))
    return list(dict.fromkeys(files))


def _provenance_module(task: str):
    from mfscore.cli import provenance_filtering, provenance_graph

    return {"provenance-filtering": provenance_filtering, "provenance-graph": provenance_graph}[task]


def _provenance_inputs(task: str, args) -> list[tuple[str, str]]:
    """The five tables, the journals the trials read (under -R) and the system JSONs that exist (under -S)."""
    prepared = _provenance_module(task).prepare(args)
    if prepared.errors:
        raise prepared.errors[min(prepared.errors)]
    ref_dir, sys_dir = args.reference_dir, args.system_dir
    files = [(getattr(args, dest), key) for dest, key in PROVENANCE_TABLES.items()]
    for name in prepared.journal_files:
        path = os.path.join(ref_dir, name)
        files.append((path, PROVENANCE_DIRECTORIES["reference_dir"] + "/" + key_under(ref_dir, path, "journal")))
    for job in prepared.jobs:
        if os.path.isfile(job.system_path):
            files.append((job.system_path,
                          PROVENANCE_DIRECTORIES["system_dir"] + "/" + key_under(sys_dir, job.system_path, "system JSON")))
    return list(dict.fromkeys(files))


def _report_name(name: str) -> str:
    relative = os.path.normpath(name)
    if os.path.isabs(relative) or relative.split(os.sep)[0] == os.pardir:
        raise MfscoreError(f"the cluster sent a report file named {name!r}, outside the output directory")
    return relative


def _write_into(out_dir: str, closing_lines):
    """Write a run's files into ``out_dir`` (all or nothing), print its stdout and then ``closing_lines(DIR)``."""
    from mfscore.reports.staged_outputs import staged_outputs
    from services.wire import runs_pb2

    def write(stub, run_id: str, _out_root: str) -> int:
        report = stub.GetReport(runs_pb2.RunRef(run_id=run_id), timeout=600)
        with staged_outputs(os.path.join(out_dir, "")) as stage:
            for item in report.files:
                stage.path(_report_name(item.name)).write_bytes(item.content)
        if report.summary:
            print(report.summary)
        for line in closing_lines(stage.directory):
            print(line)
        return 0

    return write


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
    spec = runs_pb2.RunSpec(task=args.task, arguments=args.arguments, run_id=run_id,
                            submitted_by=os.environ.get("USER", ""), skip_validation=args.skip_validation)
    if args.task in PROVENANCE_TASKS:  # fixed file names in -o DIR; messages already name the local files
        spec.inputs.CopyFrom(runs_pb2.InputLocation(bucket=config.bucket, prefix=prefix,
                                                    reference_dir=PROVENANCE_DIRECTORIES["reference_dir"],
                                                    system_dir=PROVENANCE_DIRECTORIES["system_dir"]))
        out_dir = embedded.output_dir
        return follow_run(config, spec, os.path.join(out_dir, ""), None,
                          write=_write_into(out_dir, _provenance_module(args.task).closing_lines))
    spec.output_name = os.path.basename(embedded.outRoot)
    spec.inputs.CopyFrom(runs_pb2.InputLocation(bucket=config.bucket, prefix=prefix, reference_dir="ref",
                                                index=embedded.inIndex, reference=embedded.inRef, system_dir="sys",
                                                system=os.path.basename(embedded.inSys)))
    sys_dir = os.path.dirname(os.path.join(embedded.sysDir, embedded.inSys)) or "."
    return follow_run(config, spec, embedded.outRoot, {"ref": embedded.refDir, "sys": sys_dir})


_UPLOADED_NAME = re.compile(r"(?<![\w/.])(ref|sys)/")


def localize(text: str, directories: dict[str, str]) -> str:
    """Messages from the cluster name files by their key in the upload (``sys/mask/a.png``); name the local file."""
    return _UPLOADED_NAME.sub(lambda m: directories[m.group(1)].rstrip("/") + "/", text)


def follow_run(config, spec, out_root: str, directories: dict[str, str] | None, write=None) -> int:
    """Submit, watch, and write the reports under ``out_root``'s directory; exit status as the embedded command.

    ``directories`` (None: messages are printed as they come) localizes the cluster's messages;
    ``write(stub, run_id, out_root)`` (default ``report.fetch_and_write``) writes the files and the stdout.
    """
    import grpc

    from services.commands.report import fetch_and_write, watch
    from services.common.grpc_server import MESSAGE_OPTIONS
    from services.wire import runs_pb2, services_pb2_grpc

    with grpc.insecure_channel(config.aggregator_address, options=MESSAGE_OPTIONS) as channel:
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
            message = localize(final.message, directories) if directories else final.message
            raise MfscoreError(f"run {spec.run_id} {runs_pb2.RunState.Name(final.state)[10:].lower()}: {message}")
        for line in final.notes:
            print(localize(line, directories) if directories else line, file=sys.stderr)
        return (write or fetch_and_write)(stub, spec.run_id, out_root)
