"""The mask scorer's trial table: reference ⟕ system, statuses, opt-out and TRR (docs/masks.md §3.2, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.errors import InputFileError
from mfscore.formats.tables import file_line, read_table
from mfscore.masks import MANIPULATION, SPLICE  # noqa: F401  (the task types, as the mask modules import them)

SCORE = "ConfidenceScore"

# docs/masks.md §3.2 step 5: accepted values of each status column
KNOWN_STATUS = {
    "IsOptOut": {"Y", "N", "Detection", "Localization", "FailedValidation"},
    "ProbeStatus": {"Processed", "NonProcessed", "OptOutAll", "OptOutDetection", "OptOutLocalization",
                    "FailedValidation"},
    "DonorStatus": {"Processed", "NonProcessed", "OptOutLocalization", "FailedValidation"},
}
# docs/masks.md §9: statuses that opt a trial out of localization
OPTED_OUT = {"IsOptOut": {"Y", "Localization"}, "ProbeStatus": {"OptOutAll", "OptOutLocalization"},
             "DonorStatus": {"OptOutAll", "OptOutLocalization"}}
# docs/masks.md §9: statuses --optOut keeps in the per-image table
KEPT_BY_OPT_OUT = {"IsOptOut": {"N", "Detection", "FailedValidation"},
                   "ProbeStatus": {"Processed", "NonProcessed", "OptOutDetection", "FailedValidation"},
                   "DonorStatus": {"Processed", "NonProcessed", "FailedValidation"}}
FAILED = "FailedValidation"


def trial_keys(task: str) -> list[str]:
    return ["ProbeFileID", "DonorFileID"] if task == SPLICE else ["ProbeFileID"]


def mask_roles(task: str) -> list[tuple[str, str, str]]:
    """(role, system mask column, status column) per scored side of a trial."""
    if task == SPLICE:
        return [("probe", "OutputProbeMaskFileName", "ProbeStatus"),
                ("donor", "OutputDonorMaskFileName", "DonorStatus")]
    return [("probe", "OutputProbeMaskFileName", "ProbeStatus")]


@dataclass
class TrialTable:
    """Target trials ready to score, and the run-wide opt-out bookkeeping."""

    trials: pd.DataFrame            # reference columns, then system-only columns; all text but the score
    reference_columns: list[str]
    system_only_columns: list[str]
    status_column: str              # IsOptOut or ProbeStatus
    total_trials: int
    total_opt_in: int
    journal_trials: pd.DataFrame    # every trial before opt-out and target filtering: whose journal rows are reported

    @property
    def trr(self) -> float:
        return self.total_opt_in / self.total_trials


def _text_table(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    return read_table(path, raw_text=True, required=required).fillna("")


def _status_column(system: pd.DataFrame, path: Path) -> str:
    for column in ("IsOptOut", "ProbeStatus"):
        if column in system.columns:
            return column
    raise InputFileError("has neither an IsOptOut nor a ProbeStatus column", path=str(path))


def _check_statuses(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    for column in columns:
        values = frame[column]
        bad = (values != "") & ~values.isin(KNOWN_STATUS[column])
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise InputFileError(
                f"{column} value {values.iloc[row]!r} is not recognized (expected one of "
                f"{', '.join(sorted(KNOWN_STATUS[column]))})", path=str(path), line=file_line(row))


def _check_pixel_values(system: pd.DataFrame, columns: list[str], path: Path) -> None:
    """Opt-out pixel values must be blank or an integer (docs/masks.md §5.4)."""
    for column in columns:
        values = system[column].str.strip()
        bad = (values != "") & ~values.str.fullmatch(r"-?[0-9]+")
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise InputFileError(f"{column} {system[column].iloc[row]!r} is not recognized as an integer pixel value",
                                 path=str(path), line=file_line(row))


def _scores(system: pd.DataFrame, path: Path) -> pd.Series:
    text = system[SCORE]
    numbers = pd.to_numeric(text, errors="coerce")
    bad = numbers.isna() | ~np.isfinite(numbers)
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise InputFileError(f"ConfidenceScore {text.iloc[row]!r} is not a finite number",
                             path=str(path), line=file_line(row))
    return numbers


def opted_out(trials: pd.DataFrame, status_column: str, task: str) -> pd.Series:
    """Trials opted out of localization (splice with ProbeStatus: both sides must opt out)."""
    out = trials[status_column].isin(OPTED_OUT[status_column])
    if task == SPLICE and status_column == "ProbeStatus" and "DonorStatus" in trials:
        out &= trials["DonorStatus"].isin(OPTED_OUT["DonorStatus"])
    return out


def kept_by_opt_out(trials: pd.DataFrame, status_column: str, task: str) -> pd.Series:
    kept = trials[status_column].isin(KEPT_BY_OPT_OUT[status_column])
    if task == SPLICE and status_column == "ProbeStatus" and "DonorStatus" in trials:
        kept |= trials["DonorStatus"].isin(KEPT_BY_OPT_OUT["DonorStatus"])
    return kept


def load_trials(task: str, ref_path: Path, sys_path: Path, index_path: Path, *,
                index_filter: bool, opt_out: bool, pixel_value_columns: bool) -> TrialTable:
    """The target trials of a mask run, in reference order (docs/masks.md §3.2)."""
    keys = trial_keys(task)
    reference = _text_table(ref_path, tuple(keys) + ("TaskID", "ProbeFileID", "IsTarget"))
    system = _text_table(sys_path, tuple(keys) + (SCORE,) + tuple(c for _, c, _ in mask_roles(task)))
    status_column = _status_column(system, sys_path)
    if task == SPLICE and status_column == "ProbeStatus" and "DonorStatus" not in system:
        raise InputFileError("has ProbeStatus but no DonorStatus column", path=str(sys_path))
    if pixel_value_columns:
        needed = [f"{role.capitalize()}OptOutPixelValue" for role, _, _ in mask_roles(task)]
        missing = [c for c in needed if c not in system]
        if missing:
            raise InputFileError(f"-pppns needs the column(s) {', '.join(missing)}", path=str(sys_path))
        _check_pixel_values(system, needed, sys_path)
    if system.duplicated(subset=keys).any():
        row = int(np.argmax(system.duplicated(subset=keys).to_numpy()))
        raise InputFileError(f"repeats the trial {tuple(system.iloc[row][keys])}", path=str(sys_path),
                             line=file_line(row))
    scores = _scores(system, sys_path)
    system_only = [c for c in system.columns if c not in reference.columns]
    trials = reference.merge(system[keys + system_only], how="left", on=keys, sort=False)
    trials[system_only] = trials[system_only].fillna("")
    # docs/masks.md §3.2 step 2: a trial without a system row gets the smallest score string
    smallest = float(scores[system[SCORE] == min(system[SCORE])].iloc[0]) if len(system) else 0.0
    by_key = dict(zip(map(tuple, system[keys].to_numpy()), scores))
    trials[SCORE] = [by_key.get(tuple(k), smallest) for k in trials[keys].to_numpy()]
    if index_filter:
        index = _text_table(index_path, tuple(keys))
        trials = index[keys].merge(trials, how="left", on=keys, sort=False)
        trials = trials.fillna({c: "" for c in trials.columns if c != SCORE})
    if trials.empty:
        raise InputFileError("matches no trial of the reference and index", path=str(sys_path))
    status_columns = [status_column] + (["DonorStatus"] if "DonorStatus" in trials and task == SPLICE else [])
    _check_statuses(trials, status_columns, sys_path)
    total = len(trials)
    opt_in = int((~opted_out(trials, status_column, task)).sum())
    everything = trials
    if opt_out:
        trials = trials[kept_by_opt_out(trials, status_column, task)]
    trials = trials[trials["IsTarget"] == "Y"].reset_index(drop=True)
    trials = trials[list(reference.columns) + system_only]
    return TrialTable(trials, list(reference.columns), [c for c in system_only if c != SCORE],
                      status_column, total, opt_in, everything)


def index_dimensions(index_path: Path, task: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(role, file id) → (width, height) from the index, for synthesised blank masks."""
    columns = {"probe": ("ProbeFileID", "ProbeWidth", "ProbeHeight"),
               "donor": ("DonorFileID", "DonorWidth", "DonorHeight")}
    index = _text_table(index_path, ("ProbeFileID",))
    dims = {}
    for role, _, _ in mask_roles(task):
        id_col, w_col, h_col = columns[role]
        if not {id_col, w_col, h_col} <= set(index.columns):
            continue
        for file_id, width, height in index[[id_col, w_col, h_col]].itertuples(index=False):
            if width.isascii() and width.isdigit() and height.isascii() and height.isdigit():
                dims[(role, file_id)] = (int(width), int(height))
    return dims
