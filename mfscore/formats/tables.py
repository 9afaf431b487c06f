"""Reading MediScore-style pipe-separated tables (index, reference, system output, journal tables).

Values are typed the way pandas infers them by default (so booleans, numbers and strings render
and compare as they do in MediScore), except identifier columns, which are always strings: an ID
such as ``0123`` stays ``0123``. Every problem becomes an ``InputFileError`` naming the file and,
where there is one, the line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from mfscore.errors import InputFileError

SEPARATOR = "|"

IDENTIFIER_COLUMNS = (
    "TaskID", "ProbeFileID", "ProbeFileName", "DonorFileID", "DonorFileName", "EventName",
    "TrainCamID", "JournalName", "StartNodeID", "EndNodeID", "ProbeMaskFileName",
    "DonorMaskFileName", "OutputProbeMaskFileName", "OutputDonorMaskFileName",
    "IsTarget", "IsOptOut", "ProbeStatus", "DonorStatus",
)

_LINE_IN_PARSER_ERROR = re.compile(r"line (\d+)")


def file_line(row_position: int) -> int:
    """File line of the data row at 0-based ``row_position`` (the header is line 1)."""
    return row_position + 2


def read_header(path: Path) -> list[str]:
    """Column names of a table, read without the data."""
    return list(_read(path, nrows=0).columns)


def read_table(path: str | Path, *, raw_text: bool = False, required: tuple[str, ...] = (),
               columns: set[str] | None = None) -> pd.DataFrame:
    """Read a ``|``-separated table with a header row (only ``columns`` of it, if given).

    With ``raw_text`` only an empty field is missing, so a caller can report a bad value verbatim
    (a ``ConfidenceScore`` of ``nan`` or ``high`` in a system output).
    """
    path = Path(path)
    header = read_header(path)
    missing = [c for c in required if c not in header]
    if missing:
        raise InputFileError(f"missing required column(s) {', '.join(missing)}; the header has {', '.join(header)}", path=str(path))
    if len(set(header)) != len(header):
        dupes = sorted({c for c in header if header.count(c) > 1})
        raise InputFileError(f"duplicate column name(s) {', '.join(dupes)} in the header", path=str(path), line=1)
    usecols = header if columns is None else [c for c in header if c in columns]
    if raw_text:
        return _read(path, usecols=usecols, dtype=str, keep_default_na=False, na_values=[""])
    return _read(path, usecols=usecols, dtype={c: str for c in usecols if c in IDENTIFIER_COLUMNS})


def _read(path: Path, **kwargs) -> pd.DataFrame:
    if not path.is_file():
        raise InputFileError("file not found" if not path.exists() else "not a regular file", path=str(path))
    try:
        return pd.read_csv(path, sep=SEPARATOR, engine="c", **kwargs)
    except pd.errors.EmptyDataError:
        raise InputFileError("the file is empty (a header row is required)", path=str(path)) from None
    except pd.errors.ParserError as exc:
        text = str(exc)
        match = _LINE_IN_PARSER_ERROR.search(text)
        detail = text.split("C error: ")[-1].strip().rstrip(".")
        raise InputFileError(f"malformed table ({detail})", path=str(path),
                             line=int(match.group(1)) if match else None) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None
    except OSError as exc:
        raise InputFileError(f"cannot be read ({exc.strerror or exc})", path=str(path)) from None


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a report table as MediScore does: ``|``-separated, header, no index, NaN empty."""
    frame.to_csv(path, sep=SEPARATOR, index=False, na_rep="")
