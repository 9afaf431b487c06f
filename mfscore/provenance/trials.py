"""The inputs both provenance scorers share (docs/provenance.md §1): tables, disparity check, opt-out, trials.

Index ⋈ reference ⋈ system on ``ProvenanceProbeFileID`` (inner joins), grouped by
``JournalFileName`` in sorted order, join order kept within a group. System JSON paths are confined
to ``-S``; a file that is too large, not JSON or fails the schema is a per-trial problem
(``TrialInputError``), so the run can go on without that trial.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mfscore.errors import ImageError, InputFileError
from mfscore.formats.images import confined_path
from mfscore.formats.provenance_json import DEFAULT_MAX_JSON_BYTES, load_provenance_json, schema_problems
from mfscore.formats.tables import read_table
from mfscore.limits import MAX_SCHEMA_PROBLEMS

PROBE = "ProvenanceProbeFileID"
OUTPUT = "ProvenanceOutputFileName"
KEPT_STATUSES = frozenset({"Processed", "N"})  # docs/provenance.md §1 (opt-out)


class TrialInputError(InputFileError):
    """One trial's system JSON cannot be scored; the run reports it and goes on."""


@dataclass
class ProvenanceInputs:
    index: pd.DataFrame      # ProvenanceProbeFileID, ProvenanceProbeFileName, ...
    reference: pd.DataFrame  # ProvenanceProbeFileID, JournalName, JournalFileName, ...
    nodes: pd.DataFrame      # ProvenanceProbeFileID, WorldFileID, WorldFileName, JournalNodeID
    world: pd.DataFrame      # WorldFileID, WorldFileName, ...
    system: pd.DataFrame     # ProvenanceProbeFileID, ProvenanceOutputFileName, [ConfidenceScore, status]
    reference_dir: str
    system_dir: str
    system_path: str
    warnings: list[str] = field(default_factory=list)


def _text(path: str, required: tuple[str, ...]) -> pd.DataFrame:
    return read_table(path, raw_text=True, required=required).fillna("")


def read_inputs(*, index: str, reference: str, nodes: str, world: str, system: str, reference_dir: str,
                system_dir: str) -> ProvenanceInputs:
    """Read the five tables; a missing file or column is an InputFileError naming it."""
    return ProvenanceInputs(
        index=_text(index, (PROBE, "ProvenanceProbeFileName")),
        reference=_text(reference, (PROBE, "JournalName", "JournalFileName")),
        nodes=_text(nodes, (PROBE, "WorldFileID", "WorldFileName", "JournalNodeID")),
        world=_text(world, ("WorldFileID", "WorldFileName")),
        system=_text(system, (PROBE, OUTPUT)),
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
        extraneous += sorted(set(system_ids[system_ids.duplicated()]) - set(extraneous))
    if extraneous:
        message = f"the system output has probe(s) not in the index, or repeated: {', '.join(extraneous)}"
        if not skip:
            raise InputFileError(message + " (use -t to score anyway)", path=inputs.system_path)
        inputs.warnings.append(message)


def opted_in(system: pd.DataFrame) -> pd.DataFrame:
    """Rows kept for scoring: IsOptOut, else ProvenanceProbeStatus, in {Processed, N}; no column keeps all."""
    for column in ("IsOptOut", "ProvenanceProbeStatus"):
        if column in system:
            return system[system[column].isin(KEPT_STATUSES)]
    return system


def trial_table(inputs: ProvenanceInputs) -> pd.DataFrame:
    """The trials to score, in MediScore's order, with every system JSON path confined to ``-S``."""
    index = inputs.index[[PROBE, "ProvenanceProbeFileName"]]
    reference = inputs.reference[[PROBE, "JournalName", "JournalFileName"]]
    trials = index.merge(reference, on=PROBE).merge(opted_in(inputs.system), on=PROBE)
    trials = trials.sort_values("JournalFileName", kind="stable").reset_index(drop=True)
    for name in trials[OUTPUT]:
        try:
            confined_path(inputs.system_dir, name, what="system JSON")
        except ImageError as exc:
            raise InputFileError(exc.message, path=exc.path) from None
    return trials


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
    for position, link in enumerate(document.get("links", [])):
        for end in ("source", "target"):
            value = link[end]
            if value != int(value) or not 0 <= value < n_nodes:
                raise TrialInputError(f"links[{position}].{end} = {value} is not a position in nodes "
                                      f"(0..{n_nodes - 1})", path=path)
    return document


def _more(count: int, *, at_least: bool) -> str:
    return f" (and {'at least ' if at_least else ''}{count} more problems)" if count else ""


def load_journal(inputs: ProvenanceInputs, name: str) -> dict:
    """A reference journal JSON (trusted NIST data, still read through the safe loader)."""
    return load_provenance_json(Path(inputs.reference_dir) / name)
