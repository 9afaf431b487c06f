"""The ``mfscore`` command: one entry point, a sub-command per registered task and per validator.

The task commands derive from the task registry (``mfscore.tasks.REGISTRY``): the task ``name`` is the
sub-command ``name``, whose module ``mfscore.cli.<module_name>`` maps MediScore's flags to the task's
options and declares

    HELP, DESCRIPTION     the sub-command's one-line help and its description
    add_arguments(p)      the flags, most made from the options types' declarations (``mfscore.cli.arguments``:
                          argparse parses them; the options type checks their values)
    options(args)         a ``TaskRun``: the task's options, where the reports go, how many processes

and the local runner does the rest. The validators, which are not tasks, are listed in ``VALIDATORS``, and the
other local commands that are not tasks (``leaderboard``, ``compare``, ``report-html``) in ``OTHER_COMMANDS``;
each module's ``add_parser`` adds its sub-command.
The cluster commands (serve, submit, local-cluster, report, cancel, delete) come from the ``mfscore.commands`` entry
point of the ``cluster`` extra, so this module never imports them; without that extra, naming one of
them says what to install (``CLUSTER_COMMANDS``). Nothing heavy is imported before the arguments are
read: only the named task command's flags are made, and its options types are light to import. A Ctrl-C ends a
command with one line and exit status 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
import traceback
from functools import partial

from mfscore import __version__, tasks
from mfscore.cli import compare, leaderboard, report_html, validate, validate_provenance
from mfscore.cli.arguments import add_results_arguments
from mfscore.errors import Interrupted, MfscoreError

COMMANDS_ENTRY_POINT = "mfscore.commands"
VALIDATORS = (validate, validate_provenance)  # the commands that are not tasks
OTHER_COMMANDS = (leaderboard, compare, report_html)  # the other local commands: reading runs' results
# The cluster commands and the extras they need: named without them installed, a command says what to install.
CLUSTER_COMMANDS = {"serve": "cluster", "submit": "cluster", "report": "cluster", "cancel": "cluster",
                    "delete": "cluster", "dataset": "cluster", "campaign": "cluster", "local-cluster": "cluster,local"}
INTERRUPTED = 130  # a Ctrl-C: the shell's status for a command ended by SIGINT
# numpy's OpenBLAS starts a thread per core as it is imported (about 0.05 CPU s a process, measured); no command
# does floating-point linear algebra that threads would speed up. A value the user set is kept.
SINGLE_BLAS_THREAD = "1"


def task_command(name: str):
    """The command-line module of the registered task ``name`` (``mfscore.cli.<module_name>``)."""
    return importlib.import_module(f"mfscore.cli.{tasks.module_name(name)}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv``, a task command's flags only if ``argv`` names it (making them
    imports its options types), and if ``argv`` names a built-in command, the entry points are not read."""
    parser = argparse.ArgumentParser(prog="mfscore", description="Media-forensics evaluation scoring (MediScore-compatible).")
    parser.add_argument("--version", action="version", version=f"mfscore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name in tasks.names():
        command = task_command(name)
        p = subparsers.add_parser(name, help=command.HELP, description=command.DESCRIPTION)
        if argv is None or _command(argv) == name:
            command.add_arguments(p)
            add_results_arguments(p)
        p.set_defaults(task_name=name, task_options=command.options)
    for module in VALIDATORS + OTHER_COMMANDS:
        module.add_parser(subparsers)
    if argv is None or not _built_in(argv, subparsers.choices):
        from importlib.metadata import entry_points  # about 50 ms; only for the cluster commands

        for entry in entry_points(group=COMMANDS_ENTRY_POINT):
            entry.load()(subparsers)
        if not set(CLUSTER_COMMANDS) <= set(subparsers.choices):
            parser.epilog = ("The distributed mode (serve, submit, report, cancel, delete, dataset, local-cluster) is "
                             "not installed: pip install 'mfscore[cluster]'.")
    return parser


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
    lines = run_local(tasks.get(args.task_name), run.options, run.out_root, processes=run.processes,
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
    parser = build_parser(argv)
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
            traceback.print_exc()
        print(f"mfscore: internal error: {type(exc).__name__}: {exc} (no report was written; rerun with -v for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
