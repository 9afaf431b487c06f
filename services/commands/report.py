"""``mfscore report <run>``: fetch a finished run's report files again; and the watching and writing ``submit`` shares."""

from __future__ import annotations

import os
import sys

from mfscore.errors import MfscoreError
from mfscore.reports.staged_outputs import staged_outputs


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="fetch the report files of a run scored on a cluster",
                              description="Write a finished run's report files under DIR (default: here).")
    p.add_argument("run_id", metavar="RUN")
    p.add_argument("-o", "--out-dir", default=".", help="directory to write the files into (default .)")
    p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    p.set_defaults(run=run)


def watch(stub, run_id: str, *, interactive: bool):
    """Follow ``WatchRun`` to the end, with a progress bar on an interactive terminal; the final status."""
    from mfscore.services.wire import runs_pb2

    final = None
    if not interactive:
        for status in stub.WatchRun(runs_pb2.RunRef(run_id=run_id)):
            final = status
        return final
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task(f"run {run_id[:8]}", total=None)
        for status in stub.WatchRun(runs_pb2.RunRef(run_id=run_id)):
            state = runs_pb2.RunState.Name(status.state)[10:].lower()
            progress.update(bar, description=f"run {run_id[:8]} {state}", completed=status.trials_received,
                            total=status.trials_planned or None)
            final = status
    return final


def fetch_and_write(stub, run_id: str, out_root: str, localize=lambda line: line) -> int:
    """Write the run's files into ``out_root``'s directory (all or nothing), print what the embedded command
    prints on stdout (``localize`` names the local files), and return its exit status."""
    from mfscore.run.local import placed
    from mfscore.services.wire import runs_pb2

    report = stub.GetReport(runs_pb2.RunRef(run_id=run_id), timeout=600)
    with staged_outputs(os.path.join(os.path.dirname(out_root), "")) as stage:
        for item in report.files:
            name = os.path.normpath(item.name)
            if os.path.isabs(name) or name.split(os.sep)[0] == os.pardir:
                raise MfscoreError(f"the cluster sent a report file named {item.name!r}, outside the output directory")
            stage.path(name).write_bytes(item.content)
    for line in placed(list(report.stdout), out_root):
        print(localize(line))
    return report.exit_status


def run(args) -> int:
    import grpc

    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.common.grpc_server import MESSAGE_OPTIONS
    from mfscore.services.wire import services_pb2_grpc

    config = resolve(args.cluster)
    with grpc.insecure_channel(config.aggregator_address, options=MESSAGE_OPTIONS) as channel:
        try:
            return fetch_and_write(services_pb2_grpc.AggregatorStub(channel), args.run_id,
                                   os.path.join(args.out_dir, ""))
        except grpc.RpcError as error:
            print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
            return 1
