"""Bootstrap confidence intervals for AUC, AUC@FAR and CDR@FAR (spec detection.md §6.6).

MediScore draws 500 resamples of the scored rows with ``RandomState(77)`` and re-sorts each one.
mfscore makes the same draws but sorts once: a resample is a vector of draw counts over the
pre-sorted trials, and every ROC quantity is a cumulative sum of those counts, so the numbers are
identical and each replicate costs a few linear passes instead of a sort.

A replicate that draws a single class has an undefined AUC or CDR (NaN). MediScore sorts the 500
values with Python's list sort, where NaN compares false with everything, so where NaNs land is an
accident of the sort; mfscore leaves undefined replicates out and takes the quantile positions
among the defined ones. ``mediscore_compat`` reproduces MediScore's ordering.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_from_counts

N_RESAMPLES = 500
SEED = 77


@dataclass(frozen=True)
class Interval:
    lower: float | int
    upper: float | int


@dataclass(frozen=True)
class BootstrapIntervals:
    auc: Interval
    partial_auc: Interval
    cdr: Interval


def _round_half_up(x: float, digits: int) -> float:
    return float(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def quantile_positions(ci_level: float, n: int) -> tuple[int, int]:
    """0-based positions of the interval bounds in the sorted replicate values (spec §6.6)."""
    lower = _round_half_up((1 - ci_level) / 2, 3)
    upper = _round_half_up(1 - lower, 3)
    return int(lower * n), int(upper * n)


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED):
    """Draw counts of each row (table order) for each replicate: MediScore's ``rng.choice(rows, n)``."""
    rng = np.random.RandomState(seed)
    for _ in range(n_resamples):
        yield np.bincount(rng.randint(0, n, size=n), minlength=n)


def replicate_metrics(scores: np.ndarray, labels: np.ndarray, far_stop: float,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> tuple[list, list, list]:
    """AUC, AUC@FAR and CDR@FAR of every replicate, in draw order (ints kept as MediScore's ``0``)."""
    trials = SortedTrials.from_arrays(scores, labels)
    aucs, paucs, cdrs = [], [], []
    for counts in resample_counts(len(scores), n_resamples, seed):
        roc = roc_from_counts(*trials.counts(counts[trials.order]))
        aucs.append(auc(roc))
        paucs.append(partial_auc(roc, far_stop))
        cdrs.append(cdr_at_far(roc, far_stop))
    return aucs, paucs, cdrs


def _interval(values: list, ci_level: float, mediscore_compat: bool) -> Interval:
    if mediscore_compat:
        ordered = sorted(values)
    else:
        ordered = sorted(v for v in values if v == v)
    if not ordered:
        return Interval(float("nan"), float("nan"))
    lo, hi = quantile_positions(ci_level, len(values) if mediscore_compat else len(ordered))
    return Interval(ordered[lo], ordered[min(hi, len(ordered) - 1)])


def bootstrap_intervals(scores: np.ndarray, labels: np.ndarray, far_stop: float, ci_level: float, *,
                        n_resamples: int = N_RESAMPLES, seed: int = SEED,
                        mediscore_compat: bool = False) -> BootstrapIntervals:
    """Percentile intervals of the three metrics over bootstrap replicates of the rows."""
    aucs, paucs, cdrs = replicate_metrics(scores, labels, far_stop, n_resamples, seed)
    return BootstrapIntervals(
        auc=_interval(aucs, ci_level, mediscore_compat),
        partial_auc=_interval(paucs, ci_level, mediscore_compat),
        cdr=_interval(cdrs, ci_level, mediscore_compat),
    )
