"""Assembling detection trials from index, reference and system output (docs/detection.md §3-§4).

The scored table is ``(reference ⟕ system) ⋈ index``: join keys are the columns the files share
(not fixed per task), reference trials without a system score are dropped (MediScore's
behaviour, reported as a warning), and ``--optOut`` keeps only opted-in trials.

pandas is imported by the functions that use it: a table polars read and joined is scored from its polars frame
(``scores_and_labels``), and a run that neither queries nor writes metadata does not import pandas until its report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mfscore.errors import InputFileError
from mfscore.formats.columnar import plain_header, read_plain_columns
from mfscore.formats.tables import file_line, read_header, read_table

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

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
COLUMNAR_MIN_BYTES = 16 << 20  # the three tables' bytes from which polars reads them (below, its import costs more)


@dataclass
class ScoredTable:
    """The joined trials, with what later steps need to know about how they were formed."""

    rows: pd.DataFrame | pl.DataFrame  # reference columns, then system-only, then index-only; polars' if it joined
    sys_ref_keys: list[str]         # identify a trial
    index_ref_keys: list[str]
    reference_columns: list[str]
    system_only_columns: list[str]
    index_only_columns: list[str]
    total_num: int                  # trials before opt-out filtering (the TRR denominator)
    warnings: list[str] = field(default_factory=list)

    @cached_property
    def trials(self) -> pd.DataFrame:
        """The rows as pandas reads them, for queries and metadata outputs: the polars frame of a table polars
        joined is converted when first asked for (text columns pandas' ``str``, NaN for null; a RangeIndex)."""
        if not is_polars(self.rows):
            return self.rows
        import pandas as pd

        rows = self.rows
        return pd.DataFrame({c: rows[c].to_numpy() if c == SCORE else pd.array(rows[c].to_numpy(), dtype="str")
                             for c in rows.columns}, copy=False)


def is_polars(frame) -> bool:
    """Whether ``frame`` is a polars DataFrame (the rows of a table polars joined), without importing polars."""
    polars = sys.modules.get("polars")
    return polars is not None and isinstance(frame, polars.DataFrame)


def scores_and_labels(trials: pd.DataFrame | pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Confidence scores and 0/1 target labels (``IsTarget == 'Y'``, docs/detection.md §5) of scored trials, a
    pandas frame or a polars one (whose missing IsTarget, null, is no target, as pandas' NaN is not)."""
    targets = trials["IsTarget"] == "Y"
    if is_polars(trials):
        targets = targets.fill_null(False)
    return np.asarray(trials[SCORE].to_numpy(), dtype=np.float64), np.asarray(targets.to_numpy(), dtype=np.int64)


def _check_keys(frame: pd.DataFrame, keys: list[str], path: Path, what: str, warnings: list[str],
                like: pd.Index | None = None) -> pd.Index | None:
    """Refuse two different rows with the same trial key; warn about lines repeated verbatim.

    A repeated line is scored once per copy, as MediScore does (NIST's own NC2016 splice index
    repeats 20 lines, and the checkfiles count them). Returns ``unique_key(frame, keys, like)``: a
    key column without repeats rules out repeated keys, and a join looks rows up in it.
    """
    from mfscore.formats.joins import unique_key

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
    import pandas as pd

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
    status): metadata columns matter only to queries and metadata outputs. Then tables of
    ``COLUMNAR_MIN_BYTES`` or more are read and joined with polars when that gives the same table
    (``_load_with_polars``), else with pandas.
    """
    if not all_columns and sum(_size(p) for p in (ref_path, index_path, sys_path)) >= COLUMNAR_MIN_BYTES:
        table = _load_with_polars(ref_path, index_path, sys_path)
        if table is not None:
            return table
    return _load_with_pandas(ref_path, index_path, sys_path, all_columns=all_columns)


def _size(path: Path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _join_keys(headers: dict, ref_path: Path, index_path: Path, sys_path: Path) -> tuple[list[str], list[str]]:
    """The system-reference keys and the index-reference keys, from the three headers (docs/detection.md §3.2)."""
    sys_ref_keys = [c for c in headers[sys_path] if c in headers[ref_path]]
    index_ref_keys = [c for c in headers[index_path] if c in headers[ref_path]]
    if not sys_ref_keys:
        raise InputFileError(f"shares no key column with the reference {ref_path} (expected e.g. ProbeFileID)",
                             path=str(sys_path))
    if not index_ref_keys:
        raise InputFileError(f"shares no key column with the reference {ref_path}", path=str(index_path))
    return sys_ref_keys, index_ref_keys


def _unscored_warning(count: int, first_key: list[str]) -> str:
    return f"{count} reference trial(s) have no system score and are not scored (first: {', '.join(first_key)})"


def _load_with_pandas(ref_path: Path, index_path: Path, sys_path: Path, *, all_columns: bool) -> ScoredTable:
    from mfscore.formats.joins import join

    headers = {p: read_header(p) for p in (ref_path, index_path, sys_path)}
    sys_ref_keys, index_ref_keys = _join_keys(headers, ref_path, index_path, sys_path)
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
        first = unscored.idxmax()
        warnings.append(_unscored_warning(int(unscored.sum()), [str(joined.loc[first, k]) for k in sys_ref_keys]))
        joined = joined.loc[~unscored.to_numpy()]
    trials = join(joined, index, index_ref_keys, how="inner", lookup=index_lookup)

    return ScoredTable(
        rows=trials,
        sys_ref_keys=sys_ref_keys,
        index_ref_keys=index_ref_keys,
        reference_columns=list(reference.columns),
        system_only_columns=[c for c in system.columns if c not in reference.columns],
        index_only_columns=[c for c in index.columns if c not in reference.columns],
        total_num=len(trials),
        warnings=warnings,
    )


# A ConfidenceScore polars and pandas' to_numeric read as the same float: a plain decimal, not a negative zero
# (to_numeric reads a column of integers "-0" as 0.0), at most 15 digits (leading zeros of the integer part aside),
# so both make one correct rounding; any other goes to pandas, which also words the error for a non-number.
# _PLAIN_SCORE says the first two (a plain decimal, unsigned or with a plus, or with a minus and a digit other than 0),
# _plain_decimals counts the digits.
_PLAIN_SCORE = (r"^(?:\+?(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                r"|-(?:0*[1-9][0-9]*\.?[0-9]*|0*\.[0-9]*[1-9][0-9]*))$")
_ROW = "row"  # the reference's row number while joining (no identifier column is named so)
_HASH = "key hash"


def _load_with_polars(ref_path: Path, index_path: Path, sys_path: Path) -> ScoredTable | None:
    """``_load_with_pandas(..., all_columns=False)``, read and joined with polars, or None where polars could give
    anything else: a table that is not plain or has a column pandas does not read as text
    (``formats/columnar.py``), a missing or repeated key (pandas words the warnings and errors), a score that is
    not a plain decimal (``_PLAIN_SCORE``), an index and a system output that share a column of their own."""
    headers = {p: plain_header(p) for p in (ref_path, index_path, sys_path)}
    if None in headers.values():
        return None
    sys_ref_keys, index_ref_keys = _join_keys(headers, ref_path, index_path, sys_path)
    import polars as pl

    needed = {*sys_ref_keys, *index_ref_keys, *SCORING_COLUMNS}
    if "IsTarget" not in headers[ref_path] or SCORE not in headers[sys_path]:
        return None
    columns = {p: [c for c in headers[p] if c in needed] for p in (ref_path, index_path, sys_path)}
    frames = []
    for path, keys, raw_text in ((ref_path, [*sys_ref_keys, *index_ref_keys], False),
                                 (index_path, index_ref_keys, False), (sys_path, sys_ref_keys, True)):
        frame = read_plain_columns(path, columns[path], raw_text=raw_text)
        if frame is None or any(frame[k].null_count() for k in keys):
            return None
        frames.append(frame)
    reference, index, system = frames
    system_only = [c for c in system.columns if c not in reference.columns]
    index_only = [c for c in index.columns if c not in reference.columns]
    if set(system_only) & set(index_only) or not _plain_decimals(system[SCORE]):
        return None

    warnings: list[str] = []
    try:
        joined = _join(reference.with_row_index(_ROW), system.with_columns(pl.col(SCORE).cast(pl.Float64)),
                       sys_ref_keys, how="left", validate="1:1")
        if joined is None:
            return None
        unscored = joined[SCORE].is_null()
        if unscored.any():
            first = joined.filter(unscored).row(0, named=True)
            warnings.append(_unscored_warning(int(unscored.sum()), [first[k] for k in sys_ref_keys]))
            joined = joined.filter(~unscored)
        if _in_same_rows(index, reference, index_ref_keys):
            if not set(sys_ref_keys) <= set(index_ref_keys) and reference.select(index_ref_keys).is_duplicated().any():
                return None
            trials = joined.with_columns(index[c].gather(joined[_ROW]) for c in index_only)
        else:
            trials = _join(joined, index.select(*index_ref_keys, *index_only), index_ref_keys, how="inner",
                           validate="m:1")
            if trials is None:
                return None
    except pl.exceptions.PolarsError:  # a repeated key: pandas words the warning or the error
        return None

    return ScoredTable(
        rows=trials.select(*reference.columns, *system_only, *index_only),
        sys_ref_keys=sys_ref_keys,
        index_ref_keys=index_ref_keys,
        reference_columns=list(reference.columns),
        system_only_columns=system_only,
        index_only_columns=index_only,
        total_num=trials.height,
        warnings=warnings,
    )


def _join(left, right, keys: list[str], how: str, validate: str):
    """``left.join(right, on=keys, how=how, validate=validate, maintain_order="left")`` of polars frames without
    missing keys, made on a 64-bit hash of the keys (three times as fast as on 10⁶ strings), or None when two
    different keys share a hash. A hash repeated on a side ``validate`` says is unique raises, as a key would."""
    import polars as pl

    hashed = pl.struct(keys).hash().alias(_HASH)
    right_keys = {k: f"{k} (right)" for k in keys}
    joined = left.with_columns(hashed).join(right.with_columns(hashed).rename(right_keys), on=_HASH, how=how,
                                            validate=validate, maintain_order="left")
    if not all((joined[r].is_null() | (joined[r] == joined[k])).all() for k, r in right_keys.items()):
        return None
    return joined.drop(_HASH, *right_keys.values())


def _plain_decimals(text) -> bool:
    """Whether every score (a polars string Series, null for an empty cell) matches ``_PLAIN_SCORE`` within 15
    digits; only a text of more than 15 bytes can have more, so only those are counted."""
    if not text.str.contains(_PLAIN_SCORE).fill_null(True).all():
        return False
    digits = text.filter(text.str.len_bytes() > 15).str.strip_chars_start("+-").str.strip_chars_start("0")
    return bool((digits.str.len_bytes() - digits.str.contains(".", literal=True).cast(int) <= 15).all())


def _in_same_rows(index, reference, keys: list[str]) -> bool:
    """Whether the index holds the reference's key values row for row (the usual case): then its row i is the
    reference's row i, and no join is needed."""
    return index.height == reference.height and index.select(keys).equals(reference.select(keys))


def opt_out_column(trials: pd.DataFrame | pl.DataFrame) -> str | None:
    return next((c for c in OPT_OUT_CONVENTIONS if c in trials.columns), None)


def apply_opt_out(table: ScoredTable, sys_path: Path) -> ScoredTable:
    """Keep opted-in trials only (docs/detection.md §4); an unknown status is an error, a blank one is not kept."""
    column = opt_out_column(table.rows)
    if column is None:
        raise InputFileError("--optOut needs an IsOptOut or ProbeStatus column in the system output", path=str(sys_path))
    rule = OPT_OUT_CONVENTIONS[column]
    status = table.rows[column]
    if is_polars(table.rows):
        unknown = status.filter(status.is_not_null() & ~status.is_in(sorted(rule["known"])))
        rows = table.rows.filter(status.is_in(sorted(rule["kept"])).fill_null(False))
    else:
        unknown = status[status.notna() & ~status.isin(rule["known"])]
        rows = table.rows.loc[status.isin(rule["kept"]).to_numpy()].reset_index(drop=True)
    if len(unknown):
        raise InputFileError(f"unknown {column} value {next(iter(unknown))!r}; expected one of "
                             f"{', '.join(sorted(rule['known']))}", path=str(sys_path))
    return replace(table, rows=rows)


def trial_response_rate(n_scored: int, total_num: int) -> float:
    """TRR to 2 decimals, half away from zero on the exact binary value (Python 2's round; docs/detection.md §4)."""
    if total_num == 0:
        return float("nan")
    return float(Decimal(n_scored / total_num).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
