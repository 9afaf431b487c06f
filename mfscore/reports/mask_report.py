"""MaskScorer-compatible tables: per-image, averaged and journal results (docs/masks.md §8, §10, §11).

Values stay numbers until the last step: per-image metrics are rounded to 16 significant digits
(as MediScore's runner does), averages are taken over those, and every float is then rounded to
``--precision`` significant digits and printed by shortest repr.
"""

from __future__ import annotations

import math

import pandas as pd

from mfscore.masks.scorer import QueryRun
from mfscore.masks.trials import FAILED, SPLICE, TrialTable, mask_roles
from mfscore.reports.significant_digits import format_cell, round_significant

COUNTS = ("PixelTP", "PixelTN", "PixelFP", "PixelFN")
OPTIMUM = ("OptimumThreshold", "OptimumNMM", "OptimumMCC", "OptimumBWL1", "GWL1", "AUC", "EER")
POINT = ("NMM", "MCC", "BWL1")
PIXEL_ZONES = ("PixelN", "PixelBNS", "PixelSNS", "PixelPNS")


def _point_columns(prefix: str, name: str) -> list[str]:
    return [f"{prefix}{name}{m}" for m in POINT] + [f"{prefix}{name}{c}" for c in COUNTS]


def manipulation_metric_columns() -> list[str]:
    return (list(OPTIMUM) + ["Scored", "PixelN"] + [f"Optimum{c}" for c in COUNTS]
            + ["PixelBNS", "PixelSNS", "PixelPNS"] + _point_columns("", "Maximum") + _point_columns("", "Actual"))


def _prefixed(prefix: str, cells: dict) -> dict:
    return {f"{prefix}{k}": v for k, v in cells.items()}


def _is_integer_column(name: str) -> bool:
    if name.startswith("stddev_"):
        return False
    bare = name[1:] if name[:1] in "pd" and name[1:2].isupper() else name
    return bare.endswith("Threshold") or bare in PIXEL_ZONES or bare.endswith(COUNTS)


def perimage_frame(run: QueryRun, table: TrialTable, task: str) -> pd.DataFrame:
    """The per-image table as values (numbers unrounded), in MediScore's column order (docs/masks.md §10.1)."""
    trials = run.trials.copy()
    for role, sys_column, _ in mask_roles(task):
        status = trials["DonorStatus"] if role == "donor" and "DonorStatus" in trials else trials[table.status_column]
        trials.loc[status == FAILED, sys_column] = ""
    reference = [c for c in table.reference_columns if c in trials]
    system_only = [c for c in table.system_only_columns if c in trials]
    if task == SPLICE:
        head = ["TaskID", "ProbeFileID", "ProbeFileName", "ProbeMaskFileName", "DonorFileID", "DonorFileName",
                "DonorMaskFileName", "IsTarget", "OutputProbeMaskFileName", "OutputDonorMaskFileName",
                "ConfidenceScore"]
        metrics = ([f"p{c}" for c in OPTIMUM] + [f"d{c}" for c in OPTIMUM]
                   + _point_columns("p", "Maximum") + _point_columns("d", "Maximum")
                   + _point_columns("p", "Actual") + _point_columns("d", "Actual"))
        tail = []
        for role, p in (("Probe", "p"), ("Donor", "d")):
            tail += ([f"{role}Scored"] + [f"{p}Optimum{c}" for c in COUNTS] + [f"{p}{z}" for z in PIXEL_ZONES]
                     + [f"{role}ColMaskFileName", f"{role}AggMaskFileName"])
        rows = []
        for probe, donor in zip(run.roles["probe"].cells, run.roles["donor"].cells):
            cells = {**_prefixed("p", probe), **_prefixed("d", donor)}
            cells["ProbeScored"], cells["DonorScored"] = cells.pop("pScored"), cells.pop("dScored")
            rows.append(cells)
    else:
        head = ["TaskID", "ProbeFileID", "ProbeFileName", "ProbeMaskFileName", "IsTarget",
                "OutputProbeMaskFileName", "ConfidenceScore"]
        metrics = manipulation_metric_columns()
        tail = ["ColMaskFileName", "AggMaskFileName"]
        rows = run.roles["probe"].cells
    metric_frame = pd.DataFrame(rows, columns=metrics + tail, index=trials.index, dtype=object)
    html_columns = [c for c in tail if c.endswith("MaskFileName")]
    metric_frame[html_columns] = ""
    for column in head:
        if column not in trials:
            trials[column] = ""
    rest = [c for c in reference + system_only if c not in head]
    return pd.concat([trials[head + rest], metric_frame], axis=1)[head + metrics + rest + tail]


def round_metrics(frame: pd.DataFrame, digits: int, *, truncate: bool = False) -> pd.DataFrame:
    """Round every float cell but the confidence scores to ``digits`` significant digits."""
    out = frame.astype(object)
    for column in out.columns:
        if column != "ConfidenceScore":
            out[column] = [round_significant(v, digits, truncate=truncate) for v in out[column]]
    return out


def format_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells: integer columns without decimals, floats by repr, NaN empty."""
    out = pd.DataFrame(index=frame.index)
    for column in frame.columns:
        integer = _is_integer_column(column)
        cells = []
        for v in frame[column]:
            if integer and isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                cells.append(str(int(v)))
            else:
                cells.append(format_cell(v))
        out[column] = cells
    return out


def _mean_std(values: pd.Series) -> tuple[float, float]:
    numbers = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if numbers.empty:
        return math.nan, math.nan
    std = float(numbers.std(ddof=1)) if len(numbers) >= 2 else math.nan
    return float(numbers.mean()), std


def _scored(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    return rows[rows[column] == "Y"]


def averaged_row(rows: pd.DataFrame, everything: pd.DataFrame, run: QueryRun, table: TrialTable, *, task: str,
                 opt_out: bool, label: dict) -> dict:
    """One row of the averaged table over per-image ``rows`` (16-digit values) (docs/masks.md §8).

    Trial counts are run-wide: ``everything`` is the whole per-image table, not the subset.
    """
    row = {"TaskID": rows["TaskID"].iloc[0] if len(rows) else "", **label}
    sides = [("p", "ProbeScored"), ("d", "DonorScored")] if task == SPLICE else [("", "Scored")]

    def add(prefix: str, scored_column: str, names) -> None:
        scored = _scored(rows, scored_column)
        for name in names:
            mean, std = _mean_std(scored[f"{prefix}{name}"])
            if name.endswith("Threshold") and not math.isnan(mean):
                mean = int(mean)
            row[f"{prefix}{name}"], row[f"stddev_{prefix}{name}"] = mean, std

    for prefix, scored_column in sides:
        add(prefix, scored_column, OPTIMUM)
    for kind in ("Maximum", "Actual"):
        for prefix, scored_column in sides:
            add(prefix, scored_column, [f"{kind}{m}" for m in POINT])
    roles = [run.roles[r] for r, _, _ in mask_roles(task)]
    constants = {
        "PixelAverageAUC": [round_significant(r.pixel_average_auc, 16) for r in roles],
        "MaskAverageAUC": [round_significant(r.mask_average_auc, 16) for r in roles],
        "MaximumThreshold": [r.maximum_threshold for r in roles],
        "ActualThreshold": [r.actual_threshold for r in roles],
    }
    for name, values in constants.items():
        for (prefix, _), value in zip(sides, values):
            row[f"{prefix}{name}"] = value
    row["TRR"] = table.trr
    row["totalTrials"] = table.total_trials
    if task == SPLICE:
        row["ScoreableProbeTrials"] = table.total_trials - int((everything["ProbeScored"] == "N").sum())
        row["ScoreableDonorTrials"] = table.total_trials - int((everything["DonorScored"] == "N").sum())
    else:
        row["ScoreableTrials"] = int((everything["Scored"] == "Y").sum())
    row["totalOptIn"] = table.total_opt_in
    row["totalOptOut"] = table.total_trials - table.total_opt_in
    row["optOutScoring"] = "Y" if opt_out else "N"
    return row


def averaged_columns(task: str, label_columns: list[str]) -> list[str]:
    columns = ["TaskID"] + label_columns

    def pair(names):
        for name in names:
            columns.extend([name, f"stddev_{name}"])

    if task == SPLICE:
        pair([f"p{c}" for c in OPTIMUM] + [f"d{c}" for c in OPTIMUM])
        for kind in ("Maximum", "Actual"):
            pair([f"p{kind}{m}" for m in POINT] + [f"d{kind}{m}" for m in POINT])
        columns += ["pPixelAverageAUC", "dPixelAverageAUC", "pMaskAverageAUC", "dMaskAverageAUC",
                    "pMaximumThreshold", "dMaximumThreshold", "pActualThreshold", "dActualThreshold",
                    "TRR", "totalTrials", "ScoreableProbeTrials", "ScoreableDonorTrials"]
    else:
        pair(list(OPTIMUM) + [f"{k}{m}" for k in ("Maximum", "Actual") for m in POINT])
        columns += ["PixelAverageAUC", "MaskAverageAUC", "MaximumThreshold", "ActualThreshold", "TRR",
                    "totalTrials", "ScoreableTrials"]
    return columns + ["totalOptIn", "totalOptOut", "optOutScoring"]
