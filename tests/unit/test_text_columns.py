"""``read_text_columns`` and ``write_rows`` against pandas: the same cells read, the same bytes written, on plain
files (split here) and on every kind of file that is not plain (read by pandas)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfscore.errors import InputFileError
from mfscore.formats import tables
from mfscore.formats.tables import read_table, read_text_columns, write_rows, write_table


def by_pandas(path) -> dict[str, list[str]]:
    frame = read_table(path, raw_text=True).fillna("")
    return {name: frame[name].tolist() for name in frame.columns}


_CELL = st.text(st.sampled_from(list("ab 0.9-_nN/")), max_size=5)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.text(st.sampled_from(list("ABc_")), min_size=1, max_size=3), min_size=n, max_size=n, unique=True),
    st.lists(st.lists(_CELL, min_size=n, max_size=n), max_size=6))), st.booleans())
def test_plain_tables_read_as_pandas_reads_them(tmp_path, table, final_newline):
    header, rows = table
    text = "\n".join("|".join(cells) for cells in [header, *rows]) + ("\n" if final_newline else "")
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    assert read_text_columns(path) == by_pandas(path)


@pytest.mark.parametrize("text", [
    "\ufeffA|B\n1|2\n",          # a byte-order mark
    'A|B\n"1|x"|2\n',            # a quoted separator
    "A|B\r\n1|2\r\n",            # CRLF
    "A|B\n1|2\n\n3|4\n",         # a blank line
    "A|B\n1\n",                  # a short row
    "A||B\n1|2|3\n",             # an unnamed column
    "A|B\n   \n1|2\n",           # a line of spaces
])
def test_other_tables_are_read_by_pandas(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode("utf-8"))
    assert tables._plain_lines(path) is None
    assert read_text_columns(path) == by_pandas(path)


def outcome(read, path):
    try:
        return read(path)
    except InputFileError as exc:
        return exc.sentence()


@pytest.mark.parametrize("data", [b"", b"A|B\n1|2|3\n", b"A|B\n1|2\n3|4|5|6\n", b"A|A\n1|2\n", b"A|B\n\xff|2\n",
                                  b"\n\n", b"A\x00|B\n1|2\n"])
def test_odd_and_bad_tables_come_out_as_from_read_table(tmp_path, data):
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    assert outcome(read_text_columns, path) == outcome(by_pandas, path)


def test_a_missing_required_column_is_named(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("A|B\n1|2\n")
    with pytest.raises(InputFileError, match="missing required column"):
        read_text_columns(path, required=("C",))
    with pytest.raises(InputFileError, match="file not found"):
        read_text_columns(tmp_path / "absent.csv")


_VALUE = st.one_of(st.floats(allow_infinity=False), st.integers(-2**70, 2**70), st.text(max_size=4), st.booleans(),
                   st.none(), st.just(math.inf))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], deadline=None)
@given(st.lists(st.tuples(_VALUE, st.floats(allow_infinity=False), st.integers(0, 10**6)), max_size=8))
def test_rows_are_written_as_pandas_writes_them(tmp_path, rows):
    columns = ["a", "b", "c"]
    dicts = [dict(zip(columns, row)) for row in rows]
    write_rows(columns, dicts, tmp_path / "fast.csv")
    write_table(pd.DataFrame(dicts, columns=columns), tmp_path / "pandas.csv")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_missing_value_spellings_are_pandas_own():
    from pandas._libs.parsers import STR_NA_VALUES

    assert tables.NA_TEXTS == STR_NA_VALUES


# Cells pandas reads in every way: numbers in its forms, booleans in any case, missing-value spellings, words,
# digits with other characters (still text), and non-ASCII digits.
_TYPED_CELL = st.sampled_from(["12", " 12 ", "1e3", "+.5e-3", "-INFINITY", "inf", "nan", "NA", "null", "", "True",
                               "tRUE", "false", "yes", "abc", "Blur", "0x1A", "1_000", "1d5", "255 0 0", "- 5",
                               "١٢", "[[1,2]]", "[]", "a b", "N/A "])


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], deadline=None,
          max_examples=300)
@given(st.sampled_from(["Operation", "ProbeFileID", "FrameCount"]), st.lists(_TYPED_CELL, min_size=1, max_size=5))
def test_reads_as_text_only_when_pandas_gives_the_very_text(tmp_path, name, cells):
    path = tmp_path / "t.csv"
    path.write_text("\n".join([f"{name}|other", *(f"{cell}|x" for cell in cells)]) + "\n", encoding="utf-8")
    read = read_table(path)[name]
    if tables.reads_as_text(name, read_text_columns(path)[name]):
        assert [type(v) for v in read] == [str] * len(cells) and read.tolist() == cells


@pytest.mark.parametrize(("name", "cells", "expected"), [
    ("Operation", ["Blur", "12"], True),          # one word: pandas keeps every cell as text
    ("Operation", ["12", "1e3"], False),          # numbers
    ("Operation", ["True", "false"], False),      # booleans
    ("Operation", ["Blur", "NA"], False),         # NA is read as missing
    ("Operation", ["255 0 0"], False),            # text, but not known here: left to pandas
    ("ProbeFileID", ["0123", "12"], True),        # identifiers are text
    ("ProbeFileID", ["p1", ""], False),
])
def test_reads_as_text_cases(name, cells, expected):
    assert tables.reads_as_text(name, cells) is expected


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["QUERY", "AUC", "TRR", "A|B"]),
                                st.one_of(st.floats(), st.integers(-2**40, 2**40), st.text(max_size=4),
                                          st.booleans()), max_size=4), max_size=4))
def test_a_detection_report_is_written_as_a_frame_of_its_rows_writes(tmp_path, rows):
    """``write_report``'s columns in the order the rows name them, a cell a row lacks empty: the bytes of the
    ``DataFrame`` of the formatted rows, which it wrote before."""
    from mfscore.reports.detection_report import format_value, write_report

    write_report(rows, tmp_path / "fast.csv")
    formatted = [{name: format_value(value) for name, value in row.items()} for row in rows]
    write_table(pd.DataFrame(formatted, dtype=object), tmp_path / "pandas.csv")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
