"""The bootstrap band of a ROC curve (docs/detection.md "Plots"): a pointwise percentile band of the replicates'
ROCs on a fixed grid of false-alarm rates.

Each bootstrap replicate (``mfscore.detection.bootstrap``, the same draws as the intervals) reads its ROC's
detection rate at every rate of ``FAR_GRID`` (``tpr_on_grid``: the drawn curve's, linear between vertices and the
top of a vertical step); at each rate the band runs between the order statistics the intervals take
(``quantile_positions``), among the replicates that drew both classes (``bootstrap.roc_band``). A replicate keeps
``len(FAR_GRID)`` floats, not its ROC, so a million trials cost no more than ten. Each bound is non-decreasing in
the rate, since the k-th smallest of non-decreasing functions is non-decreasing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Every 2.5 % for the ROC's linear axes, and decades below 2 % for a DET's probit axes: 50 rates.
FAR_GRID = np.unique(np.r_[np.linspace(0.0, 1.0, 41), [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.015]])


@dataclass(frozen=True)
class RocBand:
    """The band at each rate of ``far``, and its confidence level."""

    far: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float


def tpr_on_grid(fpr: np.ndarray, tpr: np.ndarray, grid: np.ndarray = FAR_GRID) -> np.ndarray:
    """The ROC's detection rate at each rate of ``grid``: at a vertex's rate the highest vertex there, between two
    vertices the straight line joining them, past the last vertex the line to (1, 1). ``fpr`` is non-decreasing."""
    x = np.r_[0.0, fpr, 1.0]
    y = np.r_[0.0, tpr, 1.0]
    last = np.searchsorted(x, grid, side="right") - 1  # the last vertex at or left of each rate
    nxt = np.minimum(last + 1, x.size - 1)
    span = x[nxt] - x[last]
    share = np.divide(grid - x[last], span, out=np.zeros_like(grid, dtype=np.float64), where=span > 0)
    return y[last] + share * (y[nxt] - y[last])

