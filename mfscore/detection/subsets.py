"""The subsets a detection run scores: everything, or one per query (docs/detection.md §7).

``-q`` selects trials with a query, ``-qm`` selects targets by their manipulations and keeps every
non-target, ``-qp`` crosses the listed factor values into partitions. Query modes first join the
journal tables (one row per trial and operation) and, after selecting, keep each trial once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mfscore import query

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl


@dataclass
class Subset:
    label: str                      # the query text as given ("" for the whole set)
    rows: pd.DataFrame | pl.DataFrame  # one row per trial (the whole set of a table polars joined: its polars rows)
    factors: dict[str, str] = field(default_factory=dict)   # -qp partition factor values


def whole_set(trials: pd.DataFrame | pl.DataFrame) -> list[Subset]:
    return [Subset("", trials)]


def query_frame(trials: pd.DataFrame, journal: pd.DataFrame | None) -> pd.DataFrame:
    """Trials joined with their journal operations, missing values as empty strings (docs/detection.md §7.2)."""
    from mfscore.formats.journal import join_journal

    joined = join_journal(trials, journal)
    return joined.astype(object).where(joined.notna(), "")


def target_query_text(text: str, *, mediscore_compat: bool) -> str:
    """The ``-qm`` query: the user's query restricted to targets, plus every non-target.

    MediScore pastes the query inside ``( … and IsTarget == ['Y'])``, so a top-level ``or`` in the
    query escapes the target restriction; mfscore parenthesises the query unless ``mediscore_compat``.
    """
    query.parse(text)
    inner = text if mediscore_compat else f"({text})"
    return f"({inner} and IsTarget == ['Y']) or IsTarget == ['N']"


def _select(frame: pd.DataFrame, text: str, keys: list[str]) -> pd.DataFrame:
    mask = query.select(frame, text)
    return frame.loc[mask].drop_duplicates(subset=keys, keep="first").reset_index(drop=True)


def query_subsets(frame: pd.DataFrame, queries: list[str], keys: list[str], *, targets_only: bool,
                  mediscore_compat: bool = False) -> list[Subset]:
    """One subset per ``-q`` (or, with ``targets_only``, ``-qm``) query."""
    subsets = []
    for text in queries:
        selector = target_query_text(text, mediscore_compat=mediscore_compat) if targets_only else text
        subsets.append(Subset(text, _select(frame, selector, keys)))
    return subsets


def partition_subsets(frame: pd.DataFrame, text: str, keys: list[str]) -> list[Subset]:
    """``-qp``: one subset per combination of the listed categorical values (docs/detection.md §7.3).

    Labels read ``Name=='v' & 300<=X`` (factors first, then conditions) as in MediScore.
    """
    subsets = []
    for terms in query.partitions(text):
        factors = {t.name: t.cell for t in terms if t.is_factor}
        conditions = {t.name: t.condition for t in terms if not t.is_factor}
        label = " & ".join([f"{name}=={cell}" for name, cell in factors.items()] + list(conditions.values()))
        subsets.append(Subset(label, _select(frame, label, keys), {**factors, **conditions}))
    return subsets
