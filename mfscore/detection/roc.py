"""ROC curve and the detection metrics read off it, as MediScore's DetectionScorer computes them.

Naming: ``*_score``/``auc``/``cdr`` are higher-better, ``eer`` is an error rate (lower-better).

The curve follows scikit-learn 0.19 ``roc_curve`` semantics (docs/detection.md §6.1): ties form
one point, collinear points are dropped, and the origin is prepended only when the first point
has false alarms. Areas follow MediScore's trapezoid sum; a sum over no segment is the integer
``0`` (MediScore prints ``0`` there and ``0.0`` for an empty-width area), so the functions return
a Python ``int`` in that case and a ``float`` otherwise.

Undefined cases: with no non-targets FPR is NaN everywhere, with no targets TPR is; AUC is then
``0`` and NaN respectively, EER and CDR@FAR NaN (checkfiles c2_4; docs/detection.md §6.8).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

FILE_DTYPE = np.dtype([("score", "<f8"), ("target", "u1"), ("order", "<u4")])  # SortedTrials.to_npy: a row a trial


@dataclass(frozen=True)
class Roc:
    """ROC points in curve order (non-decreasing FPR), with the score threshold of each point."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    n_target: int
    n_nontarget: int

    @property
    def fnr(self) -> np.ndarray:
        return 1.0 - self.tpr


@dataclass(frozen=True)
class SortedTrials:
    """Trials sorted once by descending score, with the boundaries of tied-score groups.

    Everything the ROC needs is a cumulative sum over this order, so a bootstrap replicate only
    has to re-weight it (see ``bootstrap.py``), never re-sort.
    """

    scores: np.ndarray      # descending
    labels: np.ndarray      # 1 target, 0 non-target, in the same order
    order: np.ndarray       # positions in the caller's arrays
    group_ends: np.ndarray  # index of the last trial of each distinct score

    @classmethod
    def from_arrays(cls, scores: np.ndarray, labels: np.ndarray) -> "SortedTrials":
        scores = np.asarray(scores, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        order = descending_order(scores)
        s = scores[order]
        return cls(s, labels[order], order, _group_ends(s))

    def to_npy(self) -> bytes:
        """The trials as a ``.npy`` file of ``FILE_DTYPE`` rows (13 bytes a trial), for a job to read (``read_npy``)."""
        if self.scores.size > np.iinfo(np.uint32).max:
            raise ValueError(f"{self.scores.size} trials are more than a trial file's order holds")
        rows = np.empty(self.scores.size, dtype=FILE_DTYPE)
        rows["score"], rows["target"], rows["order"] = self.scores, self.labels, self.order
        out = io.BytesIO()
        np.save(out, rows, allow_pickle=False)
        return out.getvalue()

    @classmethod
    def read_npy(cls, path: str, n: int) -> "SortedTrials":
        """The ``n`` trials ``to_npy`` wrote to ``path``, equal to those it was given; ``ValueError`` for a file that
        is not such a table (another type or length, an order that is not a permutation)."""
        rows = np.load(path, allow_pickle=False)
        if rows.dtype != FILE_DTYPE or rows.shape != (n,):
            raise ValueError(f"it holds {rows.dtype} {rows.shape}, not {n} sorted trials")
        order = rows["order"].astype(np.intp)
        if n and (order.max() >= n or np.bincount(order, minlength=n).min() != 1):
            raise ValueError("its order is not a permutation of the trials")
        scores = np.ascontiguousarray(rows["score"])
        return cls(scores, rows["target"].astype(np.int64), order, _group_ends(scores))

    def counts(self, weights: np.ndarray | None = None):
        """Cumulative (fps, tps, thresholds) at each distinct score, optionally weighted.

        With integer weights (bootstrap draw counts) a score group of zero weight is absent from
        the resample, so it is removed rather than left as a duplicate point.
        """
        if weights is None:
            tps = np.cumsum(self.labels)[self.group_ends]
            seen = self.group_ends + 1
            return seen - tps, tps, self.scores[self.group_ends]
        tps = np.cumsum(weights * self.labels)[self.group_ends]
        seen = np.cumsum(weights)[self.group_ends]
        present = np.diff(seen, prepend=0) > 0
        tps = tps[present]
        seen = seen[present]
        return seen - tps, tps, self.scores[self.group_ends][present]

    def group_codes(self) -> np.ndarray:
        """Each trial's code, in the caller's order: twice the rank of its score group, plus its label. Counting a
        resample's drawn rows by code (``np.bincount``) gives its non-targets and targets in each score group, all
        that ``counts_of_groups`` needs: a replicate costs a gather and a count of its draws, not a pass over rows."""
        group = np.repeat(np.arange(self.group_ends.size), np.diff(self.group_ends, prepend=-1))
        small = 2 * self.group_ends.size <= np.iinfo(np.int32).max  # numpy gathers and counts int32 twice as fast
        codes = np.empty(self.labels.size, dtype=np.int32 if small else np.intp)
        codes[self.order] = 2 * group + self.labels
        return codes

    def counts_of_groups(self, drawn: np.ndarray):
        """``counts(weights)`` from the per-code counts of a resample (``group_codes``): cumulative (fps, tps,
        thresholds) at each score group it drew."""
        targets = drawn[1::2]
        per_group = drawn[0::2] + targets
        present = per_group > 0
        tps = np.cumsum(targets)[present]
        seen = np.cumsum(per_group)[present]
        return seen - tps, tps, self.scores[self.group_ends][present]


def descending_order(scores: np.ndarray) -> np.ndarray:
    """``np.argsort(-scores, kind="stable")``: positions by descending score, equal scores in their order.

    numpy's stable sort of floats is a merge sort; its vectorised sort is 6 times as fast but unstable. So the
    scores are sorted by that one, which finds each one's group of equal scores, then keys (descending group,
    position), all distinct, are: a third of the time on 10⁶ scores. NaN (which would lead here) falls back.
    """
    n = scores.size
    if n < 2 or n > 1 << 31 or np.isnan(scores).any():
        return np.argsort(-scores, kind="stable")
    ascending = np.argsort(scores)
    ordered = scores[ascending]
    group = np.cumsum(np.r_[False, ordered[1:] != ordered[:-1]])  # of each sorted score, ascending from 0
    keys = np.empty(n, dtype=np.int64)
    keys[ascending] = (group[-1] - group) * n
    keys += np.arange(n)
    keys.sort()
    return keys % n


def _group_ends(scores: np.ndarray) -> np.ndarray:
    """Index of the last of each run of equal (descending) scores."""
    if not scores.size:
        return np.zeros(0, dtype=np.intp)
    return np.r_[np.flatnonzero(np.diff(scores)), scores.size - 1]


def drop_collinear(fps: np.ndarray, tps: np.ndarray) -> np.ndarray:
    """Indices of the points kept by scikit-learn's ``drop_intermediate`` (second differences)."""
    if fps.size <= 2:
        return np.arange(fps.size)
    bend = np.logical_or(np.diff(fps, 2), np.diff(tps, 2))
    return np.flatnonzero(np.r_[True, bend, True])


def roc_from_counts(fps: np.ndarray, tps: np.ndarray, thresholds: np.ndarray) -> Roc:
    """Turn cumulative counts at descending thresholds into ROC points (docs/detection.md §6.1 steps 3-5)."""
    keep = drop_collinear(fps, tps)
    fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    if tps.size == 0 or fps[0] != 0:
        fps = np.r_[0, fps]
        tps = np.r_[0, tps]
        top = thresholds[0] + 1 if thresholds.size else 1.0
        thresholds = np.r_[top, thresholds]
    n_nt = int(fps[-1])
    n_t = int(tps[-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        fpr = fps / fps[-1] if n_nt > 0 else np.full(fps.shape, np.nan)
        tpr = tps / tps[-1] if n_t > 0 else np.full(tps.shape, np.nan)
    return Roc(fpr.astype(np.float64), tpr.astype(np.float64), thresholds.astype(np.float64), n_t, n_nt)


def roc_curve(scores, labels) -> Roc:
    """ROC of confidence ``scores`` against binary ``labels`` (1 = target)."""
    trials = SortedTrials.from_arrays(scores, labels)
    return roc_from_counts(*trials.counts())


def _trapezoid_up_to(fpr: np.ndarray, tpr: np.ndarray, far_stop: float) -> float | int:
    """Trapezoid sum over the leading segments whose right end has FPR <= far_stop (no interpolation)."""
    right = fpr[1:]
    qualifies = right <= far_stop  # NaN FPR never qualifies
    m = int(np.argmin(qualifies)) if not qualifies.all() else qualifies.size
    if m == 0:
        return 0
    widths = np.diff(fpr[: m + 1])
    heights = (tpr[1 : m + 1] + tpr[:m]) / 2.0
    return float(np.sum(widths * heights))


def auc(roc: Roc) -> float | int:
    """Area under the ROC curve by trapezoids (docs/detection.md §6.2)."""
    return _trapezoid_up_to(roc.fpr, roc.tpr, 1.0)


def partial_auc(roc: Roc, far_stop: float) -> float | int:
    """``AUC@FAR``: unnormalised area up to the last point with FPR <= far_stop (docs/detection.md §6.3)."""
    return _trapezoid_up_to(roc.fpr, roc.tpr, far_stop)


def eer(roc: Roc) -> float:
    """Equal error rate at the point minimising |FPR - FNR|, first on ties (docs/detection.md §6.4)."""
    gap = np.abs(roc.fpr - roc.fnr)
    if gap.size == 0 or np.isnan(gap).any():
        return float("nan")
    j = int(np.argmin(gap))
    return float((roc.fpr[j] + roc.fnr[j]) / 2.0)


def cdr_at_far(roc: Roc, far_stop: float) -> float:
    """Correct detection rate (TPR) at FPR = far_stop by linear interpolation (docs/detection.md §6.5)."""
    fpr, tpr = roc.fpr, roc.tpr
    if np.isnan(fpr).any() or np.isnan(tpr).any():
        return float("nan")
    exact = np.flatnonzero(fpr == far_stop)
    if exact.size:
        return float(tpr[exact[0]])
    below = np.flatnonzero(fpr < far_stop)
    if below.size:
        i = int(below[-1])
        x1, y1 = fpr[i], tpr[i]
        x2, y2 = (fpr[i + 1], tpr[i + 1]) if i + 1 < fpr.size else (1.0, 1.0)
    else:
        x1, y1 = 0.0, 0.0
        x2, y2 = fpr[0], tpr[0]
    if x1 == x2:
        return float((y1 + y2) / 2.0)
    return float(y1 + (y2 - y1) * (far_stop - x1) / (x2 - x1))
