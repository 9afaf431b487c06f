"""Matching a system graph to the reference graph, and the graph-overlap metrics (docs/provenance.md §3.4-§3.5).

A trial becomes a ``GraphRecord``: the six set sizes the metrics need and the node and link
mapping rows the report lists. Every output is computed from records alone, so records scored
anywhere merge into exactly the report of scoring everything at once
(docs/architecture.md "Mergeable per-trial records").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from itertools import chain

from mfscore.provenance.graph_reference import ReferenceGraph
from mfscore.provenance.graph_system import Confidence, SystemGraph
from mfscore.provenance.world_files import world_file_id

CORRECT, FALSE_ALARM, MISSING = "Correct", "FalseAlarm", "Missing"

NodeRow = tuple[str, Confidence | None, str]            # (WorldFileID, NodeConfidence, Mapping)
LinkRow = tuple[str, str, Confidence | None, str]       # (Source, Target WorldFileID, LinkConfidence, Mapping)


def _divide(numerator: int, denominator: int) -> float:
    """A float64 ratio; 0/0 is NaN (docs/provenance.md §3.5), written as an empty field."""
    return numerator / denominator if denominator else math.nan


def sim_no(v_r: int, v_s: int, v_rs: int) -> float:
    # MFC2019 plan §7: sim_NO = 2 |V_r ∩ V_s| / (|V_r| + |V_s|)
    return _divide(2 * v_rs, v_r + v_s)


def sim_lo(e_r: int, e_s: int, e_rs: int) -> float:
    # MFC2019 plan §7: sim_LO = 2 |E_r ∩ E_s| / (|E_r| + |E_s|)
    return _divide(2 * e_rs, e_r + e_s)


def sim_nlo(v_r: int, v_s: int, v_rs: int, e_r: int, e_s: int, e_rs: int) -> float:
    # MFC2019 plan §7: sim_NLO = 2 (|V_r ∩ V_s| + |E_r ∩ E_s|) / (|V_r| + |V_s| + |E_r| + |E_s|)
    return _divide(2 * (v_rs + e_rs), v_r + v_s + e_r + e_s)


def node_recall(v_r: int, v_rs: int) -> float:
    # docs/provenance.md §3.5: NodeRecall = |N ∩ N'| / |N|
    return _divide(v_rs, v_r)


def map_nodes(reference: frozenset[str], system: dict[str, Confidence], names: dict[str, str]) -> list[NodeRow]:
    """Node mapping rows in MediScore's order: Mapping, then NodeConfidence (empty lowest), then WorldFileID.
    ``names``: each file's ``world_file_id`` (``world_ids``).

    Each Mapping is one block (Correct, FalseAlarm, Missing: their names' order), and within a block the
    confidence is always given (Correct, FalseAlarm) or never (Missing), so each block is sorted on plain
    tuples, without a key function."""
    correct = sorted((system[k], names[k], k) for k in reference if k in system)
    false_alarm = sorted((c, names[k], k) for k, c in system.items() if k not in reference)
    missing = sorted((names[k], k) for k in reference if k not in system)
    return ([(name, c, CORRECT) for c, name, _ in correct] + [(name, c, FALSE_ALARM) for c, name, _ in false_alarm]
            + [(name, None, MISSING) for name, _ in missing])


def match_links(reference: frozenset[tuple[str, str]], system: dict, undirected: bool) -> dict:
    """Reference link → the system link it matches. Under ``undirected`` a reference link that has
    no same-direction match takes the reversed system link, each system link being used once."""
    matched = {link: link for link in reference if link in system}
    if undirected:
        used = set(matched)
        for a, b in sorted(reference - matched.keys()):
            if (b, a) in system and (b, a) not in used:
                matched[(a, b)] = (b, a)
                used.add((b, a))
    return matched


def map_links(reference: frozenset[tuple[str, str]], system: dict, matched: dict,
              names: dict[str, str]) -> list[LinkRow]:
    """Link mapping rows in MediScore's order: LinkConfidence (empty, i.e. Missing, first), Mapping,
    Source, Target. A Correct row keeps the reference orientation and the system link's confidence.
    ``names``: each file's ``world_file_id`` (``world_ids``).

    The Missing rows (no confidence) come first, by Source and Target; the others are sorted together
    on plain tuples, confidence first."""
    used = set(matched.values())
    missing = sorted((names[a], names[b], a, b) for a, b in reference if (a, b) not in matched)
    scored = [(system[matched[link]], CORRECT, names[link[0]], names[link[1]], *link) for link in matched]
    scored += [(c, FALSE_ALARM, names[a], names[b], a, b) for (a, b), c in system.items() if (a, b) not in used]
    scored.sort()
    return ([(source, target, None, MISSING) for source, target, _, _ in missing]
            + [(source, target, c, mapping) for c, mapping, source, target, _, _ in scored])


@dataclass(frozen=True)
class GraphRecord:
    """One scored trial: identity, set sizes and mapping rows (a few hundred bytes as JSON)."""

    ordinal: int          # the trial's position in MediScore's order; the merge key
    journal_name: str
    probe: str
    output_file: str
    direct: bool
    ref_nodes: int        # |N|
    sys_nodes: int        # |N'|
    correct_nodes: int    # |N ∩ N'|
    ref_links: int        # |L|
    sys_links: int        # |L'|
    correct_links: int    # |L ∩ L'|
    node_rows: tuple[NodeRow, ...]
    link_rows: tuple[LinkRow, ...]

    @property
    def sim_nlo(self) -> float:
        return sim_nlo(self.ref_nodes, self.sys_nodes, self.correct_nodes,
                       self.ref_links, self.sys_links, self.correct_links)

    @property
    def sim_no(self) -> float:
        return sim_no(self.ref_nodes, self.sys_nodes, self.correct_nodes)

    @property
    def sim_lo(self) -> float:
        return sim_lo(self.ref_links, self.sys_links, self.correct_links)

    @property
    def node_recall(self) -> float:
        return node_recall(self.ref_nodes, self.correct_nodes)

    def __reduce__(self):
        """Pickled (a process pool returns every record to the command) with its rows as columns: a trial's 600 row
        tuples cost pickle an object apiece, its seven columns a few, and ``zip`` makes the rows again in C."""
        head = tuple(getattr(self, field.name) for field in fields(self)[:-2])
        return _unpickled, (head, tuple(zip(*self.node_rows)), tuple(zip(*self.link_rows)))

    def to_dict(self) -> dict:
        """Plain JSON-able form; an integer confidence stays an integer (it shows in the report)."""
        data = asdict(self)
        data["node_rows"] = [list(r) for r in self.node_rows]
        data["link_rows"] = [list(r) for r in self.link_rows]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> GraphRecord:
        fields = dict(data)
        fields["node_rows"] = tuple(tuple(r) for r in data["node_rows"])
        fields["link_rows"] = tuple(tuple(r) for r in data["link_rows"])
        return cls(**fields)


def _unpickled(head: tuple, node_columns: tuple, link_columns: tuple) -> GraphRecord:
    return GraphRecord(*head, tuple(zip(*node_columns)), tuple(zip(*link_columns)))


def graph_record(ordinal: int, *, journal_name: str, probe: str, output_file: str, direct: bool,
                 reference: ReferenceGraph, system: SystemGraph, undirected: bool) -> GraphRecord:
    """Score one trial's system graph against its reference graph."""
    matched = match_links(reference.links, system.links, undirected)
    names = world_ids(chain(reference.nodes, system.nodes, *reference.links, *system.links))
    return GraphRecord(
        ordinal=ordinal, journal_name=journal_name, probe=probe, output_file=output_file, direct=direct,
        ref_nodes=len(reference.nodes), sys_nodes=len(system.nodes),
        correct_nodes=sum(1 for k in reference.nodes if k in system.nodes),
        ref_links=len(reference.links), sys_links=len(system.links), correct_links=len(matched),
        node_rows=tuple(map_nodes(reference.nodes, system.nodes, names)),
        link_rows=tuple(map_links(reference.links, system.links, matched, names)))


def world_ids(files: Iterable[str]) -> dict[str, str]:
    """``world_file_id`` of each distinct file: a trial's nodes are most of its link ends, so each is named once."""
    return {file: world_file_id(file) for file in set(files)}
