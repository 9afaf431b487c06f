"""The splice (donor-source) validator, MediScore ``-vt DSD`` (docs/validation.md §5)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from mfscore.validation.findings import ValidationReport
from mfscore.validation.mask_files import WRONG_SIZE, check_png_mask, is_blank
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.probe_submission import FAILED, IS_OPT_OUT, PROBE_STATUS
from mfscore.validation.row_checks import (
    PAIR_SCORE, SCORE, check_duplicates, check_index_coverage, check_pixel_values, check_row_count, check_scores,
    check_statuses, target_rows, trial_keys,
)
from mfscore.validation.submission_table import SubmissionTable

KEY = ("ProbeFileID", "DonorFileID")
REQUIRED = ("ProbeFileID", "DonorFileID", SCORE, "OutputProbeMaskFileName", "OutputDonorMaskFileName")
MIN_COLUMNS = 5
DONOR_STATUS = frozenset({"Processed", "NonProcessed", "OptOutLocalization", FAILED})
# (side, mask column, status column in ProbeStatus submissions, index prefix)
SIDES = (("probe", "OutputProbeMaskFileName", "ProbeStatus", "Probe"),
         ("donor", "OutputDonorMaskFileName", "DonorStatus", "Donor"))


def _status_columns(report: ValidationReport, table: SubmissionTable) -> list[str]:
    """IsOptOut, or ProbeStatus and DonorStatus. MediScore only prints an error when they are absent,
    and the scorers accept such a file, so that is a warning here."""
    header = table.header
    if "IsOptOut" in header:
        return ["IsOptOut"]
    if "ProbeStatus" in header and "DonorStatus" in header:
        return ["ProbeStatus", "DonorStatus"]
    report.warning("table.status_column", "The system output should have IsOptOut, or both ProbeStatus and "
                   "DonorStatus; statuses are not checked.", file=table.path, line=1)
    return []


def validate_splice_submission(report: ValidationReport, table: SubmissionTable, index: pd.DataFrame,
                               options: ValidatorOptions) -> pd.DataFrame | None:
    """Check the content of a splice submission; returns the revised rows when some were excused."""
    where = {"file": table.path}
    check_row_count(report, table, len(index))
    if len(table.header) < MIN_COLUMNS:
        report.error("table.columns", f"The number of columns of the system output file must be at least "
                     f"{MIN_COLUMNS}; it has {len(table.header)}. Are the columns separated by '|'?", line=1, **where)
        return None
    statuses = _status_columns(report, table)
    pixel_columns = [c for c in ("ProbeOptOutPixelValue", "DonorOptOutPixelValue") if c in table.header]
    if len(pixel_columns) == 1:
        report.error("table.required_column", "ProbeOptOutPixelValue and DonorOptOutPixelValue are both required "
                     f"when one is given; only {pixel_columns[0]} is present.", line=1, **where)
    missing = [c for c in REQUIRED if c not in table.header]
    for column in missing:
        report.error("table.required_column", f"The required column {column} is absent from the system output.",
                     line=1, **where)
    if missing:
        return None

    rows = table.rows
    keys = trial_keys(rows, KEY)
    index_keys = trial_keys(index, KEY)
    check_duplicates(report, table, keys)
    check_scores(report, table, keys, unit_interval=options.scores_in_unit_interval, allow_non_finite=False,
                 message=PAIR_SCORE)
    in_index = check_index_coverage(report, table, keys, index_keys, noun="probe-donor pair",
                                    report_unknown=not options.index_filter)
    checked = in_index & target_rows(options.reference, keys, KEY)
    if len(pixel_columns) == 2:
        for column in pixel_columns:
            check_pixel_values(report, table, column, keys, checked)
    if options.neglect_mask:
        return None

    side_checked = {side: checked.copy() for side, *_ in SIDES}
    for column in statuses:
        allowed = IS_OPT_OUT if column == "IsOptOut" else PROBE_STATUS if column == "ProbeStatus" else DONOR_STATUS
        label = "Donor status" if column == "DonorStatus" else "Probe status"
        known = check_statuses(report, table, column, allowed, keys, checked, label=label)
        usable = known & (rows[column].str.strip() != FAILED).to_numpy()
        for side, _, side_status, _ in SIDES:
            if column in ("IsOptOut", side_status):
                side_checked[side] &= usable

    index_by_key = index.assign(_key=index_keys).drop_duplicates("_key").set_index("_key")
    system_dir = os.path.dirname(table.path) or "."
    excused = {side: np.zeros(len(rows), dtype=bool) for side, *_ in SIDES}
    sizes = {side: (keys.map(index_by_key[f"{prefix}Width"]).tolist(), keys.map(index_by_key[f"{prefix}Height"]).tolist(),
                    rows[mask_column].tolist()) for side, mask_column, _, prefix in SIDES}
    key_list = keys.tolist()
    for position in np.flatnonzero(checked).tolist():
        key, line = key_list[position], table.line(position)
        blank = 0
        for side, (widths, heights, names) in sizes.items():
            if is_blank(names[position]):
                blank += 1
                continue
            if not side_checked[side][position]:
                continue
            outcome = check_png_mask(report, system_dir, names[position].strip(), owner=f"the {side} of pair {key}",
                                     width=int(widths[position]), height=int(heights[position]),
                                     max_pixels=options.max_pixels, file=table.path, line=line)
            excused[side][position] = outcome == WRONG_SIZE
        if blank == len(SIDES):
            report.notice("mask.absent", f"Pair {key} has no masks; its mask checks are skipped.", file=table.path,
                          line=line)
    if options.revised_name is None or not statuses or not any(e.any() for e in excused.values()):
        return None
    revised = rows.copy()
    for side, _, side_status, _ in SIDES:
        column = "IsOptOut" if statuses == ["IsOptOut"] else side_status
        revised.loc[excused[side], column] = FAILED
        for position in np.flatnonzero(excused[side]):
            report.notice("status.revised", f"The {side} of pair {keys.iat[position]} is set to {FAILED} in the "
                          "revised system output.", line=table.line(position), **where)
    return revised
