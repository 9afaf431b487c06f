"""The polars path of ``load_scored_table(..., all_columns=False)`` (``mfscore/formats/columnar.py`` and
``trials._load_with_polars``) gives the pandas path's ScoredTable exactly, or declines and lets it read.

Each case writes a reference, an index and a system output, one of them edited at an edge (quoting, missing
values, repeated keys, line structure, score spellings), and compares ``load_scored_table`` with
``trials._load_with_pandas``: the same frame (index, dtypes, values, NaN), keys, columns, count and warnings, or
the same error, and what scoring reads of polars' rows (scores and labels, the trials ``--optOut`` keeps) is what it
reads of pandas' frame. Where a case says whether polars should read it, that is checked too, so a fast path that
always declined would not pass.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfscore.detection import trials
from mfscore.formats.columnar import read_plain_columns
from mfscore.formats.tables import read_table
from mfscore.sample_data.detection import generate_detection_dataset

REFERENCE = ["TaskID|ProbeFileID|ProbeFileName|IsTarget|Collection",
             *(f"manipulation|p{i}|probe/p{i}.jpg|{'YN'[i % 2]}|C{i % 3}" for i in range(8))]
INDEX = ["TaskID|ProbeFileID|ProbeFileName|ProbeWidth",
         *(f"manipulation|p{i}|probe/p{i}.jpg|{640 + i}" for i in range(8))]
SYSTEM = ["ProbeFileID|ConfidenceScore|ProbeStatus",
          *(f"p{i}|0.{9 - i}5|Processed" for i in reversed(range(8)))]  # not in the reference's order
FIELDS = ("sys_ref_keys", "index_ref_keys", "reference_columns", "system_only_columns", "index_only_columns",
          "total_num", "warnings")


@pytest.fixture(autouse=True)
def any_size(monkeypatch):
    monkeypatch.setattr(trials, "COLUMNAR_MIN_BYTES", 0)


def write(directory: Path, reference=REFERENCE, index=INDEX, system=SYSTEM, *, raw: dict | None = None):
    """The three tables under ``directory``, lines joined by newlines (``raw``: a file's bytes as given)."""
    paths = (directory / "ref.csv", directory / "index.csv", directory / "sys.csv")
    raw = raw or {}
    for path, lines in zip(paths, (reference, index, system)):
        path.write_bytes(raw[path.stem] if path.stem in raw else ("\n".join(lines) + "\n").encode())
    return paths


def outcome(load, arguments):
    try:
        return load(*arguments)
    except Exception as error:  # compared with the other path's
        return error


def assert_same_scoring(table: trials.ScoredTable, expected: trials.ScoredTable, sys_path: Path) -> None:
    """Scores and labels (``scores_and_labels``) of ``table.rows``, and the trials ``--optOut`` keeps of it, are
    those of the pandas path's ``expected``, bit for bit."""
    for got, want in zip(trials.scores_and_labels(table.rows), trials.scores_and_labels(expected.trials)):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    kept, expected_kept = (outcome(trials.apply_opt_out, (t, sys_path)) for t in (table, expected))
    if isinstance(expected_kept, Exception):
        assert type(kept) is type(expected_kept) and str(kept) == str(expected_kept)
        return
    pd.testing.assert_frame_equal(kept.trials, expected_kept.trials, check_exact=True)
    assert kept.total_num == expected_kept.total_num
    for got, want in zip(trials.scores_and_labels(kept.rows), trials.scores_and_labels(expected_kept.trials)):
        assert np.array_equal(got, want)


def assert_same_table(paths) -> bool:
    """``load_scored_table(..., all_columns=False)`` gives what the pandas path gives; whether polars read it."""
    expected = outcome(lambda *p: trials._load_with_pandas(*p, all_columns=False), paths)
    actual = outcome(lambda *p: trials.load_scored_table(*p, all_columns=False), paths)
    fast = outcome(trials._load_with_polars, paths)
    if isinstance(expected, Exception):
        assert type(actual) is type(expected) and str(actual) == str(expected)
    else:
        assert not isinstance(actual, Exception), actual
        for table in (actual, fast) if fast is not None else (actual,):
            assert not isinstance(table, Exception), table
            pd.testing.assert_frame_equal(table.trials, expected.trials, check_exact=True)
            assert isinstance(table.trials.index, pd.RangeIndex) == isinstance(expected.trials.index, pd.RangeIndex)
            for name in FIELDS:
                assert getattr(table, name) == getattr(expected, name), name
            assert_same_scoring(table, expected, paths[2])
    return fast is not None and not isinstance(fast, Exception)


def edited(lines: list[str], row: int, text: str | None) -> list[str]:
    """``lines`` with line ``row`` (0: the header) replaced by ``text``, or removed if None."""
    return [*lines[:row], *([] if text is None else [text]), *lines[row + 1:]]


# (case, which table, its edited lines or raw bytes, whether polars reads it)
CASES = [
    ("plain", "reference", REFERENCE, True),
    ("a quote in a field", "reference", edited(REFERENCE, 3, 'manipulation|p2|probe/"p2".jpg|Y|C2'), False),
    ("a quoted field", "system", edited(SYSTEM, 2, 'p6|"0.35"|Processed'), False),
    ("an empty IsTarget", "reference", edited(REFERENCE, 2, "manipulation|p1|probe/p1.jpg||C1"), True),
    ("an empty unread field", "reference", edited(REFERENCE, 2, "manipulation|p1|probe/p1.jpg|N|"), True),
    ("an empty score", "system", edited(SYSTEM, 3, "p5||Processed"), True),
    ("every score empty", "system", [SYSTEM[0], *(f"p{i}||Processed" for i in range(8))], True),
    ("no system row", "system", SYSTEM[:1], True),
    ("an empty ProbeStatus", "system", edited(SYSTEM, 3, "p5|0.45|"), True),
    ("an empty key in the reference", "reference", edited(REFERENCE, 2, "manipulation||probe/p1.jpg|N|C1"), False),
    ("an empty key in the system", "system", edited(SYSTEM, 3, "|0.45|Processed"), False),
    ("an empty key in the index", "index", edited(INDEX, 2, "manipulation|p1||641"), False),
    *((f"{text} as IsTarget", "reference", edited(REFERENCE, 2, f"manipulation|p1|probe/p1.jpg|{text}|C1"), True)
      for text in ("NaN", "nan", "NA", "NULL", "n/a", "<NA>", "None")),
    *((f"{text} as a reference key", "reference", edited(REFERENCE, 2, f"manipulation|{text}|probe/p1.jpg|N|C1"),
       False) for text in ("NaN", "nan", "NA", "NULL")),
    *((f"{text} as a system key", "system", edited(SYSTEM, 3, f"{text}|0.45|Processed"), True)
      for text in ("NaN", "nan", "NA", "NULL")),
    *((f"{text} as a score", "system", edited(SYSTEM, 3, f"p5|{text}|Processed"), False)
      for text in ("NaN", "nan", "NA", "NULL", "high", "inf", "-inf", "Infinity")),
    ("NA as a ProbeStatus", "system", edited(SYSTEM, 3, "p5|0.45|NA"), True),
    ("an unknown ProbeStatus", "system", edited(SYSTEM, 3, "p5|0.45|Bogus"), True),
    ("opted-out trials", "system",
     [SYSTEM[0], *(f"p{i}|0.{9 - i}5|{('Processed', 'OptOutAll', 'OptOutDetection')[i % 3]}" for i in range(8))], True),
    ("NA in an unread column", "reference", edited(REFERENCE, 2, "manipulation|p1|probe/p1.jpg|N|NA"), True),
    ("an integer past 64 bits as a key", "reference",
     edited(REFERENCE, 2, f"manipulation|{2**70}|probe/p1.jpg|N|C1"), True),
    ("an integer past 64 bits as a score", "system", edited(SYSTEM, 3, f"p5|{2**70}|Processed"), False),
    *((f"score {text}", "system", edited(SYSTEM, 3, f"p5|{text}|Processed"), fast) for text, fast in (
        ("1e-3", False), ("1E3", False), (".5", True), ("5.", True), ("+5", True), ("-.5", True), ("007", True),
        ("0.12345678901234567", False), ("0.123456789012345", True), ("0.1234567890123456", False),
        ("-0", False), ("-0.0", False), ("0", True), ("000123456789012345.5", False),
        ("0.000000000000000000000000001", False), ("12345678901234", True), (" 0.5", False), ("0.5 ", False),
        ("1,5", False), ("0x10", False), ("1_000", False))),
    ("every score an integer, one -0", "system", [SYSTEM[0], *(f"p{i}|-{i}|Processed" for i in range(8))], False),
    ("every score an integer", "system", [SYSTEM[0], *(f"p{i}|{i}|Processed" for i in range(8))], True),
    ("a repeated reference line", "reference", [*REFERENCE, REFERENCE[3]], False),
    ("a repeated index line", "index", [*INDEX, INDEX[3]], False),
    ("a repeated system line", "system", [*SYSTEM, SYSTEM[3]], False),
    ("a reference key twice", "reference", [*REFERENCE, "manipulation|p2|probe/p2.jpg|N|C9"], False),
    ("an index key twice", "index", [*INDEX, "manipulation|p2|probe/p2.jpg|999"], False),
    ("a system key twice", "system", [*SYSTEM, "p2|0.11|Processed"], False),
    ("a system row the reference lacks", "system", [*SYSTEM, "q1|0.11|Processed"], True),
    ("an index in another order", "index", [INDEX[0], *reversed(INDEX[1:])], True),
    ("an index without a reference trial", "index", edited(INDEX, 4, None), True),
    ("an index trial the reference lacks", "index", [*INDEX, "manipulation|q1|probe/q1.jpg|1"], True),
    ("an index file name the reference differs in", "index", edited(INDEX, 4, "manipulation|p3|probe/P3.jpg|643"),
     True),
    ("an index sharing the system's own column", "index",
     [INDEX[0] + "|ProbeStatus", *(line + "|Processed" for line in INDEX[1:])], False),
    ("an index keyed by ProbeFileName alone", "index",
     ["ProbeFileName|ProbeWidth", *(line.split("|", 2)[2] for line in INDEX[1:])], True),
    ("an index keyed by TaskID alone", "index", ["TaskID|ProbeWidth", *(f"manipulation|{i}" for i in range(8))], False),
    ("an index with an opt-out column", "index",
     [INDEX[0] + "|IsOptOut", *(line + f"|{'YN'[i % 2]}" for i, line in enumerate(INDEX[1:]))], True),
    ("an index in another order with an opt-out column", "index",
     [INDEX[0] + "|IsOptOut", *(line + f"|{'YN'[i % 2]}" for i, line in enumerate(reversed(INDEX[1:])))], True),
    ("a system with an opt-out column", "system",
     [SYSTEM[0] + "|IsOptOut", *(line + f"|{'YN'[i % 3 % 2]}" for i, line in enumerate(SYSTEM[1:]))], True),
    ("a non-identifier key", "system", [SYSTEM[0] + "|Collection", *(line + "|C0" for line in SYSTEM[1:])], False),
    ("a score in the reference", "reference",
     [REFERENCE[0] + "|ConfidenceScore", *(line + "|0.5" for line in REFERENCE[1:])], False),
    ("no IsTarget", "reference", [line.rsplit("|", 2)[0] + "|" + line.rsplit("|", 1)[1] for line in REFERENCE],
     False),
    ("a repeated header name", "index", edited(INDEX, 0, "TaskID|ProbeFileID|ProbeFileName|ProbeFileName"), False),
    ("an empty header name", "index", edited(INDEX, 0, "TaskID|ProbeFileID|ProbeFileName|"), False),
    ("a blank line", "reference", edited(REFERENCE, 3, ""), False),
    ("a blank line kept", "reference", [*REFERENCE[:3], "", *REFERENCE[3:]], False),
    ("a line of spaces", "reference", [*REFERENCE[:3], "   ", *REFERENCE[3:]], False),
    ("a line of separators", "reference", [*REFERENCE[:3], "||||", *REFERENCE[3:]], False),
    ("a line with too many fields", "reference", edited(REFERENCE, 3, REFERENCE[3] + "|x"), False),
    ("a line with an empty extra field", "system", edited(SYSTEM, 3, SYSTEM[3] + "|"), False),
    ("a line with too few fields", "reference", edited(REFERENCE, 3, "manipulation|p2|probe/p2.jpg|Y"), False),
    ("a line of one field", "reference", [*REFERENCE, "manipulation"], False),
    ("non-ASCII text", "reference", edited(REFERENCE, 2, "manipulation|p1|probe/p1é.jpg|N|Ç1"), True),
    ("a tab and spaces in a key", "reference", edited(REFERENCE, 2, "manipulation|p1 \t|probe/p1.jpg|N|C1"), True),
    ("a comment-like field", "reference", edited(REFERENCE, 2, "#manipulation|p1|probe/p1.jpg|N|C1"), True),
]
RAW_CASES = [
    ("a byte-order mark", "ref", b"\xef\xbb\xbf" + "\n".join(REFERENCE).encode() + b"\n", False),
    ("CRLF line ends", "sys", "\r\n".join(SYSTEM).encode() + b"\r\n", False),
    ("a carriage return in a field", "ref", ("\n".join(REFERENCE) + "\n").replace("C1", "C\r1").encode(), False),
    ("a NUL byte", "ref", ("\n".join(REFERENCE) + "\n").replace("C1", "C\x001").encode(), False),
    ("invalid UTF-8", "ref", ("\n".join(REFERENCE) + "\n").encode().replace(b"C1", b"C\xff1"), False),
    ("invalid UTF-8 in a read column", "sys", ("\n".join(SYSTEM) + "\n").encode().replace(b"p3|", b"p\xff3|"),
     False),
    ("no newline at the end", "ref", "\n".join(REFERENCE).encode(), True),
    ("an extra field on an unended last line", "sys", "\n".join(SYSTEM).encode() + b"|", False),
    ("an extra field on an unended last line after a short one", "sys",
     "\n".join([*SYSTEM[:2], "p6|0.35", *SYSTEM[3:]]).encode() + b"|", False),
    ("a blank line at the end", "ref", ("\n".join(REFERENCE) + "\n\n").encode(), False),
    ("a blank line first", "ref", ("\n" + "\n".join(REFERENCE) + "\n").encode(), False),
    ("a header alone", "sys", (SYSTEM[0] + "\n").encode(), True),
    ("a header alone, unended", "index", INDEX[0].encode(), True),
    ("an empty file", "sys", b"", False),
]


@pytest.mark.parametrize("case, table, lines, fast", CASES, ids=[case[0] for case in CASES])
def test_polars_gives_the_pandas_table_or_declines(tmp_path, case, table, lines, fast):
    paths = write(tmp_path, **{table: lines})
    assert assert_same_table(paths) == fast


@pytest.mark.parametrize("case, stem, data, fast", RAW_CASES, ids=[case[0] for case in RAW_CASES])
def test_polars_gives_the_pandas_table_or_declines_on_bytes(tmp_path, case, stem, data, fast):
    assert assert_same_table(write(tmp_path, raw={stem: data})) == fast


def test_composite_keys_each_column_repeating(tmp_path):
    """Splice-like keys: ProbeFileID and DonorFileID each repeat, the pair does not (pandas merges then)."""
    pairs = [(f"p{i}", f"d{j}") for i in range(4) for j in range(3)]
    reference = ["ProbeFileID|DonorFileID|IsTarget", *(f"{p}|{d}|{'YN'[len(p + d) % 2]}" for p, d in pairs)]
    index = ["TaskID|ProbeFileID|DonorFileID", *(f"splice|{p}|{d}" for p, d in reversed(pairs))]
    system = ["ProbeFileID|DonorFileID|ConfidenceScore", *(f"{p}|{d}|0.{k}" for k, (p, d) in enumerate(pairs[1:]))]
    assert assert_same_table(write(tmp_path, reference, index, system))


@pytest.mark.parametrize("rows", [1, 8])
def test_keys_sharing_a_hash_make_polars_decline(tmp_path, monkeypatch, rows):
    """Every key hashed alike: one reference and one system row of different keys would be joined (the keys are
    compared after the join), several rows repeat a hash (the join's validation refuses it)."""
    import polars as pl

    paths = write(tmp_path, REFERENCE[:rows + 1], INDEX, [SYSTEM[0], *SYSTEM[1:rows + 1]])
    assert assert_same_table(paths)
    monkeypatch.setattr(pl.Expr, "hash", lambda self, *args, **kwargs: pl.lit(0, dtype=pl.UInt64))
    assert not assert_same_table(paths)


def test_the_polars_path_is_taken_on_a_plain_table(tmp_path, monkeypatch):
    paths = write(tmp_path)
    expected = trials._load_with_pandas(*paths, all_columns=False)

    def refuse(*args, **kwargs):
        raise AssertionError("the pandas path was taken")

    monkeypatch.setattr(trials, "_load_with_pandas", refuse)
    table = trials.load_scored_table(*paths, all_columns=False)
    pd.testing.assert_frame_equal(table.trials, expected.trials, check_exact=True)
    with pytest.raises(AssertionError, match="pandas path"):
        trials.load_scored_table(*paths, all_columns=True)  # queries and metadata outputs read with pandas


def test_small_tables_are_read_with_pandas(tmp_path, monkeypatch):
    """polars' import (0.15 s) is paid only for tables of ``COLUMNAR_MIN_BYTES`` or more."""
    monkeypatch.setattr(trials, "COLUMNAR_MIN_BYTES", 1 << 20)
    monkeypatch.setattr(trials, "_load_with_polars", lambda *paths: pytest.fail("polars read a small table"))
    assert trials.load_scored_table(*write(tmp_path), all_columns=False).total_num == 8


def test_a_generated_dataset(tmp_path):
    data = generate_detection_dataset(tmp_path, 3000, seed=5)
    paths = (data.directory / data.reference, data.directory / data.index, data.directory / data.system)
    assert assert_same_table(paths)


def test_read_plain_columns_reads_what_read_table_reads(tmp_path):
    path = write(tmp_path, reference=edited(REFERENCE, 2, "manipulation|p1|NA||C1"))[0]
    columns = ["ProbeFileID", "ProbeFileName", "IsTarget"]
    for raw_text in (False, True):
        frame = read_plain_columns(path, columns, raw_text=raw_text)
        expected = read_table(path, raw_text=raw_text, columns=set(columns))
        assert frame.columns == list(expected.columns)
        assert {c: frame[c].to_list() for c in columns} == {
            c: [None if pd.isna(v) else v for v in expected[c]] for c in columns}
    assert read_plain_columns(path, ["Collection"]) is None  # pandas infers its type
    assert read_plain_columns(path, ["Collection"], raw_text=True) is not None


def _mutated(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(0, 2)):
        row = rng.randrange(1, len(lines))
        fields = lines[row].split("|")
        kind = rng.randrange(7)
        if kind == 0:
            fields.append(rng.choice(["", "x"]))
        elif kind == 1 and len(fields) > 1:
            fields.pop()
        elif kind == 2:
            fields[rng.randrange(len(fields))] = rng.choice(["", "NA", "nan", "None", "-0", "1e5", ".25", "x y"])
        elif kind == 3:
            lines.insert(row, rng.choice(["", " ", lines[row]]))
            continue
        elif kind == 4:
            lines.pop(row)
            continue
        elif kind == 5:
            lines[row], lines[-1] = lines[-1], lines[row]
            continue
        lines[row] = "|".join(fields)
    return lines


def test_randomly_edited_tables(tmp_path):
    """Tables with random edits (fields added, dropped or replaced, lines repeated, blanked, removed, moved)."""
    rng = random.Random(47)
    taken = 0
    for i in range(120):
        directory = tmp_path / str(i)
        directory.mkdir()
        paths = write(directory, _mutated(rng, REFERENCE), _mutated(rng, INDEX), _mutated(rng, SYSTEM))
        taken += assert_same_table(paths)
    assert taken > 20
