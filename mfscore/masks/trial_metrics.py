"""The per-image metric cells of one scored mask (docs/masks.md §6, §10.1)."""

from __future__ import annotations

import math

from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.threshold_metrics import PointMetrics, gwl1, mask_auc_eer, metrics_at, optimum_threshold

NAN = math.nan
POINT_FIELDS = ("NMM", "MCC", "BWL1")
COUNT_FIELDS = ("PixelTP", "PixelTN", "PixelFP", "PixelFN")


def _point_cells(name: str, point: PointMetrics, counts_when_nan: int | float) -> dict:
    cells = {f"{name}{f}": getattr(point, f.lower()) for f in POINT_FIELDS}
    counts = (point.tp, point.tn, point.fp, point.fn)
    if math.isnan(point.threshold):
        counts = (counts_when_nan,) * 4
    cells.update({f"{name}{f}": v for f, v in zip(COUNT_FIELDS, counts)})
    return cells


def trial_cells(record: MaskRecord, *, actual: float | None, maximum: float | None) -> dict:
    """Metric cells of one mask; ``actual``/``maximum`` thresholds are None when ``--sbin`` is off.

    Unscored masks give empty cells and ``Scored = N``; a mask whose no-score zones cover every
    pixel is scored with NaN metrics and zero counts (docs/masks.md §6.6).
    """
    if not record.scored:
        return {"Scored": "N"}
    threshold = optimum_threshold(record)
    auc, eer = mask_auc_eer(record) if not math.isnan(threshold) else (NAN, NAN)
    cells = {
        "OptimumThreshold": threshold, "GWL1": gwl1(record), "AUC": auc, "EER": eer, "Scored": "Y",
        "PixelN": record.pixel_n, "PixelBNS": record.pixel_bns, "PixelSNS": record.pixel_sns,
        "PixelPNS": record.pixel_pns,
    }
    cells.update(_point_cells("Optimum", metrics_at(record, threshold), 0))
    for name, theta in (("Maximum", maximum), ("Actual", actual)):
        if theta is not None:
            theta = float(theta) if record.pixel_n else NAN
            cells.update(_point_cells(name, metrics_at(record, theta), NAN))
    return cells
