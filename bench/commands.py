"""Whole ``mfscore`` commands, each against its floor and against MediScore: the headline figures.

Run by hand: ``python bench/commands.py`` (``make bench`` runs it first). It generates issue 47's workloads, then
times whole commands (interpreter start, imports, reading, scoring, reports and figures) in alternation with their
floors, and prints medians of wall seconds (CPU seconds of the process tree beside them, read with ``os.wait4``).

- A command's floor (``FLOOR``) is a whole process too: the imports of what it needs, reading every input under its
  data directory with a fast reader (the fastest in this run of polars, pyarrow and Python's csv module for the
  tables; ``cv2.imread`` for the PNG masks; ``json`` for the JSON files) and writing the files the command writes,
  byte for byte. ``--ci`` adds the plain numpy bootstrap of the AUC (``NUMPY_BOOTSTRAP``: 500 resamples of as many
  trials, one ``argsort`` each), a second process.
- Detection of 10^6 trials is also timed against reading its three tables (the columns scoring reads) and joining
  them on the probe, with polars and with pyarrow (``READ_JOIN``); issue 47's goal: within 2x the faster.
- MediScore is not run here: its wall seconds on a quiet machine (``MEDISCORE``) are scaled by this run's
  ``import pandas`` over that machine's (``CALIBRATION``), and each goal (``GOALS``) is printed met or not. The
  scale of a workload's goal is ``import pandas`` timed in each of its rounds, beside its command: a shared
  machine's speed drifts by a fifth within minutes, and a scale timed once at the start then decides verdicts.

``--baseline DIR`` also times the same commands from another checkout of mfscore (``git worktree add DIR REV``), run
with ``PYTHONPATH=DIR`` in this venv, and prints baseline/current per workload.
"""

from __future__ import annotations

import argparse
import importlib.util
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


# MediScore 1.3.2 (ported to Python 3) on a quiet machine, wall seconds, medians of 3 whole commands alternated with
# mfscore's on the same generated data (issue 47's table). That machine gave `import pandas` CALIBRATION seconds:
# the figures are scaled by this run's `import pandas` over it, so they hold on a faster or slower machine.
MEDISCORE = {
    "detection, 100,000 trials": 2.55,
    "detection, 100,000 trials, --ci": 13.2,
    "masks, 100 probes 1024x768, -p 1": 19.4,
    "provenance filtering, 300 probes x 300 nodes": 11.3,
    "provenance graph building -c, 300 probes": 4.42,
    "video temporal, 400 probes, 2 queries, -c 5": 3.06,
}
CALIBRATION = {"import pandas": 0.34, "import numpy": 0.10}
IMPORT_PANDAS = [PYTHON, "-c", "import pandas"]
# Issue 47: MediScore's seconds over mfscore's, both wall, at least this.
GOALS = {
    "detection, 100,000 trials": 3.0,
    "detection, 100,000 trials, --ci": 12.0,
    "masks, 100 probes 1024x768, -p 1": 12.0,
    "provenance filtering, 300 probes x 300 nodes": 15.0,
    "provenance graph building -c, 300 probes": 5.0,
    "video temporal, 400 probes, 2 queries, -c 5": 20.0,
}
# Issue 47: detection of 10^6 trials within this many times the fastest read-and-join of its three tables.
READ_JOIN_GOAL = 2.0
MILLION = "detection, 1,000,000 trials"

# A command's floor: the imports of what it needs, reading every input with a fast reader (READER: polars, pyarrow
# or Python's csv module for the tables, whichever this run finds fastest), decoding every PNG, parsing every JSON, and
# writing every file the command writes (the same bytes). argv: READER, the data directory, the outputs' directory.
FLOOR = """
import json, os, sys
from pathlib import Path
import numpy
reader, data, outputs, written = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
files = sorted(p for p in data.rglob("*") if p.is_file())
tables = [p for p in files if p.suffix == ".csv"]
if reader == "polars":
    import polars
    for p in tables:
        polars.read_csv(p, separator="|", infer_schema_length=10000)
elif reader == "pyarrow":
    import pyarrow.csv as pacsv
    for p in tables:
        pacsv.read_csv(p, parse_options=pacsv.ParseOptions(delimiter="|"))
else:
    import csv
    for p in tables:
        with open(p, newline="") as f:
            list(csv.reader(f, delimiter="|"))
pngs = [p for p in files if p.suffix == ".png"]
if pngs:
    import cv2
    for p in pngs:
        assert cv2.imread(str(p), cv2.IMREAD_UNCHANGED) is not None, p
for p in files:
    if p.suffix == ".json":
        json.loads(p.read_bytes())
    elif p.suffix not in (".csv", ".png"):
        p.read_bytes()
for p in sorted(q for q in outputs.rglob("*") if q.is_file()):
    target = written / p.relative_to(outputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(p.read_bytes())
"""
READERS = ("polars", "pyarrow", "csv")  # pyarrow where it is installed (not in the lock: bench/README.md)
# Detection's floor at scale: read the three tables (the columns scoring reads) and join them on the probe, with
# polars or pyarrow. argv: READER, index, reference, system.
READ_JOIN = """
import sys
reader, index, reference, system = sys.argv[1:5]
key = "ProbeFileID"
if reader == "polars":
    import polars as pl
    read = lambda path, columns: pl.read_csv(path, separator="|", columns=columns,
                                             schema_overrides={key: pl.Utf8})
    joined = read(index, [key]).join(read(reference, [key, "IsTarget"]), on=key, how="left").join(
        read(system, [key, "ConfidenceScore", "ProbeStatus"]), on=key, how="left")
else:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    def read(path, columns):
        return pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="|"),
                              convert_options=pacsv.ConvertOptions(include_columns=columns,
                                                                   column_types={key: pa.string()}))
    joined = read(index, [key]).join(read(reference, [key, "IsTarget"]), key, join_type="left outer").join(
        read(system, [key, "ConfidenceScore", "ProbeStatus"]), key, join_type="left outer")
assert joined.num_rows if hasattr(joined, "num_rows") else joined.height
"""


@dataclass
class Workload:
    name: str
    arguments: list[str]          # after "mfscore", its output last
    data: Path                    # every input under it: what the floor reads
    output: Path                  # where the command writes: what the floor writes again
    extra_floor: list[str] | None = None  # a process the floor adds (the bootstrap of --ci)


@dataclass
class Timing:
    """One whole process: CPU seconds (user + system, its waited-for children included) and wall seconds."""
    cpu: float
    wall: float


def _detection(root: Path, n: int) -> tuple[list[str], Path]:
    from mfscore.sample_data.detection import generate_detection_dataset
    data = generate_detection_dataset(root / f"detection-{n}", n)
    return ["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system], data.directory


def workloads(root: Path) -> list[Workload]:
    """Issue 47's six workloads, and detection of 10^6 trials (against its read-and-join floor)."""
    from mfscore.sample_data.masks import generate_mask_dataset
    from mfscore.sample_data.provenance import generate_provenance_dataset
    from mfscore.sample_data.video import generate_temporal_dataset

    out = root / "out"
    detection, detection_data = _detection(root, 100_000)
    million, million_data = _detection(root, 1_000_000)
    masks = generate_mask_dataset(root / "masks", 100, width=1024, height=768)
    provenance = generate_provenance_dataset(root / "provenance", 300, cycles=True)  # -c: cycles
    temporal = generate_temporal_dataset(root / "temporal", 400)
    return [
        Workload("detection, 100,000 trials", [*detection, "-o", f"{out}/d/run"], detection_data, out / "d"),
        Workload("detection, 100,000 trials, --ci", [*detection, "--ci", "-o", f"{out}/dci/run"], detection_data,
                 out / "dci", [PYTHON, "-c", NUMPY_BOOTSTRAP, "100000"]),
        Workload("masks, 100 probes 1024x768, -p 1",
                 ["mask", "--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
                  "-s", str(masks.directory / masks.system), "-p", "1", "-oR", f"{out}/m/run"], masks.directory,
                 out / "m"),
        Workload("provenance filtering, 300 probes x 300 nodes",
                 ["provenance-filtering", *provenance.options("system.csv"), "-o", f"{out}/pf/"], provenance.root,
                 out / "pf"),
        Workload("provenance graph building -c, 300 probes",
                 ["provenance-graph", *provenance.options("system.csv"), "-c", "-o", f"{out}/pg/"], provenance.root,
                 out / "pg"),
        Workload("video temporal, 400 probes, 2 queries, -c 5",
                 ["video-temporal", *temporal.cli_args(), "-c", "5", "-q", "*", "Operation == 'PasteSampled'",
                  "-o", f"{out}/vt/"], root / "temporal", out / "vt"),
        Workload(MILLION, [*million, "-o", f"{out}/d6/run"], million_data, out / "d6"),
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


def floor(work: Workload, written: Path) -> dict[str, Timing]:
    """The workload's floor with each reader (and, at 10^6 trials, the read-and-join with polars and pyarrow)."""
    found = {}
    for reader in (r for r in READERS if r == "csv" or importlib.util.find_spec(r)):
        found[reader] = timed([PYTHON, "-c", FLOOR, reader, str(work.data), str(work.output), str(written)])
        if work.extra_floor:
            extra = timed(work.extra_floor)
            found[reader] = Timing(found[reader].cpu + extra.cpu, found[reader].wall + extra.wall)
    if work.name == MILLION:
        tables = [str(next(work.data.glob(pattern))) for pattern in ("*-index.csv", "*-ref.csv", "system/*.csv")]
        for reader in (r for r in ("polars", "pyarrow") if importlib.util.find_spec(r)):
            found[f"read-join {reader}"] = timed([PYTHON, "-c", READ_JOIN, reader, *tables])
    return found


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
              f"alternation with its floors; {load()}")
        calibrate(args.repeat)
        print("seconds are wall, medians of the rounds (CPU: user + system of the process tree); a floor is the "
              "fastest of its readers\n")
        header = (f"{'workload':46s} {'mfscore':>7s} {'CPU':>6s} {'floor':>6s} {'reader':>17s} {'x floor':>7s} "
                  f"{'MediScore':>9s} {'x MS':>6s} {'goal':>5s}")
        if baseline_env:
            header += f" {'baseline':>8s} {'x faster':>8s}"
        print(header)
        goals: list[str] = []
        for work in chosen:
            written = Path(tmp) / "floor-written"
            timed(mfscore(work.arguments))  # untimed warm-up: bytecode cached, as a user's runs find it; its outputs
            floor(work, written)
            if baseline_env:
                timed(mfscore(work.arguments), baseline_env)
            rounds: list[tuple[dict[str, Timing], Timing, Timing | None, float]] = []
            for _ in range(args.repeat):
                floors = floor(work, written)
                current = timed(mfscore(work.arguments))
                before = timed(mfscore(work.arguments), baseline_env) if baseline_env else None
                rounds.append((floors, current, before, timed(IMPORT_PANDAS).wall))
            goals += _report(work, rounds)
        print(f"\ngoals (issue 47), {load()}:")
        for line in goals:
            print(line)
    return 0


def calibrate(repeat: int) -> None:
    """Print this machine's ``import pandas`` over the one MediScore was timed on (``CALIBRATION``) at the start, with
    ``import numpy``'s ratio beside it as a check of the scaling; each workload's goal is scaled by the ``import
    pandas`` of its own rounds (``_report``)."""
    imports = [IMPORT_PANDAS, [PYTHON, "-c", "import numpy"]]
    for command in imports:
        timed(command)  # untimed: the bytecode cached
    rounds = [tuple(timed(command).wall for command in imports) for _ in range(max(3, repeat))]
    pandas_s, numpy_s = statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds)
    print(f"calibration at the start: import pandas {pandas_s:.3f} s (MediScore's machine "
          f"{CALIBRATION['import pandas']} s): x {pandas_s / CALIBRATION['import pandas']:.2f}; import numpy "
          f"{numpy_s:.3f} s ({CALIBRATION['import numpy']} s): x {numpy_s / CALIBRATION['import numpy']:.2f}; each "
          "workload's MediScore seconds are scaled by the import pandas timed in its own rounds")


def _median(rounds, pick: Callable) -> float:
    return statistics.median(pick(r) for r in rounds)


def _report(work: Workload, rounds) -> list[str]:
    """Print the workload's line; return its goal lines. MediScore's seconds are scaled by the ``import pandas``
    timed in the workload's rounds."""
    wall, cpu = _median(rounds, lambda r: r[1].wall), _median(rounds, lambda r: r[1].cpu)
    readers = [name for name in rounds[0][0] if not name.startswith("read-join")]
    best = min(readers, key=lambda name: _median(rounds, lambda r: r[0][name].wall))
    floor_s = _median(rounds, lambda r: r[0][best].wall)
    to_floor = _median(rounds, lambda r: r[1].wall / r[0][best].wall)
    line = f"{work.name:46s} {wall:7.2f} {cpu:6.2f} {floor_s:6.2f} {best:>17s} {to_floor:6.2f}x"
    goals = []
    if work.name in MEDISCORE:
        pandas_s = _median(rounds, lambda r: r[3])
        scale = pandas_s / CALIBRATION["import pandas"]
        mediscore, goal = MEDISCORE[work.name] * scale, GOALS[work.name]
        line += f" {mediscore:9.2f} {mediscore / wall:5.1f}x {goal:4.0f}x"
        goals.append(f"  {work.name}: MediScore {mediscore:.2f} s (x {scale:.2f}: import pandas {pandas_s:.3f} s "
                     f"in its rounds) / mfscore {wall:.2f} s = "
                     f"{mediscore / wall:.1f}x; goal >= {goal:g}x (<= {mediscore / goal:.2f} s): "
                     f"{'met' if mediscore / wall >= goal else 'not met'}; the floor {floor_s:.2f} s alone "
                     f"would be {mediscore / floor_s:.1f}x")
    else:
        line += " " * 27
    if rounds[0][2] is not None:
        line += f" {_median(rounds, lambda r: r[2].wall):8.2f} {_median(rounds, lambda r: r[2].wall / r[1].wall):7.2f}x"
    print(line, flush=True)
    joins = [name for name in rounds[0][0] if name.startswith("read-join")]
    if joins:
        fastest = min(joins, key=lambda name: _median(rounds, lambda r: r[0][name].wall))
        join_s = _median(rounds, lambda r: r[0][fastest].wall)
        print("  " + ", ".join(f"{name} {_median(rounds, lambda r, n=name: r[0][n].wall):.2f} s "
                               f"({_median(rounds, lambda r, n=name: r[0][n].cpu):.2f} CPU)" for name in joins))
        met = "met" if wall <= READ_JOIN_GOAL * join_s else "not met"
        goals.append(f"  {work.name}: {wall:.2f} s = {wall / join_s:.2f}x the {fastest} of its three tables "
                     f"({join_s:.2f} s); goal <= {READ_JOIN_GOAL:g}x: {met}")
    return goals


if __name__ == "__main__":
    sys.exit(main())
