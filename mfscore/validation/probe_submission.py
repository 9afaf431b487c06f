"""The single-source validator (MediScore ``-vt SSD``, ``SSD-video``, ``SSD-event``, ``SSD-camera``).

docs/validation.md §4, in MediScore's order, with the intended behaviour of c460603 (HEAD's 2021
regression that failed every valid submission is not reproduced).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mfscore.formats.images import confined_path
from mfscore.errors import ImageError
from mfscore.formats.video_masks import frame_count_of_video
from mfscore.validation.findings import ValidationReport
from mfscore.validation.mask_files import WRONG_SIZE, check_png_mask, is_blank
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.row_checks import (
    PROBE_SCORES, SCORE, check_duplicates, check_index_coverage, check_pixel_values, check_row_count, check_scores,
    check_statuses, target_rows, trial_keys,
)
from mfscore.validation.submission_table import SubmissionTable
from mfscore.validation.video_checks import check_interval_column, check_video_mask

FAILED = "FailedValidation"
PIXEL = "ProbeOptOutPixelValue"
MASK = "OutputProbeMaskFileName"
INTERVAL_COLUMNS = ("VideoFrameSegments", "AudioSampleSegments", "VideoFrameOptOutSegments")

# docs/validation.md §4 step 9 (MFC2019 plan §5.1.1.3): status vocabularies
IS_OPT_OUT = frozenset({"Y", "Detection", "Localization", "N", FAILED})
PROBE_STATUS = frozenset({"Processed", "NonProcessed", "OptOutAll", "OptOutDetection", "OptOutLocalization", FAILED})


@dataclass(frozen=True)
class ProbeTask:
    name: str
    key: tuple[str, ...]
    min_columns: int
    required: tuple[str, ...]            # besides the opt-out column
    statuses: frozenset[str]             # ProbeStatus values
    masks: bool = False
    video: bool = False
    pixel_value_required: bool = True    # with ProbeStatus
    target_also: str | None = None       # -r: a second reference column that must be Y


TASKS = {
    "SSD": ProbeTask("manipulation-image", ("ProbeFileID",), 3, ("ProbeFileID", SCORE, MASK), PROBE_STATUS, masks=True),
    "SSD-video": ProbeTask("manipulation-video", ("ProbeFileID",), 3, ("ProbeFileID", SCORE),
                           PROBE_STATUS | {"OptOutTemporal", "OptOutSpatial"}, video=True, pixel_value_required=False),
    "SSD-event": ProbeTask("eventverification", ("ProbeFileID", "EventName"), 4,
                           ("ProbeFileID", "EventName", SCORE, "ProbeStatus"),
                           frozenset({"Processed", "NonProcessed", "OptOut", FAILED}), pixel_value_required=False),
    "SSD-camera": ProbeTask("camera", ("ProbeFileID", "TrainCamID"), 6,
                            ("ProbeFileID", "TrainCamID", MASK, SCORE, "ProbeStatus", PIXEL), PROBE_STATUS, masks=True,
                            target_also="IsManipulated"),
}


def _status_column(report: ValidationReport, table: SubmissionTable, task: ProbeTask) -> str | None:
    """Step 2: IsOptOut (mode 1) or ProbeStatus (mode 2); the scorers read IsOptOut first."""
    header = table.header
    if "IsOptOut" not in header and "ProbeStatus" not in header:
        report.error("table.status_column", "The system output has neither an IsOptOut nor a ProbeStatus column.",
                     file=table.path, line=1)
        return None
    if "IsOptOut" in header and "ProbeStatus" in header:
        report.notice("table.status_column", "The system output has both IsOptOut and ProbeStatus; IsOptOut is "
                      "used.", file=table.path, line=1)
    return "IsOptOut" if "IsOptOut" in header else "ProbeStatus"


def _required_columns(task: ProbeTask, status: str | None) -> list[str]:
    required = list(task.required)
    if task.video and status == "IsOptOut":
        required.append("IsOptOut")
    elif task.video and status == "ProbeStatus":
        required += ["ProbeStatus", *INTERVAL_COLUMNS]
    if status == "ProbeStatus" and task.pixel_value_required:
        required.append(PIXEL)
    return list(dict.fromkeys(required))


def _frame_count(index_row: pd.Series, index_dir: str, options: ValidatorOptions) -> int | None:
    """The index FrameCount, else the probe video's own count; None when neither is known."""
    value = str(index_row.get("FrameCount", "")).strip()
    if value not in ("", "nan"):
        return int(float(value))
    try:  # the index names the video: within the dataset, or not known
        video = confined_path(os.path.join(index_dir, os.pardir), str(index_row.get("ProbeFileName", "")), what="probe")
    except ImageError:
        video = None
    counted = None if video is None else frame_count_of_video(video)
    if counted is None and options.mediscore_compat:
        return 0
    return counted


def validate_probe_submission(report: ValidationReport, table: SubmissionTable, index: pd.DataFrame,
                              index_path: str, options: ValidatorOptions, *, condition: str = ""
                              ) -> pd.DataFrame | None:
    """Check the content of a single-source submission; returns the revised rows when some were excused."""
    task = TASKS[options.kind]
    where = {"file": table.path}
    if len(table.header) < task.min_columns:
        report.error("table.columns", f"The number of columns of the system output file must be at least "
                     f"{task.min_columns}; it has {len(table.header)}. Are the columns separated by '|'?",
                     line=1, **where)
        return None
    status = None if options.neglect_pixel else _status_column(report, table, task)
    missing = [c for c in _required_columns(task, status) if c not in table.header]
    for column in missing:
        report.error("table.required_column", f"The required column {column} is absent from the system output.",
                     line=1, **where)
    if missing or (status is None and not options.neglect_pixel):
        return None

    rows = table.rows
    keys = trial_keys(rows, task.key)
    index_keys = trial_keys(index, task.key)
    check_duplicates(report, table, keys)
    check_row_count(report, table, len(index))
    check_scores(report, table, keys, unit_interval=options.scores_in_unit_interval,
                 allow_non_finite=options.mediscore_compat, message=PROBE_SCORES)
    in_index = check_index_coverage(report, table, keys, index_keys, noun="probe",
                                    report_unknown=not options.index_filter)
    checked = in_index & target_rows(options.reference, keys, task.key, also=task.target_also)
    if PIXEL in table.header and not options.neglect_pixel:
        check_pixel_values(report, table, PIXEL, keys, checked)
    if status is not None:
        allowed = IS_OPT_OUT if status == "IsOptOut" else task.statuses
        known = check_statuses(report, table, status, allowed, keys, checked, label="Probe status")
        failed = (rows[status].str.strip() == FAILED).to_numpy()
        for position in np.flatnonzero(checked & failed):
            report.warning("status.failed_validation", f"Probe {keys.iat[position]} has failed validation due to "
                           "incorrect mask dimensions, but is excused in this system output.",
                           line=table.line(position), **where)
        checked &= known & ~failed

    index_by_key = index.assign(_key=index_keys).drop_duplicates("_key").set_index("_key")
    system_dir = os.path.dirname(table.path) or "."
    if task.video:
        _check_video_rows(report, table, keys, checked, index_by_key, os.path.dirname(index_path) or ".",
                          system_dir, status, options)
    excused = np.zeros(len(rows), dtype=bool)
    if task.masks and not options.neglect_mask and condition not in ("VidOnly", "VidMeta"):
        widths = keys.map(index_by_key["ProbeWidth"]).tolist()
        heights = keys.map(index_by_key["ProbeHeight"]).tolist()
        names, key_list = rows[MASK].tolist(), keys.tolist()
        for position in np.flatnonzero(checked).tolist():
            key, line = key_list[position], table.line(position)
            if is_blank(names[position]):
                report.notice("mask.absent", f"Probe {key} has no mask; its mask check is skipped.", line=line, **where)
                continue
            outcome = check_png_mask(report, system_dir, names[position].strip(), owner=f"probe {key}",
                                     width=int(widths[position]), height=int(heights[position]),
                                     max_pixels=options.max_pixels, file=table.path, line=line)
            excused[position] = outcome == WRONG_SIZE
    if options.revised_name is None or not excused.any() or status is None:
        return None
    for position in np.flatnonzero(excused):
        report.notice("status.revised", f"Probe {keys.iat[position]} is set to {FAILED} in the revised system "
                      "output.", line=table.line(position), **where)
    revised = rows.copy()
    revised.loc[excused, status] = FAILED
    return revised


def _check_video_rows(report: ValidationReport, table: SubmissionTable, keys: pd.Series, checked: np.ndarray,
                      index_by_key: pd.DataFrame, index_dir: str, system_dir: str, status: str | None,
                      options: ValidatorOptions) -> None:
    """Intervals (ProbeStatus submissions only, as in MediScore) and HDF5 masks where named."""
    rows = table.rows
    has_masks = MASK in table.header and not options.neglect_mask
    for position in np.flatnonzero(checked):
        key, line = keys.iat[position], table.line(position)
        probe = index_by_key.loc[key]
        frames = _frame_count(probe, index_dir, options)
        if status == "ProbeStatus":
            if frames is None:
                report.warning("video.frame_count_unknown", f"The frame count of probe {key} is unknown (no FrameCount "
                               "in the index and the video cannot be read); its interval bounds are not checked.",
                               file=table.path, line=line)
            for column in INTERVAL_COLUMNS:
                check_interval_column(report, rows[column].iat[position], column=column, probe=key,
                                      frame_count=frames, ignore_eof=options.ignore_eof,
                                      ignore_overlap=options.ignore_overlap, file=table.path, line=line)
        if has_masks and not is_blank(rows[MASK].iat[position]):
            name = rows[MASK].iat[position].strip()
            try:
                path = confined_path(system_dir, name, what="mask")
            except ImageError as exc:
                report.error("mask.path", f"Mask {name} for probe {key} is refused: {exc.message}.",
                             file=table.path, line=line)
                continue
            check_video_mask(report, path, probe=key, width=int(probe["ProbeWidth"]), height=int(probe["ProbeHeight"]),
                             frame_count=frames, max_elements=options.max_video_elements,
                             frame_base=options.hdf5_frame_base, file=table.path, line=line)
