"""The separator count that guards a column-subset read (``tables._fields_fit_header``), counted in blocks of
lines, against the same rule applied line by line: the first line with more fields than the header is refused
with its line number, unless the file has a quote anywhere (pandas then parses every column itself)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.errors import InputFileError
from mfscore.formats import tables


def fields_fit_line_by_line(path, n_fields: int) -> bool:
    data = path.read_bytes()
    if b'"' in data:
        return False
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line.count(b"|") > n_fields - 1:
            raise InputFileError(f"malformed table (expected {n_fields} fields, saw {line.count(b'|') + 1})",
                                 path=str(path), line=number)
    return True


def outcome(check, *args):
    try:
        return check(*args)
    except InputFileError as error:
        return str(error), error.line


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"|", b"||", b"\n", b"x|y\n", b'"', b"\xc3\xa9"]), max_size=40).map(b"".join),
       n_fields=st.integers(1, 4), block=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]))
def test_blocks_count_as_lines_do(tmp_path_factory, data, n_fields, block):
    path = tmp_path_factory.mktemp("fields") / "t.csv"
    path.write_bytes(data)
    original = tables._FIELD_CHECK_BLOCK
    tables._FIELD_CHECK_BLOCK = block
    try:
        got = outcome(tables._fields_fit_header, path, n_fields)
    finally:
        tables._FIELD_CHECK_BLOCK = original
    assert got == outcome(fields_fit_line_by_line, path, n_fields)


@pytest.mark.parametrize("block", [5, 1 << 20])
def test_a_long_line_past_a_block_and_a_quote_after_the_error(tmp_path, monkeypatch, block):
    monkeypatch.setattr(tables, "_FIELD_CHECK_BLOCK", block)
    path = tmp_path / "t.csv"
    path.write_bytes(b"A|B\n" + b"x|" * 40 + b"y\n1|2\n")
    with pytest.raises(InputFileError, match="expected 2 fields, saw 41") as error:
        tables._fields_fit_header(path, 2)
    assert error.value.line == 2
    path.write_bytes(b"A|B\n1|2|3\n" + b"z|z\n" * 10 + b'"q"|4\n')  # the quote decides, wherever it is
    assert tables._fields_fit_header(path, 2) is False
