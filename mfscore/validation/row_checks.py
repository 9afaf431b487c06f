"""Checks shared by the detection and splice validators, vectorised over the rows of a submission."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mfscore.formats.tables import read_table
from mfscore.validation.findings import ValidationReport
from mfscore.validation.submission_table import SubmissionTable

SCORE = "ConfidenceScore"


def trial_keys(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
    """``ProbeFileID`` or ``ProbeFileID:DonorFileID``-style keys as text."""
    keys = frame[columns[0]].str.strip()
    for column in columns[1:]:
        keys = keys + ":" + frame[column].str.strip()
    return keys


def check_row_count(report: ValidationReport, table: SubmissionTable, index_rows: int, *,
                    count_header: bool = True) -> None:
    """MediScore's detection validators count the header line (5 data rows vs 4 is '6 vs 5'); its
    provenance validator does not."""
    extra = int(count_header)
    if len(table.rows) != index_rows:
        report.error("table.row_count", f"The number of rows in your system output ({len(table.rows) + extra}) does "
                     f"not match the number of rows in the index file ({index_rows + extra}).", file=table.path)


# MediScore's whole line for an index key missing from the system output (docs/validation.md, step 4):
# printed as it is, without mfscore's " [file, line N]" (the key has no line in the system file).
MISSING_KEY = "Expected {noun} {key} in system file. Only found in index file."


def check_index_coverage(report: ValidationReport, table: SubmissionTable, keys: pd.Series, index_keys: pd.Series, *,
                         noun: str, report_unknown: bool = True) -> np.ndarray:
    """Every index key in the system output and (unless -xF) every system key in the index; returns
    which rows are in the index. ``noun`` names a key in a sentence: "probe", "probe-donor pair"."""
    for key in dict.fromkeys(index_keys[~index_keys.isin(set(keys))]):
        report.error("key.missing", MISSING_KEY.format(noun=noun, key=key))
    in_index = keys.isin(set(index_keys)).to_numpy()
    if report_unknown:
        subject = noun[0].upper() + noun[1:]
        report.error_rows("key.unknown", np.flatnonzero(~in_index),
                          lambda at: f"{subject} {keys.iat[at]} does not exist in the index file.",
                          file=table.path, line=table.line)
    return in_index


def check_duplicates(report: ValidationReport, table: SubmissionTable, keys: pd.Series) -> None:
    """Repeated rows (MediScore's check) and repeated keys with different values (the scorers refuse them)."""
    rows = table.rows
    repeated_rows = rows.duplicated(keep=False).to_numpy()
    if repeated_rows.any():
        positions = np.flatnonzero(repeated_rows)
        shown = ", ".join(map(str, positions[:20])) + (", ..." if len(positions) > 20 else "")
        report.error("table.duplicate_rows", f"Your system output contains duplicate rows: {len(positions)} rows "
                     f"are repeated, at data rows {shown} (0-based).", file=table.path, line=table.line(positions[0]))
    repeated_keys = keys.duplicated(keep="first").to_numpy() & ~rows.duplicated(keep="first").to_numpy()
    report.error_rows("key.duplicate", np.flatnonzero(repeated_keys),
                      lambda at: f"Trial {keys.iat[at]} appears more than once with different values.",
                      file=table.path, line=table.line)


# MediScore's words (docs/validation.md §6a): the SSD validator's "The Confidence Scores for probes ...", the
# DSD validator's "The Confidence Score for probe-donor pair ..." ("not a real number",
# docs/validation.md §5). mfscore adds the value, one finding per row.
PROBE_SCORES = "The Confidence Scores for probes must be real numbers: {key} has {value!r}."
PAIR_SCORE = "The Confidence Score for probe-donor pair {key} is not a real number: {value!r}."


def check_scores(report: ValidationReport, table: SubmissionTable, keys: pd.Series, *, unit_interval: bool,
                 allow_non_finite: bool, message: str) -> None:
    """Every ConfidenceScore a real number (finite unless ``allow_non_finite``), in [0, 1] if asked;
    ``message`` (PROBE_SCORES or PAIR_SCORE) reports one that is not."""
    text = table.rows[SCORE].str.strip()
    numbers = pd.to_numeric(text.where(text != "", "x"), errors="coerce").to_numpy(dtype=float)
    literal_nan = text.str.lower().isin({"nan", "+nan", "-nan"}).to_numpy()
    not_numeric = np.isnan(numbers) & ~literal_nan
    not_finite = ~not_numeric & ~np.isfinite(numbers)
    scores = table.rows[SCORE]
    report.error_rows("score.not_numeric", np.flatnonzero(not_numeric | (not_finite & ~allow_non_finite)),
                      lambda at: message.format(key=keys.iat[at], value=scores.iat[at]),
                      file=table.path, line=table.line)
    if unit_interval:
        with np.errstate(invalid="ignore"):
            outside = np.isfinite(numbers) & ((numbers < 0) | (numbers > 1))
        report.error_rows("score.range", np.flatnonzero(outside),
                          lambda at: f"The Confidence Score of {keys.iat[at]} is {text.iat[at]}; it must be in [0, 1].",
                          file=table.path, line=table.line)


def bad_pixel_values(values: pd.Series) -> np.ndarray:
    """Opt-out pixel values must be blank or an integer in [0, 255] (a mask pixel value)."""
    text = values.str.strip()
    integer = text.str.fullmatch(r"[+-]?[0-9]{1,10}")
    in_range = integer & pd.to_numeric(text.where(integer, "0")).between(0, 255)
    return ((text != "") & ~in_range).to_numpy()


def check_pixel_values(report: ValidationReport, table: SubmissionTable, column: str, keys: pd.Series,
                       rows: np.ndarray) -> None:
    values = table.rows[column]
    report.error_rows("pixel.value", np.flatnonzero(bad_pixel_values(values) & rows),
                      lambda at: f"The {column} of {keys.iat[at]} is {values.iat[at]!r}; it must be blank or an "
                      "integer in [0, 255].", file=table.path, line=table.line)


def check_statuses(report: ValidationReport, table: SubmissionTable, column: str, allowed: frozenset[str],
                   keys: pd.Series, rows: np.ndarray, *, label: str) -> np.ndarray:
    """Report unknown values of a status column among ``rows``; returns which rows are known."""
    values = table.rows[column].str.strip()
    known = values.isin(allowed).to_numpy()
    given = table.rows[column]
    report.error_rows("status.unknown", np.flatnonzero(rows & ~known),
                      lambda at: f"{label} {given.iat[at]!r} for {keys.iat[at]} is not recognized. The {column} must "
                      f"be one of {', '.join(sorted(allowed))}.", file=table.path, line=table.line)
    return known


def target_rows(reference_path: str | None, keys: pd.Series, key_columns: tuple[str, ...], *,
                also: str | None = None) -> np.ndarray:
    """-r: rows whose reference IsTarget is Y (and ``also`` is Y, when that column exists)."""
    if reference_path is None:
        return np.ones(len(keys), dtype=bool)
    reference = read_table(reference_path, raw_text=True, required=key_columns + ("IsTarget",)).fillna("")
    wanted = reference["IsTarget"] == "Y"
    if also is not None and also in reference:
        wanted &= reference[also] == "Y"
    return keys.isin(set(trial_keys(reference[wanted], key_columns))).to_numpy()
