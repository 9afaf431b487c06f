"""Rounding to significant digits the way MediScore's mask reports do (docs/masks.md §11).

The number of decimals is ``digits − 1 − floor(log10|x|)``; the value is then rounded half away
from zero on its exact binary value (Python 2's ``round``), or floored with ``truncate``.
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal


def round_significant(x, digits: int, *, truncate: bool = False):
    """``x`` kept to ``digits`` significant digits; non-floats and NaN pass through."""
    if not isinstance(x, float) or not math.isfinite(x):
        return x
    decimals = digits - 1 if x == 0 else digits - 1 - math.floor(math.log10(abs(x)))
    quantum = Decimal(1).scaleb(-decimals)
    mode = ROUND_FLOOR if truncate else ROUND_HALF_UP
    return float(Decimal(x).quantize(quantum, rounding=mode))


def format_cell(value) -> str:
    """A report cell: NaN and None empty, floats by shortest repr, everything else as text."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)
