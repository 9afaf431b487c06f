"""LLR calibration diagnostics: Cllr and minCllr.

NOT part of the SemaFor evaluation-3 plan: the plan names calibration as a goal but defines no
metric (docs/metrics.md §1.8). These are an extension and must be reported as such.

Scores are natural-log LLRs (higher = more support for the target); labels are 1 target /
0 non-target. Both functions return NaN when a class is missing.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from mfscore.detection.semafor import _trials

__all__ = ["cllr", "min_cllr"]

_LN2 = np.log(2.0)


# Extension, not in the SemaFor plan (docs/metrics.md §1.8): Cllr
def cllr(llrs, labels) -> float:
    """½·[mean_tgt log2(1 + e^-llr) + mean_non log2(1 + e^llr)], computed with ``logaddexp``."""
    s, y = _trials(llrs, labels)
    tgt, non = s[y == 1], s[y == 0]
    if tgt.size == 0 or non.size == 0:
        return float("nan")
    c_tgt = np.mean(np.logaddexp(0.0, -tgt))
    c_non = np.mean(np.logaddexp(0.0, non))
    return float((c_tgt + c_non) / (2.0 * _LN2))


# Extension, not in the SemaFor plan (docs/metrics.md §1.8): minCllr
def min_cllr(llrs, labels) -> float:
    """Cllr after the optimal monotone recalibration (PAV) of the scores.

    Tied scores are pooled into one block first, so they share a posterior. PAV (scipy's
    ``isotonic_regression``, weighted by block size) gives P(target | score) per pool; the LLR is
    its log odds minus the empirical log prior odds, log(t·N_non) - log(n·N_tgt) for a pool of t
    targets and n non-targets. A pool with no non-targets gets LLR +inf and costs 0 (and
    symmetrically), so only the class actually present in a pool is charged.
    """
    s, y = _trials(llrs, labels)
    n_tgt = int(np.count_nonzero(y == 1))
    n_non = y.size - n_tgt
    if n_tgt == 0 or n_non == 0:
        return float("nan")
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    starts = np.flatnonzero(np.r_[True, np.diff(s) != 0])  # one block per distinct score
    size = np.diff(np.r_[starts, s.size]).astype(np.float64)
    tgt = np.add.reduceat(y, starts).astype(np.float64)
    pools = isotonic_regression(tgt / size, weights=size, increasing=True).blocks[:-1]
    t = np.add.reduceat(tgt, pools)  # targets per PAV pool (exact counts, not the float mean)
    n = np.add.reduceat(size, pools) - t
    with np.errstate(divide="ignore"):
        llr = np.log(t * n_non) - np.log(n * n_tgt)  # ±inf where a pool holds one class only
    cost_tgt = np.where(t > 0, t * np.logaddexp(0.0, -np.where(t > 0, llr, 0.0)), 0.0)
    cost_non = np.where(n > 0, n * np.logaddexp(0.0, np.where(n > 0, llr, 0.0)), 0.0)
    return float((cost_tgt.sum() / n_tgt + cost_non.sum() / n_non) / (2.0 * _LN2))
