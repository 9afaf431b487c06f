"""The ``mfscore`` command: one entry point, a sub-command per task and validator.

A task's command maps MediScore's flags to the task's options (``set_defaults(task_name=...,
task_options=...)``) and the local runner does the rest. The cluster commands (serve, submit,
local-cluster, report) come from the ``mfscore.commands`` entry point of the ``cluster`` extra, so
this module never imports them. Nothing heavy is imported before the arguments are read.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from mfscore import __version__
from mfscore.cli import (
    detection,
    mask,
    provenance_filtering,
    provenance_graph,
    validate,
    validate_provenance,
    video_spatial,
    video_temporal,
)
from mfscore.errors import MfscoreError

COMMANDS_ENTRY_POINT = "mfscore.commands"


COMMANDS = (detection, mask, validate, validate_provenance, provenance_filtering, provenance_graph, video_temporal,
            video_spatial)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv`` naming a built-in command, the entry points are not read."""
    parser = argparse.ArgumentParser(prog="mfscore", description="Media-forensics evaluation scoring (MediScore-compatible).")
    parser.add_argument("--version", action="version", version=f"mfscore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for module in COMMANDS:
        module.add_parser(subparsers)
    if argv is None or not _built_in(argv, subparsers.choices):
        from importlib.metadata import entry_points  # about 50 ms; only for the cluster commands

        for entry in entry_points(group=COMMANDS_ENTRY_POINT):
            entry.load()(subparsers)
    return parser


def _built_in(argv: list[str], commands) -> bool:
    """Whether ``argv`` asks for a built-in command or the version (so the cluster commands need not be loaded)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first in commands or (first is None and "--version" in argv)


def run_task(args) -> int:
    """Run a task's command on local files (the embedded mode)."""
    from mfscore import tasks
    from mfscore.reports import figure_process
    from mfscore.run.local import run_local

    started = time.perf_counter()
    if getattr(args, "draws", None) and args.draws(args):
        figure_process.start()  # before the task's modules load: its imports overlap theirs
    try:
        run = args.task_options(args)
    except BaseException:
        figure_process.abandon()
        raise
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
