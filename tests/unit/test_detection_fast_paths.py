"""Detection's fast paths against slow obvious references (issue 47): the order of the sorted trials, the check of
the scores polars parses, and scoring a table polars read without importing pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mfscore.detection import trials
from mfscore.detection.roc import descending_order
from mfscore.sample_data.detection import generate_detection_dataset

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 0.5, 1e-300, 5e-324, -5e-324, np.finfo(float).max])


def some_scores(rng: np.random.Generator, case: int) -> np.ndarray:
    n = int(rng.integers(0, 200))
    if case == 0:
        return rng.choice(SPECIAL, n)
    if case == 1:
        return np.round(rng.normal(size=n), 1)  # many ties
    if case == 2:
        return rng.normal(size=n)
    scores = rng.choice(SPECIAL, n)
    if n:
        scores[rng.integers(0, n)] = np.nan
    return scores


@pytest.mark.parametrize("case", range(4))
def test_descending_order_is_the_stable_argsort_of_the_negated_scores(case):
    rng = np.random.default_rng(case)
    for _ in range(500):
        scores = some_scores(rng, case)
        expected = np.argsort(-scores, kind="stable")
        got = descending_order(scores)
        assert got.dtype == expected.dtype and np.array_equal(got, expected), scores


def plain_decimals_reference(text: pl.Series) -> bool:
    """The check as first written: a plain decimal, no negative zero, at most 15 digits past a sign and leading
    zeros, counted for every score."""
    digits = text.str.strip_chars_start("+-").str.strip_chars_start("0")
    plain = (text.str.contains(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$") & ~text.str.contains(r"^-[0.]*$")
             & (digits.str.len_bytes() - digits.str.contains(".", literal=True).cast(int) <= 15))
    return bool(plain.fill_null(True).all())


EDGES = ["0", "-0", "+0", "-0.0", "-.0", "-0.", "-00", ".5", "5.", "-.5", "+.5", "-0.05", "-1", "-10", "-0.10",
         ".", "-", "+", "+-1", "--1", "1.2.3", "1e3", " 1", "0.123456789012345", "0.1234567890123456",
         "000123456789012345.5", "00012345678901234.5", "-000000000000000000001", "123456789012345",
         "1234567890123456", "-.000000000000001", "-.0000000000000001", None, ""]


def a_score_text(rng: np.random.Generator) -> str:
    """A sign, leading zeros, digits, a dot, digits, now and then another character: around the 15 digits."""
    sign = str(rng.choice(["", "", "+", "-", "-", "+-"]))
    digits = "".join(rng.choice(list("0123456789"), int(rng.integers(0, 18))))
    fraction = "".join(rng.choice(list("0000123456789"), int(rng.integers(0, 18))))
    text = sign + "0" * int(rng.integers(0, 4)) + digits + str(rng.choice(["", ".", "."])) + fraction
    if rng.random() < 0.1:
        at = int(rng.integers(0, len(text) + 1))
        text = text[:at] + str(rng.choice(list("e. -+x"))) + text[at:]
    return text


def test_the_plain_score_check_is_the_reference_check():
    rng = np.random.default_rng(47)
    for text in [*EDGES, *(a_score_text(rng) for _ in range(3000))]:
        column = pl.Series([text, "0.5"], dtype=pl.String)
        assert trials._plain_decimals(column) == plain_decimals_reference(column), text


SCORING_WITHOUT_PANDAS = """
import os, sys
from dataclasses import replace
from mfscore.detection import trials
from mfscore.detection.options import DetectionOptions
from mfscore.tasks.detection import TASK, Options
trials.COLUMNAR_MIN_BYTES = 0
directory, reference, index, system, scratch = sys.argv[1:]
plan = TASK.plan(Options(ref_dir=directory, reference=reference, index=index, system=system, kind="manipulation",
                         scoring=DetectionOptions(ci=True)))
assert plan.prepared.error is None and plan.jobs
assert trials.is_polars(plan.prepared.table.rows), "polars did not read the tables"
for job in plan.jobs:
    path = os.path.join(scratch, os.path.basename(job.work.trials))
    with open(path, "wb") as file:
        file.write(plan.generated[job.work.trials])
    assert TASK.score(replace(job.work, trials=path)).metrics is not None or job.work.first
print(" ".join(m for m in sys.modules if m == "pandas" or m.startswith("pandas.")))
"""


def test_scoring_a_table_polars_read_imports_no_pandas(tmp_path):
    """Without a query or a metadata output, a table polars read is planned and scored without pandas, whose
    import (0.2 s) the report pays while its figure is drawn."""
    data = generate_detection_dataset(tmp_path / "data", 300)
    arguments = [str(data.directory), data.reference, data.index, str(data.directory / data.system), str(tmp_path)]
    done = subprocess.run([sys.executable, "-c", SCORING_WITHOUT_PANDAS, *arguments], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
