"""Argument types shared by the commands: bounded numbers, lists of rates, kernel sizes, thresholds."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from mfscore.masks import KERNEL_SHAPES


@dataclass(frozen=True)
class TaskRun:
    """A command's flags as a run of its task: the options, where the reports go, how many processes score
    (None: the runner's default, see ``score_plan``), and whether to close with MediScore's ``-v`` line
    (``done in N s; Ending``)."""

    options: object
    out_root: str
    processes: int | None = None
    verbose: bool = False


def bounded_float(low: float, high: float, *, inclusive: bool = True):
    """An argparse type for a float in [low, high] (or (low, high))."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        ok = low <= value <= high if inclusive else low < value < high
        if not ok:
            brackets = "[]" if inclusive else "()"
            raise argparse.ArgumentTypeError(f"{value} not in range {brackets[0]}{low}, {high}{brackets[1]}")
        return value
    return parse


def far_list(text: str) -> tuple[float, ...]:
    """Comma-separated false-alarm rates, each in [0, 1]."""
    rate = bounded_float(0.0, 1.0)
    return tuple(rate(part) for part in text.split(",") if part.strip())


def integer(text: str) -> int:
    """An argparse type for an integer."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def odd_size(text: str) -> int:
    """A morphology kernel size: odd, or 0 for none."""
    value = integer(text)
    if value < 0 or (value and value % 2 == 0):
        raise argparse.ArgumentTypeError(f"kernel size {value} is not an odd integer (or 0 to disable)")
    return value


def threshold_or_off(text: str) -> int:
    """A mask threshold in [-1, 255], or -10 for none (``--sbin``)."""
    value = integer(text)
    if value != -10 and not -1 <= value <= 255:
        raise argparse.ArgumentTypeError(f"{value} is not in [-1, 255] (or -10 to disable)")
    return value


def add_noscore_zone_arguments(p: argparse.ArgumentParser) -> None:
    """``--eks --dks --ntdks -k``: the no-score zone kernels of the mask and video mask scorers."""
    p.add_argument("--eks", type=odd_size, default=15, help="erosion kernel size of the boundary no-score zone (default 15)")
    p.add_argument("--dks", type=odd_size, default=11, help="dilation kernel size of the boundary no-score zone (default 11)")
    p.add_argument("--ntdks", type=odd_size, default=15, help="dilation kernel size of the distraction no-score zone (default 15)")
    p.add_argument("-k", "--kernel", choices=KERNEL_SHAPES, default="box", help="kernel shape (default box)")
