"""The ``mfscore`` command: one entry point, a sub-command per registered task and per validator.

The task commands derive from the task registry (``mfscore.tasks.REGISTRY``): the task ``name`` is the
sub-command ``name``, whose module ``mfscore.cli.<module_name>`` maps MediScore's flags to the task's
options and declares

    HELP, DESCRIPTION     the sub-command's one-line help and its description
    add_arguments(p)      the flags (argparse parses them; the options type checks their values)
    options(args)         a ``TaskRun``: the task's options, where the reports go, how many processes

and the local runner does the rest. The validators, which are not tasks, are listed in ``VALIDATORS``.
The cluster commands (serve, submit, local-cluster, report) come from the ``mfscore.commands`` entry
point of the ``cluster`` extra, so this module never imports them. Nothing heavy is imported before the
arguments are read.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback

from mfscore import __version__, tasks
from mfscore.cli import validate, validate_provenance
from mfscore.errors import MfscoreError

COMMANDS_ENTRY_POINT = "mfscore.commands"
VALIDATORS = (validate, validate_provenance)  # the commands that are not tasks


def task_command(name: str):
    """The command-line module of the registered task ``name`` (``mfscore.cli.<module_name>``)."""
    return importlib.import_module(f"mfscore.cli.{tasks.module_name(name)}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv`` naming a built-in command, the entry points are not read."""
    parser = argparse.ArgumentParser(prog="mfscore", description="Media-forensics evaluation scoring (MediScore-compatible).")
    parser.add_argument("--version", action="version", version=f"mfscore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name in tasks.names():
        command = task_command(name)
        p = subparsers.add_parser(name, help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(p)
        p.set_defaults(task_name=name, task_options=command.options)
    for module in VALIDATORS:
        module.add_parser(subparsers)
    if argv is None or not _built_in(argv, subparsers.choices):
        from importlib.metadata import entry_points  # about 50 ms; only for the cluster commands

        for entry in entry_points(group=COMMANDS_ENTRY_POINT):
            entry.load()(subparsers)
    return parser


def command_names() -> tuple[str, ...]:
    """Every sub-command: the tasks' (in registry order), the validators', and the cluster's when installed."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return tuple(subparsers.choices)


def _built_in(argv: list[str], commands) -> bool:
    """Whether ``argv`` asks for a built-in command or the version (so the cluster commands need not be loaded)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first in commands or (first is None and "--version" in argv)


def run_task(args) -> int:
    """Run a task's command on local files (the embedded mode)."""
    from mfscore.run.local import run_local

    started = time.perf_counter()
    run = args.task_options(args)
    status = run_local(tasks.get(args.task_name), run.options, run.out_root, processes=run.processes)
    if run.verbose:
        print(f"mfscore: done in {time.perf_counter() - started:.2f} s; Ending", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    command = run_task if getattr(args, "task_options", None) else getattr(args, "run", None)
    if command is None:
        parser.print_help()
        return 2
    try:
        return command(args)
    except MfscoreError as exc:
        print(f"mfscore: error: {exc.sentence()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mfscore: interrupted; no report was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: still one sentence, traceback with -v
        if getattr(args, "verbose", False):
            traceback.print_exc()
        print(f"mfscore: internal error: {type(exc).__name__}: {exc} (no report was written; rerun with -v for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
