"""The filtering scorer's three tables, computed from ``FilteringRecord``s only (docs/provenance.md §2.4).

``trial_scores.csv``: an ``All`` row per trial, then one per ``--nodetype`` type, recalls rounded to
12 decimals. ``scores.csv``: per node type (sorted), the mean of those rounded recalls, not rounded
again. ``node_mapping.csv``: the ``All`` mapping, a block per trial and rank. All ``|``-separated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mfscore.formats.tables import SEPARATOR, TextTable, write_lines, write_rows
from mfscore.reports.figure_data import BarFigure, Series
from mfscore.provenance.filtering import (
    CORRECT,
    FALSE_ALARM,
    MISSING,
    RANKS,
    FilteringRecord,
    node_recall,
)

if TYPE_CHECKING:
    import pandas as pd

TRIAL_COLUMNS = (
    ["JournalName", "ProvenanceProbeFileID", "ProvenanceOutputFileName", "NumSysNodes", "NumRefNodes", "NodeType"]
    + [f"Num{what}NodesAt{n}" for n in RANKS for what in ("Correct", "Missing", "FalseAlarm")]
    + [f"NodeRecallAt{n}" for n in RANKS])
SCORE_COLUMNS = ["NodeType"] + [f"NodeRecallAt{n}" for n in RANKS]
MAPPING_COLUMNS = ["JournalName", "ProvenanceProbeFileID", "ProvenanceOutputFileName", "Measure", "WorldFileID",
                   "NodeConfidence", "Mapping", "NodeType"]
DIGITS = 12  # docs/provenance.md §2.4: round(x, 12) of trial recalls
Row = tuple | str  # a mapping row as its cells, or as their text joined by the separator


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
    import pandas as pd

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


def score_rows(trials: list[dict]) -> list[dict]:
    """Per node type (sorted, so ``All`` first), the mean of the rounded trial recalls (docs/provenance.md §2.4);
    ``trials`` are ``trial_rows``."""
    by_type: dict[str, list[dict]] = {}
    for row in trials:
        by_type.setdefault(row["NodeType"], []).append(row)
    return [{"NodeType": kind} | {f"NodeRecallAt{n}": _mean([r[f"NodeRecallAt{n}"] for r in by_type[kind]])
                                  for n in RANKS}
            for kind in sorted(by_type)]


def scores(records: list[FilteringRecord]) -> pd.DataFrame:
    """``score_rows`` as a table."""
    import pandas as pd

    return pd.DataFrame(score_rows(trial_rows(records)), columns=SCORE_COLUMNS)


def node_mapping(records: list[FilteringRecord]) -> TextTable:
    """``node_mapping.csv``: a block per trial and rank, each sorted by Mapping (Correct, FalseAlarm,
    Missing), NodeConfidence, WorldFileID (docs/provenance.md §2.4).

    Each trial's hits and false alarms are sorted once and filtered per rank, and each row's cells are
    made once, so a run of 300 probes makes its 200,000 rows in a fraction of what sorting every block
    would take. NodeConfidence is one column over the whole file, as in MediScore's concatenated pandas
    table: integers print as ``1`` only when every confidence is an integer and no row is Missing,
    otherwise as floats (``1.0``).
    """
    return TextTable(MAPPING_COLUMNS, _mapping_rows(records, tuple, tuple))


def node_lines(records: list[FilteringRecord]) -> list[str]:
    """``node_mapping``'s rows, each its cells joined by the separator: a row is the text of its block's first
    four cells and of its own last four, joined once each (no row is a tuple of cells: half of writing the table)."""
    return _mapping_rows(records, lambda cells: SEPARATOR.join(cells) + SEPARATOR, SEPARATOR.join)


def _mapping_rows(records: list[FilteringRecord], head_of: Callable[[tuple], Row], tail_of: Callable[[tuple], Row]
                  ) -> list[Row]:
    """``node_mapping``'s rows, each ``head_of`` its block's (trial's and rank's) cells + ``tail_of`` its own."""
    number = _float_text if _confidences_are_floats(records) else str
    rows = []
    for record in records:
        found = sorted((h for h in record.hits if h.position is not None), key=lambda h: (h.confidence, h.world_file_id))
        alarms = sorted(record.false_alarms, key=lambda f: (f.confidence, f.world_file_id))
        missing = sorted(record.hits, key=lambda h: h.world_file_id)
        found_cells = [(h.position, tail_of((h.world_file_id, number(h.confidence), CORRECT, h.node_type)))
                       for h in found]
        alarm_cells = [(f.position, tail_of((f.world_file_id, number(f.confidence), FALSE_ALARM, ""))) for f in alarms]
        missing_cells = [(h.position, tail_of((h.world_file_id, "", MISSING, h.node_type))) for h in missing]
        for n in RANKS:
            head = head_of((record.journal_name, record.probe_id, record.output_file, f"NodeRecallAt{n}"))
            rows += [head + cells for position, cells in found_cells if position < n]
            rows += [head + cells for position, cells in alarm_cells if position < n]
            rows += [head + cells for position, cells in missing_cells if position is None or position >= n]
    return rows


def _confidences_are_floats(records: list[FilteringRecord]) -> bool:
    """Whether the NodeConfidence column is a float column: a Missing row at some rank, or a confidence
    that is no integer."""
    for record in records:
        for hit in record.hits:
            if hit.position is None or hit.position >= RANKS[0] or type(hit.confidence) is not int:
                return True
        if any(type(alarm.confidence) is not int for alarm in record.false_alarms):
            return True
    return False


def _float_text(confidence) -> str:
    return repr(float(confidence))


RECALL_FIGURE = "recall_at_k.png"


def recall_figure(means: list[dict]) -> BarFigure:
    """``--plots``: the mean node recall at each rank (``scores.csv``'s rows), one bar per node type."""
    import numpy as np  # a run without --plots imports none: the tables are written as text

    series = tuple(Series(str(row["NodeType"]), np.array([row[f"NodeRecallAt{n}"] for n in RANKS], dtype=np.float64))
                   for row in means)
    return BarFigure("Provenance filtering: mean node recall at rank k", tuple(f"k = {n}" for n in RANKS), series,
                     xlabel="rank k (the system's k most confident nodes)", ylabel="mean node recall")


def write_filtering_report(records: list[FilteringRecord], path_for: Callable[[str], Path]) -> list[dict]:
    """Write the three tables, each where ``path_for(file name)`` says (a staging directory, say); returns
    ``scores.csv``'s rows."""
    trials = trial_rows(records)
    write_rows(TRIAL_COLUMNS, trials, path_for("trial_scores.csv"))
    means = score_rows(trials)
    write_rows(SCORE_COLUMNS, means, path_for("scores.csv"))
    write_lines(MAPPING_COLUMNS, node_lines(records), lambda: node_mapping(records), path_for("node_mapping.csv"))
    return means
