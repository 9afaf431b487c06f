"""The filtering scorer's three tables, computed from ``FilteringRecord``s only (provenance.md §2.4).

``trial_scores.csv``: an ``All`` row per trial, then one per ``--nodetype`` type, recalls rounded to
12 decimals. ``scores.csv``: per node type (sorted), the mean of those rounded recalls, not rounded
again. ``node_mapping.csv``: the ``All`` mapping, a block per trial and rank. All ``|``-separated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from mfscore.formats.tables import write_table
from mfscore.provenance.filtering import (
    CORRECT,
    FALSE_ALARM,
    MISSING,
    RANKS,
    FilteringRecord,
    node_recall,
)

TRIAL_COLUMNS = (
    ["JournalName", "ProvenanceProbeFileID", "ProvenanceOutputFileName", "NumSysNodes", "NumRefNodes", "NodeType"]
    + [f"Num{what}NodesAt{n}" for n in RANKS for what in ("Correct", "Missing", "FalseAlarm")]
    + [f"NodeRecallAt{n}" for n in RANKS])
SCORE_COLUMNS = ["NodeType"] + [f"NodeRecallAt{n}" for n in RANKS]
MAPPING_COLUMNS = ["JournalName", "ProvenanceProbeFileID", "ProvenanceOutputFileName", "Measure", "WorldFileID",
                   "NodeConfidence", "Mapping", "NodeType"]
_MAPPING_ORDER = {CORRECT: 0, FALSE_ALARM: 1, MISSING: 2}
DIGITS = 12  # §2.4: round(x, 12) of trial recalls


def trial_rows(records: list[FilteringRecord]) -> list[dict]:
    rows = []
    for record in records:
        for counts in record.counts:
            row = {"JournalName": record.journal_name, "ProvenanceProbeFileID": record.probe_id,
                   "ProvenanceOutputFileName": record.output_file, "NumSysNodes": record.num_sys_nodes,
                   "NumRefNodes": counts.num_ref_nodes, "NodeType": counts.node_type}
            for n, at in zip(RANKS, counts.at_rank):
                row |= {f"NumCorrectNodesAt{n}": at.correct, f"NumMissingNodesAt{n}": at.missing,
                        f"NumFalseAlarmNodesAt{n}": at.false_alarm}
            for n, at in zip(RANKS, counts.at_rank):
                row[f"NodeRecallAt{n}"] = round(node_recall(at.correct, counts.num_ref_nodes), DIGITS)
            rows.append(row)
    return rows


def trial_scores(records: list[FilteringRecord]) -> pd.DataFrame:
    return pd.DataFrame(trial_rows(records), columns=TRIAL_COLUMNS)


def _mean(values: list[float]) -> float:
    """Running sum over the trials in order, then one division; NaN skipped, as pandas' mean does.

    Python 3.12's ``sum`` compensates rounding errors, so the sum is spelled out: the means must
    match MediScore's to the last bit, since they are written unrounded.
    """
    total, count = 0.0, 0
    for value in values:
        if not math.isnan(value):
            total += value
            count += 1
    return total / count if count else float("nan")


def scores(records: list[FilteringRecord]) -> pd.DataFrame:
    """Per node type (sorted, so ``All`` first), the mean of the rounded trial recalls (§2.4)."""
    by_type: dict[str, list[dict]] = {}
    for row in trial_rows(records):
        by_type.setdefault(row["NodeType"], []).append(row)
    rows = [{"NodeType": kind} | {f"NodeRecallAt{n}": _mean([r[f"NodeRecallAt{n}"] for r in by_type[kind]])
                                  for n in RANKS}
            for kind in sorted(by_type)]
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def _mapping_key(row) -> tuple:
    no_confidence = row.confidence is None
    return (_MAPPING_ORDER[row.mapping], no_confidence, 0 if no_confidence else row.confidence, row.world_file_id)


def node_mapping(records: list[FilteringRecord]) -> pd.DataFrame:
    """Blocks per trial and rank, each sorted by Mapping, NodeConfidence (NaN last), WorldFileID (§2.4).

    NodeConfidence is one column over the whole file: integers print as ``1`` only when every
    confidence is an integer and no row is Missing, otherwise as floats (``1.0``), as a pandas
    column of MediScore's concatenated blocks would.
    """
    rows = []
    for record in records:
        trial = (record.journal_name, record.probe_id, record.output_file)
        for n in RANKS:
            block = sorted(record.mapping_at(n), key=_mapping_key)
            rows += [(*trial, f"NodeRecallAt{n}", m.world_file_id, m.confidence, m.mapping, m.node_type)
                     for m in block]
    return pd.DataFrame(rows, columns=MAPPING_COLUMNS)


def report_tables(records: list[FilteringRecord]) -> dict[str, pd.DataFrame]:
    """The three output tables by file name."""
    return {"trial_scores.csv": trial_scores(records), "scores.csv": scores(records),
            "node_mapping.csv": node_mapping(records)}


def write_filtering_report(records: list[FilteringRecord], path_for: Callable[[str], Path]) -> None:
    """Write the three tables, each where ``path_for(file name)`` says (a staging directory, say)."""
    for name, frame in report_tables(records).items():
        write_table(frame, path_for(name))
