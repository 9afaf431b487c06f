"""A system's provenance graph (docs/provenance.md §3.4) from its already-validated JSON document.

Nodes are keyed by their ``file`` string and links by the files at their ``source`` and
``target`` positions; a repeated key keeps the last confidence. Isolated system nodes count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

Confidence = int | float
_END = object()


@dataclass(frozen=True)
class SystemGraph:
    nodes: dict[str, Confidence]              # file → nodeConfidenceScore
    links: dict[tuple[str, str], Confidence]  # (source file, target file) → relationshipConfidenceScore


def system_graph(document: dict) -> SystemGraph:
    """Keys and confidences of a graph-building JSON that passed the schema and the link-range check."""
    files = [node["file"] for node in document["nodes"]]
    nodes = {node["file"]: node["nodeConfidenceScore"] for node in document["nodes"]}
    links = {(files[int(link["source"])], files[int(link["target"])]): link["relationshipConfidenceScore"]
             for link in document["links"]}
    return SystemGraph(nodes, links)


def has_cycle(edges: Iterable[tuple]) -> bool:
    """Whether the directed graph has a cycle, by MediScore's rule (docs/provenance.md §3.4), iteratively.

    Edges but no root (a node with out-edges and no in-edges) is cyclic; otherwise a depth-first
    search from the roots looks for a back edge. MediScore searches from the roots only, so a
    cycle no root reaches went unnoticed; the search here goes on from every node not yet visited.
    """
    successors = defaultdict(list)
    targets = set()
    for a, b in edges:
        successors[a].append(b)
        targets.add(b)
    if not successors:
        return False
    roots = [node for node in successors if node not in targets]
    if not roots:
        return True
    on_path, done = set(), set()
    for start in roots + list(successors):
        if start in done:
            continue
        on_path.add(start)
        stack = [(start, iter(successors.get(start, ())))]
        while stack:
            node, pending = stack[-1]
            child = next(pending, _END)
            if child is _END:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return True
            elif child not in done:
                on_path.add(child)
                stack.append((child, iter(successors.get(child, ()))))
    return False
