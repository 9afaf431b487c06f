"""Mask metrics beyond MediScore's: IoU, F1, the soft confusion matrix, size-binned MCC histograms
and SemaFor's IoU-threshold localization rates (docs/metrics.md §1.7, §2).

The paper sums over every pixel of the image; that is the default here. ``pixels="scored"`` sums
over MediScore's scored pixels instead (outside its no-score zones). Everything is read off a
``MaskRecord``'s histograms, so no image is read again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from mfscore.masks import IMAGE, SCORED_PIXELS
from mfscore.masks.mask_record import BINS, MaskRecord
from mfscore.masks.threshold_metrics import confusion_at, mask_thresholds

NAN = math.nan
SEMAFOR_IOU_THRESHOLDS = (0.0001, 0.1, 0.2, 0.4)
DEFAULT_BINARIZATION = 127  # S <= 127, i.e. Y = 1 - S/255 >= 0.5, when the system gives no --sbin
EXTRA_COLUMNS = ("OptimumIoU", "OptimumF1", "ActualIoU", "ActualF1", "SoftMCC", "SoftIoU", "SoftF1",
                 "ReferencePixels", "SqrtReferencePixels")
SUMMARY_COLUMNS = ("Metric", "Mean", "StdDev", "Images", "Pixels")
SUMMARIZED = ("OptimumIoU", "OptimumF1", "ActualIoU", "ActualF1", "SoftMCC", "SoftIoU", "SoftF1")
HISTOGRAM_COLUMNS = ("SizeBinLow", "SizeBinHigh", "MCCBinLow", "MCCBinHigh", "Count", "Share")
LOCALIZATION_COLUMNS = ("IoUThreshold", "pD", "FAR", "FNR", "TP", "FP", "FN", "Probes", "SystemThreshold")
# The paper's √(mask pixels) axis (0 to 1250, then an open "1250+" column) and MCC bins of 0.1:
# fixed, so histograms of two systems or datasets share their columns. Each edge is the double
# nearest k/10 (or an integer), so a value such as 0.3 falls in the bin the decimal says.
SIZE_EDGES = np.arange(0, 1251, 125, dtype=np.float64)
MCC_EDGES = np.arange(-10, 11) / 10


def over(record: MaskRecord, pixels: str) -> MaskRecord:
    """The record restricted to the pixels the paper's metrics use: the whole image (its
    definition, docs/metrics.md §2.1) or MediScore's scored pixels (outside the no-score zones)."""
    if pixels == IMAGE:
        return record.whole_image()
    if pixels != SCORED_PIXELS:
        raise ValueError(f"pixels must be {IMAGE!r} or {SCORED_PIXELS!r}, got {pixels!r}")
    return record


# docs/metrics.md §2.1 (both sides empty: 1, the suggested choice); higher is better
def iou(tp, fp, fn):
    """TP / (TP + FP + FN), elementwise on arrays; 1.0 where truth and prediction are both empty."""
    return _share_or_one(tp, tp + fp + fn)


# docs/metrics.md §2.1 (both sides empty: 1, the suggested choice); higher is better
def f1(tp, fp, fn):
    """TP / (TP + ½(FP + FN)), elementwise on arrays; 1.0 where truth and prediction are both empty."""
    return _share_or_one(2 * tp, 2 * tp + fp + fn)


def _share_or_one(part, whole):
    """part / whole, 1.0 where whole is 0; a float for scalars."""
    part, whole = np.asarray(part, dtype=np.float64), np.asarray(whole, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(whole == 0, 1.0, part / whole)
    return float(value) if value.ndim == 0 else value


# docs/metrics.md §2.2 (Y = 1 − S/255)
def soft_confusion(record: MaskRecord) -> tuple[float, float, float, float]:
    """Soft (TP, TN, FP, FN) over the record's pixels, each an exact integer sum divided by 255."""
    values = np.arange(BINS, dtype=np.int64)
    positive, negative = record.positive.astype(np.int64), record.negative.astype(np.int64)
    tp = int(positive @ (255 - values))
    fn = int(positive @ values)
    fp = int(negative @ (255 - values))
    tn = int(negative @ values)
    return tp / 255, tn / 255, fp / 255, fn / 255


# docs/metrics.md §2.1–§2.2 (zero factor: 0, as MediScore)
def soft_mcc(tp: float, tn: float, fp: float, fn: float) -> float:
    """MCC of real-valued counts: NaN when all are 0, 0.0 when a denominator factor is 0."""
    if tp == 0 and tn == 0 and fp == 0 and fn == 0:
        return NAN
    factors = (tp + fp, tp + fn, tn + fp, tn + fn)
    if any(f == 0 for f in factors):
        return 0.0
    denominator = math.sqrt(factors[0] * factors[1]) * math.sqrt(factors[2] * factors[3])
    return (tp * tn - fp * fn) / denominator


def _iou_f1(record: MaskRecord, thresholds) -> tuple[np.ndarray, np.ndarray]:
    c = confusion_at(record, np.asarray(thresholds, dtype=np.int64))
    return iou(c.tp, c.fp, c.fn), f1(c.tp, c.fp, c.fn)


# docs/metrics.md §2.1, §2.2, §2.4
def extra_cells(record: MaskRecord, actual: float | None, pixels: str = IMAGE) -> dict:
    """IoU/F1 at the best threshold and at the actual one, soft MCC/IoU/F1 and the reference size.

    Optimum is an oracle, like MediScore's OptimumMCC: the best value of each metric over the
    mask's thresholds (higher is better). An unscored record gives NaN everywhere; a record with
    no pixel to sum over (``pixels="scored"`` and zones covering the image) gives NaN metrics but
    keeps its reference size.
    """
    cells = dict.fromkeys(EXTRA_COLUMNS, NAN)
    if not record.scored:
        return cells
    cells["ReferencePixels"] = record.region_pixels
    cells["SqrtReferencePixels"] = math.sqrt(record.region_pixels)
    summed = over(record, pixels)
    if summed.pixel_n == 0:
        return cells
    ious, f1s = _iou_f1(summed, mask_thresholds(summed))
    cells["OptimumIoU"], cells["OptimumF1"] = float(ious.max()), float(f1s.max())
    if actual is not None and not math.isnan(actual):
        (actual_iou,), (actual_f1,) = _iou_f1(summed, [int(actual)])
        cells["ActualIoU"], cells["ActualF1"] = float(actual_iou), float(actual_f1)
    tp, tn, fp, fn = soft_confusion(summed)
    cells["SoftMCC"], cells["SoftIoU"], cells["SoftF1"] = soft_mcc(tp, tn, fp, fn), iou(tp, fp, fn), f1(tp, fp, fn)
    return cells


# docs/metrics.md §2.4 (mean and standard deviation of the per-image scores)
def extra_summary(table: pd.DataFrame, columns: Sequence[str], pixels: str) -> pd.DataFrame:
    """Mean and population standard deviation of each per-image metric over the images that have it."""
    rows = []
    for column in columns:
        values = pd.to_numeric(table[column], errors="coerce").dropna().to_numpy(dtype=np.float64)
        rows.append({"Metric": column, "Mean": float(values.mean()) if values.size else NAN,
                     "StdDev": float(values.std()) if values.size else NAN, "Images": int(values.size),
                     "Pixels": pixels})
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


# docs/metrics.md §2.4 (axes of Tables 3 and 4; bin widths: the suggested choice)
def mcc_size_histogram(sqrt_sizes: Sequence[float], mccs: Sequence[float]) -> pd.DataFrame:
    """Share of the masks of each √size column falling in each MCC bin, one row per cell.

    Columns are [0, 125), …, [1125, 1250) and [1250, ∞); MCC bins [−1, −0.9), …, [0.9, 1], a bin
    holding its lower edge. Pairs with a NaN size or MCC are skipped; a column with no mask has
    Share 0.
    """
    sizes = np.asarray(sqrt_sizes, dtype=np.float64)
    values = np.asarray(mccs, dtype=np.float64)
    keep = ~(np.isnan(sizes) | np.isnan(values))
    sizes, values = sizes[keep], values[keep]
    n_size, n_mcc = SIZE_EDGES.size, MCC_EDGES.size - 1
    column = np.searchsorted(SIZE_EDGES, sizes, side="right") - 1
    row = np.clip(np.searchsorted(MCC_EDGES, values, side="right") - 1, 0, n_mcc - 1)
    counts = np.zeros((n_size, n_mcc), np.int64)
    np.add.at(counts, (column, row), 1)
    column_totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, column_totals, out=np.zeros(counts.shape), where=column_totals > 0)
    size_high = np.r_[SIZE_EDGES[1:], np.inf]
    i, j = np.meshgrid(np.arange(n_size), np.arange(n_mcc), indexing="ij")
    i, j = i.ravel(), j.ravel()
    return pd.DataFrame({
        "SizeBinLow": SIZE_EDGES[i], "SizeBinHigh": size_high[i],
        "MCCBinLow": MCC_EDGES[j], "MCCBinHigh": MCC_EDGES[j + 1],
        "Count": counts.ravel(), "Share": shares.ravel(),
    })


def _share(count: int, total: int) -> float:
    return count / total if total else NAN


def claims_a_region(record: MaskRecord, threshold: int) -> bool:
    """Whether the system mask marks at least one pixel anywhere in the image at ``threshold`` (a
    value ``<= threshold`` is marked), no-score zones included: a mask that marks nothing claims no region."""
    if not record.system_given:
        return False
    whole = record.whole_image()
    marked = (whole.positive + whole.negative)[:max(threshold, -1) + 1]
    return bool(marked.sum() > 0)


# docs/metrics.md, "Masks": `_mask_extra_semafor`
def localization_iou(record: MaskRecord, threshold: int, pixels: str = IMAGE) -> float | None:
    """IoU of the system's localization (its mask binarised at its own ``threshold``) with the
    reference region; None when the system provided no localization: no mask file, or a mask that
    marks no pixel of the image at ``threshold`` (all white once binarised claims no region, so it
    detects nothing: an FN, not an incorrect detection)."""
    if not claims_a_region(record, threshold):
        return None
    (value,), _ = _iou_f1(over(record, pixels), [threshold])
    return float(value)


# docs/metrics.md §1.7
def semafor_localization(ious: Sequence[float | None], system_threshold: int,
                         thresholds: Sequence[float] = SEMAFOR_IOU_THRESHOLDS) -> pd.DataFrame:
    """pD, FAR and FNR per IoU threshold over all probes (the three sum to 1; higher pD is better).

    None means no localization was provided (no mask file, or a mask marking no pixel): FN at every
    threshold. Otherwise IoU ≥ t is a TP and IoU < t an FP, whatever region the mask marks (an
    inverted or all-black mask is a localization). With no probe the rates are NaN.
    """
    provided = np.array([v for v in ious if v is not None], dtype=np.float64)
    probes = len(ious)
    fn = probes - provided.size
    rows = []
    for t in thresholds:
        tp = int(np.count_nonzero(provided >= t))
        fp = int(provided.size - tp)
        rows.append({"IoUThreshold": float(t), "pD": _share(tp, probes), "FAR": _share(fp, probes),
                     "FNR": _share(fn, probes), "TP": tp, "FP": fp, "FN": fn, "Probes": probes,
                     "SystemThreshold": int(system_threshold)})
    return pd.DataFrame(rows, columns=list(LOCALIZATION_COLUMNS))
