"""A run's options: the embedded command's own parser, with the input paths moved into the uploaded layout.

Each task declares its path options (``PATH_OPTIONS``): which options name input files or directories,
and how they point at the copies under the run's input directory. ``submit`` uploads every file under
the key that layout gives it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass

from mfscore.cli.main import build_parser
from mfscore.errors import InputFileError, OptionError
from services.wire import runs_pb2

PROVENANCE_TASKS = ("provenance-filtering", "provenance-graph")
# Provenance: -R and -S are uploaded as these directories (journals, system JSONs), each table as this file.
PROVENANCE_DIRECTORIES = {"reference_dir": "ref", "system_dir": "sys"}
PROVENANCE_TABLES = {"index_file": "tables/index.csv", "reference_file": "tables/reference.csv",
                     "node_file": "tables/node.csv", "world_file": "tables/world.csv",
                     "system_output_file": "tables/system.csv"}


def _reference_and_system_dirs(args, input_dir: str, inputs: runs_pb2.InputLocation) -> None:
    """--refDir, --sysDir and -s name the copies; -r and -x stay relative to --refDir, inside the upload."""
    args.refDir = _confined(input_dir, inputs.reference_dir, "the reference directory")
    args.sysDir = _confined(input_dir, inputs.system_dir, "the system output directory")
    args.inSys = inputs.system
    for directory, name in (("refDir", "inRef"), ("refDir", "inIndex"), ("sysDir", "inSys")):
        _confined(input_dir, os.path.join(getattr(args, directory), getattr(args, name)), f"the {name} path")


def _provenance_layout(args, input_dir: str, inputs: runs_pb2.InputLocation) -> None:
    for dest, key in {**PROVENANCE_DIRECTORIES, **PROVENANCE_TABLES}.items():
        setattr(args, dest, _confined(input_dir, key, f"the {dest} path"))


@dataclass(frozen=True)
class PathOptions:
    dests: tuple[str, ...]   # the options (argparse dests) whose value becomes the path of a copy
    relocate: Callable[[argparse.Namespace, str, runs_pb2.InputLocation], None]


_REFERENCE_AND_SYSTEM = PathOptions(("refDir", "sysDir"), _reference_and_system_dirs)
_PROVENANCE = PathOptions((*PROVENANCE_DIRECTORIES, *PROVENANCE_TABLES), _provenance_layout)
PATH_OPTIONS = {"detection": _REFERENCE_AND_SYSTEM, "mask": _REFERENCE_AND_SYSTEM,
                **dict.fromkeys(PROVENANCE_TASKS, _PROVENANCE)}
TASKS = tuple(PATH_OPTIONS)


def parse_arguments(task: str, arguments: list[str], input_dir: str,
                    inputs: runs_pb2.InputLocation) -> argparse.Namespace:
    """Parse ``mfscore <task> <arguments>``; then the task's path options name the copies under ``input_dir``.

    ``args.as_given`` keeps each moved option's value as the client gave it (messages name those paths).
    """
    if task not in TASKS:
        raise OptionError(f"the cluster does not run {task!r} yet; it runs {', '.join(TASKS)}")
    try:
        args = build_parser().parse_args([task, *arguments])
    except SystemExit:
        raise OptionError(f"the options {' '.join(arguments)!r} do not parse as 'mfscore {task}' options") from None
    options = PATH_OPTIONS[task]
    args.as_given = {dest: getattr(args, dest) for dest in options.dests}
    options.relocate(args, input_dir, inputs)
    return args


def as_given(args: argparse.Namespace, text: str) -> str:
    """``text`` with each moved path (a copy's, or a file below a moved directory) named as the client gave it."""
    moved = sorted(((getattr(args, dest), given) for dest, given in args.as_given.items()),
                   key=lambda pair: len(pair[0]), reverse=True)
    for copy, given in moved:
        text = text.replace(copy + os.sep, given.rstrip(os.sep) + os.sep).replace(copy, given)
    return text


def _confined(root: str, path: str, what: str) -> str:
    joined = os.path.normpath(os.path.join(root, path))
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(joined)]) != real_root:
        raise OptionError(f"{what} {path!r} leaves the run's uploaded inputs")
    return joined


def key_under(root: str, path: str, what: str) -> str:
    """The '/'-separated name of ``path`` relative to ``root``; a path outside ``root`` cannot be uploaded."""
    relative = os.path.relpath(os.path.normpath(path), root)
    if relative.split(os.sep)[0] == os.pardir or os.path.isabs(relative):
        raise InputFileError(f"the {what} {path} is outside {root}; the cluster receives only files under it")
    return relative.replace(os.sep, "/")
