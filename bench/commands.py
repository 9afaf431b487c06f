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

Each figure is the CPU seconds of the whole process tree (user + system of the command and of every
process it waited for: pool workers, the figure process), read with ``os.wait4``, because the machine
is shared and wall times swing with its load; the wall seconds are printed beside them. The issue's
goals are printed as ratios measured in the run: against the floor (masks: within 1.5x the PNG
decode) and against MediScore's seconds (``MEDISCORE``: each workload at least ``GOALS`` times
faster). MediScore is single-process, so its seconds compare with mfscore's CPU seconds, the larger of
mfscore's two figures on two cores.
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


# MediScore 1.3.2 on Python 3, measured outside the project, ±30 % (issue 28's table, same generated data;
# "25-43 s" for --ci at 100,000 trials taken at its low end). Keys are the workloads' names.
MEDISCORE = {
    "detection, 100,000 trials": 2.7,
    "detection, 100,000 trials, --ci": 25.0,
    "masks, 120 probes 1024x768, -p 1": 22.6,
    "masks, 120 probes 1024x768, -p 1, -qm": 22.6,
    "provenance filtering, 300 probes x 300 nodes": 16.8,
    "provenance graph building -c, 300 probes": 6.6,
    "video temporal, 400 probes, 2 queries, -c 5": 4.3,
}
# Issue 28, "Whole commands against the table above": MediScore seconds / mfscore seconds at least this.
GOALS = {
    "detection, 100,000 trials": 2.0,
    "masks, 120 probes 1024x768, -p 1": 8.0,
    "masks, 120 probes 1024x768, -p 1, -qm": 8.0,
    "provenance filtering, 300 probes x 300 nodes": 15.0,
    "provenance graph building -c, 300 probes": 5.0,
    "video temporal, 400 probes, 2 queries, -c 5": 8.0,
}
# Issue 28, "Masks": the whole command's CPU seconds within this many times its PNG decode's.
FLOOR_GOALS = {"masks, 120 probes 1024x768, -p 1": 1.5}


@dataclass
class Workload:
    name: str
    arguments: list[str]          # after "mfscore"
    floor_name: str
    floor: list[str]              # a whole command


@dataclass
class Timing:
    """One whole process: CPU seconds (user + system, its waited-for children included) and wall seconds."""
    cpu: float
    wall: float


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
    masks += ["-p", "1"]
    provenance = _provenance(root, 300)
    temporal = _temporal(root, 400)
    out = str(root / "out")
    return [
        Workload("detection, 100,000 trials", [*detection, "-o", f"{out}/d/run"], "import pandas", pandas_floor),
        Workload("detection, 100,000 trials, --ci", [*detection, "--ci", "-o", f"{out}/dci/run"], "numpy bootstrap",
                 [PYTHON, "-c", NUMPY_BOOTSTRAP, "100000"]),
        Workload("masks, 120 probes 1024x768, -p 1", [*masks, "-oR", f"{out}/m/run"], "PNG decode",
                 [PYTHON, "-c", PNG_DECODE, *pngs]),
        Workload("masks, 120 probes 1024x768, -p 1, -qm", [*masks, "-qm", "Purpose==['add']", "Purpose==['remove','clone','heal']",
                                                     "-oR", f"{out}/mq/run"], "PNG decode", [PYTHON, "-c", PNG_DECODE, *pngs]),
        Workload("provenance filtering, 300 probes x 300 nodes", ["provenance-filtering", *provenance, "-o", f"{out}/pf/"],
                 "import pandas", pandas_floor),
        Workload("provenance graph building -c, 300 probes", ["provenance-graph", *provenance, "-c", "-o", f"{out}/pg/"],
                 "import pandas", pandas_floor),
        Workload("video temporal, 400 probes, 2 queries, -c 5",
                 ["video-temporal", *temporal, "-c", "5", "-q", "*", "Operation == 'PasteSampled'", "-o", f"{out}/vt/"],
                 "import pandas", pandas_floor),
    ]


# The commands run with Python's bytecode cache on, whatever this shell says: a user's commands import modules compiled
# once, and PYTHONDONTWRITEBYTECODE (set on some machines) would make every run compile each module again.
CACHED_BYTECODE = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], env: dict[str, str] | None = None) -> Timing:
    """Run ``command`` to its end; its CPU seconds come from ``os.wait4``, which counts the children it reaped.

    It runs in the root directory: ``python -m`` puts its working directory first on the module path, so a
    run from a checkout would import that checkout's mfscore even with ``PYTHONPATH`` naming the baseline.
    """
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env or CACHED_BYTECODE, cwd="/")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, command)
    return Timing(usage.ru_utime + usage.ru_stime, wall)


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


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
        baseline_env = {**CACHED_BYTECODE, "PYTHONPATH": str(args.baseline.resolve())}
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-") as tmp:
        started = time.perf_counter()
        chosen = [w for w in workloads(Path(tmp)) if not args.only or args.only in w.name]
        print(f"generated the data in {time.perf_counter() - started:.0f} s; {args.repeat} rounds, each command in "
              f"alternation with its floor; {load()}")
        print("seconds are CPU (user + system of the process tree) unless marked wall; medians of the rounds\n")
        header = (f"{'workload':46s} {'floor':>15s} {'floor s':>7s} {'mfscore s':>9s} {'wall s':>6s} {'x floor':>7s} "
                  f"{'MediScore s':>11s} {'x MS':>6s} {'x MS wall':>9s}")
        if baseline_env:
            header += f" {'baseline s':>10s} {'x faster':>8s}"
        print(header)
        goals: list[str] = []
        for work in chosen:
            timed(work.floor)  # untimed warm-up: each command's bytecode cached, as a user's runs find it
            timed(mfscore(work.arguments))
            if baseline_env:
                timed(mfscore(work.arguments), baseline_env)
            rounds: list[tuple[Timing, Timing, Timing | None]] = []
            for _ in range(args.repeat):
                floor = timed(work.floor)
                current = timed(mfscore(work.arguments))
                before = timed(mfscore(work.arguments), baseline_env) if baseline_env else None
                rounds.append((floor, current, before))
            goals += _report(work, rounds)
        print(f"\ngoals (issue 28), {load()}:")
        for line in goals:
            print(line)
    return 0


def _median(rounds, pick: Callable) -> float:
    return statistics.median(pick(r) for r in rounds)


def _report(work: Workload, rounds) -> list[str]:
    """Print the workload's line; return its goal lines."""
    cpu, wall = _median(rounds, lambda r: r[1].cpu), _median(rounds, lambda r: r[1].wall)
    to_floor = _median(rounds, lambda r: r[1].cpu / r[0].cpu)
    mediscore = MEDISCORE.get(work.name)
    line = (f"{work.name:46s} {work.floor_name:>15s} {_median(rounds, lambda r: r[0].cpu):7.2f} {cpu:9.2f} "
            f"{wall:6.2f} {to_floor:6.2f}x")
    line += f" {mediscore:11.1f} {mediscore / cpu:5.1f}x {mediscore / wall:8.1f}x" if mediscore else " " * 28
    if rounds[0][2] is not None:
        line += f" {_median(rounds, lambda r: r[2].cpu):10.2f} {_median(rounds, lambda r: r[2].cpu / r[1].cpu):7.2f}x"
    print(line, flush=True)
    goals = []
    if work.name in GOALS:
        goal = GOALS[work.name]
        goals.append(f"  {work.name}: MediScore {mediscore} s / mfscore {cpu:.2f} CPU s = {mediscore / cpu:.1f}x "
                     f"(wall {wall:.2f} s: {mediscore / wall:.1f}x); goal >= {goal:g}x (<= {mediscore / goal:.2f} s): "
                     f"{'met' if mediscore / cpu >= goal else 'met on wall only' if mediscore / wall >= goal else 'not met'}")
    if work.name in FLOOR_GOALS:
        goal = FLOOR_GOALS[work.name]
        goals.append(f"  {work.name}: {to_floor:.2f}x the CPU of {work.floor_name}; goal <= {goal:g}x: "
                     f"{'met' if to_floor <= goal else 'not met'}")
    return goals


if __name__ == "__main__":
    sys.exit(main())
