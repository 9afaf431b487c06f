"""The per-video metric cells, read off a ``VideoRecord`` (docs/video.md §B.5).

Spatial metrics are the image-mask metrics of the video's summed histograms; the optimum threshold
is the one with the best spatial MCC (the best TemporalMCC when only time is scored), and the
temporal counts are reported at that same threshold.

A video without a scored reference-positive or without a scored reference-negative pixel has no
ROC: its optimum row, AUC, EER, average AUCs and TemporalMCC are empty, and it enters no mean of
the run (docs/video.md, "How a video is scored"). ``--mediscore-compat`` reads AUC and EER off its
rates anyway, as MediScore does (rates of 0 where a class is empty).
"""

from __future__ import annotations

import math

import numpy as np

from mfscore.masks.threshold_metrics import gwl1, mask_auc_eer, metrics_at, optimum_threshold
from mfscore.video.video_record import VideoRecord

NAN = math.nan
POINT = ("NMM", "MCC", "BWL1")
COUNTS = ("PixelTP", "PixelTN", "PixelFP", "PixelFN")
TEMPORAL_COUNTS = ("TemporalFrameTP", "TemporalFrameTN", "TemporalFrameFP", "TemporalFrameFN")

# docs/video.md §B.5: what a probe gets when neither part can be scored, or its reference mask is unusable
MINIMUM = {"OptimumMCC": 0.0, "OptimumNMM": -1.0, "OptimumBWL1": 1.0, "GWL1": 1.0, "AUC": 0.0, "EER": 1.0,
           "TemporalMCC": 0.0, "Scored": "N"}


def temporal_optimum(record: VideoRecord) -> float:
    """The threshold with the best TemporalMCC, lowest on ties."""
    mccs = [record.temporal_at(t).mcc for t in record.thresholds]
    return float(record.thresholds[int(np.argmax(mccs))]) if mccs else NAN


def _point(record: VideoRecord, name: str, threshold: float) -> dict:
    p = metrics_at(record.spatial, threshold)
    cells = {f"{name}Threshold": p.threshold, **{f"{name}{m}": getattr(p, m.lower()) for m in POINT}}
    cells.update(zip((f"{name}{c}" for c in COUNTS), (p.tp, p.tn, p.fp, p.fn)))
    return cells


def _degenerate(cells: dict, name: str) -> bool:
    """docs/video.md §B.5: an optimum row without reference positives or negatives is not a score."""
    tp, tn, fp, fn = (cells[f"{name}{c}"] for c in COUNTS)
    return tp + fn == 0 or tn + fp == 0


def video_cells(record: VideoRecord, *, maximum: float | None, actual: float | None,
                temporal_only: bool = False, mediscore_compat: bool = False) -> dict:
    """Metric cells of one video, without the ``SpatialTemporal`` prefix; Maximum/Actual need ``--sbin``.

    Maximum and Actual are read at their threshold whatever was scored: with no scored pixel the
    threshold is given with zero counts and empty metrics (MCC, NMM and BWL1 of N = 0 are undefined).
    """
    if not record.scored:
        return dict(MINIMUM)
    spatial = record.spatial_scored and not temporal_only
    threshold = optimum_threshold(record.spatial) if spatial else temporal_optimum(record)
    cells: dict = {"Scored": "Y"}
    if spatial:
        cells.update(_point(record, "Optimum", threshold))
        has_roc = not (math.isnan(threshold) or _degenerate(cells, "Optimum"))
        if not has_roc:
            cells.update({k: NAN for k in list(cells) if k.startswith("Optimum")})
            threshold = NAN
        tp, tn, fp, fn = (cells[f"Optimum{c}"] for c in COUNTS)
        cells["TPR"] = tp / (tp + fn) if tp + fn else NAN  # the checkfiles' TPR and FPR: at the optimum
        cells["FPR"] = fp / (fp + tn) if fp + tn else NAN
        read_roc = has_roc or (mediscore_compat and record.spatial.pixel_n > 0)
        auc, eer = mask_auc_eer(record.spatial) if read_roc else (NAN, NAN)
        cells.update({"GWL1": gwl1(record.spatial), "AUC": auc, "EER": eer,
                      "PixelAverageAUC": record.pixel_average_auc if has_roc else NAN,
                      "MaskAverageAUC": record.mask_average_auc if has_roc else NAN,
                      "PixelN": record.spatial.pixel_n, "PixelBNS": record.spatial.pixel_bns,
                      "PixelSNS": record.spatial.pixel_sns, "PixelPNS": record.spatial.pixel_pns})
        for name, theta in (("Maximum", maximum), ("Actual", actual)):
            if theta is not None:
                cells.update(_point(record, name, float(theta)))
    else:
        cells["OptimumThreshold"] = threshold
    counts = record.temporal_at(threshold)
    if counts is not None:
        cells["TemporalMCC"] = counts.mcc
        cells.update(zip(TEMPORAL_COUNTS, (float(counts.tp), float(counts.tn), float(counts.fp), float(counts.fn))))
    return cells
