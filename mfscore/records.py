"""Per-trial records and how they merge: the hinge between scorers and the aggregator (DESIGN.md).

A detection record is one trial's key, its canonical position (``ordinal``: its row in the scored
table), score, label and opt-out status. Every detection metric is computed from a set of records,
so shards scored anywhere merge into exactly the result of scoring everything at once: merging is
a union keyed by trial, order-independent and idempotent (a record delivered twice counts once).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from mfscore.errors import MfscoreError

RECORD_FIELDS = ("ordinal", "score", "is_target", "status")


class RecordConflictError(MfscoreError):
    """Two records for the same trial disagree."""


def detection_records(trials: pd.DataFrame, keys: list[str], status_column: str | None = None) -> pd.DataFrame:
    """The records of a scored table: keys, ordinal, score, is_target, status."""
    records = trials[keys].copy()
    records["ordinal"] = np.arange(len(trials), dtype=np.int64)
    records["score"] = trials["ConfidenceScore"].to_numpy(dtype=np.float64)
    records["is_target"] = (trials["IsTarget"] == "Y").to_numpy()
    records["status"] = trials[status_column].fillna("").to_numpy(dtype=object) if status_column else ""
    return records


def merge_detection_records(shards: list[pd.DataFrame]) -> pd.DataFrame:
    """Union of record shards in canonical (ordinal) order; identical repeats collapse, conflicts raise."""
    merged = pd.concat(shards, ignore_index=True).drop_duplicates()
    clash = merged.duplicated(subset=["ordinal"], keep=False)
    if clash.any():
        ordinal = int(merged.loc[clash, "ordinal"].iloc[0])
        raise RecordConflictError(f"two different records for the trial at ordinal {ordinal}")
    return merged.sort_values("ordinal", kind="stable").reset_index(drop=True)


def _same_mask_record(a, b) -> bool:
    return a.to_dict() == b.to_dict()


def merge_mask_records(deliveries) -> dict:
    """Fold ``((trial key, role, query), MaskRecord)`` deliveries into one record per key.

    Order-independent and idempotent: a record delivered twice counts once; two different records
    for the same (trial, role, query) raise ``RecordConflictError``.
    """
    merged = {}
    for key, record in deliveries:
        seen = merged.get(key)
        if seen is not None and not _same_mask_record(seen, record):
            raise RecordConflictError(f"two different mask records for {key}")
        merged[key] = record
    return merged


def merge_by_ordinal(deliveries: Iterable, kind: str) -> list:
    """Records with an ``ordinal`` (provenance trials), in trial order: a record delivered twice
    counts once; two different records for one ordinal raise ``RecordConflictError``."""
    merged: dict[int, object] = {}
    for record in deliveries:
        seen = merged.get(record.ordinal)
        if seen is not None and seen != record:
            raise RecordConflictError(f"two different {kind} records for the trial at ordinal {record.ordinal}")
        merged[record.ordinal] = record
    return [merged[k] for k in sorted(merged)]
