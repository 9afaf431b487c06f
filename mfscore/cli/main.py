"""The ``mfscore`` command: one entry point, a sub-command per registered task and per validator.

The task commands derive from the task registry (``mfscore.tasks.REGISTRY``): the task ``name`` is the
sub-command ``name``, whose module ``mfscore.cli.<module_name>`` maps MediScore's flags to the task's
options and declares

    HELP, DESCRIPTION     the sub-command's one-line help and its description
    add_arguments(p)      the flags, most made from the options types' declarations (``mfscore.cli.arguments``:
                          argparse parses them; the options type checks their values)
    options(args)         a ``TaskRun``: the task's options, where the reports go, how many processes

and the local runner does the rest. The validators, which are not tasks, are listed in ``VALIDATORS``, and the
other local commands that are not tasks (``leaderboard``, ``compare``, ``report-html``, ``sample-data``) in
``OTHER_COMMANDS``; each module's ``add_parser`` adds its sub-command.
The cluster commands (serve, submit, local-cluster, report, cancel, delete) come from the ``mfscore.commands`` entry
point of the ``cluster`` extra, so this module never imports them; without that extra, naming one of
them says what to install (``CLUSTER_COMMANDS``). Nothing heavy is imported before the arguments are
read: only the named task command's flags are made, and its options types are light to import. ``--help`` and
``--version`` without a command (and ``mfscore`` alone) import no command module: the list of commands is made from
``COMMAND_HELP``, each command's one-line help, which the tests hold equal to the commands' own. A Ctrl-C ends a
command with one line and exit status 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
from functools import partial

from mfscore import __version__, tasks
from mfscore.errors import Interrupted, MfscoreError

COMMANDS_ENTRY_POINT = "mfscore.commands"
CLUSTER_ENTRY = "mfscore.services.commands:add_parsers"  # this project's entry point: COMMAND_HELP has its commands
VALIDATORS = ("validate", "validate_provenance")  # modules of the commands that are not tasks
OTHER_COMMANDS = ("leaderboard", "compare", "report_html", "sample_data")  # the other local commands
# Every command's one-line help, in the order --help lists them (tasks, validators, other local commands, cluster):
# what the command's own module declares, copied so that --help imports none (tests/unit/test_api_detection_usability).
COMMAND_HELP = {
    "detection": "score detection confidence scores (DetectionScorer-compatible)",
    "mask": "score image manipulation masks (MaskScorer-compatible)",
    "video-temporal": "score video temporal localization (VideoTemporalLocalizationScorer-compatible)",
    "video-spatial": "score spatial-temporal video masks (VideoSpatialLocalizationScorer-compatible)",
    "provenance-filtering": "score provenance filtering (ProvenanceFilteringScorer-compatible)",
    "provenance-graph": "score provenance graphs (ProvenanceGraphBuildingScorer-compatible)",
    "validate": "validate a detection/localization submission (validator.py-compatible)",
    "validate-provenance": "validate a provenance submission (ProvenanceValidator-compatible)",
    "leaderboard": "rank local runs of one task by its primary metric, with confidence intervals",
    "compare": "compare runs of one task: leaderboard, overlaid ROC/DET, per-query table, paired bootstrap tests",
    "report-html": ("write one self-contained HTML page of a run: provenance, headline, tables, plots, visuals, "
                    "glossary"),
    "sample-data": "write a task's sample data to DIR and print the command that scores it",
    "serve": "run one service of the distributed mode (gRPC + NATS JetStream + S3)",
    "local-cluster": "start, stop or inspect a cluster on this machine",
    "submit": "score on a cluster: the embedded command's options, the same report files",
    "report": "fetch the report files of a run scored on a cluster",
    "cancel": "stop a run on the cluster that has not ended",
    "delete": "remove a run that has ended from the cluster, with its reports",
    "dataset": "register reference data on a cluster once; list, show, release, delete it",
    "campaign": "an evaluation campaign on a cluster: create, show, list, close it",
    "dead-letters": "read the jobs the cluster's scorers gave up on, and purge them (operator)",
}
# The cluster commands and the extras they need: named without them installed, a command says what to install.
CLUSTER_COMMANDS = {"serve": "cluster", "submit": "cluster", "report": "cluster", "cancel": "cluster",
                    "delete": "cluster", "dataset": "cluster", "campaign": "cluster", "dead-letters": "cluster",
                    "local-cluster": "cluster,local"}
INTERRUPTED = 130  # a Ctrl-C: the shell's status for a command ended by SIGINT
# numpy's OpenBLAS starts a thread per core as it is imported (about 0.05 CPU s a process, measured); no command
# does floating-point linear algebra that threads would speed up. A value the user set is kept.
SINGLE_BLAS_THREAD = "1"


def task_command(name: str):
    """The command-line module of the registered task ``name`` (``mfscore.cli.<module_name>``)."""
    return importlib.import_module(f"mfscore.cli.{tasks.module_name(name)}")


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(prog="mfscore",
                                     description="Media-forensics evaluation scoring (MediScore-compatible).")
    parser.add_argument("--version", action="version", version=f"mfscore {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="<command>")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv``, a task command's flags only if ``argv`` names it (making them
    imports its options types), and if ``argv`` names a built-in command, the entry points are not read."""
    from mfscore.cli.arguments import add_results_arguments

    def add_task(name: str, with_flags: bool) -> None:
        command = task_command(name)
        p = subparsers.add_parser(name, help=command.HELP, description=command.DESCRIPTION)
        if with_flags:
            command.add_arguments(p)
            add_results_arguments(p)
        p.set_defaults(task_name=name, task_options=command.options)

    parser, subparsers = _top_parser()
    named = None if argv is None else _command(argv)
    if named in tasks.names():  # a task's run: the other commands by name and help only (their modules not imported)
        for name in (*tasks.names(), *(_command_name(module) for module in VALIDATORS + OTHER_COMMANDS)):
            if name != named:
                subparsers.add_parser(name, help=COMMAND_HELP[name])
        add_task(named, with_flags=True)
        return parser
    for name in tasks.names():
        add_task(name, with_flags=argv is None)
    for module in VALIDATORS + OTHER_COMMANDS:
        importlib.import_module(f"mfscore.cli.{module}").add_parser(subparsers)
    if argv is None or not _built_in(argv, subparsers.choices):
        from importlib.metadata import entry_points  # about 30 ms; only for the cluster commands

        for entry in entry_points(group=COMMANDS_ENTRY_POINT):
            entry.load()(subparsers)
        _say_if_cluster_missing(parser, subparsers)
    return parser


def summary_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``mfscore`` without a command (``--help``, ``--version``): every command by its name and
    ``COMMAND_HELP``, without its flags, so no command module is imported. Its help is ``build_parser()``'s; given
    an ``argv`` that asks for the version, the entry points are not read, as there.

    The cluster commands are listed when this project's entry point would add them: when its module (the registry,
    not a command module) finds the modules they need (its ``CLUSTER_MODULES``). Another entry point, or this one
    without that list, is loaded and called as ``build_parser`` does.
    """
    parser, subparsers = _top_parser()
    for name in (*tasks.names(), *(_command_name(module) for module in VALIDATORS + OTHER_COMMANDS)):
        subparsers.add_parser(name, help=COMMAND_HELP[name])
    if argv is not None and _built_in(argv, subparsers.choices):
        return parser
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_ENTRY_POINT):
        needed = getattr(importlib.import_module(entry.module), "CLUSTER_MODULES", None)
        if entry.value != CLUSTER_ENTRY or needed is None:
            entry.load()(subparsers)
        elif _all_found(needed):
            for name in (name for name in COMMAND_HELP if name in CLUSTER_COMMANDS):
                subparsers.add_parser(name, help=COMMAND_HELP[name])
    _say_if_cluster_missing(parser, subparsers)
    return parser


def _command_name(module: str) -> str:
    """The sub-command of a local command's module (``validate_provenance``: ``validate-provenance``)."""
    return module.replace("_", "-")


def _all_found(modules) -> bool:
    from importlib.util import find_spec

    return all(find_spec(name) for name in modules)


def _say_if_cluster_missing(parser: argparse.ArgumentParser, subparsers: argparse._SubParsersAction) -> None:
    if not set(CLUSTER_COMMANDS) <= set(subparsers.choices):
        parser.epilog = ("The distributed mode (serve, submit, report, cancel, delete, dataset, local-cluster) is "
                         "not installed: pip install 'mfscore[cluster]'.")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def command_names() -> tuple[str, ...]:
    """Every sub-command: the tasks' (in registry order), the validators', the other local commands', and the
    cluster's when installed."""
    return tuple(_subparsers(build_parser()).choices)


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first argument that is not an option: ``mfscore`` itself has only options)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _built_in(argv: list[str], commands) -> bool:
    """Whether ``argv`` asks for a built-in command or the version (so the cluster commands need not be loaded)."""
    first = _command(argv)
    return first in commands or (first is None and "--version" in argv)


def missing_cluster_command(argv: list[str], parser: argparse.ArgumentParser) -> str | None:
    """The sentence for a cluster command named while the extra it needs is not installed, or None."""
    command = _command(argv)
    if command not in CLUSTER_COMMANDS or command in _subparsers(parser).choices:
        return None
    return (f"'mfscore {command}' is part of the distributed mode, which this installation lacks: "
            f"pip install 'mfscore[{CLUSTER_COMMANDS[command]}]'")


def run_task(args, *, own_process: bool = False) -> int:
    """Run a task's command on local files (the embedded mode). ``own_process``: the command is this process's
    own, not a caller's ``main([...])``, so once the task's modules are imported the garbage collector is set for
    the run (``run.collector``)."""
    from mfscore.run.local import run_local

    started = time.perf_counter()
    run = args.task_options(args)
    if own_process:
        from mfscore.run.collector import collect_less

        collect_less()
    lines = run_local(args.task_name, run.options, run.out_root, processes=run.processes,
                      out=sys.stderr if args.json else sys.stdout, progress=not args.quiet)
    if run.verbose:
        print(f"mfscore: done in {time.perf_counter() - started:.2f} s; Ending", file=sys.stderr)
    from mfscore.reports.summary_table import show_results

    show_results(lines.results, lines.record.to_dict() if lines.record is not None else None,
                 json_output=args.json, quiet=args.quiet)
    if args.html_page:
        from mfscore.cli.report_html import write_after_run

        write_after_run(run.out_root)
    return lines.status


def main(argv: list[str] | None = None) -> int:
    """The ``mfscore`` command: its exit status (argparse exits 2 itself on a usage error)."""
    program = argv is None  # the process's own command line, not a caller's list (a test, the demo)
    argv = sys.argv[1:] if argv is None else argv
    if program:  # before numpy is imported; the command's worker processes inherit it
        os.environ.setdefault("OPENBLAS_NUM_THREADS", SINGLE_BLAS_THREAD)
    try:
        return _main(argv, own_process=program)
    except KeyboardInterrupt as interrupt:
        what = interrupt.sentence() if isinstance(interrupt, Interrupted) else "no report was written"
        print(f"mfscore: interrupted; {what}", file=sys.stderr)
        if program:  # a second Ctrl-C (while threads finish the jobs they hold) ends the process at once
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        return INTERRUPTED


def _main(argv: list[str], *, own_process: bool) -> int:
    parser = summary_parser(argv) if _command(argv) is None else build_parser(argv)
    missing = missing_cluster_command(argv, parser)
    if missing is not None:
        print(f"mfscore: error: {missing}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    command = (partial(run_task, own_process=own_process) if getattr(args, "task_options", None)
               else getattr(args, "run", None))
    if command is None:
        parser.print_help()
        return 2
    try:
        return command(args)
    except MfscoreError as exc:
        print(f"mfscore: error: {exc.sentence()}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: still one sentence, traceback with -v
        if getattr(args, "verbose", False):
            import traceback

            traceback.print_exc()
        print(f"mfscore: internal error: {type(exc).__name__}: {exc} (no report was written; rerun with -v for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
