"""Metrics over all masks of a run: average ROCs and the one global Maximum threshold (docs/masks.md §6.5)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.threshold_metrics import (NEAR_TIE, confusion_at, exact_mccs, mask_thresholds, mcc,
                                             trapezoid_auc)


def global_thresholds(records: list[MaskRecord]) -> np.ndarray:
    """Sorted union of every mask's thresholds."""
    present = np.zeros(256, bool)
    for record in records:
        present |= record.present
    return mask_thresholds(MaskRecord(status="", present=present))


def closed_roc(fpr: np.ndarray, tpr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points with a rate, and (0, 0) and (1, 1), sorted by FPR then TPR: the curve whose area is the AUC."""
    keep = ~(np.isnan(fpr) | np.isnan(tpr))
    fpr = np.concatenate([fpr[keep], [0.0, 1.0]])
    tpr = np.concatenate([tpr[keep], [0.0, 1.0]])
    order = np.lexsort((tpr, fpr))
    return fpr[order], tpr[order]


def average_rocs(records: list[MaskRecord]) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The pixel-average and the mask-average ROC over the scored masks, each as (FPR, TPR) ``closed_roc`` points;
    with no mask, the diagonal's two ends."""
    if not records:
        ends = np.array([0.0, 1.0])
        return (ends, ends), (ends, ends)
    thresholds = global_thresholds(records)
    counts = [confusion_at(r, thresholds) for r in records]
    tp = np.sum([c.tp for c in counts], axis=0)
    fn = np.sum([c.fn for c in counts], axis=0)
    fp = np.sum([c.fp for c in counts], axis=0)
    tn = np.sum([c.tn for c in counts], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pixel = closed_roc(fp / (fp + tn), tp / (tp + fn))
        tprs = np.array([c.tp / (c.tp + c.fn) for c in counts])
        fprs = np.array([c.fp / (c.fp + c.tn) for c in counts])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column is a NaN point, dropped
        mask = closed_roc(np.nanmean(fprs, axis=0), np.nanmean(tprs, axis=0))
    return pixel, mask


def average_aucs(records: list[MaskRecord]) -> tuple[float, float]:
    """(PixelAverageAUC, MaskAverageAUC) over the scored masks; NaN when there are none."""
    if not records:
        return math.nan, math.nan
    pixel, mask = average_rocs(records)
    return trapezoid_auc(*pixel), trapezoid_auc(*mask)


def maximum_threshold(records: list[MaskRecord]) -> float:
    """θ maximising the sum over masks of MCC at θ, NaN ignored, lowest on ties."""
    if not records:
        return math.nan
    thresholds = global_thresholds(records)
    total = np.nansum([mcc(confusion_at(r, thresholds)) for r in records], axis=0)
    # float64 can order exactly equal sums by an ulp: decide near-ties with exact MCCs, summed exactly
    near = thresholds[total >= total.max() - NEAR_TIE * len(records)]
    exact = [exact_mccs(confusion_at(r, near)) for r in records]
    sums = [math.fsum(v for v in column if not math.isnan(v)) for column in zip(*exact)]
    return float(near[int(np.argmax(sums))])

