"""Provenance graph building: reference graph, system graph, metrics, records (MediScore's unit tests:
docs/compatibility.md "Provenance scorer cases").

MediScore's ``test_append_to_path`` has no counterpart: it checks a helper of MediScore's own, and
mfscore has no path-building helper (the reduction walks the graph directly).
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import random
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.formats.tables import write_text_table
from mfscore.provenance.graph_reference import (
    JournalError,
    ReferenceGraph,
    check_acyclic,
    direct_graph,
    group_by,
    journal_links,
    node_keys,
    reduce_graph,
    reference_graph,
    reject_edges,
    remove_anti_forensic_donors,
    world_set,
)
from mfscore.provenance.graph_similarity import (
    CORRECT,
    FALSE_ALARM,
    MISSING,
    GraphRecord,
    graph_record,
    map_links,
    map_nodes,
    match_links,
    node_recall,
    sim_lo,
    sim_nlo,
    sim_no,
    world_ids,
)
from mfscore.provenance.graph_system import SystemGraph, has_cycle, system_graph
from mfscore.records import JobKey, RecordConflictError, fold
from mfscore.reports.provenance_graph_report import (
    METRICS,
    mean_scores,
    numpy_sum,
    report_tables,
    write_report_tables,
)


def close(value: float, fraction: Fraction) -> bool:
    return math.isclose(value, float(fraction), rel_tol=0, abs_tol=1e-15)


# ---------------------------------------------------------------------------------------------
# reference graph (docs/provenance.md §3.2, §3.3)


def test_group_by_source_and_by_target():
    edges = [(0, 1), (0, 2), (1, 2), (3, 2)]
    assert group_by(edges, 0) == {0: [(0, 1), (0, 2)], 1: [(1, 2)], 3: [(3, 2)]}
    assert group_by(edges, 1) == {1: [(0, 1)], 2: [(0, 2), (1, 2), (3, 2)]}
    assert group_by([], 0) == {}


def test_reduce_graph_contracts_through_unselected_nodes():
    #   0 → 1 → 2          selected: 0, 2, 3, 5 (1 and 4 hidden)
    #       ↓
    #   3 → 4 → 5          0→1→4→5 gives 0→5; 0→1→2 gives 0→2; 3→4→5 gives 3→5
    edges = [(0, 1), (1, 2), (1, 4), (3, 4), (4, 5)]
    assert reduce_graph(edges, {0, 2, 3, 5}) == {(0, 5), (0, 2), (3, 5)}


def test_reduce_graph_drops_a_hidden_source_and_keeps_direct_edges():
    #   9 → 1 → 2 → 3      9 hidden with no in-edge: its edge vanishes; 1→2 stays; 2→3 stays
    assert reduce_graph([(9, 1), (1, 2), (2, 3)], {1, 2, 3}) == {(1, 2), (2, 3)}
    #   1 → 9 → 8          a hidden sink: nothing reaches a selected node
    assert reduce_graph([(1, 9), (9, 8)], {1}) == set()
    assert reduce_graph([], {1, 2}) == set()


def test_direct_graph_keeps_ancestors_and_descendants_of_the_probe():
    #   a → b → P → d → e
    #       ↓       ↑
    #       s       x        s is a side branch of an ancestor, x a donor into a descendant:
    #                        neither is an ancestor or a descendant of P, so b→s and x→d go
    edges = {("a", "b"), ("b", "P"), ("P", "d"), ("d", "e"), ("b", "s"), ("x", "d")}
    assert direct_graph(edges, "P") == {("a", "b"), ("b", "P"), ("P", "d"), ("d", "e")}
    assert direct_graph(edges, "unknown") == set()
    assert direct_graph(set(), "P") == set()


def test_reject_edges_ors_edge_and_list_rules():
    edges = [(0, 1, "Donor"), (1, 2, "Crop"), (2, 3, "Blur"), (3, 4, "Donor")]
    by_edge = [lambda e: e[2] == "Crop"]
    by_list = [lambda es: {es[-1]}]  # sees every edge: rejects the last one
    assert reject_edges(edges, edge_rules=by_edge, list_rules=by_list) == [(0, 1, "Donor"), (2, 3, "Blur")]
    assert reject_edges(edges, edge_rules=by_edge) == [e for e in edges if e[2] != "Crop"]
    assert reject_edges(edges, list_rules=by_list) == edges[:-1]
    assert reject_edges(edges) == edges


def test_anti_forensic_donor_links_are_removed():
    #   0 --Donor--> 2 <--AntiForensicExif-- 1     the donor link into a laundered node goes
    #   3 --Donor--> 4 <--PasteSplice------- 5     an ordinary donor link stays
    links = [(0, 2, "Donor"), (1, 2, "AntiForensicExifQuantizationTable"), (3, 4, "Donor"), (5, 4, "PasteSplice")]
    assert remove_anti_forensic_donors(links) == links[1:]


def test_journal_links_and_cycle_check():
    document = {"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"source": 0, "target": 1, "op": "Crop"}]}
    assert journal_links(document) == (["a", "b"], [(0, 1, "Crop")])
    with pytest.raises(JournalError, match="positions in nodes"):
        journal_links({"nodes": [{"id": "a"}], "links": [{"source": 0, "target": 1}]})
    check_acyclic([(0, 1), (1, 2)])
    with pytest.raises(JournalError, match="cycle"):
        check_acyclic([(0, 1), (1, 2), (2, 0)])


def test_reference_graph_keys_and_isolated_world_nodes():
    #   base → hidden → probe        world: base, lone (isolated) and the probe;
    #   lone                          'lone' survives no edge, so it is not a reference node
    ids = ["base", "hidden", "probe", "lone"]
    edges = {(0, 1), (1, 2)}
    keys = node_keys([("base", "w/old.jpg"), ("lone", "w/lone.jpg"), ("base", "w/base.jpg"), ("probe", "w/p.jpg")])
    assert keys["base"] == "w/base.jpg"  # the last row wins
    assert world_set(ids, {"base", "lone"}, {"probe"}) == {0, 2, 3}
    graph = reference_graph(ids, edges, world_ids={"base", "lone"}, probe_ids={"probe"}, probe_name="probe.jpg",
                            keys=keys, direct=False)
    assert graph == ReferenceGraph(frozenset({"w/base.jpg", "probe.jpg"}), frozenset({("w/base.jpg", "probe.jpg")}))


def test_reference_graph_direct_condition():
    #   b → P → f      b2 → f   (b2 is a donor of a descendant: dropped under -d)
    ids = ["b", "P", "f", "b2"]
    edges = {(0, 1), (1, 2), (3, 2)}
    keys = {i: f"{i}.png" for i in ids}
    common = {"world_ids": {"b", "f", "b2"}, "probe_ids": {"P"}, "probe_name": "P.jpg", "keys": keys}
    full = reference_graph(ids, edges, direct=False, **common)
    direct = reference_graph(ids, edges, direct=True, **common)
    assert full.links == {("b.png", "P.jpg"), ("P.jpg", "f.png"), ("b2.png", "f.png")}
    assert direct.links == {("b.png", "P.jpg"), ("P.jpg", "f.png")}
    assert direct.nodes == {"b.png", "P.jpg", "f.png"}


# ---------------------------------------------------------------------------------------------
# system graph (docs/provenance.md §3.4)


def test_cycle_detection_cases():
    # a → b → c                       acyclic
    assert not has_cycle([("a", "b"), ("b", "c")])
    # a ⇄ b                           no root at all
    assert has_cycle([("a", "b"), ("b", "a")])
    # r → a → b → c → a               a 3-cycle reachable from the root r
    assert has_cycle([("r", "a"), ("a", "b"), ("b", "c"), ("c", "a")])
    # r → a → b,  b → c → b           a cycle hanging off an acyclic part
    assert has_cycle([("r", "a"), ("a", "b"), ("b", "c"), ("c", "b")])
    # a ↺                             a self-loop
    assert has_cycle([("a", "a")])
    #                                 the empty graph
    assert not has_cycle([])


def test_a_cycle_no_root_reaches_is_found():
    # r → x    a ⇄ b                 MediScore searches from r only and misses the cycle
    assert has_cycle([("r", "x"), ("a", "b"), ("b", "a")])


def test_system_graph_keys_by_file_last_wins_and_isolated_nodes_count():
    document = {"nodes": [{"file": "a.jpg", "id": "1", "nodeConfidenceScore": 1},
                          {"file": "b.jpg", "id": "2", "nodeConfidenceScore": 0.5},
                          {"file": "a.jpg", "id": "3", "nodeConfidenceScore": 0.25},
                          {"file": "lone.jpg", "id": "4", "nodeConfidenceScore": 1}],
                "links": [{"source": 0, "target": 1, "relationshipConfidenceScore": 1},
                          {"source": 2, "target": 1, "relationshipConfidenceScore": 0.75}]}
    graph = system_graph(document)
    assert graph.nodes == {"a.jpg": 0.25, "b.jpg": 0.5, "lone.jpg": 1}
    assert graph.links == {("a.jpg", "b.jpg"): 0.75}


# ---------------------------------------------------------------------------------------------
# metrics (docs/provenance.md §3.5)


def numbered(nodes, edges) -> tuple[frozenset, frozenset]:
    return frozenset(map(str, nodes)), frozenset((str(a), str(b)) for a, b in edges)


def test_sim_nlo_is_ten_twelfths():
    #   reference  0 → 1 → 2 → 3       system  0 → 1 → 2
    nodes, links = numbered([0, 1, 2, 3], [(0, 1), (1, 2), (2, 3)])
    sys_nodes, sys_links = numbered([0, 1, 2], [(0, 1), (1, 2)])
    record = graph_record(0, journal_name="j", probe="p", output_file="p.json", direct=False,
                          reference=ReferenceGraph(nodes, links),
                          system=SystemGraph(dict.fromkeys(sys_nodes, 1), dict.fromkeys(sys_links, 1)),
                          undirected=False)
    assert close(record.sim_nlo, Fraction(10, 12))
    assert close(record.sim_no, Fraction(2 * 3, 4 + 3))
    assert close(record.sim_lo, Fraction(2 * 2, 3 + 2))
    assert close(record.node_recall, Fraction(3, 4))


def test_set_similarity_overlap():
    assert close(sim_no(4, 3, 3), Fraction(6, 7))
    assert close(sim_lo(3, 2, 2), Fraction(4, 5))
    assert sim_no(5, 5, 5) == sim_lo(5, 5, 5) == sim_nlo(5, 5, 5, 4, 4, 4) == 1.0
    assert sim_no(2, 3, 0) == 0.0


def test_zero_over_zero_is_nan():
    assert math.isnan(sim_nlo(0, 0, 0, 0, 0, 0))
    assert math.isnan(sim_lo(0, 0, 0))        # neither graph has links
    assert math.isnan(node_recall(0, 0))      # empty reference
    assert node_recall(4, 3) == 0.75


def test_undirected_matching_uses_each_system_link_once_and_keeps_the_reference_orientation():
    reference = frozenset({("a", "b"), ("b", "a"), ("c", "d")})
    system = {("b", "a"): 0.5, ("d", "c"): 1}
    matched = match_links(reference, system, undirected=True)
    assert matched == {("b", "a"): ("b", "a"), ("c", "d"): ("d", "c")}
    assert match_links(reference, system, undirected=False) == {("b", "a"): ("b", "a")}
    rows = map_links(reference, system, matched, world_ids("abcd"))
    assert rows == [("a", "b", None, MISSING), ("b", "a", 0.5, CORRECT), ("c", "d", 1, CORRECT)]


def test_mapping_orders():
    record = graph_record(
        0, journal_name="j", probe="p", output_file="o.json", direct=False,
        reference=ReferenceGraph(frozenset({"w/a.png", "w/b.png", "w/c.png"}),
                                 frozenset({("w/a.png", "w/b.png"), ("w/b.png", "w/c.png")})),
        system=SystemGraph({"w/c.png": 0.5, "w/a.png": 1, "w/z.jpg": 0.25},
                           {("w/a.png", "w/b.png"): 1, ("w/z.jpg", "w/a.png"): 0.25}),
        undirected=False)
    # nodes: Mapping, then confidence, then WorldFileID
    assert record.node_rows == (("c", 0.5, CORRECT), ("a", 1, CORRECT), ("z", 0.25, FALSE_ALARM),
                                ("b", None, MISSING))
    # links: confidence first (Missing, which has none, first), then Mapping, Source, Target
    assert record.link_rows == (("b", "c", None, MISSING), ("z", "a", 0.25, FALSE_ALARM), ("a", "b", 1, CORRECT))


# ---------------------------------------------------------------------------------------------
# mapping order against a slow, obvious reference: every row in one list, sorted by the whole key


def key_sorted_nodes(reference, system, names) -> list[tuple]:
    """MediScore's node order spelled out: Mapping, then NodeConfidence (empty lowest), then WorldFileID, then file."""
    rows = [(k, system[k], CORRECT) for k in reference if k in system]
    rows += [(k, None, MISSING) for k in reference if k not in system]
    rows += [(k, c, FALSE_ALARM) for k, c in system.items() if k not in reference]
    rows = [(names[k], c, m, k) for k, c, m in rows]
    rows.sort(key=lambda r: (r[2], r[1] is not None, 0 if r[1] is None else r[1], r[0], r[3]))
    return [r[:3] for r in rows]


def key_sorted_links(reference, system, matched, names) -> list[tuple]:
    """MediScore's link order spelled out: LinkConfidence (empty first), Mapping, Source, Target, then the files."""
    used = set(matched.values())
    rows = [(link, system[matched[link]], CORRECT) for link in reference if link in matched]
    rows += [(link, None, MISSING) for link in reference if link not in matched]
    rows += [(link, c, FALSE_ALARM) for link, c in system.items() if link not in used]
    rows = [(names[a], names[b], c, m, a, b) for (a, b), c, m in rows]
    rows.sort(key=lambda r: (r[2] is not None, 0 if r[2] is None else r[2], r[3], r[0], r[1], r[4], r[5]))
    return [r[:4] for r in rows]


_FILES = ["w/a.png", "x/a.jpg", "w/b.png", "b", "w/c.png", "w/.d", "w/e.f.png"]  # a and b twice as a world id
_SCORES = st.sampled_from([0, 1, 0.25, 0.5, 1.0, 0.75, 2])
_LINKS = st.tuples(st.sampled_from(_FILES), st.sampled_from(_FILES))


@settings(max_examples=300, deadline=None)
@given(st.frozensets(st.sampled_from(_FILES)), st.dictionaries(st.sampled_from(_FILES), _SCORES),
       st.frozensets(_LINKS), st.dictionaries(_LINKS, _SCORES), st.booleans())
def test_mapping_rows_are_in_the_order_of_the_whole_key(ref_nodes, sys_nodes, ref_links, sys_links, undirected):
    """``map_nodes`` and ``map_links`` sort each block on plain tuples; the order is that of one sort on the key."""
    names = world_ids([*ref_nodes, *sys_nodes, *(k for link in [*ref_links, *sys_links] for k in link)])
    assert map_nodes(ref_nodes, sys_nodes, names) == key_sorted_nodes(ref_nodes, sys_nodes, names)
    matched = match_links(ref_links, sys_links, undirected)
    assert map_links(ref_links, sys_links, matched, names) == key_sorted_links(ref_links, sys_links, matched, names)


# ---------------------------------------------------------------------------------------------
# property tests


def path_reduction(edges, selected) -> set:
    """a→b iff b is reachable from a by a path whose interior nodes are all unselected."""
    graph = nx.DiGraph(edges)
    hidden = set(graph) - set(selected)
    found = set()
    for a in selected:
        for b in selected:
            if a not in graph or b not in graph:
                continue
            if a != b:
                if nx.has_path(graph.subgraph(hidden | {a, b}), a, b):
                    found.add((a, b))
            elif graph.has_edge(a, a) or any(nx.has_path(graph.subgraph(hidden | {a}), s, a)
                                             for s in graph.successors(a) if s in hidden):
                found.add((a, a))
    return found


def contraction(edges, selected) -> set:
    """docs/provenance.md §3.2 step 5 word for word: contract each unselected node that has an edge."""
    edges = set(edges)
    while True:
        hidden = [n for e in sorted(edges) for n in e if n not in selected]
        if not hidden:
            return edges
        n = hidden[0]
        into = [a for a, b in edges if b == n]
        out_of = [b for a, b in edges if a == n]
        edges = {e for e in edges if n not in e} | {(a, b) for a in into for b in out_of if n not in (a, b)}


graphs = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20),
    st.sets(st.integers(0, n - 1))))


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_reduce_graph_equals_the_path_definition(graph):
    edges, selected = graph
    assert reduce_graph(edges, selected) == path_reduction(edges, selected)


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_reduce_graph_equals_step_by_step_contraction_on_dags(graph):
    edges, selected = graph
    dag = {(a, b) for a, b in edges if a < b}
    assert reduce_graph(dag, selected) == contraction(dag, selected)


@settings(max_examples=500, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=20))
def test_has_cycle_agrees_with_networkx(edges):
    assert has_cycle(edges) == (not nx.is_directed_acyclic_graph(nx.DiGraph(list(edges))))


# ---------------------------------------------------------------------------------------------
# records


def random_records(seed: int, count: int) -> list[GraphRecord]:
    rng = random.Random(seed)
    records = []
    for ordinal in range(count):
        files = [f"world/n{i}.{rng.choice(['png', 'jpg'])}" for i in range(8)]
        ref_links = frozenset((files[a], files[b]) for a in range(8) for b in range(a + 1, 8) if rng.random() < 0.2)
        sys_nodes = {f: rng.choice([1, 0.5, 0.75]) for f in rng.sample(files + ["world/fake.png"], 5)}
        sys_links = {(a, b): rng.choice([1, 0.25]) for a in sys_nodes for b in sys_nodes if rng.random() < 0.2}
        reference = ReferenceGraph(frozenset(k for link in ref_links for k in link), ref_links)
        records.append(graph_record(ordinal * 3, journal_name=f"j{ordinal % 2}", probe=f"p{ordinal}",
                                    output_file=f"jsons/p{ordinal}.json", direct=False, reference=reference,
                                    system=SystemGraph(sys_nodes, sys_links), undirected=bool(ordinal % 2)))
    return records


def empty_record(ordinal: int) -> GraphRecord:
    """A trial of empty graphs: no rows, and every metric 0/0 (NaN)."""
    return graph_record(ordinal, journal_name="j", probe="p", output_file="o", direct=False,
                        reference=ReferenceGraph(frozenset(), frozenset()), system=SystemGraph({}, {}), undirected=False)


def test_record_json_round_trip():
    for record in random_records(1, 6):
        again = GraphRecord.from_dict(json.loads(json.dumps(record.to_dict())))
        assert again == record
        assert [type(r[1]) for r in again.node_rows] == [type(r[1]) for r in record.node_rows]


def test_records_survive_pickling_as_a_process_pool_sends_them():
    """``GraphRecord.__reduce__`` sends the rows as columns; they come back as the tuples they were."""
    for record in [*random_records(5, 8), empty_record(9)]:
        again = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        assert again == record and repr(again) == repr(record)  # 1 stays an int, 1.0 a float
        assert type(again.node_rows) is tuple and all(type(row) is tuple for row in again.node_rows + again.link_rows)


def written(tables, directory) -> dict[str, bytes]:
    directory.mkdir()
    for name, table in tables.items():
        write_text_table(table, directory / name)
    return {name: (directory / name).read_bytes() for name in tables}


def folded(records) -> list[GraphRecord]:
    """Records folded as the provenance-graph task's outcomes (keyed by trial), in trial order."""
    merged = fold((JobKey(0, "trial", record.ordinal), record) for record in records)
    return [merged[key] for key in sorted(merged)]


def test_records_of_two_shards_merge_into_the_same_report(tmp_path):
    records = random_records(7, 10)
    shuffled = [GraphRecord.from_dict(json.loads(json.dumps(r.to_dict()))) for r in records]
    random.Random(3).shuffle(shuffled)
    first, second = shuffled[:5], shuffled[5:]
    merged = folded(second + first + first[:2])  # any order; a repeat counts once
    assert merged == records
    assert written(report_tables(merged, False), tmp_path / "merged") == \
        written(report_tables(records, False), tmp_path / "whole")


def test_conflicting_records_refuse_to_merge():
    a, b = random_records(2, 2)
    with pytest.raises(RecordConflictError):
        folded([a, GraphRecord.from_dict({**b.to_dict(), "ordinal": a.ordinal})])


def test_the_task_scores_a_fetched_copy_as_the_original_and_its_values_round_trip(tmp_path):
    from mfscore.codec import decode, encode
    from mfscore.records import decode_outcome, encode_outcome
    from mfscore.tasks.provenance_graph import TASK, GraphJob

    def link(source: int, target: int) -> dict:
        return {"source": source, "target": target, "relationshipConfidenceScore": 1}

    nodes = [{"id": str(k), "file": f"{name}.png", "nodeConfidenceScore": 1} for k, name in enumerate("abc")]
    document = {"directed": True, "nodes": nodes, "links": [link(0, 1), link(1, 2)]}
    original, copy = tmp_path / "P.json", tmp_path / "fetched.json"
    copy.write_text(json.dumps(document))
    reference = ReferenceGraph(frozenset({"a.png", "b.png"}), frozenset({("a.png", "b.png")}))
    work = GraphJob(3, "J", "P", "P.json", str(original), reference, False, False, False, 10_000_000)
    assert TASK.blobs(work) == {"system": str(original)}
    fetched = TASK.with_blobs(work, {"system": str(copy)})
    assert decode(GraphJob, encode(fetched)) == fetched
    trial = TASK.score(fetched)
    assert trial.said == () and (trial.record.ordinal, trial.record.correct_links) == (3, 1)
    assert decode_outcome(TASK.record_type, encode_outcome(trial)) == trial
    document["links"].append(link(2, 0))
    copy.write_text(json.dumps(document))
    cycle = TASK.score(fetched)
    assert cycle.fatal and cycle.message.startswith(f"{original}: the system graph has a cycle")
    warned = TASK.score(dataclasses.replace(fetched, warn_on_system_cycle=True))
    assert warned.said == (f"Warning, detected cycle(s) for system output file '{original}'",)


def test_confidence_format_is_decided_per_file():
    def record(ordinal, reference_nodes):
        return graph_record(ordinal, journal_name="j", probe="p", output_file="o", direct=True,
                            reference=ReferenceGraph(frozenset(reference_nodes), frozenset()),
                            system=SystemGraph({"a.png": 1}, {}), undirected=False)
    perfect = record(0, {"a.png"})
    missing = record(1, {"a.png", "b.png"})
    assert report_tables([perfect], True)["node_mapping.csv"].column("NodeConfidence") == ["1"]
    assert report_tables([perfect, missing], True)["node_mapping.csv"].column("NodeConfidence") == ["1.0", "1.0", ""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e12, 1e12) | st.sampled_from([0.0, -0.0, 1.0, 1 / 3]), max_size=700))
def test_numpy_sum_is_numpys_to_the_last_bit(values):
    """Blocks of 8 and 128 and their halving: lists up to 700 long."""
    expected = float(np.sum(np.array(values, dtype=np.float64)))
    assert numpy_sum(values) == expected and math.copysign(1, numpy_sum(values)) == math.copysign(1, expected)


def test_mean_scores_are_pandas_means():
    """NaN skipped, as ``Series.mean()``: the slow, obvious reference is pandas itself."""
    import pandas as pd

    records = random_records(11, 40) + [empty_record(99)]  # NaN metrics are skipped
    values = pd.DataFrame([[r.sim_nlo, r.sim_no, r.sim_lo, r.node_recall] for r in records], columns=METRICS)
    assert mean_scores(records) == {f"Mean{m}": float(values[m].mean()) for m in METRICS}
    assert all(math.isnan(v) for v in mean_scores([]).values())


HOSTILE = ["w/a|b.png", 'w/q"uote.png', "w/new\nline.png", "w/cr\rx.png", "w/plain.png"]


@pytest.mark.parametrize("names, journal", [(["w/a.png", "w/b.png", "w/c.png"], "J"), (HOSTILE, 'J|"x"')],
                         ids=["plain", "quoted"])
def test_report_tables_written_from_lines_are_the_bytes_of_the_cells(tmp_path, names, journal):
    """``write_report_tables`` writes the mapping tables from their lines (or, when a cell needs quoting, from their
    cells): the same bytes as ``report_tables``' cells through ``write_text_table``."""
    records = random_records(3, 12)
    links = frozenset(zip(names, names[1:]))
    records.append(graph_record(50, journal_name=journal, probe="p", output_file="o.json", direct=False,
                                reference=ReferenceGraph(frozenset(names[:3]), links),
                                system=SystemGraph(dict.fromkeys(names[1:], 0.5), {(names[-1], names[0]): 1}),
                                undirected=False))
    (tmp_path / "lines").mkdir()
    small = write_report_tables(records, False, lambda name: tmp_path / "lines" / name)
    expected = written(report_tables(records, False), tmp_path / "cells")
    assert {name: (tmp_path / "lines" / name).read_bytes() for name in expected} == expected
    assert small == {name: report_tables(records, False)[name] for name in ("trial_scores.csv", "scores.csv")}


def _link_check_errors(links: list[dict], n_nodes: int) -> list[str]:
    """The link-end check one link at a time, as ``load_system_graph`` words it: the reference for its shortcut."""
    return [f"links[{position}].{end} = {link[end]}" for position, link in enumerate(links)
            for end in ("source", "target") if link[end] != int(link[end]) or not 0 <= link[end] < n_nodes]


_ENDS = st.one_of(st.integers(-2, 8), st.sampled_from([0.0, 1.0, 2.5, -1.0, 7.0, 2**70]))


@settings(deadline=None)
@given(st.integers(1, 6), st.lists(st.fixed_dictionaries({"source": _ENDS, "target": _ENDS}), max_size=8))
def test_link_ends_told_a_column_at_a_time_as_one_by_one(tmp_path_factory, n_nodes, links):
    """``load_system_graph`` accepts exactly the files whose every link end is a position in nodes, and
    names the first that is not, whether or not the column-wise shortcut decides."""
    from mfscore.provenance.trials import TrialInputError, _integer_positions, load_system_graph

    directory = tmp_path_factory.mktemp("links")
    nodes = [{"id": f"n{i}", "file": f"w/{i}.png", "nodeConfidenceScore": 1} for i in range(n_nodes)]
    (directory / "s.json").write_text(json.dumps({"nodes": nodes, "links": [
        {**link, "relationshipConfidenceScore": 0.5} for link in links]}))
    errors = _link_check_errors(links, n_nodes)
    if _integer_positions(links, n_nodes):
        assert not errors
    try:
        load_system_graph(type("Inputs", (), {"system_dir": str(directory)}), "s.json", "provenance")
        assert not errors
    except TrialInputError as error:
        assert errors and errors[0] in error.message
    if all(type(v) is int and 0 <= v < n_nodes for link in links for v in link.values()):
        assert _integer_positions(links, n_nodes)
