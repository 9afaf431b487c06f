"""Argument types shared by the commands: bounded numbers, lists of rates."""

from __future__ import annotations

import argparse


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
