"""Argument types shared by the commands: numbers, lists of numbers, and values checked by their options type.

Argparse parses; the options types check the values (``mfscore.options``), wherever the options are made.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_FINDINGS, HARD_MAX_FINDINGS
from mfscore.masks import KERNEL_SHAPES
from mfscore.options import check_field


@dataclass(frozen=True)
class TaskRun:
    """A command's flags as a run of its task: the options, where the reports go, how many processes score
    (None: the runner's default, see ``score_plan``), and whether to close with MediScore's ``-v`` line
    (``done in N s; Ending``)."""

    options: object
    out_root: str
    processes: int | None = None
    verbose: bool = False


def number(text: str) -> float:
    """An argparse type for a number."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def numbers(text: str) -> tuple[float, ...]:
    """An argparse type for comma-separated numbers."""
    return tuple(number(part) for part in text.split(",") if part.strip())


def integer(text: str) -> int:
    """An argparse type for an integer."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


class checked:  # noqa: N801  (used as an argparse type, like int)
    """An argparse type: the text ``parse``d, then refused as the options type refuses the value of its field.

    ``field`` is ``"module:Class.field"``, imported when the flag is parsed (never for ``--help``). The
    range lives in the options type alone (``mfscore.options``); this keeps a flag argparse refused before
    the options type declared its check a usage error (status 2, the reason after the flag).
    """

    def __init__(self, parse: Callable[[str], object], field: str):
        self.parse = parse
        self.field = field

    def resolve(self) -> tuple[type, str]:
        module, _, qualified = self.field.partition(":")
        kind, _, name = qualified.rpartition(".")
        return getattr(importlib.import_module(module), kind), name

    def __call__(self, text: str):
        value = self.parse(text)
        try:
            check_field(*self.resolve(), value)
        except OptionError as error:
            raise argparse.ArgumentTypeError(error.reason) from None
        return value

    def __repr__(self) -> str:  # argparse names the type in some messages
        return getattr(self.parse, "__name__", "value")


ZONES = "mfscore.masks.mask_scoring:ZoneOptions"
kernel_size = {flag: checked(integer, f"{ZONES}.{name}")
               for flag, name in (("--eks", "erode_size"), ("--dks", "dilate_size"), ("--ntdks", "distraction_size"))}
threshold_or_off = checked(integer, "mfscore.masks.scorer:MaskOptions.sbin")  # --sbin: [-1, 255], or -10 for none


def add_noscore_zone_arguments(p: argparse.ArgumentParser) -> None:
    """``--eks --dks --ntdks -k``: the no-score zone kernels of the mask and video mask scorers."""
    p.add_argument("--eks", type=kernel_size["--eks"], default=15, help="erosion kernel size of the boundary no-score zone (default 15)")
    p.add_argument("--dks", type=kernel_size["--dks"], default=11, help="dilation kernel size of the boundary no-score zone (default 11)")
    p.add_argument("--ntdks", type=kernel_size["--ntdks"], default=15, help="dilation kernel size of the distraction no-score zone (default 15)")
    p.add_argument("-k", "--kernel", choices=KERNEL_SHAPES, default="box", help="kernel shape (default box)")


def add_strict_argument(p: argparse.ArgumentParser) -> None:
    """``--strict``: the exit status of the mask and video mask scorers when a mask could not be used."""
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any mask could not be used (default: 0 once the reports are written; each "
                        "unusable mask is one ERROR line, and the last line counts them)")


def add_max_findings_argument(p: argparse.ArgumentParser) -> None:
    """``--max-findings``: how many findings either validator's report lists (the others are counted)."""
    p.add_argument("--max-findings", type=int, default=DEFAULT_MAX_FINDINGS,
                   help=f"findings listed; the others are counted (default {DEFAULT_MAX_FINDINGS}, at most "
                        f"{HARD_MAX_FINDINGS})")


def add_results_arguments(p: argparse.ArgumentParser) -> None:
    """The flags every scorer has for how its results are shown (docs/results.md)."""
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true",
                       help="print the results and the run's provenance as JSON on stdout (every other line goes "
                            "to stderr)")
    shown.add_argument("--quiet", action="store_true", help="no summary table and no progress bar")
    p.add_argument("--html", dest="html_page", action="store_true",
                   help="after the run, write one self-contained HTML page of it beside the results "
                        "(<prefix>_mfscore_report.html, as 'mfscore report-html' does; MediScore's -html, -H and -R "
                        "keep their meaning)")
