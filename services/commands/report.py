"""``mfscore report <run>``: fetch a finished run's report files again (``--list``: the runs this caller may see,
page by page); and the watching, listing and writing ``submit``, ``cancel`` and ``delete`` share."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass

from mfscore.cli.arguments import add_results_arguments
from mfscore.errors import MfscoreError
from mfscore.reports.summary_table import show_results
from mfscore.results import Results
from mfscore.run.local import RESULTS_FILE, RUN_FILE
from mfscore.run.staged_outputs import staged_outputs

RECONNECT_SECONDS = 600.0      # how long an aggregator that went away (a restart, say) is waited for
RECONNECT_DELAYS = (0.5, 5.0)  # the first and the longest pause between attempts


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="fetch the report files of a run scored on a cluster",
                              description="Write a finished run's report files under DIR (default: here), or list "
                                          "the runs you may see (yours; an operator's token sees every run).")
    p.add_argument("run_id", metavar="RUN", nargs="?")
    p.add_argument("--list", action="store_true",
                   help="list the runs this caller may see, oldest first, with their trials received of planned")
    p.add_argument("-o", "--out-dir", default=".", help="directory to write the files into (default .)")
    p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    add_results_arguments(p)
    p.set_defaults(run=run)


class Reconnecting:
    """How long to keep trying an aggregator that is unavailable: an outage starts at the first failure since a
    call last made progress and may last ``patience`` seconds, with growing pauses between attempts."""

    def __init__(self, address: str, run_id: str, patience: float = RECONNECT_SECONDS):
        self.address = address
        self.run_id = run_id
        self.patience = patience
        self.progressed()

    def progressed(self) -> None:
        self.since = None
        self.delay = RECONNECT_DELAYS[0]

    def pause(self, why: str) -> None:
        """Sleep before the next attempt, saying on stderr when an outage starts; give up once it is too long."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
            print(f"mfscore: the aggregator at {self.address} is unavailable ({why}); reconnecting for up to "
                  f"{_duration(self.patience)}", file=sys.stderr)
        elif now - self.since >= self.patience:
            raise MfscoreError(f"the aggregator at {self.address} was unavailable for {_duration(self.patience)} "
                               f"({why}); run {self.run_id} may still finish: fetch its files later with "
                               f"'mfscore report {self.run_id}'")
        time.sleep(self.delay)
        self.delay = min(RECONNECT_DELAYS[1], self.delay * 2)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} seconds"


class _WatchEnded(Exception):
    """The WatchRun stream ended before the run did: the aggregator went away."""


def calling(config, call, reconnecting: Reconnecting, service=None):
    """``call(stub)`` on a new channel to the aggregator until it returns; the stub is ``service``'s
    (AggregatorService's by default, or DatasetService's, which the aggregator serves too). UNAVAILABLE (the
    aggregator is away, restarting say, or cannot reach NATS) and a watch that ends early mean: pause, reconnect,
    call again. Other errors are raised."""
    import grpc

    from mfscore.services.wire import services_pb2_grpc

    while True:
        with config.channel() as channel:
            try:
                return call((service or services_pb2_grpc.AggregatorServiceStub)(channel))
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                why = " ".join((error.details() or error.code().name).split())
            except _WatchEnded:
                why = "the watch ended before the run did"
        reconnecting.pause(why)


def watch(config, run_id: str, *, interactive: bool, before=None, reconnecting: Reconnecting | None = None):
    """Follow ``WatchRun`` to the run's end, with a progress bar on an interactive terminal; the final status.

    ``before(stub)`` is called ahead of each watch (``submit`` submits there, again after a reconnection: the
    same run id returns the same run). When the aggregator is unavailable or the stream ends before the run
    does, it reconnects (``calling``), for up to RECONNECT_SECONDS of outage."""
    from mfscore.services.wire import runs_pb2

    ended = {runs_pb2.RUN_STATE_DONE, runs_pb2.RUN_STATE_FAILED, runs_pb2.RUN_STATE_REJECTED,
             runs_pb2.RUN_STATE_CANCELLED}
    reconnecting = reconnecting or Reconnecting(config.aggregator_address, run_id)
    with _progress(run_id, interactive) as show:
        def watch(stub):
            if before is not None:
                before(stub)
            for reply in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id)):
                status = reply.run
                reconnecting.progressed()
                show(status)
                if status.state in ended:
                    return status
            raise _WatchEnded

        return calling(config, watch, reconnecting)


@contextlib.contextmanager
def _progress(run_id: str, interactive: bool):
    """``show(status)``: a progress bar on an interactive terminal, nothing otherwise."""
    if not interactive:
        yield lambda status: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from mfscore.services.wire import runs_pb2

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task(f"run {run_id[:8]}", total=None)

        def show(status) -> None:
            state = runs_pb2.RunState.Name(status.state)[10:].lower()
            progress.update(bar, description=f"run {run_id[:8]} {state}", completed=status.trials_received,
                            total=status.trials_planned or None)

        yield show


@dataclass(frozen=True)
class Fetched:
    """A fetched run: the embedded command's exit status, its results and its provenance (None if it has none)."""

    status: int
    results: Results | None
    run: dict | None


def fetch_and_write(stub, run_id: str, out_root: str, localize=lambda line: line, *, out=None) -> Fetched:
    """Write the run's files into ``out_root``'s directory and print what the embedded command prints on stdout
    (to ``out``, standard output by default; ``localize`` names the local files). Every file is checked against the
    digest the aggregator sent first; on any mismatch, or a stream that breaks off, nothing is written."""
    from mfscore.run.local import placed
    from mfscore.services.wire import runs_pb2

    replies = stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id), timeout=3600)
    first = next(replies, None)
    if first is None or first.WhichOneof("part") != "manifest":
        raise MfscoreError(f"the cluster sent the report of run {run_id} without its manifest; nothing was written")
    manifest = first.manifest
    directory = os.path.join(os.path.dirname(out_root), "")
    with staged_outputs(directory) as stage:
        for declared in manifest.files:
            _receive_file(replies, declared, _report_path(stage, declared.name), run_id)
        if next(replies, None) is not None:
            raise MfscoreError(f"the cluster sent more of the report of run {run_id} than its manifest declares; "
                               "nothing was written")
    for line in placed(list(manifest.stdout), out_root):
        print(localize(line), file=out or sys.stdout)
    names = [declared.name for declared in manifest.files]
    results = _read(directory, names, RESULTS_FILE, Results.from_json)
    run = _read(directory, names, RUN_FILE, json.loads)
    if results is None:  # withheld until the dataset is released (docs/release.md): the results as released
        results, run = _released_results(stub, run_id)
    return Fetched(manifest.exit_status, results, run)


def _released_results(stub, run_id: str) -> tuple[Results | None, dict | None]:
    """The run's results and provenance as the cluster releases them to the caller; (None, None) for a run that has
    none."""
    import grpc

    from mfscore.services.wire import results_pb2

    try:
        reply = stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=60)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return None, None
        raise
    provenance = reply.results.provenance_json
    return Results.from_json(reply.json.encode()), json.loads(provenance) if provenance else None


def show_submission(run: dict | None) -> None:
    """A package run's submission on stderr: its name and its system description (docs/release.md)."""
    submission = (run or {}).get("submission")
    if not submission:
        return
    print(f"mfscore: submission {submission['name']}, system description (SHA-256 "
          f"{submission['description_sha256'][:16]}...):", file=sys.stderr)
    for line in submission["description"].splitlines():
        print(f"  {line}", file=sys.stderr)


def _read(directory: str, names: list[str], file: str, parse):
    """The run's top-level file ``<prefix>_<file>`` (or ``<file>``) as ``parse`` reads it; None if it has none."""
    name = next((name for name in names if "/" not in name and (name == file or name.endswith("_" + file))), None)
    if name is None:
        return None
    with open(os.path.join(directory, name), "rb") as f:
        return parse(f.read())


def _report_path(stage, name: str):
    normal = os.path.normpath(name)
    if os.path.isabs(normal) or normal.split(os.sep)[0] == os.pardir:
        raise MfscoreError(f"the cluster sent a report file named {name!r}, outside the output directory")
    return stage.path(normal)


def _receive_file(replies, declared, path, run_id: str) -> None:
    """Write the next ``declared.size`` bytes of the stream to ``path``, checking them against ``declared``."""
    import hashlib

    digest, size = hashlib.sha256(), 0
    with open(path, "wb") as f:
        while size < declared.size:
            reply = next(replies, None)
            if reply is None or reply.WhichOneof("part") != "chunk":
                raise MfscoreError(f"the report of run {run_id} ended inside {declared.name}; nothing was written")
            size += len(reply.chunk)
            digest.update(reply.chunk)
            f.write(reply.chunk)
    if size != declared.size or digest.hexdigest() != declared.sha256:
        raise MfscoreError(f"the report file {declared.name} of run {run_id} does not match the digest the "
                           "aggregator recorded; nothing was written")


def list_runs(stub, state: int = 0, *, page_size: int = 0):
    """Every run the caller may see (in ``state``; 0: any), oldest created first, ListRuns' pages one after
    another."""
    from mfscore.services.wire import runs_pb2

    token = ""
    while True:
        page = stub.ListRuns(runs_pb2.ListRunsRequest(state=state, page_size=page_size, page_token=token), timeout=60)
        yield from page.runs
        token = page.next_page_token
        if not token:
            return


def print_runs(stub) -> int:
    """One line per run the caller may see: id, task, state, trials received of planned, owner, creation time."""
    from mfscore.services.wire import runs_pb2

    runs = list(list_runs(stub))  # every page first: a reconnection (``calling``) starts the listing again
    print(f"{'RUN':<34} {'TASK':<20} {'STATE':<10} {'TRIALS':>17}  {'OWNER':<12} CREATED")
    for status in runs:
        state = runs_pb2.RunState.Name(status.state)[len("RUN_STATE_"):].lower()
        trials = f"{status.trials_received}/{status.trials_planned}"
        created = (status.created_at if status.HasField("created_at") else status.submitted_at).ToDatetime()
        print(f"{status.run_id:<34} {status.task or '-':<20} {state:<10} {trials:>17}  {status.owner or '-':<12} "
              f"{created.strftime('%Y-%m-%d %H:%M:%S UTC')}")
    print(f"{len(runs)} run(s)")
    return 0


def run(args) -> int:
    import grpc

    from mfscore.services.commands.cluster_config import resolve

    if bool(args.list) == bool(args.run_id):
        raise MfscoreError("name one run, or --list the runs you may see")
    config = resolve(args.cluster)
    try:
        if args.list:
            return calling(config, print_runs, Reconnecting(config.aggregator_address, "(listing)"))
        fetched = calling(config, lambda stub: fetch_and_write(stub, args.run_id, os.path.join(args.out_dir, ""),
                                                               out=sys.stderr if args.json else None),
                          Reconnecting(config.aggregator_address, args.run_id))
    except grpc.RpcError as error:
        print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
        return 1
    show_results(fetched.results, fetched.run, json_output=args.json, quiet=args.quiet)
    if not (args.json or args.quiet):
        show_submission(fetched.run)
    if args.html_page and fetched.results is not None:
        from mfscore.cli.leaderboard import results_file
        from mfscore.reports.html_report import write_run_report

        print(f"HTML report: {write_run_report(results_file(args.out_dir))}", file=sys.stderr)
    return fetched.status


def fetch_run(run_id: str, out_dir: str, cluster: str | None) -> None:
    """A finished run's report files written into ``out_dir`` (what ``mfscore compare`` fetches a cluster run
    with), its stdout lines on stderr."""
    import grpc

    from mfscore.services.commands.cluster_config import resolve

    config = resolve(cluster)
    try:
        calling(config, lambda stub: fetch_and_write(stub, run_id, os.path.join(out_dir, ""), out=sys.stderr),
                Reconnecting(config.aggregator_address, run_id))
    except grpc.RpcError as error:
        raise MfscoreError(f"run {run_id}: {error.details() or error.code().name}") from None
