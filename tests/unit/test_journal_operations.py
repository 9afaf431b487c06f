"""``operations_by_probe`` groups the journal in plain Python; pandas' ``groupby``, which it replaced, is the
reference: the same keys in the same order, the same colours and bit-planes, on random journals with missing keys,
tied and unreadable ``Sequence`` values, and colours and bit-planes that do not parse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfscore.masks.journal_selection import TrialOperations, _bitplanes, operations_by_probe
from mfscore.masks.reference_selection import parse_colour


def _by_groupby(journal: pd.DataFrame, evaluated: pd.Series) -> dict:
    """The grouping as pandas does it, one selection per probe."""
    table = journal.assign(_evaluated=evaluated.to_numpy())
    if "Sequence" in table:
        order = pd.to_numeric(table["Sequence"], errors="coerce")
        table = table.assign(_order=-order).sort_values("_order", kind="stable")
    names = table["JournalName"] if "JournalName" in table else pd.Series("", index=table.index)
    result = {}
    for (probe, name), rows in table.groupby([table["ProbeFileID"], names], sort=False):
        chosen = rows[rows["_evaluated"] == "Y"]
        colours = tuple(c for c in (parse_colour(x) for x in chosen.get("Color", ())) if c is not None)
        result[(probe, name)] = TrialOperations(colours, _bitplanes(chosen.get("BitPlane", ())),
                                                _bitplanes(rows.get("BitPlane", ())))
    return result


def _journal(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.Series]:
    n = int(rng.integers(0, 30))
    pick = lambda values: [values[i] for i in rng.integers(0, len(values), n)]  # noqa: E731
    columns = {"ProbeFileID": pick(["p1", "p2", "p3", "p10", np.nan, ""])}
    if rng.random() < 0.8:
        columns["JournalName"] = pick(["j1", "j2", np.nan, ""])
    if rng.random() < 0.7:
        columns["Sequence"] = pick(["1", "2", "2", "10", "-3", "x", "", np.nan, "1.5"])
    if rng.random() < 0.7:
        columns["Color"] = pick(["255 0 0", "0 255 0", "1 2 3", "256 0 0", "1 2", "", np.nan, " 7 8 9 "])
    if rng.random() < 0.6:
        columns["BitPlane"] = pick(["1", "12", " 3 ", "x", "", np.nan, "٣", "4"])
    journal = pd.DataFrame(columns, index=rng.permutation(n) + 5)  # an index that is not 0..n-1
    return journal, pd.Series(pick(["Y", "N", "Y"]), index=journal.index, dtype=object)


@pytest.mark.parametrize("seed", range(300))
def test_operations_by_probe_groups_as_pandas_does(seed):
    journal, evaluated = _journal(np.random.default_rng(seed))
    want = _by_groupby(journal, evaluated)
    got = operations_by_probe(journal, evaluated)
    assert list(got.items()) == list(want.items())


def test_the_random_journals_reach_every_case():
    """The generator is worth its 300 cases: keys left out, several groups, colours and bit-planes picked."""
    results = [operations_by_probe(*_journal(np.random.default_rng(seed))) for seed in range(300)]
    assert sum(len(r) >= 3 for r in results) > 100
    assert any(ops.colours for r in results for ops in r.values())
    assert any(len(ops.journal_bitplanes) >= 2 for r in results for ops in r.values())
    journals = [_journal(np.random.default_rng(seed))[0] for seed in range(300)]
    assert sum(j["ProbeFileID"].isna().any() for j in journals) > 50
