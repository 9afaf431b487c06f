"""Detection metrics of the SemaFor evaluation-3 plan (docs/metrics.md §1.3-§1.5).

Scores are LLRs (unbounded, higher = more support for the target); labels are 1 target / 0
non-target. A trial is a positive decision at threshold θ when ``score >= θ`` (docs/metrics.md §1.2: an LLR
equal to θ is unspecified in the plan; inclusive is the suggested choice, as in ``roc.py``).

Two ROCs are used:
* ``roc.roc_curve`` — MediScore's curve (collinear points dropped), for the interpolated p(D)
  and the partial AUC (neither depends on collinear points);
* ``roc_all_thresholds`` — one point per distinct score, for everything that picks a vertex
  (the step p(D) and the dynamic EER threshold): a dropped collinear point can be the best one.

Thresholds (plan Appendix A and "Evaluation 3 Analysis Plan, Methods" (3)): a competition's θ* is
the EER vertex of all its trials; a bucket of a competition (``bucket_report``) is scored at the
competition's θ*, not at a θ* of its own, whose values are kept beside it under ``BUCKET_`` names.

Which way is better: p(D), bACC and pAUC are higher-better; FAR and EER lower-better.

Undefined cases: with no targets or no non-targets the rates are NaN (counts stay exact); with an
undefined θ* (the competition lacks a class) every rate at θ* is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mfscore.detection.roc import Roc, SortedTrials, cdr_at_far, roc_curve

__all__ = [
    "OperatingPoint",
    "roc_all_thresholds",
    "pd_at_far",
    "confusion_at",
    "dynamic_eer_threshold",
    "eer_vertex",
    "partial_auc_interpolated",
    "semafor_report",
    "bucket_report",
    "PLAN_FARS",
    "PAUC_FAR",
]

PLAN_FARS = (0.08, 0.1)  # docs/metrics.md §1.1 and §1.5: the program target, the leaderboard's secondary metric
PAUC_FAR = 0.1           # docs/metrics.md §1.5: AUC for FAR <= 0.1


@dataclass(frozen=True)
class OperatingPoint:
    """Confusion counts and rates at one score threshold (``score >= threshold`` is positive)."""

    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int
    pd: float    # TP / (TP + FN)
    far: float   # FP / (FP + TN)
    bacc: float  # (pD + (1 - FAR)) / 2


def _trials(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validated float scores and 0/1 integer labels of equal length."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel()
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in length: {s.size} vs {y.size}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 (non-target) or 1 (target)")
    return s, y.astype(np.int64)


def _rate(num: int, den: int) -> float:
    return num / den if den > 0 else float("nan")


def roc_all_thresholds(scores, labels) -> Roc:
    """ROC with one point per distinct score (no collinear dropping), origin as in ``roc_curve``."""
    s, y = _trials(scores, labels)
    return roc_all_from_counts(*SortedTrials.from_arrays(s, y).counts())


def roc_all_from_counts(fps: np.ndarray, tps: np.ndarray, thr: np.ndarray) -> Roc:
    """``roc_all_thresholds`` from cumulative counts at descending distinct scores."""
    if tps.size == 0 or fps[0] != 0:
        fps, tps = np.r_[0, fps], np.r_[0, tps]
        thr = np.r_[thr[0] + 1 if thr.size else 1.0, thr]
    n_t, n_nt = int(tps[-1]), int(fps[-1])
    fpr = fps / n_nt if n_nt > 0 else np.full(fps.shape, np.nan)
    tpr = tps / n_t if n_t > 0 else np.full(tps.shape, np.nan)
    return Roc(fpr.astype(np.float64), tpr.astype(np.float64), thr.astype(np.float64), n_t, n_nt)


# SemaFor eval 3 plan, docs/metrics.md §1.3 and §1.5: p(D) at FAR 0.08 / 0.1
def pd_at_far(roc: Roc, far: float, *, method: str = "interpolate") -> float:
    """p(D) at a FAR: ``"interpolate"`` = MediScore's CDR@FAR (plan choice (b)); ``"step"`` = the
    largest TPR among ROC points with FPR <= far (plan choice (a), conservative).

    ``"step"`` is exact only on a ROC with every threshold (``roc_all_thresholds``); on
    ``roc_curve``'s ROC it is a lower bound, since dropped collinear points are not seen.
    """
    if not 0.0 <= far <= 1.0:
        raise ValueError(f"far must lie in [0, 1], got {far}")
    if method == "interpolate":
        return cdr_at_far(roc, far)
    if method != "step":
        raise ValueError(f"method must be 'interpolate' or 'step', got {method!r}")
    if roc.fpr.size == 0 or np.isnan(roc.fpr).any() or np.isnan(roc.tpr).any():
        return float("nan")
    within = roc.fpr <= far
    return float(roc.tpr[within].max()) if within.any() else float("nan")


# SemaFor eval 3 plan, docs/metrics.md §1.2 and §1.4: confusion assignment at θ
def confusion_at(scores, labels, threshold: float) -> OperatingPoint:
    """Counts and rates at ``threshold`` (``score >= threshold`` is positive; NaN: none is)."""
    s, y = _trials(scores, labels)
    positive = s >= threshold
    tp = int(np.count_nonzero(positive & (y == 1)))
    fp = int(np.count_nonzero(positive & (y == 0)))
    n_t = int(np.count_nonzero(y == 1))
    n_nt = y.size - n_t
    pd, far = _rate(tp, n_t), _rate(fp, n_nt)
    return OperatingPoint(float(threshold), tp, fp, n_t - tp, n_nt - fp, pd, far, (pd + 1.0 - far) / 2.0)


# SemaFor eval 3 plan, docs/metrics.md §1.4: dynamic threshold at the EER vertex
def dynamic_eer_threshold(scores, labels) -> OperatingPoint:
    """Operating point at θ* = the distinct score whose ROC vertex minimises |FNR - FAR|.

    Ties go to the lower FAR, then to the higher p(D). The comparison is exact (integers:
    |FN·N_nt - FP·N_t|). With a class missing θ* is undefined: threshold NaN, every trial
    counted negative, all rates NaN.
    """
    s, y = _trials(scores, labels)
    n_t = int(np.count_nonzero(y == 1))
    n_nt = y.size - n_t
    if n_t == 0 or n_nt == 0:
        return _undefined_rates(confusion_at(s, y, float("nan")))
    fps, tps, thr = SortedTrials.from_arrays(s, y).counts()
    return confusion_at(s, y, float(thr[eer_vertex(fps, tps, n_t, n_nt)]))


def eer_vertex(fps: np.ndarray, tps: np.ndarray, n_t: int, n_nt: int) -> int:
    """Index of the θ* vertex among cumulative counts: least |FNR - FAR|, then least FP, then most TP."""
    gap = np.abs((n_t - tps) * n_nt - fps * n_t)  # |FNR - FAR| scaled by N_t·N_nt, exact
    tied = np.flatnonzero(gap == gap.min())
    lowest_far = tied[fps[tied] == fps[tied].min()]
    return int(lowest_far[np.argmax(tps[lowest_far])])


def _undefined_rates(op: OperatingPoint) -> OperatingPoint:
    nan = float("nan")
    return OperatingPoint(nan, op.tp, op.fp, op.fn, op.tn, nan, nan, nan)


# SemaFor eval 3 plan, docs/metrics.md §1.5: partial AUC for FAR <= 0.1
def partial_auc_interpolated(roc: Roc, far_max: float = 0.1) -> tuple[float, float]:
    """``(raw, raw / far_max)``: area under the linearly interpolated ROC over FPR in [0, far_max].

    The curve is cut exactly at far_max; a vertical run at FPR == far_max adds no width, so which
    of its TPRs ends the polygon does not matter. NaN when a class is missing.
    """
    if not 0.0 < far_max <= 1.0:
        raise ValueError(f"far_max must lie in (0, 1], got {far_max}")
    fpr, tpr = roc.fpr, roc.tpr
    if fpr.size == 0 or np.isnan(fpr).any() or np.isnan(tpr).any():
        return float("nan"), float("nan")
    k = int(np.searchsorted(fpr, far_max, side="right"))  # points [0, k) have FPR <= far_max
    x, y = fpr[:k], tpr[:k]
    if k < fpr.size and x[-1] < far_max:  # the segment (k-1, k) crosses far_max: cut it there
        x0, x1, y0, y1 = fpr[k - 1], fpr[k], tpr[k - 1], tpr[k]
        x = np.r_[x, far_max]
        y = np.r_[y, y0 + (y1 - y0) * (far_max - x0) / (x1 - x0)]
    raw = float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))
    return raw, raw / far_max


def semafor_report(scores, labels, *, fars=PLAN_FARS, pauc_far: float = PAUC_FAR) -> dict[str, float | int]:
    """The SemaFor detection columns of one competition (θ* of its own trials), in report order."""
    s, y = _trials(scores, labels)
    roc = roc_curve(s, y)
    full = roc_all_thresholds(s, y)
    out: dict[str, float | int] = {}
    for f in fars:
        tag = format(f, "g")
        out[f"pD@FAR{tag}"] = pd_at_far(roc, f, method="interpolate")
        out[f"pD_step@FAR{tag}"] = pd_at_far(full, f, method="step")
    op = dynamic_eer_threshold(s, y)
    out["EER"] = (op.far + (1.0 - op.pd)) / 2.0  # (FAR + FNR) / 2 at the θ* vertex
    out["THRESHOLD_EER"] = op.threshold
    out["bACC@EER"] = op.bacc
    out["pD@EER"] = op.pd
    out["FAR@EER"] = op.far
    out["TP@EER"], out["FP@EER"], out["FN@EER"], out["TN@EER"] = op.tp, op.fp, op.fn, op.tn
    raw, norm = partial_auc_interpolated(roc, pauc_far)
    tag = format(pauc_far, "g")
    out[f"pAUC@{tag}"] = raw
    out[f"pAUC_norm@{tag}"] = norm
    out["N_TARGET"] = int(np.count_nonzero(y == 1))
    out["N_NONTARGET"] = int(np.count_nonzero(y == 0))
    return out


# SemaFor eval 3 plan, Analysis Plan "Methods" (3): buckets scored at the competition's θ*
def bucket_report(scores, labels, threshold: float, *, fars=PLAN_FARS,
                  pauc_far: float = PAUC_FAR) -> dict[str, float | int]:
    """A bucket's columns: p(D), FAR, bACC and counts at the competition's θ* ``threshold``; beside
    them the bucket's own optimum (``BUCKET_*``). pD@FAR and pAUC read the bucket's own ROC."""
    own = semafor_report(scores, labels, fars=fars, pauc_far=pauc_far)
    at = confusion_at(scores, labels, threshold)
    if np.isnan(threshold):
        at = _undefined_rates(at)
    out: dict[str, float | int] = {k: v for k, v in own.items() if k.startswith(("pD@FAR", "pD_step@FAR"))}
    out["THRESHOLD_EER"] = float(threshold)
    out["bACC@EER"], out["pD@EER"], out["FAR@EER"] = at.bacc, at.pd, at.far
    out["TP@EER"], out["FP@EER"], out["FN@EER"], out["TN@EER"] = at.tp, at.fp, at.fn, at.tn
    for name in ("EER", "THRESHOLD_EER", "bACC@EER", "pD@EER", "FAR@EER"):
        out[f"BUCKET_{name}"] = own[name]
    out.update((k, v) for k, v in own.items() if k.startswith(("pAUC", "N_")))
    return out
