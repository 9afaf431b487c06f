"""``mfscore submit <task> <the embedded command's options>``: the same run, scored by a cluster.

The command's flags become the task's options exactly as for the embedded command, and the task is
planned here first, so bad input fails with the embedded command's sentence before any upload.
Then the aggregator creates a run (``--dataset NAME@VERSION``: scoring against a dataset registered on the
cluster), every file the run reads (the tables, and each job's masks, HDF5 or JSON), named
``<root>/...``, one folder per input directory the task names (``ref``, ``sys``, ...), is declared to it
and those it lacks are streamed (``upload``: the client holds no object-store key; a file the caller
uploaded before, or that the dataset holds, is not sent again; with a dataset, a reference file absent
here is taken from it), the run is submitted, a progress bar follows ``WatchRun``, and the reports,
checked against the digests the aggregator recorded, land where the embedded command would have written
them.

With ``--package DIR`` (``run_package``) the client holds no reference: the package's name, layout and description
are checked here, every file of it is sent (``package/<path in it>``) with the task's options, whose other input paths
name files of the dataset, and the aggregator plans the run against the dataset (docs/release.md "Submitting a
package"); the reports are what the dataset's release policy gives this caller.

Interrupted (Ctrl-C), it says in one line what became of the run and how to reach it: created but not
submitted (the aggregator deletes it after a day), going on on the cluster, or done but not fetched; with
the ``mfscore report`` commands that show it and fetch its files.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import sys

from mfscore.errors import Interrupted, MfscoreError


def add_parser(subparsers) -> None:
    from mfscore import tasks
    from mfscore.cli.documentation import see

    p = subparsers.add_parser(
        "submit", help="score on a cluster: the embedded command's options, the same report files",
        description="Upload the run's inputs, score them on the cluster (the one 'mfscore local-cluster up' started, "
                    "or --cluster / $MFSCORE_CLUSTER / $MFSCORE_AGGREGATOR_ADDRESS) and write the reports where "
                    "'mfscore <task>' would. Example: mfscore submit mask --refDir ref -r r.csv -x i.csv -s s.csv -oR out/x")
    p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    p.add_argument("--skip-validation", action="store_true",
                   help="do not run the validator first: score whatever the embedded command would score")
    p.add_argument("--dataset", metavar="NAME@VERSION", default="",
                   help="score against this dataset registered on the cluster ('mfscore dataset register'): its "
                        "files are not uploaded, and the reference files it holds need not be here")
    p.add_argument("--package", metavar="DIR", default="",
                   help="a submission package <SubID>/ (<SubID>.csv, <SubID>.txt, mask/) scored against --dataset, "
                        "planned by the cluster: the reference need not be here, and the task's reference paths "
                        f"name files of the dataset ({see(p, 'release.md')})")
    p.add_argument("--campaign", metavar="C", default="",
                   help=f"submit the package to a campaign's competition ({see(p, 'campaigns.md')}): it names the "
                        "task, dataset and options, so give none")
    p.add_argument("--competition", metavar="X", default="", help="with --campaign: the competition")
    p.add_argument("--out", metavar="PREFIX", default="",
                   help="with --campaign: where the reports go (default <SubID>/<SubID>)")
    p.add_argument("task", nargs="?", choices=tasks.names(), help="the embedded command to run on the cluster")
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="its options, exactly as for 'mfscore <task>'")
    p.set_defaults(run=run)


def run_inputs(task, options, plan=None) -> tuple[list[tuple[str, str]], list[str]]:
    """((local path, key) of every file here the run reads, the keys of the tables), planning the run as the
    embedded command does (bad input fails here, before any upload), unless given its ``plan``."""
    from mfscore.tasks.base import run_files

    return run_files(task, options, plan or task.plan(options))


def absent_reference(task, options, plan, dataset_files: dict) -> list:
    """The DeclaredFiles of the files the run's jobs read under the reference root (``ref``) that are not here but
    are the dataset's (``dataset_files``: its files by their name under it, the reference root)."""
    from mfscore.services.wire import runs_pb2
    from mfscore.tasks.base import key_of

    roots = task.inputs(options).roots
    if "ref" not in roots:
        return []
    known = {}
    for job in plan.jobs:
        for path in task.blobs(job.work).values():
            if path and path not in plan.generated and not os.path.isfile(path):  # planned/...: made here
                key = key_of(path, roots, what=f"the file {path}")
                found = dataset_files.get(key[len("ref/"):]) if key.startswith("ref/") else None
                if found is not None:
                    known[key] = runs_pb2.DeclaredFile(name=key, size=found.size, sha256=found.sha256)
    return list(known.values())


def quiet_grpc_core() -> None:
    """Keep gRPC's C core to errors on stderr, unless ``GRPC_VERBOSITY`` asks for more. grpcio 1.85 logs through
    abseil, whose threshold is INFO until something sets it, and its HTTP/2 transport logs at INFO each GOAWAY with
    an error code (``chttp2_transport.cc ... Got goaway [2] ...``: an aggregator stepping down, a server stopping);
    submit's stderr is the embedded command's. Read when gRPC starts, so set before the first channel."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def run(args) -> int:
    quiet_grpc_core()
    if args.campaign:
        return run_campaign(args)
    if not args.task:
        raise MfscoreError("name the task to run on the cluster ('mfscore submit --help' lists them)")
    if args.package:
        return run_package(args)
    from mfscore import tasks
    from mfscore.cli.main import build_parser
    from mfscore.reports.summary_table import show_results
    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.commands.upload import create_run

    embedded = build_parser([args.task]).parse_args([args.task, *args.arguments])
    task_run = embedded.task_options(embedded)
    task = tasks.get(embedded.task_name)
    plan = task.plan(task_run.options)
    files, tables = run_inputs(task, task_run.options, plan)
    inputs = task.inputs(task_run.options)
    config = resolve(args.cluster)
    known = absent_reference(task, task_run.options, plan, dataset_files(config, args.dataset)) if args.dataset else []
    run_id = create_run(config, args.dataset)
    print(f"mfscore: run {run_id} created", file=sys.stderr)  # in full: what report, cancel and delete take
    reach = Reaching(run_id, task_run.out_root, args.cluster)
    _upload(config, run_id, files, known, inputs.roots, reach, interactive=not embedded.quiet and sys.stderr.isatty())
    spec = _run_spec(task, task_run, inputs, tables, run_id, args)
    fetched = follow_run(config, spec, task_run.out_root, inputs.roots, reach,
                         out=sys.stderr if embedded.json else None, progress=not embedded.quiet)
    show_results(fetched.results, fetched.run, json_output=embedded.json, quiet=embedded.quiet)
    if embedded.html_page:
        from mfscore.cli.report_html import write_after_run

        write_after_run(task_run.out_root)
    return fetched.status


def run_package(args) -> int:
    from mfscore import tasks
    from mfscore.cli.main import build_parser
    from mfscore.codec import encode
    from mfscore.reports.summary_table import show_results
    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.commands.upload import create_run
    from mfscore.services.common.run_layout import PACKAGE, input_prefix
    from mfscore.services.wire import runs_pb2
    from mfscore.validation.package import package_name

    if not args.dataset:
        raise MfscoreError("a package is scored against a dataset on the cluster: name it with --dataset NAME@VERSION")
    task = tasks.get(args.task)
    name = package_name(args.package)
    check_layout(args.package)
    embedded = build_parser([args.task]).parse_args([args.task, *args.arguments,
                                                     *package_flags(task, name, args.arguments)])
    task_run = embedded.task_options(embedded)
    files = package_files(args.package)
    config = resolve(args.cluster)
    run_id = create_run(config, args.dataset)
    print(f"mfscore: run {run_id} created", file=sys.stderr)
    roots = {PACKAGE: args.package}
    reach = Reaching(run_id, task_run.out_root, args.cluster)
    _upload(config, run_id, files, [], roots, reach, interactive=not embedded.quiet and sys.stderr.isatty())
    spec = runs_pb2.RunSpec(task=task.name, options=encode(task_run.options), input_prefix=input_prefix(run_id),
                            output_name=os.path.basename(task_run.out_root), run_id=run_id,
                            submitted_by=os.environ.get("USER", ""), skip_validation=args.skip_validation,
                            dataset=args.dataset, package=name)
    fetched = follow_run(config, spec, task_run.out_root, roots, reach, out=sys.stderr if embedded.json else None,
                         progress=not embedded.quiet)
    show_results(fetched.results, fetched.run, json_output=embedded.json, quiet=embedded.quiet)
    return fetched.status


def run_campaign(args) -> int:
    """``submit --campaign C --competition X --package DIR``: the package scored as the competition says."""
    from mfscore.reports.summary_table import show_results
    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.commands.upload import create_run
    from mfscore.services.common.run_layout import PACKAGE, input_prefix
    from mfscore.services.wire import runs_pb2
    from mfscore.validation.package import package_name

    if not (args.competition and args.package):
        raise MfscoreError("a campaign takes a package: --campaign C --competition X --package DIR")
    if args.dataset or args.task or args.arguments:
        raise MfscoreError("a campaign's competition names the task, the dataset and the options: give none of them")
    name = package_name(args.package)
    check_layout(args.package)
    config = resolve(args.cluster)
    task = competition_task(config, args.campaign, args.competition)
    out_root = args.out or os.path.join(name, name)
    files = package_files(args.package)
    run_id = create_run(config, campaign=args.campaign, competition=args.competition)
    print(f"mfscore: run {run_id} created", file=sys.stderr)
    roots = {PACKAGE: args.package}
    reach = Reaching(run_id, out_root, args.cluster)
    _upload(config, run_id, files, [], roots, reach, interactive=sys.stderr.isatty())
    spec = runs_pb2.RunSpec(task=task, input_prefix=input_prefix(run_id), output_name=os.path.basename(out_root),
                            run_id=run_id, submitted_by=os.environ.get("USER", ""),
                            skip_validation=args.skip_validation, package=name)
    fetched = follow_run(config, spec, out_root, roots, reach)
    show_results(fetched.results, fetched.run, json_output=False, quiet=False)
    return fetched.status


def competition_task(config, campaign: str, competition: str) -> str:
    """The task a campaign's competition scores (GetCampaign)."""
    import json

    import grpc

    from mfscore.services.wire import campaigns_pb2, campaigns_pb2_grpc

    try:
        with config.channel() as channel:
            found = campaigns_pb2_grpc.CampaignServiceStub(channel).GetCampaign(
                campaigns_pb2.GetCampaignRequest(name=campaign), timeout=60).campaign
    except grpc.RpcError as error:
        raise MfscoreError(f"the campaign {campaign}: {error.details() or error.code().name}") from None
    tasks = {c["name"]: c["task"] for c in json.loads(found.json).get("competitions", [])}
    if competition not in tasks:
        raise MfscoreError(f"the campaign {campaign} has no competition {competition!r}; it has "
                           f"{', '.join(sorted(tasks)) or 'none'}")
    return tasks[competition]


def check_layout(directory: str) -> None:
    """The package's name (an MFC2019 SubID), layout and description: its errors on stderr and ``MfscoreError``,
    before anything is sent."""
    from mfscore.validation.options import ValidatorOptions
    from mfscore.validation.package import check_package_layout

    report = check_package_layout(directory, ValidatorOptions(plan="mfc2019"))
    for finding in report.findings:
        print_finding(str(finding.severity), finding.message, finding.file, finding.line)
    if not report.valid:
        raise MfscoreError(f"the package {directory} is not valid ('mfscore validate --package' says more); nothing "
                           "was sent")


def package_flags(task, name: str, arguments: list[str]) -> list[str]:
    """The flags filling the task's package fields (``Task.package_fields``) from the package ``name``; a flag the
    command line gives itself is refused."""
    from mfscore.options import spellings
    from mfscore.services.common.run_layout import PACKAGE
    from mfscore.tasks.base import SYSTEM_OUTPUT

    fields = {field.name: field for field in dataclasses.fields(task.options_type)}
    flags = []
    for field, kind in task.package_fields.items():
        spelled = spellings(fields[field])
        given = next((arg for arg in arguments for flag in spelled if arg == flag or arg.startswith(flag + "=")), None)
        if given is not None:
            raise MfscoreError(f"with --package, {'/'.join(spelled)} is the package's {kind}: leave {given} out")
        flags += [spelled[-1], f"{PACKAGE}/{name}.csv" if kind == SYSTEM_OUTPUT else PACKAGE]
    return flags


def print_finding(severity: str, message: str, file: str | None, line: int | None) -> None:
    """A validation finding on stderr: ``ERROR: message [file, line N]``."""
    where = f" [{file}" + (f", line {line}" if line else "") + "]" if file else ""
    print(f"{severity.upper()}: {message}{where}", file=sys.stderr)


def package_files(directory: str) -> list[tuple[str, str]]:
    """(path, name in the run) of every file in the package, ``package/<path in it>`` (``dataset.tree_files``: a
    symbolic link leading out of the package is refused)."""
    from mfscore.services.commands.dataset import tree_files
    from mfscore.services.common.run_layout import PACKAGE

    return [(path, f"{PACKAGE}/{name}") for path, name in tree_files(directory, what="package file name")]


def _upload(config, run_id: str, files: list[tuple[str, str]], known: list, roots: dict[str, str], reach: Reaching,
            *, interactive: bool) -> None:
    """Send the run's files the cluster lacks; interrupted, say the run was created but will not be scored."""
    from mfscore.services.commands.upload import upload_files

    try:
        sent = upload_files(config, run_id, files, interactive=interactive, known=known)
        if interactive:  # on a terminal only: otherwise stderr is the embedded command's, line for line
            print(f"mfscore: run {run_id[:8]}: {sent.sentence()}", file=sys.stderr)
    except MfscoreError as error:
        raise MfscoreError(localize(error.sentence(), roots)) from None
    except KeyboardInterrupt:
        raise Interrupted(f"run {run_id} was created but not submitted, so nothing will be scored; the cluster "
                          f"deletes it and the inputs sent so far after a day ('{reach.listing}' lists it as "
                          "created)") from None


def _run_spec(task, task_run, inputs, tables: list[str], run_id: str, args):
    """The run as the aggregator takes it (``RunSpec``): the task's options naming files by their key in the upload."""
    from mfscore.codec import encode
    from mfscore.services.common.run_layout import input_prefix
    from mfscore.services.wire import runs_pb2
    from mfscore.tasks.base import relocated

    options = relocated(task_run.options, inputs, {name: name for name in inputs.roots})
    return runs_pb2.RunSpec(task=task.name, options=encode(options), tables=tables, input_prefix=input_prefix(run_id),
                            output_name=os.path.basename(task_run.out_root), run_id=run_id,
                            submitted_by=os.environ.get("USER", ""), skip_validation=args.skip_validation,
                            dataset=args.dataset)


def dataset_files(config, name: str) -> dict:
    """The files of the dataset ``name`` (``name@version``) by their name under it (``dataset.list_files``)."""
    from mfscore.services.commands.dataset import list_files

    return {file.name: file for file in list_files(config, name)}


class Reaching:
    """The commands that show a run, fetch its files later or cancel it (what an interrupted ``submit`` tells)."""

    def __init__(self, run_id: str, out_root: str, cluster: str | None):
        option = ["--cluster", cluster] if cluster else []
        self.listing = shlex.join(["mfscore", "report", "--list", *option])
        self.fetching = shlex.join(["mfscore", "report", run_id, "-o", os.path.dirname(out_root) or ".", *option])
        self.cancelling = shlex.join(["mfscore", "cancel", run_id, *option])


def localize(text: str, roots: dict[str, str]) -> str:
    """Messages from the cluster name files by their key in the upload (``sys/mask/a.png``); name the local file."""
    names = "|".join(re.escape(name) for name in sorted(roots, key=len, reverse=True))
    return re.sub(rf"(?<![\w/.-])({names})/", lambda m: roots[m.group(1)].rstrip("/") + "/", text)


def follow_run(config, spec, out_root: str, roots: dict[str, str], reach: Reaching | None = None, *, out=None,
               progress: bool = True):
    """Submit, watch (with a progress bar unless not ``progress``), and write the reports under ``out_root``'s
    directory (what the command prints for stdout goes to ``out``); the fetched run (``report.Fetched``: exit
    status as the embedded command, results, provenance).
    An aggregator that goes away meanwhile (a restart) is waited for, and the run submitted again (the same run
    id returns the same run): see ``report.watch``. Interrupted, it raises ``Interrupted`` saying where the run
    is and how to fetch it (``reach``)."""
    from mfscore.services.commands.report import Reconnecting

    reach = reach or Reaching(spec.run_id, out_root, None)
    reconnecting = Reconnecting(config.aggregator_address, spec.run_id)
    final = _submit_and_watch(config, spec, reach, reconnecting, interactive=progress and sys.stderr.isatty())
    for line in final.notes:
        print(localize(line, roots), file=sys.stderr)
    _raise_unless_done(final, spec.run_id, roots)
    return _fetch_reports(config, spec.run_id, out_root, roots, reach, reconnecting, out=out)


def _submit_and_watch(config, spec, reach: Reaching, reconnecting, *, interactive: bool):
    """Submit the run and watch it to its end (``report.watch``): its final state."""
    import grpc

    from mfscore.services.commands.report import watch
    from mfscore.services.wire import runs_pb2

    submitted = False

    def submit(stub) -> None:
        nonlocal submitted
        stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=60)
        submitted = True

    try:
        return watch(config, spec.run_id, interactive=interactive, reconnecting=reconnecting, before=submit)
    except grpc.RpcError as error:
        raise MfscoreError(f"the aggregator at {config.aggregator_address} did not take the run: "
                           f"{error.details() or error.code().name}") from None
    except KeyboardInterrupt:
        if not submitted:
            raise Interrupted(f"run {spec.run_id} may not have been submitted: '{reach.listing}' shows whether the "
                              f"cluster took it; if it did, '{reach.fetching}' writes its files once it is done, and "
                              "if not, the cluster deletes it after a day") from None
        raise Interrupted(f"run {spec.run_id} goes on on the cluster: '{reach.listing}' shows its state, "
                          f"'{reach.fetching}' writes its files once it is done, and '{reach.cancelling}' stops "
                          "it") from None


def _raise_unless_done(final, run_id: str, roots: dict[str, str]) -> None:
    """Refuse a run that did not end done: its validation findings on stderr, its message as the error."""
    from mfscore.services.wire import runs_pb2

    if final.state == runs_pb2.RUN_STATE_DONE:
        return
    for finding in final.validation.findings:
        print_finding(finding.severity, finding.message, finding.file, finding.line)
    state = runs_pb2.RunState.Name(final.state)[len("RUN_STATE_"):].lower()
    raise MfscoreError(f"run {run_id} {state}: {localize(final.message, roots)}")


def _fetch_reports(config, run_id: str, out_root: str, roots: dict[str, str], reach: Reaching, reconnecting, *, out):
    """Write the done run's files under ``out_root``'s directory (``report.fetch_and_write``): the fetched run."""
    import grpc

    from mfscore.services.commands.report import calling, fetch_and_write

    try:
        return calling(config, lambda stub: fetch_and_write(stub, run_id, out_root, lambda line: localize(line, roots),
                                                            out=out), reconnecting)
    except KeyboardInterrupt:
        raise Interrupted(f"run {run_id} is done but its files were not written: '{reach.fetching}' writes "
                          "them") from None
    except grpc.RpcError as error:
        raise MfscoreError(f"the aggregator at {config.aggregator_address} did not send the files of run "
                           f"{run_id}: {error.details() or error.code().name}") from None
