"""The reference provenance graph of one probe (docs/provenance.md §3.2, §3.3): pure graph functions.

A journal is a DAG of NIST's manipulation steps. Its anti-forensic donor links are dropped, it is
contracted through the nodes that are not in the probe's world set, optionally cut to the probe's
ancestors and descendants (``-d``), and its nodes are renamed to world file names. Only the ends of
the surviving links are reference nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from mfscore.provenance.graph_system import has_cycle

Edge = tuple[int, int]
JournalLink = tuple[int, int, str]  # (source index, target index, op)

DONOR = "Donor"
ANTI_FORENSIC = "AntiForensic"  # docs/provenance.md §3.2 step 2 compares the first 12 characters of op


class JournalError(ValueError):
    """The journal is not a graph of indices into its nodes, or it has a cycle."""


@dataclass(frozen=True)
class ReferenceGraph:
    nodes: frozenset[str]              # node keys: world file names, the probe's file name
    links: frozenset[tuple[str, str]]  # (source key, target key)


def group_by(edges: Iterable[tuple], end: int) -> dict:
    """Edges grouped by their source (``end=0``) or target (``end=1``), in input order."""
    groups = defaultdict(list)
    for edge in edges:
        groups[edge[end]].append(edge)
    return dict(groups)


def reject_edges(edges: list[tuple], *, edge_rules: Iterable[Callable[[tuple], bool]] = (),
                 list_rules: Iterable[Callable[[list[tuple]], set]] = ()) -> list[tuple]:
    """The edges no rule rejects: an edge rule judges one edge, a list rule returns the edges it
    rejects after seeing them all; an edge goes if any rule of either kind says so."""
    edge_rules = tuple(edge_rules)
    rejected = set().union(*(rule(edges) for rule in list_rules))
    return [e for e in edges if e not in rejected and not any(rule(e) for rule in edge_rules)]


def _anti_forensic_donors(links: list[JournalLink]) -> set:
    """docs/provenance.md §3.2 step 2: Donor links into a node that also has an AntiForensic* incoming link."""
    incoming = group_by(links, 1)
    laundered = {t for t, into in incoming.items() if any(op[:12] == ANTI_FORENSIC for _, _, op in into)}
    return {link for link in links if link[2] == DONOR and link[1] in laundered}


def remove_anti_forensic_donors(links: list[JournalLink]) -> list[JournalLink]:
    return reject_edges(links, list_rules=[_anti_forensic_donors])


def journal_links(document: dict) -> tuple[list[str], list[JournalLink]]:
    """The node ids and the (source, target, op) links of a journal JSON; JournalError if malformed."""
    nodes, links = document.get("nodes"), document.get("links", [])
    if not isinstance(nodes, list) or not isinstance(links, list):
        raise JournalError("the journal needs a 'nodes' array and a 'links' array")
    ids = []
    for position, node in enumerate(nodes):
        node_id = node.get("id") if isinstance(node, dict) else None
        if type(node_id) not in (str, int):
            raise JournalError(f"nodes[{position}] has no 'id' (a string or an integer)")
        ids.append(str(node_id))
    found = []
    for position, link in enumerate(links):
        ends = [link.get(end) if isinstance(link, dict) else None for end in ("source", "target")]
        if not all(type(e) is int and 0 <= e < len(ids) for e in ends):
            raise JournalError(f"links[{position}] does not join two positions in nodes (0..{len(ids) - 1})")
        op = link.get("op", "")
        found.append((ends[0], ends[1], op if isinstance(op, str) else ""))
    return ids, found


def check_acyclic(edges: Iterable[Edge]) -> None:
    """docs/provenance.md §3.2 step 3: a journal with a cycle cannot be scored. networkx, imported only then,
    finds the cycle to name (its import costs a run 0.09 s)."""
    edges = list(edges)
    if has_cycle(edges):
        import networkx as nx

        cycle = nx.find_cycle(nx.DiGraph(edges))
        raise JournalError(f"the journal graph has a cycle through node positions {[u for u, _ in cycle]}")


def world_set(ids: list[str], world_ids: set[str], probe_ids: set[str]) -> set[int]:
    """docs/provenance.md §3.2 step 4: the journal nodes whose id is a world node's or the probe's JournalNodeID."""
    wanted = world_ids | probe_ids
    return {position for position, node_id in enumerate(ids) if node_id in wanted}


def reduce_graph(edges: Iterable[Edge], selected: set) -> set[Edge]:
    """docs/provenance.md §3.2 step 5: a→b for selected a, b joined by a path through unselected nodes only.

    Equal to contracting the unselected nodes one by one; done as one walk from each selected node
    through unselected ones, which stays linear when chains of hidden nodes are long.
    """
    successors = defaultdict(set)
    for a, b in edges:
        successors[a].add(b)
    reduced = set()
    for start in selected:
        seen, stack = set(), list(successors.get(start, ()))
        while stack:
            node = stack.pop()
            if node in selected:
                reduced.add((start, node))
            elif node not in seen:
                seen.add(node)
                stack.extend(successors.get(node, ()))
    return reduced


def direct_graph(edges: Iterable[Edge], probe) -> set[Edge]:
    """docs/provenance.md §3.3: the edges into the probe and its ancestors, and out of it and its descendants."""
    import networkx as nx

    edges = set(edges)
    graph = nx.DiGraph(list(edges))  # given a set, networkx imports pandas and scipy (0.2 s) to rule them out
    if probe not in graph:
        return set()
    into = nx.ancestors(graph, probe) | {probe}
    out_of = nx.descendants(graph, probe) | {probe}
    return {(a, b) for a, b in edges if b in into or a in out_of}


def node_keys(node_rows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """docs/provenance.md §3.2 step 6: JournalNodeID → WorldFileName over the node-file rows given, the last winning."""
    return dict(node_rows)


def grouped_merge_order(join_keys: Sequence[Hashable]) -> list[int]:
    """Positions of a left table's rows in the order pandas before 2.2 (MediScore's) returns them from
    an inner merge on ``join_keys`` whose right side has each key once: grouped by key, the groups in
    order of each key's first row, table order within a group (rows 1-3 keyed w1, w2, w1 come as 1, 3, 2).
    """
    first = {}
    for position, key in enumerate(join_keys):
        first.setdefault(key, position)
    return sorted(range(len(join_keys)), key=lambda position: first[join_keys[position]])


def reference_graph(ids: list[str], edges: Iterable[Edge], *, world_ids: set[str], probe_ids: set[str],
                    probe_name: str, keys: dict[str, str], direct: bool) -> ReferenceGraph:
    """Steps 4-8, and with ``direct`` the direct path (docs/provenance.md §3.2, §3.3), on a journal without anti-forensic donors."""
    selected = world_set(ids, world_ids, probe_ids)
    reduced = reduce_graph(edges, selected)
    if direct:
        probes = [p for p in selected if ids[p] in probe_ids]
        reduced = set().union(*(direct_graph(reduced, p) for p in probes))

    def key(position: int) -> str:
        node_id = ids[position]
        return probe_name if node_id in probe_ids else keys[node_id]

    links = frozenset((key(a), key(b)) for a, b in reduced)
    return ReferenceGraph(nodes=frozenset(k for link in links for k in link), links=links)
