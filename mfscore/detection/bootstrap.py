"""Bootstrap confidence intervals for AUC, AUC@FAR and CDR@FAR (docs/detection.md §6.6), and for
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

import queue
import threading
from dataclasses import dataclass, field
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
    semafor: dict[str, Interval] = field(default_factory=dict)  # SemaFor column -> interval


@dataclass(frozen=True)
class SemaforDraws:
    """Which SemaFor metrics the replicates also compute (``threshold``: a bucket's fixed θ*)."""

    fars: tuple[float, ...] = PLAN_FARS
    pauc_far: float = PAUC_FAR
    threshold: float | None = None


def _round_half_up(x: float, digits: int) -> float:
    return float(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def quantile_positions(ci_level: float, n: int) -> tuple[int, int]:
    """0-based positions of the interval bounds in the sorted replicate values (docs/detection.md §6.6)."""
    lower = _round_half_up((1 - ci_level) / 2, 3)
    upper = _round_half_up(1 - lower, 3)
    return int(lower * n), int(upper * n)


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED, order: np.ndarray | None = None):
    """Draw counts of each row (table order, or ``order``'s) for each replicate: MediScore's
    ``rng.choice(rows, n)``.

    The draws and counts, as long as all the rest of a replicate together, are made on a second
    thread, a few replicates ahead (numpy releases the GIL while it draws and gathers).
    """
    rng = np.random.RandomState(seed)
    ahead: queue.Queue = queue.Queue(maxsize=4)
    stop = threading.Event()

    def draw() -> None:
        for _ in range(n_resamples):
            drawn = np.bincount(rng.randint(0, n, size=n), minlength=n)
            if order is not None:
                drawn = drawn[order]
            while True:
                if stop.is_set():
                    return
                try:
                    ahead.put(drawn, timeout=0.1)
                    break
                except queue.Full:
                    continue

    drawer = threading.Thread(target=draw, name="bootstrap-draws", daemon=True)
    drawer.start()
    try:
        for _ in range(n_resamples):
            yield ahead.get()
    finally:
        stop.set()
        drawer.join()


def _replicates(scores: np.ndarray, labels: np.ndarray, far_stop: float | None, semafor: SemaforDraws | None,
                n_resamples: int, seed: int) -> tuple[dict[str, list], dict[str, np.ndarray]]:
    """One pass over the replicates: MediScore's metrics (with ``far_stop``) and the SemaFor ones
    (with ``semafor``) of each, in draw order, so the draws and cumulative counts are made once."""
    trials = SortedTrials.from_arrays(scores, labels)
    mediscore = {"auc": [], "partial_auc": [], "cdr": [], "both_classes": []}
    names = [] if semafor is None else [f"{kind}@FAR{f:g}" for f in semafor.fars for kind in ("pD", "pD_step")]
    if semafor is not None:
        names += ["bACC@EER", f"pAUC@{semafor.pauc_far:g}", f"pAUC_norm@{semafor.pauc_far:g}"]
    plan = {name: np.full(n_resamples, np.nan) for name in names}
    if trials.scores.size == 0:
        return mediscore, plan
    fixed = semafor is not None and semafor.threshold is not None
    n_above = int(np.count_nonzero(trials.scores >= semafor.threshold)) if fixed else None
    for i, weights in enumerate(resample_counts(trials.scores.size, n_resamples, seed, trials.order)):
        fps, tps, thr = trials.counts(weights)
        roc = roc_from_counts(fps, tps, thr)
        if far_stop is not None:
            mediscore["auc"].append(auc(roc))
            mediscore["partial_auc"].append(partial_auc(roc, far_stop))
            mediscore["cdr"].append(cdr_at_far(roc, far_stop))
            mediscore["both_classes"].append(roc.n_target > 0 and roc.n_nontarget > 0)
        if semafor is not None:
            _semafor_replicate(plan, i, trials, weights, (fps, tps, thr), roc, semafor, n_above)
    return mediscore, plan


def _semafor_replicate(out: dict[str, np.ndarray], i: int, trials: SortedTrials, weights: np.ndarray,
                       counts: tuple, roc, semafor: SemaforDraws, n_above: int | None) -> None:
    """Replicate ``i`` of each SemaFor metric; left NaN when it drew one class.

    ``bACC@EER`` finds θ* again (a competition), or stays at ``semafor.threshold`` (a bucket), above
    which lie the first ``n_above`` sorted trials.
    """
    fps, tps, thr = counts
    n_t, n_nt = int(tps[-1]), int(fps[-1])
    if n_t == 0 or n_nt == 0:
        return
    full = roc_all_from_counts(fps, tps, thr)
    for f in semafor.fars:
        out[f"pD@FAR{f:g}"][i] = pd_at_far(roc, f, method="interpolate")
        out[f"pD_step@FAR{f:g}"][i] = pd_at_far(full, f, method="step")
    if semafor.threshold is None:
        best = eer_vertex(fps, tps, n_t, n_nt)
        tp, fp = int(tps[best]), int(fps[best])
    else:
        tp = int(weights[:n_above] @ trials.labels[:n_above])
        fp = int(weights[:n_above].sum()) - tp
    if semafor.threshold is None or not np.isnan(semafor.threshold):
        out["bACC@EER"][i] = (tp / n_t + 1.0 - fp / n_nt) / 2.0  # docs/metrics.md §1.4: higher is better
    pauc = f"pAUC@{semafor.pauc_far:g}"
    out[pauc][i], out[f"pAUC_norm@{semafor.pauc_far:g}"][i] = partial_auc_interpolated(roc, semafor.pauc_far)


def replicate_metrics(scores: np.ndarray, labels: np.ndarray, far_stop: float,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, list]:
    """AUC, AUC@FAR and CDR@FAR of every replicate in draw order (MediScore's integer ``0`` kept),
    and whether the replicate drew both classes."""
    return _replicates(scores, labels, far_stop, None, n_resamples, seed)[0]


def _interval(values: list, both_classes: list, ci_level: float, mediscore_compat: bool) -> Interval:
    ordered = sorted(values) if mediscore_compat else sorted(v for v, ok in zip(values, both_classes) if ok)
    if not ordered:
        return Interval(float("nan"), float("nan"))
    lo, hi = quantile_positions(ci_level, len(ordered))
    return Interval(ordered[lo], ordered[min(hi, len(ordered) - 1)])


def bootstrap_intervals(scores: np.ndarray, labels: np.ndarray, far_stop: float, ci_level: float, *,
                        n_resamples: int = N_RESAMPLES, seed: int = SEED, mediscore_compat: bool = False,
                        semafor: SemaforDraws | None = None) -> BootstrapIntervals:
    """Percentile intervals of the three metrics over bootstrap replicates of the rows, and of the
    SemaFor metrics from the same replicates when ``semafor`` says which."""
    reps, plan = _replicates(scores, labels, far_stop, semafor, n_resamples, seed)
    return BootstrapIntervals(*(_interval(reps[name], reps["both_classes"], ci_level, mediscore_compat)
                                for name in ("auc", "partial_auc", "cdr")),
                              semafor=_semafor_intervals(plan, ci_level))


def semafor_replicates(scores: np.ndarray, labels: np.ndarray, *, fars=PLAN_FARS, pauc_far: float = PAUC_FAR,
                       threshold: float | None = None, n_resamples: int = N_RESAMPLES,
                       seed: int = SEED) -> dict[str, np.ndarray]:
    """Every SemaFor metric of every replicate, in draw order, under its report column name; NaN
    where the replicate drew one class."""
    return _replicates(scores, labels, None, SemaforDraws(tuple(fars), pauc_far, threshold), n_resamples, seed)[1]


def semafor_intervals(scores: np.ndarray, labels: np.ndarray, ci_level: float, *, fars=PLAN_FARS,
                      pauc_far: float = PAUC_FAR, threshold: float | None = None,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """Percentile intervals of the SemaFor metrics; single-class replicates are left out."""
    return _semafor_intervals(semafor_replicates(scores, labels, fars=fars, pauc_far=pauc_far, threshold=threshold,
                                                 n_resamples=n_resamples, seed=seed), ci_level)


def _semafor_intervals(replicates: dict[str, np.ndarray], ci_level: float) -> dict[str, Interval]:
    return {name: _interval(values.tolist(), (~np.isnan(values)).tolist(), ci_level, mediscore_compat=False)
            for name, values in replicates.items()}
