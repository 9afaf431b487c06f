"""VideoSpatialLocalizationScorer tables: per-video, averaged and journal results (docs/video.md §B.6).

Every table is computed from the per-video records and the trial rows only, so records scored
anywhere (a local pool, distributed workers) give the same files.
"""

from __future__ import annotations

import math

import pandas as pd

from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.threshold_metrics import confusion_at, exact_mcc, mask_thresholds, nmm, bwl1
from mfscore.reports.significant_digits import format_cell, round_significant
from mfscore.video.spatial_trials import OPTED_OUT, VideoTrials
from mfscore.video.video_metrics import COUNTS, POINT, TEMPORAL_COUNTS
from mfscore.video.video_record import VideoRecord

ST = "SpatialTemporal"
PROBE_COLUMNS = ["TaskID", "ProbeFileID", "IsTarget", "ConfidenceScore", "ProbeFileName", "ProbeMaskFileName",
                 "ProbeBitPlaneMaskFileName", "OutputProbeMaskFileName", "Scored", "ProbeStatus"]
OPTIMUM = ["OptimumThreshold", "OptimumNMM", "OptimumMCC", "OptimumBWL1", "GWL1", "AUC", "EER"]


def _point(name: str) -> list[str]:
    return [f"{name}Threshold"] + [f"{name}{m}" for m in POINT] + [f"{name}{c}" for c in COUNTS]


# docs/video.md §B.6, in MediScore's order; TemporalMCC and TemporalFrame* carry no prefix
METRIC_COLUMNS = ([f"{ST}{c}" for c in OPTIMUM + ["PixelAverageAUC", "MaskAverageAUC"]]
                  + [f"{ST}Optimum{c}" for c in COUNTS]
                  + [f"{ST}{c}" for c in ("PixelN", "PixelBNS", "PixelSNS", "PixelPNS")]
                  + ["TemporalMCC", *TEMPORAL_COUNTS]
                  + [f"{ST}{c}" for c in _point("Maximum") + _point("Actual")] + ["TPR", "FPR"])
AVERAGED = ([f"{ST}{c}" for c in OPTIMUM] + [f"{ST}{k}{m}" for k in ("Maximum", "Actual") for m in POINT]
            + ["TemporalMCC"])


TRIAL_COUNTS = ("totalTrials", "ScoreableTrials", "totalTargets", "ScoreableTargets", "totalOptIn", "totalOptOut")


def _is_integer(column: str) -> bool:
    return column in TRIAL_COUNTS or column.endswith("Threshold") or any(
        column.endswith(f"Pixel{c}") for c in ("TP", "TN", "FP", "FN", "N", "BNS", "SNS", "PNS"))


def _cell(column: str, value, digits: int) -> str:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if _is_integer(column):
        return str(int(value))
    return format_cell(round_significant(float(value), digits))


def format_table(frame: pd.DataFrame, digits: int, numeric: list[str]) -> pd.DataFrame:
    """Text cells: ``numeric`` columns rounded to ``digits`` significant digits, integers plain, NaN empty."""
    out = frame.copy().astype(object)
    for column in numeric:
        if column in out:
            out[column] = [_cell(column, v, digits) for v in out[column]]
    return out


def pervideo_frame(trials: VideoTrials, rows: pd.DataFrame, cells: list[dict]) -> pd.DataFrame:
    """One row per scored target: probe columns, metrics, then every other input column (docs/video.md §B.6)."""
    metrics = pd.DataFrame([{f"{ST}{k}" if not k.startswith("Temporal") and k not in ("Scored", "TPR", "FPR") else k: v
                             for k, v in c.items()} for c in cells],
                           columns=["Scored"] + METRIC_COLUMNS, index=rows.index, dtype=object)
    table = rows.copy()
    for column in PROBE_COLUMNS:
        if column not in table and column != "Scored":
            table[column] = ""
    rest = [c for c in table.columns if c not in PROBE_COLUMNS and c not in METRIC_COLUMNS]
    table = pd.concat([table.drop(columns=[c for c in METRIC_COLUMNS + ["Scored"] if c in table]), metrics], axis=1)
    return table[PROBE_COLUMNS + METRIC_COLUMNS + rest]


def _mean_std(values: pd.Series) -> tuple[float, float]:
    numbers = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if numbers.empty:
        return math.nan, math.nan
    return float(numbers.mean()), float(numbers.std(ddof=1)) if len(numbers) > 1 else math.nan


def averaged_videos(subset: pd.DataFrame, *, mediscore_compat: bool = False) -> pd.DataFrame:
    """The videos every mean of ``subset`` is taken over: scored, with an optimum threshold.

    A video without a scored reference-positive or -negative pixel has none (its optimum row, AUC and
    EER are undefined) and enters no mean, so each mean is over the same videos; a part the system
    opted out of (OptOutSpatial, OptOutTemporal) is empty and left out of that part's means only.
    ``mediscore_compat``: every scored video, each mean over the cells it has (pandas' ``mean``).
    """
    scored = subset[subset["Scored"] == "Y"]
    if mediscore_compat:
        return scored
    return scored[pd.to_numeric(scored[f"{ST}OptimumThreshold"], errors="coerce").notna()]


def averaged_row(subset: pd.DataFrame, pervideo: pd.DataFrame, trials: VideoTrials, *, label: str,
                 maximum: float | None, actual: float | None, opt_out: bool, task: str,
                 mediscore_compat: bool = False) -> dict:
    """One ``_mask_score.csv`` row: means and deviations over the subset's averaged videos, run-wide counts."""
    scored = averaged_videos(subset, mediscore_compat=mediscore_compat)
    row: dict = {"TaskID": task, "Query": label}
    for column in AVERAGED:
        mean, std = _mean_std(scored[column])
        if column.endswith("Threshold") and not math.isnan(mean):
            mean = int(mean)
        row[column], row[f"stddev_{column}"] = mean, std
    scoreable = int((~pervideo["ProbeStatus"].isin(OPTED_OUT)).sum()) if len(pervideo) else 0
    targets = len(pervideo)
    row.update({
        f"{ST}MaximumThreshold": maximum, f"{ST}ActualThreshold": actual,
        # docs/video.md §B.6: TRR is ScoreableTrials / totalTrials here, not the image scorer's definition
        "TRR": scoreable / trials.total_trials if targets and trials.total_trials else math.nan,
        "totalTrials": trials.total_trials, "ScoreableTrials": scoreable, "totalTargets": targets,
        "ScoreableTargets": int(((pervideo["Scored"] == "Y")
                                 & pd.to_numeric(pervideo[f"{ST}OptimumMCC"], errors="coerce").notna()).sum()),
        "totalOptIn": trials.total_trials - trials.total_opt_out, "totalOptOut": trials.total_opt_out,
        "optOutScoring": "Y" if opt_out else "N",
    })
    return row


def averaged_columns() -> list[str]:
    columns = ["TaskID", "Query"]
    for name in AVERAGED:
        columns += [name, f"stddev_{name}"]
    return columns + [f"{ST}MaximumThreshold", f"{ST}ActualThreshold", "TRR", "totalTrials", "ScoreableTrials",
                      "totalTargets", "ScoreableTargets", "totalOptIn", "totalOptOut", "optOutScoring"]


def threshold_table(record: VideoRecord) -> pd.DataFrame:
    """Every threshold's spatial and temporal metrics of one video (MediScore's ``thresMets.csv``)."""
    spatial: MaskRecord = record.spatial
    thresholds = record.thresholds if len(record.thresholds) else mask_thresholds(spatial)
    c = confusion_at(spatial, thresholds)
    table = pd.DataFrame({
        "Threshold": thresholds, "TP": c.tp, "TN": c.tn, "FP": c.fp, "FN": c.fn,
        "MCC": [exact_mcc(*(int(x) for x in v)) for v in zip(c.tp, c.tn, c.fp, c.fn)],
        "NMM": nmm(c), "BWL1": bwl1(c),
    })
    temporal = [record.temporal_at(t) for t in thresholds]
    if all(t is not None for t in temporal):
        table["TemporalMCC"] = [t.mcc for t in temporal]
        for name, field in zip(TEMPORAL_COUNTS, ("tp", "tn", "fp", "fn")):
            table[name] = [getattr(t, field) for t in temporal]
    return table
