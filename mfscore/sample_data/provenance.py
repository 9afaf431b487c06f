"""Generated provenance data: reference journals, node and world tables, system JSON graphs.

Probes share journals of 20–40 nodes (four probes per journal); each system JSON ranks 300 world
files (about two thirds of the reference files among them, scored higher) and has ~300 random
links, directed from a lower node id to a higher one so that the graph has no cycle (a provenance
graph is a DAG, and ``mfscore provenance-graph`` refuses a cyclic one without ``-c``); with
``cycles=True`` they point either way, so most graphs have cycles (what ``-c`` is for). Used by
``make demo``, the task examples and ``bench/provenance.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.formats.tables import write_table

PROBES_PER_JOURNAL = 4
SYSTEM_NODES = 300
SYSTEM_LINKS = 300


@dataclass(frozen=True)
class ProvenanceDataset:
    """The generated files, as the scorers' common options (docs/provenance.md §1)."""
    root: Path

    def options(self, system_csv: str) -> list[str]:
        r = self.root
        return ["-x", str(r / "index.csv"), "-r", str(r / "ref.csv"), "-n", str(r / "node.csv"),
                "-w", str(r / "world.csv"), "-R", str(r), "-s", str(r / "system" / system_csv),
                "-S", str(r / "system")]


def _journal(rng, n_nodes: int) -> dict:
    kinds = ["base"] + [str(k) for k in rng.choice(["interim", "interim", "donor", "final"], n_nodes - 1)]
    nodes = [{"id": f"n{j}", "file": f"n{j}.jpg", "nodetype": kinds[j]} for j in range(n_nodes)]
    links = [{"source": int(rng.integers(0, j)), "target": j, "op": "Donor" if kinds[j] == "donor" else "Resize"}
             for j in range(1, n_nodes)]
    return {"directed": True, "nodes": nodes, "links": links}


def _system(rng, probe: str, reference_files: list[str], cycles: bool) -> dict:
    found = [f for f in reference_files if rng.random() < 2 / 3]
    files = found + [f"world/{probe}_distractor{k}.jpg" for k in range(SYSTEM_NODES - len(found))]
    scores = np.round(rng.random(SYSTEM_NODES), 2)
    scores[: len(found)] = np.round(0.5 + rng.random(len(found)) / 2, 2)
    order = rng.permutation(SYSTEM_NODES)
    nodes = [{"id": str(k), "file": files[i], "fileid": Path(files[i]).stem, "nodeConfidenceScore": float(scores[i])}
             for k, i in enumerate(order)]
    ends = rng.integers(0, SYSTEM_NODES, size=(SYSTEM_LINKS, 2))
    if not cycles:
        ends.sort(axis=1)  # from the lower id to the higher: a DAG
    links = [{"source": int(s), "target": int(t), "relationshipConfidenceScore": round(float(rng.random()), 3)}
             for s, t in ends if s != t]
    return {"directed": True, "nodes": nodes, "links": links}


def generate_provenance_dataset(root: Path, n_probes: int = 1000, *, seed: int = 11,
                                cycles: bool = False) -> ProvenanceDataset:
    """Write a provenance dataset of ``n_probes`` probes (a multiple of 4) under ``root``; ``cycles``: system
    links point either way (most graphs then have a cycle), else from lower to higher node ids (none has)."""
    rng = np.random.default_rng(seed)
    (root / "journals").mkdir(parents=True)
    (root / "system" / "json").mkdir(parents=True)
    index, ref, node, world, system = [], [], [], [], []
    for j in range(n_probes // PROBES_PER_JOURNAL):
        journal = _journal(rng, int(rng.integers(20, 41)))
        (root / "journals" / f"J{j:04d}.json").write_text(json.dumps(journal))
        n_nodes = len(journal["nodes"])
        finals = rng.choice(np.arange(1, n_nodes), PROBES_PER_JOURNAL, replace=False)
        for q, probe_node in enumerate(finals):
            probe = f"P{j:04d}{q}"
            probe_file = f"world/{probe}.jpg"
            index.append({"TaskID": "provenancefiltering", "ProvenanceProbeFileID": probe,
                          "ProvenanceProbeFileName": probe_file, "ProvenanceProbeWidth": 640,
                          "ProvenanceProbeHeight": 480})
            ref.append({"TaskID": "provenancefiltering", "ProvenanceProbeFileID": probe,
                        "ProvenanceProbeFileName": probe_file, "BaseFileName": f"world/J{j:04d}_n0.jpg",
                        "BaseBrowserFileName": f"J{j:04d}_n0.jpg", "JournalName": f"J{j:04d}",
                        "JournalFileName": f"journals/J{j:04d}.json", "JournalMD5": f"{j:032x}"})
            files = []
            for k in range(n_nodes):
                world_id, name = (probe, probe_file) if k == probe_node else (f"J{j:04d}_n{k}", f"world/J{j:04d}_n{k}.jpg")
                node.append({"ProvenanceProbeFileID": probe, "WorldFileID": world_id, "WorldFileName": name,
                             "JournalNodeID": f"n{k}"})
                world.append({"TaskID": "provenancefiltering", "WorldFileID": world_id, "WorldFileName": name,
                              "WorldWidth": 640, "WorldHeight": 480})
                files.append(name)
            (root / "system" / "json" / f"{probe}.json").write_text(json.dumps(_system(rng, probe, files, cycles)))
            system.append({"ProvenanceProbeFileID": probe, "ConfidenceScore": 1.0,
                           "ProvenanceOutputFileName": f"json/{probe}.json", "IsOptOut": "Processed"})
    write_table(pd.DataFrame(index), root / "index.csv")
    write_table(pd.DataFrame(ref), root / "ref.csv")
    write_table(pd.DataFrame(node), root / "node.csv")
    write_table(pd.DataFrame(world).drop_duplicates(), root / "world.csv")
    write_table(pd.DataFrame(system), root / "system" / "system.csv")
    return ProvenanceDataset(root)
