"""The fold: the hinge between scorers and reports (docs/architecture.md "Mergeable per-trial records").

Every task's per-trial outcome (a record, or a ``Problem``) is keyed by its job's key (query, role,
ordinal). Folding is one keyed merge for every record type: order-independent, idempotent (an
outcome delivered twice counts once) and strict (two different outcomes for one key raise). Two
outcomes are the same when their canonical encodings (``mfscore.codec``) are equal bytes,
so records holding numpy arrays or NaN compare as values (``mfscore.codec``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mfscore.codec import encode, plain, rebuild
from mfscore.errors import MfscoreError


@dataclass(frozen=True, order=True)
class JobKey:
    """A job's key, stable across runs of the same inputs: which ``-qm`` query, which role, which trial."""

    query: int
    role: str
    ordinal: int

    def __str__(self) -> str:
        return f"{self.query}/{self.role}/{self.ordinal}"


@dataclass(frozen=True)
class Problem:
    """A trial that could not be scored as planned, in one sentence naming the file.

    ``counts_as`` is the record the report uses in the trial's place (None: the trial is left out);
    a ``fatal`` problem stops the run when the report reaches its trial, as the embedded command does.
    """

    message: str
    counts_as: Any = None
    fatal: bool = False


class RecordConflictError(MfscoreError):
    """Two outcomes for the same key disagree."""


def encode_outcome(outcome) -> bytes:
    """A record, or a Problem (with the record it counts as, if any), in the canonical encoding."""
    if isinstance(outcome, Problem):
        return encode({"problem": outcome.message, "fatal": outcome.fatal, "counts_as": plain(outcome.counts_as)})
    return encode({"record": plain(outcome)})


def decode_outcome(record_type, data: bytes):
    value = json.loads(data)
    if "problem" in value:
        return Problem(value["problem"], rebuild(record_type, value["counts_as"]), bool(value["fatal"]))
    return rebuild(record_type, value["record"])


def fold(deliveries: Iterable[tuple[JobKey, object]], into: dict | None = None) -> dict[JobKey, object]:
    """One outcome per key from ``(key, outcome)`` deliveries, in any order, repeats included."""
    merged = {} if into is None else into
    for key, outcome in deliveries:
        seen = merged.get(key)
        if seen is not None and seen is not outcome and encode_outcome(seen) != encode_outcome(outcome):
            raise RecordConflictError(f"two different records arrived for the job {key}")
        merged[key] = outcome
    return merged


def complete(outcomes: dict[JobKey, object], planned: Iterable[JobKey]) -> dict[JobKey, object]:
    """The outcomes of exactly the planned keys, in plan order; a missing or an unplanned key raises."""
    planned = list(planned)
    missing = [key for key in planned if key not in outcomes]
    if missing or len(outcomes) != len(planned):
        extra = sorted(set(outcomes) - set(planned))
        raise RecordConflictError(f"the records do not match the planned jobs "
                                  f"({len(missing)} missing, first {missing[:1]}; {len(extra)} unplanned, first {extra[:1]})")
    return {key: outcomes[key] for key in planned}
