"""Provenance filtering: node recall at fixed ranks, one ``FilteringRecord`` per trial (docs/provenance.md §2).

A trial's reference is a list of ``(WorldFileName, nodetype)`` rows; the system is its JSON
``nodes`` ranked by ``nodeConfidenceScore``. For each rank N the top N system nodes are mapped to
the reference by exact file path. The record keeps the counts (per node type and rank), where
each reference file was found and the top-ranked false alarms, so every report table is computed
from records alone and records scored anywhere merge into the result of scoring everything at once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from mfscore.errors import OptionError
from mfscore.provenance import NODE_TYPES
from mfscore.provenance.world_files import world_file_id

RANKS = (50, 100, 200, 300)  # docs/provenance.md §2.3: fixed, not configurable
ALL = "All"
PROBE_TYPE = "probe"
CORRECT, FALSE_ALARM, MISSING = "Correct", "FalseAlarm", "Missing"


def node_types(requested: list[str] | None) -> tuple[str, ...]:
    """``--nodetype`` values in the order given, ``*``/``all`` expanded to donor, base, final, interim, repeats dropped."""
    expanded = []
    for name in requested or ():
        expanded.extend(NODE_TYPES if name in ("*", "all") else (name,))
    return tuple(dict.fromkeys(expanded))


def world_nodes(nodes: list[dict], world_pairs: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """Node-file rows ⋈ world on (WorldFileID, WorldFileName), as ``probe -> [(WorldFileName, JournalNodeID)]``.

    An inner join (docs/provenance.md §2.2 step 1): a row appears once per matching world row.
    """
    in_world = Counter(world_pairs)
    grouped: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in nodes:
        times = in_world[(row["WorldFileID"], row["WorldFileName"])]
        grouped[row["ProvenanceProbeFileID"]].extend([(row["WorldFileName"], row["JournalNodeID"])] * times)
    return grouped


def reference_nodes(probe_rows: list[tuple[str, str]], journal_nodes: list[dict],
                    probe_file: str) -> list[tuple[str, str]]:
    """A trial's reference ``(WorldFileName, nodetype)`` rows (docs/provenance.md §2.2 steps 2–4).

    The probe's world rows ⋈ journal ``nodes`` on ``JournalNodeID == id`` (inner), plus one row for
    the probe itself (``probe_file``, type ``probe``): the probe counts as a reference node. A
    journal node without ``nodetype`` gets ``""``.
    """
    types_by_id: dict[str, list[str]] = defaultdict(list)
    for node in journal_nodes:
        if node.get("id") is not None:
            types_by_id[str(node["id"])].append(_text(node.get("nodetype")))
    rows = [(file, kind) for file, node_id in probe_rows for kind in types_by_id.get(node_id, ())]
    return rows + [(probe_file, PROBE_TYPE)]


def _text(value) -> str:
    return "" if value is None else str(value)


def ranked(system_nodes: list[dict]) -> list[tuple[str, int | float]]:
    """System ``(file, nodeConfidenceScore)`` by descending confidence (docs/provenance.md §2.3).

    A stable sort: tied nodes keep their order in the JSON. MediScore uses pandas' default
    quicksort, which is not stable, so where ties straddle a rank cut-off its counts may differ.
    """
    nodes = zip(map(itemgetter("file"), system_nodes), map(itemgetter("nodeConfidenceScore"), system_nodes))
    return sorted(nodes, key=itemgetter(1), reverse=True)  # reverse keeps tied nodes in order, as a stable sort


class RankCounts(NamedTuple):
    correct: int
    missing: int
    false_alarm: int


class TypeCounts(NamedTuple):
    """One node type's (or ``All``'s) reference size and its counts at each of ``RANKS``."""
    node_type: str
    num_ref_nodes: int
    at_rank: tuple[RankCounts, ...]


class ReferenceHit(NamedTuple):
    """A reference row and where the system found its file: ``position`` (0-based) of the best-ranked
    system node with that file within the top ``max(RANKS)``, and its confidence; None if not found."""
    world_file_id: str
    node_type: str
    position: int | None
    confidence: int | float | None


class FalseAlarmHit(NamedTuple):
    """A system node within the top ``max(RANKS)`` whose file is no reference file."""
    position: int
    world_file_id: str
    confidence: int | float


def count_at_rank(top: list[tuple[str, int | float]], reference: list[tuple[str, str]]) -> RankCounts:
    """Correct: reference rows whose file is among ``top``; Missing: the others; FalseAlarm: ``top`` nodes
    whose file is no reference file (docs/provenance.md §2.3). A file listed twice by the system counts once."""
    top_files = {file for file, _ in top}
    ref_files = {file for file, _ in reference}
    correct = sum(file in top_files for file, _ in reference)
    false_alarm = sum(file not in ref_files for file, _ in top)
    return RankCounts(correct, len(reference) - correct, false_alarm)


def node_recall(correct: int, num_ref_nodes: int) -> float:
    """``NodeRecallAtN = Correct / NumRefNodes`` (docs/provenance.md §2.3); NaN without reference nodes."""
    return correct / num_ref_nodes if num_ref_nodes else float("nan")


@dataclass(frozen=True)
class FilteringRecord:
    """Everything the filtering report needs from one trial; ``ordinal`` is its row in the trial table.

    The ``All`` mapping at every rank is kept once, as where each reference file was found and which
    top-ranked system nodes are false alarms; the report expands it for each rank.
    """
    ordinal: int
    journal_name: str
    probe_id: str
    output_file: str
    num_sys_nodes: int
    counts: tuple[TypeCounts, ...]  # All first, then the --nodetype types in order
    hits: tuple[ReferenceHit, ...]
    false_alarms: tuple[FalseAlarmHit, ...]

    def to_dict(self) -> dict:
        return {"ordinal": self.ordinal, "journal_name": self.journal_name, "probe_id": self.probe_id,
                "output_file": self.output_file, "num_sys_nodes": self.num_sys_nodes,
                "counts": [[c.node_type, c.num_ref_nodes, [list(r) for r in c.at_rank]] for c in self.counts],
                "hits": [list(h) for h in self.hits], "false_alarms": [list(f) for f in self.false_alarms]}

    def __reduce__(self):
        """Pickled (a process pool returns every record to the command) with its hits and false alarms as columns:
        named tuples pickle and unpickle through Python code, plain ones cost an object apiece, a trial's six columns
        a few (``zip`` makes the rows again). 300 records of 300 nodes: 0.09 s of CPU as plain tuples, 0.05 s."""
        return _unpickled, (self.ordinal, self.journal_name, self.probe_id, self.output_file, self.num_sys_nodes,
                            self.counts, tuple(zip(*self.hits)), tuple(zip(*self.false_alarms)))

    @classmethod
    def from_dict(cls, data: dict) -> FilteringRecord:
        return cls(ordinal=data["ordinal"], journal_name=data["journal_name"], probe_id=data["probe_id"],
                   output_file=data["output_file"], num_sys_nodes=data["num_sys_nodes"],
                   counts=tuple(TypeCounts(kind, n_ref, tuple(RankCounts(*r) for r in at_rank))
                                for kind, n_ref, at_rank in data["counts"]),
                   hits=tuple(ReferenceHit(*h) for h in data["hits"]),
                   false_alarms=tuple(FalseAlarmHit(*f) for f in data["false_alarms"]))


def _unpickled(ordinal, journal_name, probe_id, output_file, num_sys_nodes, counts, hit_columns, alarm_columns):
    return FilteringRecord(ordinal, journal_name, probe_id, output_file, num_sys_nodes, counts,
                           tuple(map(ReferenceHit._make, zip(*hit_columns))),
                           tuple(map(FalseAlarmHit._make, zip(*alarm_columns))))


def score_trial(*, ordinal: int, journal_name: str, probe_id: str, output_file: str,
                reference: list[tuple[str, str]], system_nodes: list[dict],
                types: tuple[str, ...] = ()) -> FilteringRecord:
    """One trial's record: counts at every rank for ``All`` and each of ``types``, and the ``All`` mapping.

    Each requested type's reference is the rows of that type; the system top N is unchanged, so a
    system node matching a reference of another type is a FalseAlarm in that type's counts (docs/provenance.md §2.3).
    """
    present = {kind for _, kind in reference}
    absent = [kind for kind in types if kind not in present]
    if absent:
        raise OptionError(f"--nodetype {' '.join(absent)}: the reference of probe {probe_id} has no "
                          f"{' or '.join(absent)} node, and every requested type must occur in every trial")
    top = ranked(system_nodes)[: max(RANKS)]
    populations = [(ALL, reference)] + [(kind, [row for row in reference if row[1] == kind]) for kind in types]
    counts = tuple(TypeCounts(kind, len(rows), tuple(count_at_rank(top[:n], rows) for n in RANKS))
                   for kind, rows in populations)
    first: dict[str, int] = {}
    for position, (file, _) in enumerate(top):
        first.setdefault(file, position)
    hits = tuple(ReferenceHit(world_file_id(file), kind, first.get(file),
                              top[first[file]][1] if file in first else None) for file, kind in reference)
    ref_files = {file for file, _ in reference}
    alarm_rows = [(position, world_file_id(file), confidence)
                  for position, (file, confidence) in enumerate(top) if file not in ref_files]
    false_alarms = tuple(map(FalseAlarmHit._make, alarm_rows))  # most of the top: _make names them in half the time
    return FilteringRecord(ordinal, journal_name, probe_id, output_file, len(system_nodes), counts, hits, false_alarms)
