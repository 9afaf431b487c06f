"""Per-mask metrics at every threshold, read off a ``MaskRecord``'s histograms (docs/masks.md §6).

A system pixel of value ``v`` is predicted manipulated at threshold ``θ`` when ``v <= θ``; so the
confusion counts at ``θ`` are cumulative sums of the histograms, and the whole threshold sweep is
one ``cumsum`` instead of one pass over the image per threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.mcc import exact_mcc


@dataclass(frozen=True)
class Confusion:
    """Confusion counts over the scored pixels at each threshold of ``thresholds``."""

    thresholds: np.ndarray
    tp: np.ndarray
    tn: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    @property
    def n(self) -> np.ndarray:
        return self.tp + self.tn + self.fp + self.fn


def mask_thresholds(record: MaskRecord) -> np.ndarray:
    """``{-1} ∪ {distinct values of the whole system mask}``, ascending (docs/masks.md §6.2)."""
    return np.concatenate([[-1], np.flatnonzero(record.present)]).astype(np.int64)


def confusion_at(record: MaskRecord, thresholds: np.ndarray) -> Confusion:
    """Counts at any thresholds in [-1, 255] (a step function of θ between present values)."""
    thresholds = np.asarray(thresholds, dtype=np.int64)
    cum_pos = np.concatenate([[0], np.cumsum(record.positive)])
    cum_neg = np.concatenate([[0], np.cumsum(record.negative)])
    tp = cum_pos[thresholds + 1]
    fp = cum_neg[thresholds + 1]
    return Confusion(thresholds, tp, cum_neg[-1] - fp, fp, cum_pos[-1] - tp)


NEAR_TIE = 1e-9  # float64 MCCs closer than this to the best are compared exactly


def exact_mccs(c: Confusion) -> np.ndarray:
    """``exact_mcc`` at each threshold of ``c``."""
    return np.array([exact_mcc(int(tp), int(tn), int(fp), int(fn)) for tp, tn, fp, fn in zip(c.tp, c.tn, c.fp, c.fn)])


def mcc(c: Confusion) -> np.ndarray:
    """Vectorised MCC, for choosing thresholds; reported values use ``exact_mcc``."""
    tp, tn, fp, fn = (x.astype(np.float64) for x in (c.tp, c.tn, c.fp, c.fn))
    n = tp + tn + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    degenerate = (tp + fn == 0) | (tp + fn == n) | (tp + fp == 0) | (tp + fp == n)
    value = np.where(degenerate, 0.0, value)
    return np.where(n == 0, np.nan, value)


def nmm(c: Confusion) -> np.ndarray:
    """Nimble Mask Metric ``max(-1, (TP - FN - FP) / (TP + FN))`` (docs/masks.md §6.2)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.maximum(-1.0, (c.tp - c.fn - c.fp) / (c.tp + c.fn))
    return np.where(c.tp + c.fn == 0, np.nan, value)


def bwl1(c: Confusion) -> np.ndarray:
    """Binary weighted L1 loss ``(FP + FN) / N`` (docs/masks.md §6.2)."""
    n = c.n
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (c.fp + c.fn) / n
    return np.where(n == 0, np.nan, value)


def gwl1(record: MaskRecord) -> float:
    """Grey weighted L1 ``Σ_w |ref − sys| / 255 / Σ w`` with ref 0 on the region, 255 off it."""
    n = record.pixel_n
    if n == 0:
        return math.nan
    values = np.arange(256, dtype=np.int64)
    total = int(record.positive @ values) + int(record.negative @ (255 - values))
    return total / 255.0 / n


@dataclass(frozen=True)
class PointMetrics:
    """Metrics of one mask at one threshold."""

    threshold: float
    nmm: float
    mcc: float
    bwl1: float
    tp: int
    tn: int
    fp: int
    fn: int


def metrics_at(record: MaskRecord, threshold: float) -> PointMetrics:
    """NMM, MCC, BWL1 and counts at one threshold (NaN threshold: all NaN)."""
    if math.isnan(threshold):
        nan = math.nan
        return PointMetrics(nan, nan, nan, nan, nan, nan, nan, nan)
    c = confusion_at(record, np.array([int(threshold)]))
    tp, tn, fp, fn = (int(x[0]) for x in (c.tp, c.tn, c.fp, c.fn))
    return PointMetrics(threshold, float(nmm(c)[0]), exact_mcc(tp, tn, fp, fn), float(bwl1(c)[0]),
                        tp, tn, fp, fn)


def optimum_threshold(record: MaskRecord) -> float:
    """θ with the largest MCC, lowest on ties; NaN when no pixel is scored (docs/masks.md §6.3)."""
    thresholds = mask_thresholds(record)
    values = mcc(confusion_at(record, thresholds))
    if np.isnan(values).all():
        return math.nan
    # float64 can order two exactly equal MCCs by one ulp: decide near-ties with the exact MCC
    near = thresholds[values >= np.nanmax(values) - NEAR_TIE]
    return float(near[int(np.argmax(exact_mccs(confusion_at(record, near))))])


def rates(c: Confusion) -> tuple[np.ndarray, np.ndarray]:
    """TPR and FPR with 0 where the denominator is 0 (docs/masks.md §6.4)."""
    positives, negatives = c.tp + c.fn, c.fp + c.tn
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(positives > 0, c.tp / positives, 0.0)
        fpr = np.where(negatives > 0, c.fp / negatives, 0.0)
    return tpr, fpr


def trapezoid_auc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area of the points sorted by FPR then TPR, by trapezoids."""
    order = np.lexsort((tpr, fpr))
    x, y = fpr[order], tpr[order]
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


def mask_roc(record: MaskRecord) -> tuple[np.ndarray, np.ndarray]:
    """The mask's ROC points over its thresholds, with (0, 0) appended, sorted (docs/masks.md §6.4)."""
    tpr, fpr = rates(confusion_at(record, mask_thresholds(record)))
    fpr, tpr = np.append(fpr, 0.0), np.append(tpr, 0.0)
    order = np.lexsort((tpr, fpr))
    return fpr[order], tpr[order]


def mask_auc_eer(record: MaskRecord) -> tuple[float, float]:
    """Per-mask AUC (trapezoids) and EER (first argmin of |FPR − FNR|, mean of the two)."""
    fpr, tpr = mask_roc(record)
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    fnr = 1.0 - tpr
    j = int(np.argmin(np.abs(fpr - fnr)))
    return auc, float((fpr[j] + fnr[j]) / 2.0)
