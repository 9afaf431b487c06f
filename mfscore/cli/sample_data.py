"""``mfscore sample-data TASK DIR``: a task's generated sample data written under DIR, and the command that scores it.

The data and the command are the task's example (``mfscore.sample_data.examples``), the small run the registry
tests score, so the printed command runs as it is. The generators import numpy and pandas when the command runs,
not when the parser is made.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mfscore import tasks
from mfscore.cli.documentation import see

HELP = "write a task's sample data to DIR and print the command that scores it"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sample-data", help=HELP)
    p.description = ("Write generated MFC-style data for TASK under DIR (a new or empty directory): index, "
                     "reference, masks and system output, and print on stdout the mfscore command that scores it "
                     f"({see(p, 'api.md')}, 'Sample data').")
    p.add_argument("task", choices=tasks.names(), metavar="TASK", help=f"the task: {', '.join(tasks.names())}")
    p.add_argument("directory", metavar="DIR", help="where to write the data (created; must be empty if it exists)")
    p.add_argument("--out", metavar="OUTDIR", help="where the printed command writes its reports (default: DIR/out)")
    p.set_defaults(run=run)


def run(args) -> int:
    from mfscore.errors import OptionError
    from mfscore.sample_data.examples import example_arguments

    directory = Path(args.directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise OptionError("not an empty directory: name a new or empty one for the sample data", option="directory",
                          path=str(directory))
    directory.mkdir(parents=True, exist_ok=True)
    out = Path(args.out) if args.out else directory / "out"
    arguments = example_arguments(args.task, directory, out)
    print(f"mfscore: wrote the {args.task} sample data under {directory}; score it with:", file=sys.stderr)
    print(" ".join(_quoted(word) for word in ["mfscore", args.task, *arguments]))
    return 0


def _quoted(word: str) -> str:
    """``word`` for a POSIX shell, in double quotes where it holds single ones and nothing the shell expands
    there (``-qm "Purpose==['add']"``), else as ``shlex.quote`` gives it."""
    import shlex

    if "'" in word and not set(word) & set('"$`\\!'):
        return f'"{word}"'
    return shlex.quote(word)
