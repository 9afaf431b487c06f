"""Naming reference nodes when journals reuse node IDs (docs/provenance.md §3.2 step 6, issue 15).

By default a probe's nodes are named by its own world rows (node file ⋈ world on WorldFileID), the
last in node-file order. ``--mediscore-compat`` names them from one table over every probe's world
rows, in the order pandas before 2.2 returned that inner merge (grouped by WorldFileID in order of
first appearance), the last row winning. The oracles below do the merge with pandas itself.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfscore.cli.main import main
from mfscore.provenance.graph_reference import grouped_merge_order
from mfscore.tasks.provenance_graph import node_keys_by_probe, world_nodes

#  row  probe  WorldFileID  WorldFileName   JournalNodeID
#   0   P1     WB           world/B.jpg     x
#   1   P1     WA           world/A.jpg     base       <- P1's 'base'
#   2   P1     P1           world/P1.jpg    p1         (P1 is not in the world index)
#   3   P2     WB           world/B.jpg     base       <- P2's 'base': the last 'base' in the file
#   4   P2     WC           world/C.jpg     donor
#   5   P2     P2           world/P2.jpg    p2
#   6   P3     WC           world/C.jpg     donor2
#   7   P3     WA           world/A.jpg     donor      <- the last 'donor' in the world
#   8   P3     WZ           world/Z.jpg     donor      (WZ is not in the world index)
#   9   P3     WD           world/D.jpg     donor2     <- P3 reuses its own 'donor2'
#
# Grouped merge order: WB 0 3 | WA 1 7 | WC 4 6 | WD 9, so 'base' is A (row 1, not row 3) and
# 'donor' is C (row 4, not row 7) for every probe under the switch.
NODES = pd.DataFrame(
    [("P1", "WB", "world/B.jpg", "x"), ("P1", "WA", "world/A.jpg", "base"), ("P1", "P1", "world/P1.jpg", "p1"),
     ("P2", "WB", "world/B.jpg", "base"), ("P2", "WC", "world/C.jpg", "donor"), ("P2", "P2", "world/P2.jpg", "p2"),
     ("P3", "WC", "world/C.jpg", "donor2"), ("P3", "WA", "world/A.jpg", "donor"),
     ("P3", "WZ", "world/Z.jpg", "donor"), ("P3", "WD", "world/D.jpg", "donor2")],
    columns=["ProvenanceProbeFileID", "WorldFileID", "WorldFileName", "JournalNodeID"])
WORLD = pd.DataFrame([("WA", "world/A.jpg"), ("WB", "world/B.jpg"), ("WB", "world/B.jpg"), ("WC", "world/C.jpg"),
                      ("WD", "world/D.jpg")], columns=["WorldFileID", "WorldFileName"])
PROBES = ("P1", "P2", "P3")


def mediscore_table() -> dict[str, str]:
    """The inner merge done by pandas, put in pre-2.2 order (a stable sort by the key's first appearance;
    pandas ≥ 2.2 returns left order), then the last row per JournalNodeID. The node file's name is ``_x``."""
    merged = NODES.merge(WORLD, on="WorldFileID", how="inner", sort=False)
    merged = merged.assign(group=pd.factorize(merged["WorldFileID"])[0]).sort_values("group", kind="stable")
    last = merged.drop_duplicates("JournalNodeID", keep="last")
    return dict(zip(last["JournalNodeID"], last["WorldFileName_x"]))


def own_rows_last_in_file_order(probe: str) -> dict[str, str]:
    keys = {}
    for row in NODES.itertuples(index=False):
        if row.ProvenanceProbeFileID == probe and row.WorldFileID in set(WORLD["WorldFileID"]):
            keys[row.JournalNodeID] = row.WorldFileName
    return keys


def world_rows() -> list[dict]:
    """The node file ⋈ world rows as the task joins them (tables as rows and text columns)."""
    return world_nodes(NODES.to_dict("records"), {name: WORLD[name].tolist() for name in WORLD.columns})


def test_grouped_merge_order_is_a_stable_sort_by_first_appearance():
    assert grouped_merge_order(["w1", "w2", "w1"]) == [0, 2, 1]
    rng = random.Random(15)
    for _ in range(200):
        keys = [rng.choice("abcde") for _ in range(rng.randrange(12))]
        expected = np.argsort(pd.factorize(pd.Series(keys, dtype=object))[0], kind="stable").tolist()
        assert grouped_merge_order(keys) == expected


def test_compat_lookup_is_mediscores_grouped_merge_with_the_last_row_winning():
    keys = node_keys_by_probe(world_rows(), mediscore_compat=True)
    expected = mediscore_table()
    assert expected == {"x": "world/B.jpg", "base": "world/A.jpg", "donor": "world/C.jpg", "donor2": "world/D.jpg"}
    for probe in PROBES:
        assert keys(probe) == expected


def test_default_lookup_is_the_probes_own_rows_last_in_file_order():
    keys = node_keys_by_probe(world_rows(), mediscore_compat=False)
    assert {probe: keys(probe) for probe in PROBES} == {probe: own_rows_last_in_file_order(probe) for probe in PROBES}
    assert keys("P1")["base"] == "world/A.jpg" and keys("P2")["base"] == "world/B.jpg"
    assert keys("P3") == {"donor2": "world/D.jpg", "donor": "world/A.jpg"}
    assert keys("absent") == {}


# End to end: two journals reuse the id 'base' for different images.
#
#   j1.json (P1):  x → p1,  base → p1        node file:  P1|WB|world/B.jpg|x
#   j2.json (P2):  base → p2                              P1|WA|world/A.jpg|base
#                                                         P1|P1|world/P1.jpg|p1
#                                                         P2|WB|world/B.jpg|base
#                                                         P2|P2|world/P2.jpg|p2
#
# Grouped by WorldFileID the world rows come as 1, 4, 2 (WB, WB, WA): MediScore names 'base' A for
# both probes. Each system draws its probe's own graph: P1 A→P1, B→P1; P2 B→P2.
E2E_NODES = ("P1|WB|world/B.jpg|x\nP1|WA|world/A.jpg|base\nP1|P1|world/P1.jpg|p1\n"
             "P2|WB|world/B.jpg|base\nP2|P2|world/P2.jpg|p2\n")


def _system(files: list[str], links: list[tuple[int, int]]) -> dict:
    return {"directed": True,
            "nodes": [{"id": str(i), "file": f, "nodeConfidenceScore": 1} for i, f in enumerate(files)],
            "links": [{"source": a, "target": b, "relationshipConfidenceScore": 1} for a, b in links]}


def reused_id_evaluation(tmp: Path) -> list[str]:
    (tmp / "ref" / "journals").mkdir(parents=True)
    (tmp / "sys").mkdir()
    (tmp / "ref" / "journals" / "j1.json").write_text(json.dumps(
        {"nodes": [{"id": "x"}, {"id": "base"}, {"id": "p1"}],
         "links": [{"source": 0, "target": 2, "op": "Splice"}, {"source": 1, "target": 2, "op": "Crop"}]}))
    (tmp / "ref" / "journals" / "j2.json").write_text(json.dumps(
        {"nodes": [{"id": "base"}, {"id": "p2"}], "links": [{"source": 0, "target": 1, "op": "Blur"}]}))
    (tmp / "ref" / "index.csv").write_text(
        "TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|ProvenanceProbeWidth|ProvenanceProbeHeight\n"
        "provenance|P1|world/P1.jpg|1|1\nprovenance|P2|world/P2.jpg|1|1\n")
    (tmp / "ref" / "ref.csv").write_text(
        "TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|BaseFileName|BaseBrowserFileName|JournalName|"
        "JournalFileName|JournalMD5\n"
        "provenance|P1|world/P1.jpg|world/A.jpg|A.jpg|J1|journals/j1.json|0\n"
        "provenance|P2|world/P2.jpg|world/B.jpg|B.jpg|J2|journals/j2.json|0\n")
    (tmp / "ref" / "node.csv").write_text("ProvenanceProbeFileID|WorldFileID|WorldFileName|JournalNodeID\n" + E2E_NODES)
    (tmp / "ref" / "world.csv").write_text("TaskID|WorldFileID|WorldFileName|WorldWidth|WorldHeight\n"
                                           "provenance|WA|world/A.jpg|1|1\nprovenance|WB|world/B.jpg|1|1\n")
    (tmp / "sys" / "P1.json").write_text(json.dumps(_system(["world/A.jpg", "world/B.jpg", "world/P1.jpg"],
                                                            [(0, 2), (1, 2)])))
    (tmp / "sys" / "P2.json").write_text(json.dumps(_system(["world/B.jpg", "world/P2.jpg"], [(0, 1)])))
    (tmp / "sys" / "sys.csv").write_text("ProvenanceProbeFileID|ProvenanceOutputFileName\nP1|P1.json\nP2|P2.json\n")
    ref, sys_ = tmp / "ref", tmp / "sys"
    return ["provenance-graph", "-x", str(ref / "index.csv"), "-r", str(ref / "ref.csv"), "-n", str(ref / "node.csv"),
            "-w", str(ref / "world.csv"), "-R", str(ref), "-s", str(sys_ / "sys.csv"), "-S", str(sys_)]


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def _sims(nodes: tuple[int, int, int], links: tuple[int, int, int]) -> dict[str, float]:
    """SimNLO, SimNO, SimLO, NodeRecall (docs/provenance.md §3.5) from (correct, reference, system) counts."""
    (nc, n, n_sys), (lc, lr, l_sys) = nodes, links
    return {"SimNLO": 2 * (nc + lc) / (n + n_sys + lr + l_sys), "SimNO": 2 * nc / (n + n_sys),
            "SimLO": 2 * lc / (lr + l_sys), "NodeRecall": nc / n}


@pytest.mark.parametrize("compat", [False, True], ids=["default", "mediscore-compat"])
def test_reused_node_ids_end_to_end(tmp_path, capsys, compat):
    argv = reused_id_evaluation(tmp_path) + ["-o", str(tmp_path / "out")] + (["--mediscore-compat"] if compat else [])
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "Traceback" not in captured.out

    p1 = _sims((3, 3, 3), (2, 2, 2))      # {A, B, P1}, {A→P1, B→P1} on both sides, either way
    if compat:
        # reference {A, P2}, {A→P2} against {B, P2}, {B→P2}: P2 correct, the links differ
        p2 = _sims((1, 2, 2), (0, 1, 1))
        assert p2 == {"SimNLO": 1 / 3, "SimNO": 0.5, "SimLO": 0.0, "NodeRecall": 0.5}
    else:
        p2 = _sims((2, 2, 2), (1, 1, 1))
        assert p2 == {"SimNLO": 1.0, "SimNO": 1.0, "SimLO": 1.0, "NodeRecall": 1.0}

    trials = _rows(tmp_path / "out" / "trial_scores.csv")
    assert [t["ProvenanceProbeFileID"] for t in trials] == ["P1", "P2"]
    for trial, expected in zip(trials, (p1, p2)):
        assert {m: float(trial[m]) for m in expected} == {m: round(v, 12) for m, v in expected.items()}
    (means,) = _rows(tmp_path / "out" / "scores.csv")
    assert {m: float(means[f"Mean{m}"]) for m in p1} == {m: round((p1[m] + p2[m]) / 2, 12) for m in p1}

    missing = {r["WorldFileID"] for r in _rows(tmp_path / "out" / "node_mapping.csv") if r["Mapping"] == "Missing"}
    assert missing == ({"A"} if compat else set())
