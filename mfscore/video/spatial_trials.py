"""Which videos the spatial-temporal scorer scores, and the job for each (docs/video.md §B.3, §B.5).

The reference (joined with the index) lists each probe's ``HDF5MaskFileName``; probes without one
have no spatial reference and are not spatial targets. The system table supplies the mask, the
status and the opt-out frame intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.errors import InputFileError
from mfscore.formats.images import confined_path
from mfscore.formats.intervals import IntervalSyntaxError, parse_interval_list
from mfscore.formats.tables import file_line, read_table
from mfscore.masks.journal_selection import QuerySelection, operations_by_probe, trial_operations
from mfscore.video.options import FrameRules, VideoOptions
from mfscore.video.video_scoring import VideoJob

OPTED_OUT = ("OptOutAll", "OptOutLocalization")                       # docs/video.md §B.1 --optOut
SKIPS_TEMPORAL = ("OptOutTemporal", "OptOutLocalization", "OptOutAll")  # docs/video.md §B.5
SKIPS_SPATIAL = ("OptOutSpatial", "OptOutLocalization", "OptOutAll")
SPATIAL_DESIGNATIONS = ("spatial", "spatial-temporal")
MASK_COLUMN = "HDF5MaskFileName"


@dataclass
class VideoTrials:
    targets: pd.DataFrame      # reference ⋈ index ⋈ system, one row per spatial target, reference order
    reference_columns: list[str]
    total_trials: int          # system rows
    total_opt_out: int
    missing_system: list[str]  # spatial targets without a system row (not scored, as in MediScore)
    system_lines: dict[str, int]  # probe -> line of its system row, for messages


def _table(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    return read_table(path, raw_text=True, required=required).fillna("")


def load_video_trials(ref_path: Path, index_path: Path, sys_path: Path, options: VideoOptions) -> VideoTrials:
    reference = _table(ref_path, ("ProbeFileID", MASK_COLUMN))
    index = _table(index_path, ("ProbeFileID", "FrameCount"))
    system = _table(sys_path, ("ProbeFileID", "ProbeStatus", "OutputProbeMaskFileName"))
    if system["ProbeFileID"].duplicated().any():
        row = int(np.argmax(system["ProbeFileID"].duplicated().to_numpy()))
        raise InputFileError(f"repeats the probe {system['ProbeFileID'].iloc[row]}", path=str(sys_path),
                             line=file_line(row))
    system_lines = {probe: file_line(i) for i, probe in enumerate(system["ProbeFileID"])}
    total_trials = len(system)
    total_opt_out = int(system["ProbeStatus"].isin(OPTED_OUT).sum())
    if options.opt_out:
        dropped = OPTED_OUT + (("OptOutTemporal",) if options.temporal_only else ())
        system = system[~system["ProbeStatus"].isin(dropped)]
    index_only = [c for c in index.columns if c not in reference.columns]
    merged = reference.merge(index[["ProbeFileID"] + index_only], how="inner", on="ProbeFileID", sort=False)
    if "VideoTaskDesignation" in reference.columns:  # docs/video.md §B.3
        merged = merged[(merged["IsTarget"] == "Y") & merged["VideoTaskDesignation"].isin(SPATIAL_DESIGNATIONS)]
    merged = merged[merged[MASK_COLUMN] != ""]
    system_only = [c for c in system.columns if c not in merged.columns]
    targets = merged.merge(system[["ProbeFileID"] + system_only], how="left", on="ProbeFileID", sort=False,
                           indicator=True)
    missing = targets.loc[targets["_merge"] == "left_only", "ProbeFileID"].tolist()
    targets = targets[targets["_merge"] == "both"].drop(columns="_merge").reset_index(drop=True)
    return VideoTrials(targets, list(reference.columns), total_trials, total_opt_out, missing, system_lines)


def _frame_count(row: pd.Series, index_path: Path) -> int | None:
    text = str(row.get("FrameCount", "")).strip()
    try:
        value = int(float(text)) if text else 0
    except ValueError:
        raise InputFileError(f"FrameCount {text!r} of probe {row['ProbeFileID']} is not a number",
                             path=str(index_path)) from None
    return value if value > 0 else None


def _frame_size(row: pd.Series) -> tuple[int, int] | None:
    try:
        return int(row["ProbeHeight"]), int(row["ProbeWidth"])
    except (KeyError, ValueError):
        return None


def _opt_out_frames(row: pd.Series, sys_path: Path, line: int | None) -> tuple[tuple[int, int], ...]:
    text = str(row.get("VideoFrameOptOutSegments", "")).strip()
    if not text:
        return ()
    try:
        return tuple((min(a, b), max(a, b)) for a, b in parse_interval_list(text))
    except IntervalSyntaxError as exc:
        raise InputFileError(f"VideoFrameOptOutSegments of probe {row['ProbeFileID']}: {exc}",
                             path=str(sys_path), line=line) from None


def _pixel_value(row: pd.Series, options: VideoOptions, sys_path: Path) -> int | None:
    value = options.rules.pixel_value
    if options.per_probe_pixel_value:
        if options.mediscore_compat:  # docs/video.md §B.1: MediScore's -pppns only switches --nspx off
            return None
        text = str(row.get("ProbeOptOutPixelValue", "")).strip()
        if not text:
            return None
        if not (text.isascii() and text.isdigit() and int(text) <= 255):
            raise InputFileError(f"ProbeOptOutPixelValue {text!r} of probe {row['ProbeFileID']} is not a pixel "
                                 f"value 0-255", path=str(sys_path))
        return int(text)
    return value


def plan_video_jobs(trials: VideoTrials, selection: QuerySelection, journal: pd.DataFrame, options: VideoOptions, *,
                    ref_dir: str, system_root: str, index_path: Path, sys_path: Path) -> list[VideoJob]:
    """One job per spatial target of ``selection``, in reference order."""
    operations = operations_by_probe(journal, selection.evaluated) if len(journal) else {}
    jobs = []
    for _, row in selection.trials.iterrows():
        probe = row["ProbeFileID"]
        ops = trial_operations(operations, probe, row.get("JournalName") if "JournalName" in row else None)
        status = row["ProbeStatus"] if options.opt_out else "Processed"  # docs/video.md §B.5
        sys_name = str(row["OutputProbeMaskFileName"]).strip()
        rules = FrameRules(
            selected_bitplanes=ops.bitplanes, journal_bitplanes=ops.journal_bitplanes,
            every_bit=not ops.journal_bitplanes, zones=options.rules.zones,
            pixel_value=_pixel_value(row, options, sys_path))
        jobs.append(VideoJob(
            probe_id=probe,
            reference_path=confined_path(ref_dir, row[MASK_COLUMN], what="reference mask"),
            system_path=confined_path(system_root, sys_name, what="system mask") if sys_name else None,
            frame_count=_frame_count(row, index_path), rules=rules, frame_size=_frame_size(row),
            collar=options.collar,
            opt_out=(_opt_out_frames(row, sys_path, trials.system_lines.get(probe)) if options.video_opt_out else ()),
            temporal_gt_only=options.temporal_gt_only,
            spatial=not options.temporal_only and status not in SKIPS_SPATIAL,
            temporal=status not in SKIPS_TEMPORAL, truncate=options.truncate,
            mediscore_compat=options.mediscore_compat, max_elements=options.max_elements,
            hdf5_frame_base=options.hdf5_frame_base))
    return jobs
