"""Assembling detection trials from index, reference and system output (docs/detection.md §3-§4).

The scored table is ``(reference ⟕ system) ⋈ index``: join keys are the columns the files share
(not fixed per task), reference trials without a system score are dropped (MediScore's
behaviour, reported as a warning), and ``--optOut`` keeps only opted-in trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.errors import InputFileError
from mfscore.formats.joins import join, unique_key
from mfscore.formats.tables import file_line, read_header, read_table

SCORE = "ConfidenceScore"

# docs/detection.md §4: the statuses kept by --optOut, per opt-out convention (first column found wins).
OPT_OUT_CONVENTIONS = {
    "IsOptOut": {"kept": {"N", "Localization"}, "known": {"Y", "N", "Detection", "Localization"}},
    "ProbeStatus": {
        "kept": {"Processed", "NonProcessed", "OptOutLocalization", "FailedValidation", "OptOutTemporal", "OptOutSpatial"},
        "known": {"Processed", "NonProcessed", "OptOutAll", "OptOutDetection", "OptOutLocalization",
                  "FailedValidation", "OptOutTemporal", "OptOutSpatial"},
    },
}

SCORING_COLUMNS = frozenset({"IsTarget", SCORE, *OPT_OUT_CONVENTIONS})  # read to score, besides the keys


@dataclass
class ScoredTable:
    """The joined trials, with what later steps need to know about how they were formed."""

    trials: pd.DataFrame            # reference columns, then system-only, then index-only
    sys_ref_keys: list[str]         # identify a trial
    index_ref_keys: list[str]
    reference_columns: list[str]
    system_only_columns: list[str]
    index_only_columns: list[str]
    total_num: int                  # trials before opt-out filtering (the TRR denominator)
    warnings: list[str] = field(default_factory=list)


def scores_and_labels(trials: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Confidence scores and 0/1 target labels (``IsTarget == 'Y'``, docs/detection.md §5) of scored trials."""
    return trials[SCORE].to_numpy(dtype=np.float64), (trials["IsTarget"] == "Y").to_numpy(dtype=np.int64)


def _check_keys(frame: pd.DataFrame, keys: list[str], path: Path, what: str, warnings: list[str],
                like: pd.Index | None = None) -> pd.Index | None:
    """Refuse two different rows with the same trial key; warn about lines repeated verbatim.

    A repeated line is scored once per copy, as MediScore does (NIST's own NC2016 splice index
    repeats 20 lines, and the checkfiles count them). Returns ``unique_key(frame, keys, like)``: a
    key column without repeats rules out repeated keys, and a join looks rows up in it.
    """
    lookup = unique_key(frame, keys, like)
    if lookup is not None:
        return lookup
    same_key = frame.duplicated(subset=keys, keep="first").to_numpy()
    if not same_key.any():
        return None
    repeated = frame.duplicated(keep="first").to_numpy()
    if repeated.any():
        first = file_line(int(np.flatnonzero(repeated)[0]))
        warnings.append(f"{path}: {int(repeated.sum())} line(s) repeat an earlier line exactly (first: line {first}); "
                        "each copy is scored, as MediScore does")
    conflicting = same_key & ~repeated
    if conflicting.any():
        pos = int(np.flatnonzero(conflicting)[0])
        key = ", ".join(f"{k}={frame.iloc[pos][k]}" for k in keys)
        raise InputFileError(f"duplicate {what} key ({key}) with different values; each trial must appear once",
                             path=str(path), line=file_line(pos))
    return None


def _parse_scores(system: pd.DataFrame, path: Path) -> pd.Series:
    """ConfidenceScore as floats; blank stays NaN (dropped later), anything non-numeric is an error."""
    text = system[SCORE]
    present = text.notna().to_numpy()
    values = pd.to_numeric(text.where(present, None), errors="coerce").to_numpy(dtype=np.float64)
    bad = present & np.isnan(values)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise InputFileError(f"ConfidenceScore {text.iloc[pos]!r} is not a number", path=str(path), line=file_line(pos))
    return pd.Series(values, index=system.index, name=SCORE)


def load_scored_table(ref_path: Path, index_path: Path, sys_path: Path, *, all_columns: bool = True) -> ScoredTable:
    """Read the three files and join them into the scored table (docs/detection.md §3.3).

    Without ``all_columns`` only what scoring needs is read (keys, IsTarget, score, opt-out
    status): metadata columns matter only to queries and metadata outputs.
    """
    headers = {p: read_header(p) for p in (ref_path, index_path, sys_path)}
    sys_ref_keys = [c for c in headers[sys_path] if c in headers[ref_path]]
    index_ref_keys = [c for c in headers[index_path] if c in headers[ref_path]]
    if not sys_ref_keys:
        raise InputFileError(f"shares no key column with the reference {ref_path} (expected e.g. ProbeFileID)", path=str(sys_path))
    if not index_ref_keys:
        raise InputFileError(f"shares no key column with the reference {ref_path}", path=str(index_path))
    needed = None if all_columns else {*sys_ref_keys, *index_ref_keys, *SCORING_COLUMNS}

    warnings: list[str] = []
    reference = read_table(ref_path, required=("IsTarget",), columns=needed)
    index = read_table(index_path, columns=needed)
    system = read_table(sys_path, raw_text=True, required=(SCORE,), columns=needed)
    reference_lookup = _check_keys(reference, sys_ref_keys, ref_path, "reference trial", warnings)
    index_lookup = _check_keys(index, index_ref_keys, index_path, "index trial", warnings, like=reference_lookup)
    system_lookup = _check_keys(system, sys_ref_keys, sys_path, "system output trial", warnings)

    system[SCORE] = _parse_scores(system, sys_path)
    joined = join(reference, system, sys_ref_keys, how="left", lookup=system_lookup)
    unscored = joined[SCORE].isna()
    if unscored.any():
        warnings.append(f"{int(unscored.sum())} reference trial(s) have no system score and are not scored "
                        f"(first: {', '.join(str(joined.loc[unscored.idxmax(), k]) for k in sys_ref_keys)})")
        joined = joined.loc[~unscored.to_numpy()]
    trials = join(joined, index, index_ref_keys, how="inner", lookup=index_lookup)

    return ScoredTable(
        trials=trials,
        sys_ref_keys=sys_ref_keys,
        index_ref_keys=index_ref_keys,
        reference_columns=list(reference.columns),
        system_only_columns=[c for c in system.columns if c not in reference.columns],
        index_only_columns=[c for c in index.columns if c not in reference.columns],
        total_num=len(trials),
        warnings=warnings,
    )


def opt_out_column(trials: pd.DataFrame) -> str | None:
    return next((c for c in OPT_OUT_CONVENTIONS if c in trials.columns), None)


def apply_opt_out(table: ScoredTable, sys_path: Path) -> ScoredTable:
    """Keep opted-in trials only (docs/detection.md §4); an unknown status is an error, a blank one is not kept."""
    column = opt_out_column(table.trials)
    if column is None:
        raise InputFileError("--optOut needs an IsOptOut or ProbeStatus column in the system output", path=str(sys_path))
    rule = OPT_OUT_CONVENTIONS[column]
    status = table.trials[column]
    unknown = status.notna() & ~status.isin(rule["known"])
    if unknown.any():
        value = status[unknown].iloc[0]
        raise InputFileError(f"unknown {column} value {value!r}; expected one of {', '.join(sorted(rule['known']))}", path=str(sys_path))
    kept = status.isin(rule["kept"]).to_numpy()
    trials = table.trials.loc[kept].reset_index(drop=True)
    return ScoredTable(**{**table.__dict__, "trials": trials})


def trial_response_rate(n_scored: int, total_num: int) -> float:
    """TRR to 2 decimals, half away from zero on the exact binary value (Python 2's round; docs/detection.md §4)."""
    if total_num == 0:
        return float("nan")
    return float(Decimal(n_scored / total_num).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
