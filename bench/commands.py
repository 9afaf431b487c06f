"""Whole ``mfscore`` commands, each as a ratio to a floor timed in the same run: the headline figures.

Run by hand: ``python bench/commands.py`` (``make bench`` runs it first). It generates every
workload's data, then times whole commands (interpreter start, imports, reading, scoring, reports
and figures) in alternation with the workload's floor, and prints the median of the per-round
ratios. The floors are whole processes too:

- ``import pandas``: ``python -c "import pandas"``, for the table-driven scorers;
- ``numpy bootstrap``: a plain numpy bootstrap of the AUC (500 resamples of the same number of
  trials, one ``argsort`` each), start-up included, for ``--ci``;
- ``PNG decode``: ``cv2.imread`` of every mask of the run (reference and system), start-up included.

``--baseline DIR`` also times the same commands from another checkout of mfscore (``git worktree add
DIR REV``), run with ``PYTHONPATH=DIR`` in this venv, and prints baseline/current per workload.
MediScore itself is not run here; its figures are measured outside the project.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PYTHON = sys.executable

IMPORT_PANDAS = "import pandas"
PNG_DECODE = """
import sys, cv2
for path in sys.argv[1:]:
    assert cv2.imread(path, cv2.IMREAD_UNCHANGED) is not None, path
"""
NUMPY_BOOTSTRAP = """
import sys, numpy as np
n = int(sys.argv[1])
rng = np.random.default_rng(77)
labels = rng.random(n) < 0.5
scores = np.round(rng.normal(size=n) + labels, 4)
aucs = []
for _ in range(500):
    pick = rng.integers(0, n, n)
    s, y = scores[pick], labels[pick]
    ranks = np.empty(n)
    ranks[np.argsort(s, kind="stable")] = np.arange(1, n + 1)
    positives = y.sum()
    aucs.append((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * (n - positives)))
np.percentile(aucs, [5, 95])
"""


@dataclass
class Workload:
    name: str
    arguments: list[str]          # after "mfscore"
    floor_name: str
    floor: list[str]              # a whole command


def _detection(root: Path, n: int) -> list[str]:
    from mfscore.sample_data.detection import generate_detection_dataset
    data = generate_detection_dataset(root / "detection", n)
    return ["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system]


def _masks(root: Path, n: int) -> tuple[list[str], list[str]]:
    from mfscore.sample_data.masks import generate_mask_dataset
    data = generate_mask_dataset(root / "masks", n, width=1024, height=768)
    pngs = sorted(str(p) for p in data.directory.rglob("*.png"))
    return ["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "-s", str(data.directory / data.system)], pngs


def _provenance(root: Path, n: int) -> list[str]:
    from mfscore.sample_data.provenance import generate_provenance_dataset
    return generate_provenance_dataset(root / "provenance", n, cycles=True).options("system.csv")  # -c: cycles


def _temporal(root: Path, n: int) -> list[str]:
    from mfscore.sample_data.video import generate_temporal_dataset
    return generate_temporal_dataset(root / "temporal", n).cli_args()


def workloads(root: Path) -> list[Workload]:
    """The issue's six workloads (masks at 120 probes, the size of its decode-floor goal)."""
    pandas_floor = [PYTHON, "-c", IMPORT_PANDAS]
    detection = _detection(root, 100_000)
    masks, pngs = _masks(root, 120)
    provenance = _provenance(root, 300)
    temporal = _temporal(root, 400)
    out = str(root / "out")
    return [
        Workload("detection, 100,000 trials", [*detection, "-o", f"{out}/d/run"], "import pandas", pandas_floor),
        Workload("detection, 100,000 trials, --ci", [*detection, "--ci", "-o", f"{out}/dci/run"], "numpy bootstrap",
                 [PYTHON, "-c", NUMPY_BOOTSTRAP, "100000"]),
        Workload("masks, 120 probes 1024x768", [*masks, "-oR", f"{out}/m/run"], "PNG decode",
                 [PYTHON, "-c", PNG_DECODE, *pngs]),
        Workload("masks, 120 probes 1024x768, -qm", [*masks, "-qm", "Purpose==['add']", "Purpose==['remove','clone','heal']",
                                                     "-oR", f"{out}/mq/run"], "PNG decode", [PYTHON, "-c", PNG_DECODE, *pngs]),
        Workload("provenance filtering, 300 probes x 300 nodes", ["provenance-filtering", *provenance, "-o", f"{out}/pf/"],
                 "import pandas", pandas_floor),
        Workload("provenance graph building -c, 300 probes", ["provenance-graph", *provenance, "-c", "-o", f"{out}/pg/"],
                 "import pandas", pandas_floor),
        Workload("video temporal, 400 probes, 2 queries, -c 5",
                 ["video-temporal", *temporal, "-c", "5", "-q", "*", "Operation == 'PasteSampled'", "-o", f"{out}/vt/"],
                 "import pandas", pandas_floor),
    ]


def seconds(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def mfscore(arguments: list[str]) -> list[str]:
    return [PYTHON, "-m", "mfscore", *arguments]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds of alternation (default 3)")
    parser.add_argument("--only", help="run the workloads whose name contains this")
    parser.add_argument("--baseline", type=Path, help="a checkout of another mfscore revision to time too")
    args = parser.parse_args()
    baseline_env = None
    if args.baseline:
        baseline_env = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-") as tmp:
        started = time.perf_counter()
        chosen = [w for w in workloads(Path(tmp)) if not args.only or args.only in w.name]
        print(f"generated the data in {time.perf_counter() - started:.0f} s; "
              f"{args.repeat} rounds, each command in alternation with its floor\n")
        header = f"{'workload':48s} {'floor':>16s} {'floor s':>8s} {'mfscore s':>9s} {'x floor':>7s}"
        if baseline_env:
            header += f" {'baseline s':>10s} {'x faster':>8s}"
        print(header)
        for work in chosen:
            rounds: list[tuple[float, float, float | None]] = []
            for _ in range(args.repeat):
                floor = seconds(work.floor)
                current = seconds(mfscore(work.arguments))
                before = seconds(mfscore(work.arguments), baseline_env) if baseline_env else None
                rounds.append((floor, current, before))
            _report(work, rounds)
    return 0


def _median(rounds, pick: Callable) -> float:
    return statistics.median(pick(r) for r in rounds)


def _report(work: Workload, rounds) -> None:
    line = (f"{work.name:48s} {work.floor_name:>16s} {_median(rounds, lambda r: r[0]):8.2f} "
            f"{_median(rounds, lambda r: r[1]):9.2f} {_median(rounds, lambda r: r[1] / r[0]):6.2f}x")
    if rounds[0][2] is not None:
        line += f" {_median(rounds, lambda r: r[2]):10.2f} {_median(rounds, lambda r: r[2] / r[1]):7.2f}x"
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
