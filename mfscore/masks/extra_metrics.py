"""Mask metrics beyond MediScore's: IoU, F1, the soft confusion matrix, size-binned MCC histograms
and SemaFor's IoU-threshold localization rates (semafor_and_paper.md §1.7, §2).

Everything is read off a ``MaskRecord``'s histograms, so no image is read again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from mfscore.masks.mask_record import BINS, MaskRecord
from mfscore.masks.threshold_metrics import confusion_at

NAN = math.nan
SEMAFOR_IOU_THRESHOLDS = (0.0001, 0.1, 0.2, 0.4)
EXTRA_COLUMNS = ("OptimumIoU", "OptimumF1", "ActualIoU", "ActualF1", "SoftMCC", "SoftIoU", "SoftF1",
                 "ReferencePixels", "SqrtReferencePixels")
HISTOGRAM_COLUMNS = ("SizeBinLow", "SizeBinHigh", "MCCBinLow", "MCCBinHigh", "Count", "Share")
LOCALIZATION_COLUMNS = ("IoUThreshold", "pD", "FAR", "FNR", "TP", "FP", "FN", "Probes")


# semafor_and_paper.md §2.1 (both sides empty: 1, the suggested choice)
def iou(tp: float, fp: float, fn: float) -> float:
    """TP / (TP + FP + FN); 1.0 when truth and prediction are both empty."""
    union = tp + fp + fn
    return 1.0 if union == 0 else tp / union


# semafor_and_paper.md §2.1 (both sides empty: 1, the suggested choice)
def f1(tp: float, fp: float, fn: float) -> float:
    """TP / (TP + ½(FP + FN)); 1.0 when truth and prediction are both empty."""
    total = 2 * tp + fp + fn
    return 1.0 if total == 0 else 2 * tp / total


# semafor_and_paper.md §2.2 (Y = 1 − S/255)
def soft_confusion(record: MaskRecord) -> tuple[float, float, float, float]:
    """Soft (TP, TN, FP, FN) over the scored pixels, each an exact integer sum divided by 255."""
    values = np.arange(BINS, dtype=np.int64)
    positive, negative = record.positive.astype(np.int64), record.negative.astype(np.int64)
    tp = int(positive @ (255 - values))
    fn = int(positive @ values)
    fp = int(negative @ (255 - values))
    tn = int(negative @ values)
    return tp / 255, tn / 255, fp / 255, fn / 255


# semafor_and_paper.md §2.1–§2.2 (zero factor: 0, as MediScore)
def soft_mcc(tp: float, tn: float, fp: float, fn: float) -> float:
    """MCC of real-valued counts: NaN when all are 0, 0.0 when a denominator factor is 0."""
    if tp == 0 and tn == 0 and fp == 0 and fn == 0:
        return NAN
    factors = (tp + fp, tp + fn, tn + fp, tn + fn)
    if any(f == 0 for f in factors):
        return 0.0
    denominator = math.sqrt(factors[0] * factors[1]) * math.sqrt(factors[2] * factors[3])
    return (tp * tn - fp * fn) / denominator


def _iou_f1_at(record: MaskRecord, threshold: float | None) -> tuple[float, float]:
    if threshold is None or math.isnan(threshold) or record.pixel_n == 0:
        return NAN, NAN
    c = confusion_at(record, np.array([int(threshold)]))
    tp, fp, fn = int(c.tp[0]), int(c.fp[0]), int(c.fn[0])
    return iou(tp, fp, fn), f1(tp, fp, fn)


# semafor_and_paper.md §2.1, §2.2, §2.4
def extra_cells(record: MaskRecord, optimum: float, actual: float | None) -> dict:
    """IoU/F1 at the optimum and actual thresholds, soft MCC/IoU/F1 and the reference size.

    An unscored record gives NaN everywhere; a scored record with no scored pixel (no-score zones
    cover it) gives NaN metrics but keeps its reference size.
    """
    if not record.scored:
        return dict.fromkeys(EXTRA_COLUMNS, NAN)
    optimum_iou, optimum_f1 = _iou_f1_at(record, optimum)
    actual_iou, actual_f1 = _iou_f1_at(record, actual)
    if record.pixel_n:
        tp, tn, fp, fn = soft_confusion(record)
        soft = (soft_mcc(tp, tn, fp, fn), iou(tp, fp, fn), f1(tp, fp, fn))
    else:
        soft = (NAN, NAN, NAN)
    return {
        "OptimumIoU": optimum_iou, "OptimumF1": optimum_f1, "ActualIoU": actual_iou, "ActualF1": actual_f1,
        "SoftMCC": soft[0], "SoftIoU": soft[1], "SoftF1": soft[2],
        "ReferencePixels": record.region_pixels, "SqrtReferencePixels": math.sqrt(record.region_pixels),
    }


# semafor_and_paper.md §2.4 (bin counts: the suggested choice)
def mcc_size_histogram(sqrt_sizes: Sequence[float], mccs: Sequence[float], *, size_bins: int = 10,
                       mcc_bins: int = 20, max_size: float | None = None) -> pd.DataFrame:
    """Share of the masks of each √size column falling in each MCC bin, one row per cell.

    Size bins are equal-width over [0, max_size] (default the largest size); larger sizes go in the
    top bin, the paper's open "1250+" column. MCC bins split [−1, 1]; MCC = 1 is in the top bin.
    Pairs with a NaN size or MCC are skipped. Columns with no mask have Share 0.
    """
    sizes = np.asarray(sqrt_sizes, dtype=np.float64)
    values = np.asarray(mccs, dtype=np.float64)
    keep = ~(np.isnan(sizes) | np.isnan(values))
    sizes, values = sizes[keep], values[keep]
    top = float(max_size) if max_size is not None else (float(sizes.max()) if sizes.size else 0.0)
    if top <= 0:
        top = 1.0
    size_edges = np.linspace(0.0, top, size_bins + 1)
    mcc_edges = np.linspace(-1.0, 1.0, mcc_bins + 1)
    counts, _, _ = np.histogram2d(np.clip(sizes, 0.0, top), np.clip(values, -1.0, 1.0),
                                  bins=(size_edges, mcc_edges))
    counts = counts.astype(np.int64)
    column_totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, column_totals, out=np.zeros(counts.shape), where=column_totals > 0)
    i, j = np.meshgrid(np.arange(size_bins), np.arange(mcc_bins), indexing="ij")
    i, j = i.ravel(), j.ravel()
    return pd.DataFrame({
        "SizeBinLow": size_edges[i], "SizeBinHigh": size_edges[i + 1],
        "MCCBinLow": mcc_edges[j], "MCCBinHigh": mcc_edges[j + 1],
        "Count": counts.ravel(), "Share": shares.ravel(),
    })


def _share(count: int, total: int) -> float:
    return count / total if total else NAN


# semafor_and_paper.md §1.7
def semafor_localization(ious: Sequence[float | None],
                         thresholds: Sequence[float] = SEMAFOR_IOU_THRESHOLDS) -> pd.DataFrame:
    """pD, FAR and FNR per IoU threshold over all probes (the three sum to 1).

    None (or NaN) means no localization was provided: FN at every threshold. Otherwise IoU ≥ t is
    a TP and IoU < t an FP. With no probe the rates are NaN.
    """
    provided = np.array([v for v in ious if v is not None and not math.isnan(v)], dtype=np.float64)
    probes = len(ious)
    fn = probes - provided.size
    rows = []
    for t in thresholds:
        tp = int(np.count_nonzero(provided >= t))
        fp = int(provided.size - tp)
        rows.append({"IoUThreshold": float(t), "pD": _share(tp, probes), "FAR": _share(fp, probes),
                     "FNR": _share(fn, probes),
                     "TP": tp, "FP": fp, "FN": fn, "Probes": probes})
    return pd.DataFrame(rows, columns=list(LOCALIZATION_COLUMNS))
