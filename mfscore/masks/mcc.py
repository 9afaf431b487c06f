"""The reported MCC of a confusion, exactly (docs/masks.md §6.2), without numpy: the temporal video scorer, whose
counts are frames of intervals, runs without it."""

from __future__ import annotations

import math
from decimal import Decimal


def exact_mcc(tp: int, tn: int, fp: int, fn: int) -> float:
    """MCC with exact integer products and a decimal square root (docs/masks.md §6.2)."""
    n = tp + tn + fp + fn
    if n == 0:
        return math.nan
    if tp + fn in (0, n) or tp + fp in (0, n):
        return 0.0
    numerator = Decimal(tp * tn - fp * fn)
    denominator = Decimal((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)).sqrt()
    return float(numerator / denominator)
