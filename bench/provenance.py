"""Provenance scorer benchmark, run by hand: ``python bench/provenance.py`` (or ``make bench``).

Not a test: it generates 1,000 probes sharing 250 reference journals of 20–40 nodes (4 probes per
journal), each probe with a system JSON of 300 nodes and ~300 links (confidences rounded to two
decimals, so there are ties; about two thirds of the reference files are found), then runs each
provenance scorer end to end in process (``mfscore.cli.main.main``: reading the tables and JSON,
scoring, writing the reports) and prints its wall time (best of ``REPEATS``) and probes per second.
"""

from __future__ import annotations

import contextlib
import io
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.cli.main import main as mfscore
from mfscore.formats.tables import write_table

N_PROBES = 1_000
PROBES_PER_JOURNAL = 4
SYSTEM_NODES = 300
SYSTEM_LINKS = 300
REPEATS = 2
NODE_TYPES = ("donor", "base", "final", "interim")


@dataclass(frozen=True)
class Dataset:
    """The generated files, as the scorers' common options (provenance.md §1)."""
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


def _system(rng, probe: str, reference_files: list[str]) -> dict:
    found = [f for f in reference_files if rng.random() < 2 / 3]
    files = found + [f"world/{probe}_distractor{k}.jpg" for k in range(SYSTEM_NODES - len(found))]
    scores = np.round(rng.random(SYSTEM_NODES), 2)
    scores[: len(found)] = np.round(0.5 + rng.random(len(found)) / 2, 2)
    order = rng.permutation(SYSTEM_NODES)
    nodes = [{"id": str(k), "file": files[i], "fileid": Path(files[i]).stem, "nodeConfidenceScore": float(scores[i])}
             for k, i in enumerate(order)]
    ends = rng.integers(0, SYSTEM_NODES, size=(SYSTEM_LINKS, 2))
    links = [{"source": int(s), "target": int(t), "relationshipConfidenceScore": round(float(rng.random()), 3)}
             for s, t in ends if s != t]
    return {"directed": True, "nodes": nodes, "links": links}


def generate(root: Path) -> Dataset:
    rng = np.random.default_rng(11)
    (root / "journals").mkdir(parents=True)
    (root / "system" / "json").mkdir(parents=True)
    index, ref, node, world, system = [], [], [], [], []
    for j in range(N_PROBES // PROBES_PER_JOURNAL):
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
            (root / "system" / "json" / f"{probe}.json").write_text(json.dumps(_system(rng, probe, files)))
            system.append({"ProvenanceProbeFileID": probe, "ConfidenceScore": 1.0,
                           "ProvenanceOutputFileName": f"json/{probe}.json", "IsOptOut": "Processed"})
    write_table(pd.DataFrame(index), root / "index.csv")
    write_table(pd.DataFrame(ref), root / "ref.csv")
    write_table(pd.DataFrame(node), root / "node.csv")
    write_table(pd.DataFrame(world).drop_duplicates(), root / "world.csv")
    write_table(pd.DataFrame(system), root / "system" / "system.csv")
    return Dataset(root)


def _best_time(argv: list[str]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            status = mfscore(argv)
        best = min(best, time.perf_counter() - start)
        assert status == 0, f"mfscore {argv[0]} exited with {status}"
    return best


def bench_filtering(data: Dataset) -> None:
    """``mfscore provenance-filtering`` end to end, recall at 50/100/200/300 for every probe."""
    elapsed = _best_time(["provenance-filtering", *data.options("system.csv"), "-o", str(data.root / "out_filtering")])
    print(f"provenance-filtering, {N_PROBES} probes x {SYSTEM_NODES} system nodes: "
          f"{elapsed:.2f} s = {N_PROBES / elapsed:,.0f} probes/s")


def bench_graph_building(data: Dataset) -> None:
    """``mfscore provenance-graph`` end to end, full and direct graph. The generated links are random,
    so most system graphs have cycles: ``-c`` scores them (as a warning) instead of stopping."""
    for condition, extra in (("full", []), ("direct", ["-d"])):
        out = str(data.root / f"out_graph_{condition}")
        elapsed = _best_time(["provenance-graph", *data.options("system.csv"), "-c", *extra, "-o", out])
        print(f"provenance-graph ({condition} graph), {N_PROBES} probes x {SYSTEM_NODES} system nodes, "
              f"~{SYSTEM_LINKS} links: {elapsed:.2f} s = {N_PROBES / elapsed:,.0f} probes/s")


def main() -> int:
    print(f"mfscore provenance benchmark — {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data = generate(Path(tmp))
        print(f"generated {N_PROBES} probes ({N_PROBES // PROBES_PER_JOURNAL} journals) in "
              f"{time.perf_counter() - start:.1f} s")
        bench_filtering(data)
        bench_graph_building(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
