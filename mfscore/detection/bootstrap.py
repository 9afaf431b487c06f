"""Bootstrap confidence intervals for AUC, AUC@FAR and CDR@FAR (spec detection.md §6.6), and for
the SemaFor metrics (``semafor_intervals``: pD@FAR, bACC@EER, pAUC; the same draws).

MediScore draws 500 resamples of the scored rows with ``RandomState(77)`` and re-sorts each one.
mfscore makes the same draws but sorts once: a resample is a vector of draw counts over the
pre-sorted trials, and every ROC quantity is a cumulative sum of those counts, so the numbers are
identical and each replicate costs a few linear passes instead of a sort.

A replicate that draws a single class has no ROC: MediScore still counts it (AUC ``0`` when it drew
only targets, NaN when only non-targets) and sorts the values with Python's list sort, where NaN
compares false with everything, so the bounds depend on where the NaNs happen to land. mfscore
leaves such replicates out and takes the quantile positions among the others;
``mediscore_compat`` reproduces MediScore's values exactly (checkfile test_c4_4).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_from_counts
from mfscore.detection.semafor import (
    PAUC_FAR,
    PLAN_FARS,
    eer_vertex,
    partial_auc_interpolated,
    pd_at_far,
    roc_all_from_counts,
)

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
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, list]:
    """AUC, AUC@FAR and CDR@FAR of every replicate in draw order (MediScore's integer ``0`` kept),
    and whether the replicate drew both classes."""
    trials = SortedTrials.from_arrays(scores, labels)
    out = {"auc": [], "partial_auc": [], "cdr": [], "both_classes": []}
    for counts in resample_counts(len(scores), n_resamples, seed):
        roc = roc_from_counts(*trials.counts(counts[trials.order]))
        out["auc"].append(auc(roc))
        out["partial_auc"].append(partial_auc(roc, far_stop))
        out["cdr"].append(cdr_at_far(roc, far_stop))
        out["both_classes"].append(roc.n_target > 0 and roc.n_nontarget > 0)
    return out


def _interval(values: list, both_classes: list, ci_level: float, mediscore_compat: bool) -> Interval:
    ordered = sorted(values) if mediscore_compat else sorted(v for v, ok in zip(values, both_classes) if ok)
    if not ordered:
        return Interval(float("nan"), float("nan"))
    lo, hi = quantile_positions(ci_level, len(ordered))
    return Interval(ordered[lo], ordered[min(hi, len(ordered) - 1)])


def bootstrap_intervals(scores: np.ndarray, labels: np.ndarray, far_stop: float, ci_level: float, *,
                        n_resamples: int = N_RESAMPLES, seed: int = SEED,
                        mediscore_compat: bool = False) -> BootstrapIntervals:
    """Percentile intervals of the three metrics over bootstrap replicates of the rows."""
    reps = replicate_metrics(scores, labels, far_stop, n_resamples, seed)
    return BootstrapIntervals(*(_interval(reps[name], reps["both_classes"], ci_level, mediscore_compat)
                                for name in ("auc", "partial_auc", "cdr")))


def semafor_replicates(scores: np.ndarray, labels: np.ndarray, *, fars=PLAN_FARS, pauc_far: float = PAUC_FAR,
                       threshold: float | None = None, n_resamples: int = N_RESAMPLES,
                       seed: int = SEED) -> dict[str, np.ndarray]:
    """Every SemaFor metric of every replicate, in draw order, under its report column name; NaN
    where the replicate drew one class.

    ``bACC@EER`` finds θ* again in each replicate (a competition), or, given ``threshold`` (a
    bucket at its competition's θ*), stays at that threshold.
    """
    trials = SortedTrials.from_arrays(scores, labels)
    names = [f"{kind}@FAR{f:g}" for f in fars for kind in ("pD", "pD_step")]
    names += ["bACC@EER", f"pAUC@{pauc_far:g}", f"pAUC_norm@{pauc_far:g}"]
    out = {name: np.full(n_resamples, np.nan) for name in names}
    if trials.scores.size == 0:
        return out
    n_above = None if threshold is None else int(np.count_nonzero(trials.scores >= threshold))
    undefined_threshold = threshold is not None and bool(np.isnan(threshold))
    for i, counts in enumerate(resample_counts(trials.scores.size, n_resamples, seed)):
        weights = counts[trials.order]
        fps, tps, thr = trials.counts(weights)
        n_t, n_nt = int(tps[-1]), int(fps[-1])
        if n_t == 0 or n_nt == 0:
            continue
        roc, full = roc_from_counts(fps, tps, thr), roc_all_from_counts(fps, tps, thr)
        for f in fars:
            out[f"pD@FAR{f:g}"][i] = pd_at_far(roc, f, method="interpolate")
            out[f"pD_step@FAR{f:g}"][i] = pd_at_far(full, f, method="step")
        if n_above is None:
            best = eer_vertex(fps, tps, n_t, n_nt)
            tp, fp = int(tps[best]), int(fps[best])
        else:
            tp = int(weights[:n_above] @ trials.labels[:n_above])
            fp = int(weights[:n_above].sum()) - tp
        if not undefined_threshold:
            pd, far = tp / n_t, fp / n_nt
            out["bACC@EER"][i] = (pd + 1.0 - far) / 2.0  # plan §1.4: higher is better
        out[f"pAUC@{pauc_far:g}"][i], out[f"pAUC_norm@{pauc_far:g}"][i] = partial_auc_interpolated(roc, pauc_far)
    return out


def semafor_intervals(scores: np.ndarray, labels: np.ndarray, ci_level: float, *, fars=PLAN_FARS,
                      pauc_far: float = PAUC_FAR, threshold: float | None = None,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """Percentile intervals of the SemaFor metrics; single-class replicates are left out."""
    reps = semafor_replicates(scores, labels, fars=fars, pauc_far=pauc_far, threshold=threshold,
                              n_resamples=n_resamples, seed=seed)
    out = {}
    for name, values in reps.items():
        ordered = np.sort(values[~np.isnan(values)])
        if ordered.size == 0:
            out[name] = Interval(float("nan"), float("nan"))
            continue
        lo, hi = quantile_positions(ci_level, ordered.size)
        out[name] = Interval(float(ordered[lo]), float(ordered[min(hi, ordered.size - 1)]))
    return out
