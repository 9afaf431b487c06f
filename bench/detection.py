"""Detection scoring benchmark, run by hand: ``python bench/detection.py`` (or ``make bench``).

Not a test: it generates its own data, times mfscore against straightforward implementations
written here, and prints the figures (ratios where it compares). Nothing is asserted about speed;
the only assertion is that the bootstrap being compared computes the same intervals as mfscore.

1. Core scoring of 100,000 trials with 500-resample bootstrap intervals, against a naive bootstrap
   that re-sorts every resample (measured on fewer replicates, extrapolated linearly to 500).
2. Core scoring of 1,000,000 trials without intervals, against a per-threshold sweep (one full pass
   per distinct score; measured on a few hundred thresholds, extrapolated).
3. Whole commands (``python -m mfscore detection``, the ROC drawn, with and without ``--ci``) at 100,000 and
   1,000,000 trials, each round alternating with its floor (``python -c "import pandas"``; for ``--ci`` a plain
   numpy bootstrap of the AUC, 500 resamples, one ``argsort`` each); wall and CPU seconds (user + system of the
   child and its children, ``os.wait4``), medians over the rounds. Issue 28's goals are printed as ratios against
   MediScore's seconds (``MEDISCORE``: measured outside the project on Python 3 on this kind of machine with the
   same generated data, ±30 %; MediScore is not run here). ``--baseline DIR`` also times a checkout of another
   revision (``git worktree add DIR REV``, run with ``PYTHONPATH=DIR``).
   Without ``--ci`` a third command is timed in the same rounds: the floor of the work
   (``WORK_FLOOR``: ``import pandas``, its C reader on the columns scoring reads from the three files, as text,
   and one line drawn with matplotlib to a PDF and a PNG, as the ROC is; no join, no metric). When it costs more
   than the goal's seconds, the goal is below the floor of the work with this stack, and the line says so.

``--only core|commands`` runs parts 1-2 or part 3; ``--repeat`` sets part 3's rounds.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mfscore.detection.bootstrap import N_RESAMPLES, SEED, quantile_positions
from mfscore.detection.metrics import detection_metrics
from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_curve
from mfscore.detection.trials import SCORING_COLUMNS
from mfscore.formats.tables import read_header
from mfscore.sample_data.detection import generate_detection_dataset

from commands import CACHED_BYTECODE, NUMPY_BOOTSTRAP, timed  # bench/commands.py: the --ci floor, how a command is timed

FAR_STOP = 0.1
CI_LEVEL = 0.9
NAIVE_REPLICATES = 50          # naive bootstrap replicates actually run at 100k trials
SWEEP_THRESHOLDS = 300         # per-threshold sweep passes actually run at 1M trials

# MediScore 1.3.2's whole DetectionScorer command, seconds (issue 28's table: measured outside the project on Python 3
# on this kind of machine, same generated data, a busy machine: ±30 %; not measured by this script).
MEDISCORE = {(100_000, False): (2.7, 2.7), (100_000, True): (25.0, 43.0),
             (1_000_000, False): (11.4, 11.4), (1_000_000, True): (253.0, 253.0)}
GOALS = {(1_000_000, False): 5.0, (1_000_000, True): 30.0, (100_000, False): 2.0}  # MediScore's seconds / mfscore's
TARGETS = {"core_100k_ci": 2.0, "core_1m": 3.0}

# The floor of a detection command's work: import pandas, read with its C reader, as text, the columns scoring
# reads, and draw one line to a PDF and a PNG, importing less of matplotlib than mfscore does (argv: FIGURE_PREFIX,
# then FILE COLUMN,COLUMN,... for each file).
WORK_FLOOR = """
import sys, pandas as pd
for path, columns in zip(sys.argv[2::2], sys.argv[3::2]):
    pd.read_csv(path, sep="|", usecols=columns.split(","), dtype=str, keep_default_na=False, na_values=[""])
import matplotlib.artist
matplotlib.artist.kwdoc = lambda artist: ""  # no property lists in docstrings, as mfscore's figure worker
from matplotlib.figure import Figure  # no pyplot: its Agg canvas is the default
figure = Figure()
figure.add_subplot().plot([0, 1], [0, 1])
figure.savefig(sys.argv[1] + ".pdf")
figure.savefig(sys.argv[1] + ".png")
"""

summary: list[tuple[str, float, str]] = []   # (label, seconds, comparison)


# --------------------------------------------------------------------------- helpers

def best_of(fn, repeat: int):
    """(best wall time over ``repeat`` calls, result of the last call)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def synthetic_trials(n: int, seed: int = 2019):
    """~50 % targets; scores are sigmoids of a shifted normal rounded to 4 decimals (many ties),
    as the sample-data generator makes them."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.5).astype(np.int64)
    raw = rng.normal(0.0, 1.0, n) + labels * rng.choice([0.3, 0.6, 0.8, 1.0, 1.6], n)
    scores = np.round(1.0 / (1.0 + np.exp(-raw)), 4)
    return scores, labels


def target_note(key: str, seconds: float) -> str:
    return f"(target <= {TARGETS[key]:g} s: {'met' if seconds <= TARGETS[key] else 'MISSED'})"


def line(label: str, value: str) -> None:
    print(f"  {label:<64} {value}")


# --------------------------------------------------------------------------- naive implementations

def naive_bootstrap(scores, labels, n_resamples: int, far_stop: float = FAR_STOP, ci_level: float = CI_LEVEL):
    """Resample rows, re-sort (roc_curve) and score each replicate, then sort the replicate values."""
    n = scores.size
    rng = np.random.RandomState(SEED)
    values = {"auc": [], "partial_auc": [], "cdr": []}
    for _ in range(n_resamples):
        positions = rng.randint(0, n, size=n)
        roc = roc_curve(scores[positions], labels[positions])
        values["auc"].append(auc(roc))
        values["partial_auc"].append(partial_auc(roc, far_stop))
        values["cdr"].append(cdr_at_far(roc, far_stop))
    lo, hi = quantile_positions(ci_level, n_resamples)
    intervals = {}
    for name, vals in values.items():
        ordered = sorted(vals)
        intervals[name] = (ordered[lo], ordered[min(hi, len(ordered) - 1)])
    return intervals


def sweep_counts(scores, labels, thresholds):
    """TP and FP at each threshold by a full pass over all trials (score >= threshold is a detection)."""
    positive = labels.astype(bool)
    tps = np.empty(thresholds.size, dtype=np.int64)
    fps = np.empty(thresholds.size, dtype=np.int64)
    for i, t in enumerate(thresholds):
        detected = scores >= t
        tp = np.count_nonzero(detected & positive)
        tps[i] = tp
        fps[i] = np.count_nonzero(detected) - tp
    return fps, tps


# --------------------------------------------------------------------------- benchmarks

def bench_core_ci() -> None:
    print("1. Core scoring, 100,000 trials, 500-resample bootstrap intervals")

    # Apples to apples: the naive bootstrap gives mfscore's intervals (small n, all 500 replicates).
    s, l = synthetic_trials(2_000, seed=7)
    m = detection_metrics(s, l, far_stop=FAR_STOP, ci=True, ci_level=CI_LEVEL).intervals
    naive = naive_bootstrap(s, l, N_RESAMPLES)
    got = {"auc": m.auc, "partial_auc": m.partial_auc, "cdr": m.cdr}
    for name, (lo, hi) in naive.items():
        assert (got[name].lower, got[name].upper) == (lo, hi), (name, got[name], (lo, hi))
    line("check: intervals equal naive bootstrap (2,000 trials, 500 reps)", "ok")

    scores, labels = synthetic_trials(100_000)
    t_mf, _ = best_of(lambda: detection_metrics(scores, labels, far_stop=FAR_STOP, ci=True, ci_level=CI_LEVEL), 3)
    t_part, _ = best_of(lambda: naive_bootstrap(scores, labels, NAIVE_REPLICATES), 2)
    t_naive = t_part * N_RESAMPLES / NAIVE_REPLICATES
    line("mfscore detection_metrics(ci=True), best of 3", f"{t_mf:7.3f} s   {target_note('core_100k_ci', t_mf)}")
    line(f"naive re-sorting bootstrap, {NAIVE_REPLICATES} reps measured (best of 2)", f"{t_part:7.3f} s")
    line(f"naive, extrapolated linearly to {N_RESAMPLES} reps", f"{t_naive:7.3f} s")
    line("ratio naive / mfscore", f"{t_naive / t_mf:7.1f} x")
    summary.append(("core 100k, CI (target <= 2 s)", t_mf, f"{t_naive / t_mf:.1f}x faster than naive bootstrap (extrap.)"))


def bench_core_1m() -> None:
    print("2. Core scoring, 1,000,000 trials, no intervals")
    scores, labels = synthetic_trials(1_000_000)
    t_mf, m = best_of(lambda: detection_metrics(scores, labels, far_stop=FAR_STOP, ci=False), 3)
    distinct = np.unique(scores)[::-1]
    rng = np.random.default_rng(3)
    sample = np.sort(rng.choice(distinct, size=min(SWEEP_THRESHOLDS, distinct.size), replace=False))[::-1]
    t_part, (fps, tps) = best_of(lambda: sweep_counts(scores, labels, sample), 2)
    t_sweep = t_part * distinct.size / sample.size
    # The sweep counts what mfscore's sorted cumulative sums count, at the same thresholds.
    mf_fps, mf_tps, mf_thr = SortedTrials.from_arrays(scores, labels).counts()
    at = {float(t): (int(f), int(p)) for f, p, t in zip(mf_fps, mf_tps, mf_thr)}
    assert all(at[float(t)] == (int(f), int(p)) for f, p, t in zip(fps, tps, sample))
    line("check: sweep counts equal mfscore's at the sampled thresholds", "ok")
    line("mfscore detection_metrics(ci=False), best of 3", f"{t_mf:7.3f} s   {target_note('core_1m', t_mf)}")
    line(f"per-threshold sweep, {sample.size} thresholds measured (best of 2)", f"{t_part:7.3f} s")
    line(f"sweep, extrapolated to all {distinct.size:,} distinct scores", f"{t_sweep:7.3f} s")
    line("ratio sweep / mfscore", f"{t_sweep / t_mf:7.1f} x")
    line("(AUC of the data, for reference)", f"{float(m.auc):.4f}")
    summary.append(("core 1M, no CI (target <= 3 s)", t_mf, f"{t_sweep / t_mf:.1f}x faster than threshold sweep (extrap.)"))


def detection_command(ds, out: Path, ci: bool) -> list[str]:
    return [sys.executable, "-m", "mfscore", "detection", "--refDir", str(ds.directory), "-r", ds.reference,
            "-x", ds.index, "--sysDir", str(ds.directory), "-s", ds.system, "-o", str(out / "run"),
            *(["--ci"] if ci else [])]


def work_floor(ds, figure: Path) -> list[str]:
    """``WORK_FLOOR`` on ``ds``: each file's columns that ``load_scored_table`` reads to score (the keys the
    files share, IsTarget, the score and the opt-out status), the figure drawn to ``figure``.pdf and .png."""
    files = [ds.directory / ds.reference, ds.directory / ds.index, ds.directory / ds.system]
    headers = [read_header(path) for path in files]
    keys = {c for header in headers[1:] for c in header if c in headers[0]}
    needed = keys | SCORING_COLUMNS
    columns = [",".join(c for c in header if c in needed) for header in headers]
    arguments = [a for path, named in zip(files, columns) for a in (str(path), named)]
    return [sys.executable, "-c", WORK_FLOOR, str(figure), *arguments]


def bench_commands(repeat: int, baseline: Path | None) -> None:
    print("3. Whole commands: python -m mfscore detection, the ROC drawn, alternating with the floor; medians of "
          f"{repeat} rounds")
    print("   MediScore's seconds are issue 28's (measured outside the project on Python 3, same generated data, "
          "±30 %), not measured here")
    envs = {"mfscore": None}
    if baseline is not None:
        envs["baseline"] = {**CACHED_BYTECODE, "PYTHONPATH": str(baseline.resolve())}
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-") as tmp:
        tmp = Path(tmp)
        data = {}
        for n in (100_000, 1_000_000):
            started = time.perf_counter()
            data[n] = generate_detection_dataset(tmp / f"data-{n}", n, seed=2019)
            line(f"(data generation, {n:,} trials, not part of the figures)", f"{time.perf_counter() - started:.1f} s")
        for name, env in envs.items():  # untimed warm-up: the modules' bytecode cached, as a user's runs find it
            timed([sys.executable, "-c", "import pandas"])
            timed(detection_command(data[100_000], tmp / "warm-up", True), env)
        print(f"   {'workload':<30} {'floor':>15} {'floor s':>8} {'':8} " + " ".join(
            f"{name + ' wall':>13} {name + ' CPU':>12}" for name in envs) + "   MediScore s / mfscore (CPU, wall)")
        for n, ci in ((100_000, False), (100_000, True), (1_000_000, False), (1_000_000, True)):
            floor_name, floor = (("numpy bootstrap", [sys.executable, "-c", NUMPY_BOOTSTRAP, str(n)]) if ci else
                                 ("import pandas", [sys.executable, "-c", "import pandas"]))
            commands = {name: detection_command(data[n], tmp / f"out-{name}-{n}-{ci}", ci) for name in envs}
            work = work_floor(data[n], tmp / "floor-roc") if not ci else None
            rounds = []
            for _ in range(repeat):
                row = {"floor": timed(floor)}
                for name, env in envs.items():
                    row[name] = timed(commands[name], env)
                if work is not None:
                    row["work floor"] = timed(work)
                rounds.append(row)
            median = {key: (statistics.median(r[key].wall for r in rounds), statistics.median(r[key].cpu for r in rounds))
                      for key in rounds[0]}
            low, high = MEDISCORE[n, ci]
            cpu, wall = median["mfscore"][1], median["mfscore"][0]
            quoted = f"{low:g}" if low == high else f"{low:g}-{high:g}"
            ratio = (f"{low / cpu:.1f}x" if low == high else f"{low / cpu:.1f}-{high / cpu:.1f}x")
            workload = f"{n:,} trials{', --ci' if ci else ''}"
            print(f"   {workload:<30} {floor_name:>15} {median['floor'][1]:8.2f} {'CPU':8} " + " ".join(
                f"{median[name][0]:13.2f} {median[name][1]:12.2f}" for name in envs)
                + f"   {quoted} s: {ratio} (wall {low / wall:.1f}x); x floor CPU {cpu / median['floor'][1]:.2f}")
            if baseline is not None:
                line(f"  baseline / mfscore, CPU (wall)", f"{median['baseline'][1] / cpu:.2f}x "
                                                        f"({median['baseline'][0] / wall:.2f}x)")
            if (n, ci) in GOALS:
                goal = GOALS[n, ci]
                line(f"  goal: >= {goal:g}x MediScore (CPU <= {low / goal:.1f} s)",
                     f"{low / cpu:.1f}x: {'met' if low / cpu >= goal else 'MISSED'}")
            if work is not None:
                floor_cpu, goal_cpu = median["work floor"][1], low / GOALS[n, ci]
                verdict = ("below this floor: unreachable while pandas reads the tables" if floor_cpu > goal_cpu
                           else "above it")
                line("  floor of the work: import pandas, read the columns scored, draw one line",
                     f"{floor_cpu:.2f} s (the command {cpu / floor_cpu:.2f}x it); "
                     f"the goal's {goal_cpu:.1f} s is {verdict}")
            summary.append((f"command {workload}", cpu, f"CPU s; MediScore {quoted} s / this: {ratio}"))
    load = os.getloadavg()
    print(f"   (load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("core", "commands"))
    parser.add_argument("--repeat", type=int, default=3, help="rounds of part 3 (default 3)")
    parser.add_argument("--baseline", type=Path, help="a checkout of another mfscore revision to time too")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"mfscore detection benchmark: Python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}")
    print("Data: ~50 % targets, scores rounded to 4 decimals (ties); parts 1-2 in process, wall seconds, best of.")
    print()
    if args.only in (None, "core"):
        bench_core_ci()
        print()
        bench_core_1m()
        print()
    if args.only in (None, "commands"):
        bench_commands(args.repeat, args.baseline)
        print()
    print("Summary")
    print(f"  {'benchmark':<32} {'seconds':>9}   comparison")
    for label, seconds, comparison in summary:
        print(f"  {label:<32} {seconds:9.3f}   {comparison}")
    print(f"  (total run time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
