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
import platform
import sys
import tempfile
import time
from pathlib import Path

from mfscore.cli.main import main as mfscore
from mfscore.sample_data.provenance import (
    PROBES_PER_JOURNAL, SYSTEM_LINKS, SYSTEM_NODES, ProvenanceDataset, generate_provenance_dataset,
)

N_PROBES = 1_000
REPEATS = 2


def _best_time(argv: list[str]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            status = mfscore(argv)
        best = min(best, time.perf_counter() - start)
        assert status == 0, f"mfscore {argv[0]} exited with {status}"
    return best


def bench_filtering(data: ProvenanceDataset) -> None:
    """``mfscore provenance-filtering`` end to end, recall at 50/100/200/300 for every probe."""
    elapsed = _best_time(["provenance-filtering", *data.options("system.csv"), "-o", str(data.root / "out_filtering")])
    print(f"provenance-filtering, {N_PROBES} probes x {SYSTEM_NODES} system nodes: "
          f"{elapsed:.2f} s = {N_PROBES / elapsed:,.0f} probes/s")


def bench_graph_building(data: ProvenanceDataset) -> None:
    """``mfscore provenance-graph`` end to end, full and direct graph. The links are generated pointing
    either way (``cycles=True``), so most system graphs have cycles: ``-c`` scores them (as a warning)
    instead of stopping."""
    for condition, extra in (("full", []), ("direct", ["-d"])):
        out = str(data.root / f"out_graph_{condition}")
        elapsed = _best_time(["provenance-graph", *data.options("system.csv"), "-c", *extra, "-o", out])
        print(f"provenance-graph ({condition} graph), {N_PROBES} probes x {SYSTEM_NODES} system nodes, "
              f"~{SYSTEM_LINKS} links: {elapsed:.2f} s = {N_PROBES / elapsed:,.0f} probes/s")


def main() -> int:
    print(f"mfscore provenance benchmark — {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data = generate_provenance_dataset(Path(tmp), N_PROBES, cycles=True)  # the figures' workload since it began
        print(f"generated {N_PROBES} probes ({N_PROBES // PROBES_PER_JOURNAL} journals) in "
              f"{time.perf_counter() - start:.1f} s")
        bench_filtering(data)
        bench_graph_building(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
