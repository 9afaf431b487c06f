"""The inputs both provenance scorers share (docs/provenance.md §1): tables, disparity check, opt-out, trials.

Index ⋈ reference ⋈ system on ``ProvenanceProbeFileID`` (inner joins), grouped by
``JournalFileName`` in sorted order, join order kept within a group. System JSON paths are confined
to ``-S`` and journal paths to ``-R``; a file that is too large, not JSON or fails the schema is a per-trial problem
(``TrialInputError``), so the run can go on without that trial.

The tables are text columns (``read_text_columns``) and the joins are written out on them, so the
filtering command runs without pandas; ``trial_frame`` is the same table made by pandas' merges, the
reference the joins are tested against and the path taken when a join would rename columns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING

from mfscore.errors import InputFileError
from mfscore.formats.file_names import confined_path
from mfscore.formats.provenance_json import DEFAULT_MAX_JSON_BYTES, load_provenance_json, schema_problems
from mfscore.formats.tables import read_text_columns
from mfscore.limits import MAX_SCHEMA_PROBLEMS

if TYPE_CHECKING:
    import pandas as pd

Columns = dict[str, list[str]]  # a table as its columns' text, "" for an empty cell

PROBE = "ProvenanceProbeFileID"
OUTPUT = "ProvenanceOutputFileName"
KEPT_STATUSES = frozenset({"Processed", "N"})  # docs/provenance.md §1 (opt-out)


class TrialInputError(InputFileError):
    """One trial's system JSON cannot be scored; the run reports it and goes on."""


@dataclass
class ProvenanceInputs:
    index: Columns      # ProvenanceProbeFileID, ProvenanceProbeFileName, ...
    reference: Columns  # ProvenanceProbeFileID, JournalName, JournalFileName, ...
    nodes: Columns      # ProvenanceProbeFileID, WorldFileID, WorldFileName, JournalNodeID
    world: Columns      # WorldFileID, WorldFileName, ...
    system: Columns     # ProvenanceProbeFileID, ProvenanceOutputFileName, [ConfidenceScore, status]
    reference_dir: str
    system_dir: str
    system_path: str
    warnings: list[str] = field(default_factory=list)


def records(table: Columns) -> list[dict[str, str]]:
    """A table's rows as dicts, in file order (``DataFrame.to_dict("records")`` of the same table)."""
    names = list(table)
    return [dict(zip(names, cells)) for cells in zip(*table.values())] if names else []


def frame(table: Columns) -> pd.DataFrame:
    """A table as pandas reads it as text (``read_table(raw_text=True).fillna("")``)."""
    import pandas as pd

    return pd.DataFrame(table, columns=list(table), dtype=str)


def read_inputs(*, index: str, reference: str, nodes: str, world: str, system: str, reference_dir: str,
                system_dir: str) -> ProvenanceInputs:
    """Read the five tables; a missing file or column is an InputFileError naming it."""
    return ProvenanceInputs(
        index=read_text_columns(index, required=(PROBE, "ProvenanceProbeFileName")),
        reference=read_text_columns(reference, required=(PROBE, "JournalName", "JournalFileName")),
        nodes=read_text_columns(nodes, required=(PROBE, "WorldFileID", "WorldFileName", "JournalNodeID")),
        world=read_text_columns(world, required=("WorldFileID", "WorldFileName")),
        system=read_text_columns(system, required=(PROBE, OUTPUT)),
        reference_dir=reference_dir, system_dir=system_dir, system_path=system)


def check_trial_disparity(inputs: ProvenanceInputs, *, skip: bool, one_to_one: bool) -> None:
    """Every index probe must be in the system output; an extraneous system row is an error unless
    ``skip`` (-t), then a warning. With ``one_to_one`` (graph building) a repeated system row is extraneous."""
    index_ids, system_ids = inputs.index[PROBE], inputs.system[PROBE]
    missing = sorted(set(index_ids) - set(system_ids))
    if missing:
        raise InputFileError(f"the system output lacks the index probe(s) {', '.join(missing)}",
                             path=inputs.system_path)
    extraneous = sorted(set(system_ids) - set(index_ids))
    if one_to_one:
        seen: set[str] = set()
        repeated = {probe for probe in system_ids if probe in seen or seen.add(probe)}
        extraneous += sorted(repeated - set(extraneous))
    if extraneous:
        message = f"the system output has probe(s) not in the index, or repeated: {', '.join(extraneous)}"
        if not skip:
            raise InputFileError(message + " (use -t to score anyway)", path=inputs.system_path)
        inputs.warnings.append(message)


def opted_in(system: Columns) -> list[dict[str, str]]:
    """Rows kept for scoring: IsOptOut, else ProvenanceProbeStatus, in {Processed, N}; no column keeps all."""
    rows = records(system)
    for column in ("IsOptOut", "ProvenanceProbeStatus"):
        if column in system:
            return [row for row in rows if row[column] in KEPT_STATUSES]
    return rows


INDEX_COLUMNS = (PROBE, "ProvenanceProbeFileName")
REFERENCE_COLUMNS = (PROBE, "JournalName", "JournalFileName")


def trial_table(inputs: ProvenanceInputs) -> list[dict[str, str]]:
    """The trials to score, in MediScore's order, with every system JSON path confined to ``-S``: index ⋈
    reference ⋈ opted-in system on the probe (inner joins, each left row's matches in right order), stable
    sorted by JournalFileName; a row per trial with the index's and reference's columns and every system column."""
    if set(inputs.system) & set(INDEX_COLUMNS + REFERENCE_COLUMNS) - {PROBE}:  # pandas would rename them
        trials = trial_frame(inputs).to_dict("records")
    else:
        index = [dict(zip(INDEX_COLUMNS, cells)) for cells in zip(*(inputs.index[c] for c in INDEX_COLUMNS))]
        reference = [dict(zip(REFERENCE_COLUMNS, cells))
                     for cells in zip(*(inputs.reference[c] for c in REFERENCE_COLUMNS))]
        trials = _inner_join(_inner_join(index, reference), opted_in(inputs.system))
        trials.sort(key=lambda trial: trial["JournalFileName"])
    for trial in trials:
        confined_path(inputs.system_dir, trial[OUTPUT], what="system JSON")
    return trials


def _inner_join(left: list[dict], right: list[dict]) -> list[dict]:
    """``left`` ⋈ ``right`` on the probe, as pandas' inner merge orders it: each left row in order, with its
    matching right rows in their order (the two share no other column)."""
    matches: dict[str, list[dict]] = {}
    for row in right:
        matches.setdefault(row[PROBE], []).append(row)
    return [left_row | row for left_row in left for row in matches.get(left_row[PROBE], ())]


def trial_frame(inputs: ProvenanceInputs) -> pd.DataFrame:
    """``trial_table``'s rows made by pandas' merges (columns a join shares are renamed ``_x``/``_y``)."""
    index = frame(inputs.index)[list(INDEX_COLUMNS)]
    reference = frame(inputs.reference)[list(REFERENCE_COLUMNS)]
    system = frame(inputs.system)
    for column in ("IsOptOut", "ProvenanceProbeStatus"):
        if column in system:
            system = system[system[column].isin(KEPT_STATUSES)]
            break
    trials = index.merge(reference, on=PROBE).merge(system, on=PROBE)
    return trials.sort_values("JournalFileName", kind="stable").reset_index(drop=True)


def load_system_graph(inputs: ProvenanceInputs, name: str, task: str, *,
                      max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> dict:
    """A trial's system JSON, checked against ``task``'s schema and for link ends within ``nodes``."""
    path = os.path.join(inputs.system_dir, name)
    try:
        document = load_provenance_json(path, max_bytes=max_bytes)
    except InputFileError as exc:
        raise TrialInputError(exc.message, path=exc.path) from None
    problems = schema_problems(document, task)
    if problems:
        raise TrialInputError(f"the JSON fails the {task} schema: {problems[0]}"
                              + _more(len(problems) - 1, at_least=len(problems) == MAX_SCHEMA_PROBLEMS), path=path)
    n_nodes = len(document["nodes"])
    links = document.get("links", [])
    if _integer_positions(links, n_nodes):
        return document
    for position, link in enumerate(links):
        for end in ("source", "target"):
            value = link[end]
            if value != int(value) or not 0 <= value < n_nodes:
                raise TrialInputError(f"links[{position}].{end} = {value} is not a position in nodes "
                                      f"(0..{n_nodes - 1})", path=path)
    return document


def _integer_positions(links: list[dict], n_nodes: int) -> bool:
    """Whether every link end is an int in ``[0, n_nodes)``, told a column at a time: the usual file, whose links
    ``load_system_graph`` then need not check one by one (a float such as 2.0 is a position too, checked there)."""
    for end in ("source", "target"):
        values = list(map(itemgetter(end), links))
        if values and (set(map(type, values)) != {int} or min(values) < 0 or max(values) >= n_nodes):
            return False
    return True


def _more(count: int, *, at_least: bool) -> str:
    return f" (and {'at least ' if at_least else ''}{count} more problems)" if count else ""


def load_journal(inputs: ProvenanceInputs, name: str) -> dict:
    """A reference journal JSON, its name (``JournalFileName``) confined to ``-R`` and the file read through the
    safe loader: a reference is as untrusted as a submission when a client uploads both."""
    return load_provenance_json(confined_path(inputs.reference_dir, name, what="journal"))
