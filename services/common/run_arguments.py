"""A run's options: the embedded command's own parser, with the input paths moved into the uploaded layout."""

from __future__ import annotations

import argparse
import os

from mfscore.cli.main import build_parser
from mfscore.errors import OptionError
from services.wire import runs_pb2

TASKS = ("detection", "mask")


def parse_arguments(task: str, arguments: list[str], input_dir: str,
                    inputs: runs_pb2.InputLocation) -> argparse.Namespace:
    """Parse ``mfscore <task> <arguments>``; then --refDir, --sysDir and -s name the copies under ``input_dir``.

    -r and -x stay relative to --refDir; like every uploaded path they must stay inside the upload.
    """
    if task not in TASKS:
        raise OptionError(f"the cluster does not run {task!r} yet; it runs {', '.join(TASKS)}")
    try:
        args = build_parser().parse_args([task, *arguments])
    except SystemExit:
        raise OptionError(f"the options {' '.join(arguments)!r} do not parse as 'mfscore {task}' options") from None
    args.refDir = _confined(input_dir, inputs.reference_dir, "the reference directory")
    args.sysDir = _confined(input_dir, inputs.system_dir, "the system output directory")
    args.inSys = inputs.system
    for directory, name in (("refDir", "inRef"), ("refDir", "inIndex"), ("sysDir", "inSys")):
        _confined(input_dir, os.path.join(getattr(args, directory), getattr(args, name)), f"the {name} path")
    return args


def _confined(root: str, path: str, what: str) -> str:
    joined = os.path.normpath(os.path.join(root, path))
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(joined)]) != real_root:
        raise OptionError(f"{what} {path!r} leaves the run's uploaded inputs")
    return joined
