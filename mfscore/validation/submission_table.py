"""Reading a submitted system-output table without giving up at the first bad line.

A scorer stops at a malformed table; a validator should say everything that is wrong at once. So
the table is read line by line (``csv``, ``|``-separated, ``"`` quoting), every line whose field
count differs from the header is reported and then padded or cut to the header, and the values are
kept as text, exactly as written.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mfscore.formats.tables import SEPARATOR
from mfscore.limits import DEFAULT_MAX_TABLE_BYTES, MAX_TABLE_COLUMNS
from mfscore.validation.findings import ValidationReport


@dataclass
class SubmissionTable:
    path: str
    header: list[str]
    rows: pd.DataFrame  # every column as str, in file order
    lines: np.ndarray   # file line of each row (header = 1)
    n_lines: int        # lines in the file, header included

    def line(self, position: int) -> int:
        return int(self.lines[position])


def read_submission_table(path: str, report: ValidationReport, *,
                          max_bytes: int = DEFAULT_MAX_TABLE_BYTES) -> SubmissionTable | None:
    """The table, or None (with an error in ``report``) when it cannot be read at all."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            report.error("table.too_large", f"The file is {size} bytes, more than the limit of {max_bytes}.", file=path)
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        report.error("table.unreadable", f"The file cannot be read ({exc.strerror or exc}).", file=path)
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        report.error("table.encoding", "The file is not UTF-8 text.", file=path, line=line)
        return None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=SEPARATOR, quotechar='"')
    try:
        header = next(reader, None)
        if not header:
            report.error("table.empty", "The file is empty: expected a header line.", file=path)
            return None
        header = [name.strip() for name in header]
        if len(header) > MAX_TABLE_COLUMNS:
            report.error("table.too_wide", f"The header has {len(header)} columns, more than the limit of "
                         f"{MAX_TABLE_COLUMNS}.", file=path, line=1)
            return None
        records, lines = [], []
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header):
                report.error("table.field_count", f"The line has {len(fields)} '|'-separated fields; the header has "
                             f"{len(header)}.", file=path, line=reader.line_num)
                fields = (fields + [""] * len(header))[:len(header)]
            records.append(fields)
            lines.append(reader.line_num)
    except csv.Error as exc:
        report.error("table.syntax", f"The file cannot be parsed ({exc}).", file=path, line=reader.line_num)
        return None
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        report.error("table.duplicate_columns", f"The header repeats the column(s) {', '.join(duplicated)}.",
                     file=path, line=1)
        return None
    rows = pd.DataFrame(records, columns=header, dtype=object).astype(str) if records else \
        pd.DataFrame({name: pd.Series(dtype=str) for name in header})
    return SubmissionTable(path, header, rows, np.asarray(lines, dtype=np.int64), text.count("\n") + (not text.endswith("\n")))
