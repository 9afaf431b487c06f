"""Reading MediScore-style pipe-separated tables (index, reference, system output, journal tables).

Values are typed the way pandas infers them by default (so booleans, numbers and strings render
and compare as they do in MediScore), except identifier columns, which are always strings: an ID
such as ``0123`` stays ``0123``. Every problem becomes an ``InputFileError`` naming the file and,
where there is one, the line.

pandas is imported by the functions that use it: the commands that read their tables as text
(``read_text_columns``) and write plain rows (``write_rows``) run without it on plain files.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mfscore.errors import InputFileError, MissingFileError

if TYPE_CHECKING:
    import pandas as pd
from mfscore.limits import DEFAULT_MAX_TABLE_BYTES, MAX_HEADER_BYTES, MAX_TABLE_COLUMNS

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
    """Column names of a table, read without the data, once the table is within the limits."""
    path = Path(path)
    if path.is_file():
        _check_limits(path)
    return list(_read(path, nrows=0).columns)


def _check_limits(path: Path) -> None:
    """The table's bytes and its header's width, before pandas reads it: a header of a million columns
    takes pandas minutes and gigabytes, and the cluster refuses a table over the byte limit, so the
    embedded command (and ``submit``, which plans before it uploads) refuses it too."""
    size = path.stat().st_size
    if size > DEFAULT_MAX_TABLE_BYTES:
        raise InputFileError(f"the table is {size} bytes, more than the limit of {DEFAULT_MAX_TABLE_BYTES}",
                             path=str(path))
    with open(path, "rb") as file:
        first = file.readline(MAX_HEADER_BYTES + 1)
    if len(first) > MAX_HEADER_BYTES:
        raise InputFileError(f"the header line is longer than the limit of {MAX_HEADER_BYTES} bytes",
                             path=str(path), line=1)
    columns = first.count(SEPARATOR.encode()) + 1
    if columns > MAX_TABLE_COLUMNS:
        raise InputFileError(f"the header has {columns} columns, more than the limit of {MAX_TABLE_COLUMNS}",
                             path=str(path), line=1)


def read_table(path: str | Path, *, raw_text: bool = False, required: tuple[str, ...] = (),
               columns: set[str] | None = None) -> pd.DataFrame:
    """Read a ``|``-separated table with a header row (only ``columns`` of it, if given).

    With ``raw_text`` only an empty field is missing, so a caller can report a bad value verbatim
    (a ``ConfidenceScore`` of ``nan`` or ``high`` in a system output).
    """
    path = Path(path)
    header = read_header(path)
    _check_header(path, header, required)
    usecols = None  # every column: pandas checks the field counts itself
    if columns is not None and _fields_fit_header(path, len(header)):
        usecols = [c for c in header if c in columns]
    if raw_text:
        return _read(path, usecols=usecols, dtype=str, keep_default_na=False, na_values=[""])
    return _read(path, usecols=usecols, dtype={c: str for c in usecols or header if c in IDENTIFIER_COLUMNS})


def _check_header(path: Path, header: list[str], required: tuple[str, ...]) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise InputFileError(f"missing required column(s) {', '.join(missing)}; the header has {', '.join(header)}", path=str(path))
    if len(set(header)) != len(header):
        dupes = sorted({c for c in header if header.count(c) > 1})
        raise InputFileError(f"duplicate column name(s) {', '.join(dupes)} in the header", path=str(path), line=1)


def read_text_columns(path: str | Path, *, required: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Each column of a ``|``-separated table as its cells' text, ``""`` for an empty cell: the values of
    ``read_table(path, raw_text=True, required=required).fillna("")``, column by column.

    A plain file (UTF-8 without a byte-order mark, no quote, carriage return or NUL, no blank line,
    every line as many fields as the header, which names each column once) is split here, without
    pandas; any other file is read by ``read_table``, which parses or refuses it.
    """
    path = Path(path)
    lines = _plain_lines(path)
    if lines is None:
        frame = read_table(path, raw_text=True, required=required).fillna("")
        return {name: frame[name].tolist() for name in frame.columns}
    header = lines[0].split(SEPARATOR)
    _check_header(path, header, required)
    cells = [line.split(SEPARATOR) for line in lines[1:]]
    return {name: [row[i] for row in cells] for i, name in enumerate(header)}


# pandas' default missing-value spellings (``pandas._libs.parsers.STR_NA_VALUES``; a test keeps them equal)
NA_TEXTS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_NUMBER_CHARACTERS = frozenset("0123456789+-.eE \t")
_WORDS_PANDAS_CONVERTS = frozenset({"inf", "infinity", "nan", "true", "false"})  # any case, any sign


def reads_as_text(name: str, cells: Sequence[str]) -> bool:
    """Whether ``read_table`` gives column ``name`` of a plain table as exactly these strings (``read_text_columns``).

    An identifier column is read as text; any other column is, unless pandas takes it for numbers or
    booleans, so one cell that cannot be either decides it. Either way no cell may be a missing-value
    spelling (pandas reads those as NaN). False only means "not known here": the caller reads with pandas.
    """
    if any(cell in NA_TEXTS for cell in cells):
        return False
    return name in IDENTIFIER_COLUMNS or any(_never_a_number(cell) for cell in cells)


def _never_a_number(cell: str) -> bool:
    return (not set(cell) <= _NUMBER_CHARACTERS
            and cell.strip().lstrip("+-").lower() not in _WORDS_PANDAS_CONVERTS)


def _plain_lines(path: Path) -> list[str] | None:
    """The lines of a plain table (``read_text_columns``) within the limits, or None for any other file."""
    try:
        if not path.is_file():
            return None
        _check_limits(path)
        data = path.read_bytes()
    except OSError:
        return None
    if not data or data.startswith(b"\xef\xbb\xbf") or b'"' in data or b"\r" in data or b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        return None
    header = lines[0].split(SEPARATOR)
    separators = len(header) - 1
    if "" in header or len(set(header)) != len(header):
        return None
    if any(line.count(SEPARATOR) != separators or not line or line.isspace() for line in lines):
        return None
    return lines


_FIELD_CHECK_BLOCK = 1 << 20  # bytes a block of lines: arrays this size are reused, not faulted in anew per file


def _fields_fit_header(path: Path, n_fields: int) -> bool:
    """Check no line has more fields than the header before a column-subset read.

    pandas does not check field counts when reading a subset of columns, so the separators are
    counted here, vectorised over blocks of whole lines. Returns False when the file has quotes (a
    quoted field may contain the separator): the caller then parses every column, which checks the
    counts itself.
    """
    import numpy as np  # with pandas, which has imported it; the text readers need neither

    first_error: tuple[int, int] | None = None  # (line, fields) of the first line with too many
    lines_before, pending = 0, []  # pending: the blocks of a line not ended yet (each byte is copied once)
    with open(path, "rb") as file:
        while True:
            block = file.read(_FIELD_CHECK_BLOCK)
            end = block.rfind(b"\n") + 1 if block else 0
            if block and not end:
                pending.append(block)
                continue
            lines = b"".join([*pending, block[:end]])
            pending = [block[end:]]
            if b'"' in lines:
                return False
            if first_error is None and lines:
                codes = np.frombuffer(lines, dtype=np.uint8)
                line_ends = np.flatnonzero(codes == ord("\n"))
                if line_ends.size == 0 or line_ends[-1] != codes.size - 1:
                    line_ends = np.r_[line_ends, codes.size]
                separators = np.flatnonzero(codes == ord(SEPARATOR))
                per_line = np.diff(np.searchsorted(separators, line_ends), prepend=0)
                too_many = np.flatnonzero(per_line > n_fields - 1)
                if too_many.size:
                    first_error = (lines_before + int(too_many[0]) + 1, int(per_line[too_many[0]]) + 1)
                lines_before += line_ends.size
            if not block:
                break
    if first_error is not None:
        raise InputFileError(f"malformed table (expected {n_fields} fields, saw {first_error[1]})",
                             path=str(path), line=first_error[0])
    return True


def _read(path: Path, **kwargs) -> pd.DataFrame:
    import pandas as pd

    if not path.is_file():
        if not path.exists():
            raise MissingFileError("file not found", path=str(path))
        raise InputFileError("not a regular file", path=str(path))
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


class TextTable(NamedTuple):
    """A report table whose cells are already text (a large mapping table: building a DataFrame of it
    and writing that takes several times as long as the text)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[str]]

    def column(self, name: str) -> list[str]:
        position = list(self.columns).index(name)
        return [row[position] for row in self.rows]

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=list(self.columns), dtype=object)


def write_text_table(table: TextTable, path: str | Path) -> None:
    """Write ``table`` byte for byte as ``write_table`` writes the same cells.

    pandas writes through the csv module with minimal quoting, which changes a cell only when it holds
    the separator, a quote or a line break, or is a line's only cell and empty; when none is, the lines are joined
    directly (``joined_text``).
    """
    text = joined_text(table.columns, list(map(SEPARATOR.join, table.rows)))
    with open(path, "w", encoding="utf-8", newline="") as file:
        if text is not None:
            file.write(text)
        else:
            writer = csv.writer(file, delimiter=SEPARATOR, lineterminator="\n")
            writer.writerow(table.columns)
            writer.writerows(table.rows)


def joined_text(columns: Sequence[str], lines: Sequence[str]) -> str | None:
    """The file ``write_table`` writes of a table whose rows are ``lines``, each its cells joined by the separator,
    when no cell holds the separator, a quote or a line break and no line is empty (pandas quotes none then: a
    line's only cell, empty, is written ``""``); else None (the cells, which the lines no longer tell apart, must
    be written by ``write_text_table``)."""
    every = [SEPARATOR.join(columns), *lines]
    text = "\n".join(every) + "\n"
    plain = ('"' not in text and "\r" not in text and text.count("\n") == len(every)
             and text.count(SEPARATOR) == len(every) * (len(columns) - 1) and all(every))
    return text if plain else None


def write_lines(columns: Sequence[str], lines: Sequence[str], cells: Callable[[], TextTable], path: str | Path) -> None:
    """Write a table given as its rows' lines (cells joined by the separator), byte for byte as ``write_text_table``
    writes its cells: the lines themselves (``joined_text``), or, when a cell needs quoting, the table ``cells()``
    makes (only then)."""
    text = joined_text(columns, lines)
    if text is None:
        write_text_table(cells(), path)
        return
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)


def write_rows(columns: Sequence[str], rows: list[dict], path: str | Path) -> None:
    """Write ``rows`` (dicts keyed by ``columns``) byte for byte as ``write_table(pd.DataFrame(rows, columns=columns))``.

    A column whose cells are all ``str``, all ``int`` or all ``float`` is written here: text as it is, integers
    by ``str``, floats by ``repr`` (NaN empty), as pandas writes such a column; a table with any other column
    (mixed types, booleans, None, an infinite float) is written by pandas.
    """
    table = [[row[name] for name in columns] for row in rows]
    formats = [_column_format([cells[i] for cells in table]) for i in range(len(columns))]
    if None in formats:
        import pandas as pd

        write_table(pd.DataFrame(rows, columns=list(columns)), path)
        return
    text = [[fmt(cell) for fmt, cell in zip(formats, cells)] for cells in table]
    write_text_table(TextTable(columns, text), path)


def _column_format(cells: list):
    """How pandas writes a column of these cells, if it is one ``write_rows`` writes itself, else None."""
    kinds = {type(cell) for cell in cells}
    if kinds <= {str}:
        return str
    if kinds == {int}:
        return str if all(-2**63 <= cell < 2**63 for cell in cells) else None
    if kinds == {float}:
        return None if any(math.isinf(cell) for cell in cells) else _float_cell
    return None


def _float_cell(value: float) -> str:
    return "" if value != value else repr(value)
