"""write_text_table against write_table (pandas) on the same text cells: the same bytes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfscore.formats.tables import TextTable, write_table, write_text_table

ALPHABET = list("ab1 .|\"'\r\n,é") + ["", "1.0", "True"]


@pytest.mark.parametrize("seed", range(40))
def test_text_table_bytes_equal_the_pandas_table(tmp_path, seed):
    rng = np.random.default_rng(seed)
    columns = [f"C{k}" for k in range(int(rng.integers(2, 6)))]
    special = seed % 2 == 0  # half the tables have no cell that needs quoting: the joined fast path
    alphabet = ALPHABET if special else [c for c in ALPHABET if c not in ('|', '"', "\r", "\n")]
    rows = [["".join(rng.choice(alphabet, int(rng.integers(0, 4)))) for _ in columns]
            for _ in range(int(rng.integers(0, 30)))]
    write_text_table(TextTable(columns, rows), tmp_path / "fast.csv")
    write_table(pd.DataFrame(rows, columns=columns, dtype=object), tmp_path / "pandas.csv")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_text_table_columns_and_frame():
    table = TextTable(["A", "B"], [("1", "x"), ("2", "")])
    assert table.column("B") == ["x", ""]
    assert table.frame()["A"].tolist() == ["1", "2"]
