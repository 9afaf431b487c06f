"""Detection scoring benchmark, run by hand: ``python bench/detection.py`` (or ``make bench``).

Not a test: it generates its own data, times mfscore against straightforward implementations
written here, and prints the figures (ratios where it compares). Nothing is asserted about speed;
the only assertion is that the bootstrap being compared computes the same intervals as mfscore.

1. Core scoring of 100,000 trials with 500-resample bootstrap intervals, against a naive bootstrap
   that re-sorts every resample (measured on fewer replicates, extrapolated linearly to 500).
2. Core scoring of 1,000,000 trials without intervals, against a per-threshold sweep (one full pass
   per distinct score; measured on a few hundred thresholds, extrapolated).
3. End to end from files through the CLI (in process, no plots): reading and joining the CSVs,
   scoring, writing the reports. MediScore's times are quoted from the issue, not measured here.

Total run time is a few minutes on a 2-core machine, most of it generating the 1M-trial files.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mfscore.cli.main import main as cli_main
from mfscore.detection.bootstrap import N_RESAMPLES, SEED, quantile_positions
from mfscore.detection.metrics import detection_metrics
from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_curve
from mfscore.sample_data.detection import generate_detection_dataset

FAR_STOP = 0.1
CI_LEVEL = 0.9
NAIVE_REPLICATES = 50          # naive bootstrap replicates actually run at 100k trials
SWEEP_THRESHOLDS = 300         # per-threshold sweep passes actually run at 1M trials

# MediScore DetectionScorer on this machine, as quoted in the issue (not measured by this script).
MEDISCORE_100K_NO_CI = 26.0
MEDISCORE_100K_CI = 103.0

TARGETS = {"core_100k_ci": 2.0, "core_1m": 3.0}

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


def run_cli(directory: Path, ds, out: Path, ci: bool) -> None:
    argv = ["detection", "--refDir", str(directory), "-r", ds.reference, "-x", ds.index,
            "--sysDir", str(directory), "-s", ds.system, "-o", str(out), "--noPlot"]
    if ci:
        argv.append("--ci")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(argv)
    if rc != 0:
        raise SystemExit(f"mfscore detection exited with {rc}")


def bench_end_to_end() -> None:
    print("3. End to end from files: CLI in process, --noPlot, reading + joining the CSVs included")
    print("   MediScore figures for this machine are reference figures quoted in the issue, not measured here:")
    print(f"   ~{MEDISCORE_100K_NO_CI:g} s for 100k trials without CIs, ~{MEDISCORE_100K_CI:g} s for 100k trials with CIs")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-") as tmp:
        tmp = Path(tmp)
        d100k, d1m = tmp / "100k", tmp / "1m"
        t_gen100k, ds100k = best_of(lambda: generate_detection_dataset(d100k, 100_000, seed=2019), 1)
        t_gen1m, ds1m = best_of(lambda: generate_detection_dataset(d1m, 1_000_000, seed=2019), 1)
        line("(data generation, not part of the figures: 100k / 1M)", f"{t_gen100k:.1f} s / {t_gen1m:.1f} s")

        t_100k, _ = best_of(lambda: run_cli(d100k, ds100k, tmp / "out" / "100k", ci=False), 3)
        t_100k_ci, _ = best_of(lambda: run_cli(d100k, ds100k, tmp / "out" / "100k_ci", ci=True), 2)
        t_1m, _ = best_of(lambda: run_cli(d1m, ds1m, tmp / "out" / "1m", ci=False), 2)

        r_100k = MEDISCORE_100K_NO_CI / t_100k
        r_100k_ci = MEDISCORE_100K_CI / t_100k_ci
        r_1m = MEDISCORE_100K_NO_CI / t_1m
        line("100k trials, no CIs, best of 3", f"{t_100k:7.3f} s   quoted MediScore / mfscore: {r_100k:6.1f} x")
        line("100k trials, --ci, best of 2", f"{t_100k_ci:7.3f} s   quoted MediScore / mfscore: {r_100k_ci:6.1f} x")
        line("1M trials, no CIs, best of 2", f"{t_1m:7.3f} s   quoted MediScore 100k (10x fewer trials) / mfscore 1M: {r_1m:6.1f} x")
    summary.append(("CLI 100k, no CI", t_100k, f"quoted MediScore 100k no CI / this: {r_100k:.1f}x"))
    summary.append(("CLI 100k, --ci", t_100k_ci, f"quoted MediScore 100k CI / this: {r_100k_ci:.1f}x"))
    summary.append(("CLI 1M, no CI", t_1m, f"quoted MediScore 100k no CI / this (10x trials): {r_1m:.1f}x"))


def main() -> int:
    started = time.perf_counter()
    print(f"mfscore detection benchmark: Python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}")
    print("Data: ~50 % targets, scores rounded to 4 decimals (ties); times are wall clock (time.perf_counter).")
    print()
    bench_core_ci()
    print()
    bench_core_1m()
    print()
    bench_end_to_end()
    print()
    print("Summary")
    print(f"  {'benchmark':<32} {'seconds':>9}   comparison")
    for label, seconds, comparison in summary:
        print(f"  {label:<32} {seconds:9.3f}   {comparison}")
    print(f"  (total run time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
