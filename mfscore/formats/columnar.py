"""Reading columns of a plain ``|`` table with polars, exactly as ``read_table`` reads them with pandas (issue 47).

polars reads a table of 10⁶ rows several times as fast as pandas' C parser, but the two differ at the edges:
quoting, carriage returns, blank lines (pandas skips them), a byte-order mark, lines with more or fewer fields than
the header, missing values. So polars reads only a *plain* table: no byte-order mark, no ``"``, carriage return or
NUL byte, a header of two or more distinct non-empty names, and every line as many fields as the header (which
rules out blank lines too). polars itself refuses invalid UTF-8 and a line with more fields than the header, all
but an unended last line, which is checked here; the separators are counted, so that no line has fewer. Of such a
table only columns pandas reads as text are read: identifier columns, or any column with ``raw_text``. Anything
else gives None, and the caller reads the table with ``read_table``, which parses it or words the error.

polars is imported by the function, not with the module: a command that reads no large table does not pay for it.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mfscore.formats.tables import IDENTIFIER_COLUMNS, NA_TEXTS, SEPARATOR
from mfscore.limits import DEFAULT_MAX_TABLE_BYTES, MAX_HEADER_BYTES, MAX_TABLE_COLUMNS

if TYPE_CHECKING:
    import polars as pl

_BLOCK = 1 << 20  # bytes counted at a time: a buffer this size is reused, not one as large as the file
_BOM = b"\xef\xbb\xbf"


def read_plain_columns(path: str | Path, columns: Sequence[str], *, raw_text: bool = False) -> pl.DataFrame | None:
    """``columns`` of the table at ``path`` as polars strings, null where ``read_table(path, raw_text=raw_text)``
    has NaN (an empty field; without ``raw_text`` also a text of ``NA_TEXTS``), or None when the table is not
    plain, a column is missing, or pandas would not read a column as text (the caller reads with pandas)."""
    if not raw_text and not set(columns) <= set(IDENTIFIER_COLUMNS):
        return None
    import polars as pl

    try:
        shape = _plain_shape(Path(path))
        if shape is None or not set(columns) <= set(shape[0]):
            return None
        frame = pl.read_csv(path, separator=SEPARATOR, has_header=True, infer_schema=False, quote_char=None,
                            glob=False, empty_string_is_null=True)
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return None
    header, separators = shape
    if frame.columns != header or separators != (frame.height + 1) * (len(header) - 1):
        return None
    frame = frame.select(columns)
    return frame if raw_text else frame.with_columns(pl.col(columns).replace(sorted(NA_TEXTS), None))


def plain_header(path: str | Path) -> list[str] | None:
    """The names of the header line of the table at ``path``, which are those ``read_header`` reads, or None where
    they might not be or ``read_header`` raises (the caller reads with pandas, which words the error): a file that
    is not a regular one or is over the limits (``mfscore.limits``), a header line with a byte-order mark, a ``"``,
    a carriage return or NUL, invalid UTF-8, fewer than two names, an empty or a repeated one (pandas renames
    those). pandas is not imported."""
    if str(path).startswith("~"):
        return None  # pandas and polars read ~ as the home directory, open() does not
    if not Path(path).is_file():
        return None
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            line = file.readline(MAX_HEADER_BYTES + 1)
    except OSError:
        return None
    if size > DEFAULT_MAX_TABLE_BYTES or len(line) > MAX_HEADER_BYTES:
        return None
    line = line.removesuffix(b"\n")
    if line.startswith(_BOM) or any(byte in line for byte in (b'"', b"\r", b"\x00")):
        return None
    try:
        names = line.decode("utf-8").split(SEPARATOR)
    except UnicodeDecodeError:
        return None
    if not 2 <= len(names) <= MAX_TABLE_COLUMNS or "" in names or len(set(names)) != len(names):
        return None
    return names


def _plain_shape(path: Path) -> tuple[list[str], int] | None:
    """The header's names and the count of separators in the file, or None if it has a byte pandas and polars
    read differently, its header is not plain (``plain_header``), or its last line is unended and has more
    fields than the header (polars reads those as one without a word). With polars' row count, the separators
    tell whether every line has as many fields as the header (polars has checked that none has more)."""
    header = plain_header(path)
    if header is None:
        return None
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if any(data.find(byte) >= 0 for byte in (b'"', b"\r", b"\x00")):
            return None
        last = data[data.rfind(b"\n") + 1:]
        if last.count(SEPARATOR.encode()) > len(header) - 1:
            return None
        return header, _count(data, SEPARATOR.encode())


def _count(data: mmap.mmap, byte: bytes) -> int:
    """Occurrences of ``byte`` in ``data``, counted by blocks (no array as large as the file)."""
    import numpy as np

    codes = np.frombuffer(data, dtype=np.uint8)
    found = np.empty(min(_BLOCK, codes.size), dtype=bool)
    count = 0
    for start in range(0, codes.size, _BLOCK):
        block = codes[start:start + _BLOCK]
        np.equal(block, ord(byte), out=found[:block.size])
        count += int(np.count_nonzero(found[:block.size]))
    return count
