"""Joins of trial tables with pandas ``merge`` semantics, fast when the right side's keys are unique.

A reference, index or system table normally has one row per trial key. Then a join is a hash
lookup on a key column that is unique on the right plus an elementwise check of the other key
columns, several times faster than ``merge``'s factorisation of every key column on 10⁶-row tables. Anything else (repeated
keys) falls back to ``merge``; both give the same rows in the same order, NaN keys matching NaN.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.extensions import take


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (pd.isna(a) & pd.isna(b))


def _positions(left: pd.DataFrame, right: pd.DataFrame, keys: list[str]) -> np.ndarray | None:
    """Row of ``right`` matching each row of ``left`` (-1 for none), or None if no key column is unique on the right."""
    for lookup in keys:
        index = pd.Index(right[lookup])
        if index.is_unique:
            break
    else:
        return None
    pos = index.get_indexer(left[lookup])
    found = pos >= 0
    for k in (k for k in keys if k != lookup):
        rv = right[k].to_numpy()[pos[found]]
        ok = _same(left[k].to_numpy()[found], rv)
        idx = np.flatnonzero(found)
        pos[idx[~ok]] = -1
        found = pos >= 0
    return pos


def join(left: pd.DataFrame, right: pd.DataFrame, keys: list[str], how: str) -> pd.DataFrame:
    """``left.merge(right, how=how, on=keys, sort=False)`` for how in {"left", "inner"}."""
    shared = set(left.columns) & set(right.columns)
    pos = _positions(left, right, keys) if shared == set(keys) else None
    if pos is None:
        return left.merge(right, how=how, on=keys, sort=False)
    if how == "inner":
        keep = pos >= 0
        left, pos = left.loc[keep], pos[keep]
    out = left.reset_index(drop=True)
    # An extension array (e.g. pandas' str dtype) is taken as such, so its dtype survives as in
    # ``merge`` even when no row matches (a NumPy object array of NaN would become dtype object).
    extra = {c: take(right[c].array if isinstance(right[c].dtype, pd.api.extensions.ExtensionDtype)
                     else right[c].to_numpy(), pos, allow_fill=True)
             for c in right.columns if c not in keys}
    if extra:
        out = pd.concat([out, pd.DataFrame(extra, index=out.index)], axis=1)
    return out
