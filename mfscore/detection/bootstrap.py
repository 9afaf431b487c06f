"""Bootstrap confidence intervals for AUC, AUC@FAR and CDR@FAR (docs/detection.md §6.6), and for
the SemaFor metrics (``semafor_intervals``: pD@FAR, bACC@EER, pAUC; the same draws).

MediScore draws 500 resamples of the scored rows with ``RandomState(77)`` and re-sorts each one.
mfscore makes the same draws but sorts once: every ROC quantity is a cumulative sum of how many
targets and non-targets a resample drew in each score group, so the numbers are identical, and a
replicate costs its draws, a gather of their group codes and one ``bincount`` (``group_counts``)
instead of a sort.

A replicate that draws a single class has no ROC: MediScore still counts it (AUC ``0`` when it drew
only targets, NaN when only non-targets) and sorts the values with Python's list sort, where NaN
compares false with everything, so the bounds depend on where the NaNs happen to land. mfscore
leaves such replicates out and takes the quantile positions among the others;
``mediscore_compat`` reproduces MediScore's values exactly (checkfile test_c4_4).

The replicates can be computed in slices (``replicate_slice``: replicates ``first`` to ``first +
count``, a cluster job's share) and joined (``joined``) into exactly the values of one pass. The draws
are sequential, so a slice starts from the generator's state after the draws of the replicates before
it: a process keeps the states its slices ended at (``_kept``) and advances a generator past draws it
has not made by generating only the 32-bit outputs they consume (``_advance``), which costs about what
the draws themselves do (a quarter of a replicate on 10⁶ trials), not the replicates.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_from_counts
from mfscore.detection.roc_band import FAR_GRID, RocBand, tpr_on_grid
from mfscore.detection.semafor import (
    PAUC_FAR,
    PLAN_FARS,
    eer_vertex,
    partial_auc_interpolated,
    pd_at_far,
    roc_all_from_counts,
)

N_RESAMPLES = 500
SEED = 77
HISTOGRAM_MIN_ROWS = 200_000  # from here a subset's 500 replicates counted by OpenCV save more than its import costs
KEPT_STATES = 64  # generator states a process keeps, each where a slice of replicates ended (2.5 KB each)


@dataclass(frozen=True)
class Interval:
    lower: float | int
    upper: float | int


@dataclass(frozen=True)
class BootstrapIntervals:
    auc: Interval
    partial_auc: Interval
    cdr: Interval
    semafor: dict[str, Interval] = field(default_factory=dict)  # SemaFor column -> interval


@dataclass(frozen=True)
class SemaforDraws:
    """Which SemaFor metrics the replicates also compute (``threshold``: a bucket's fixed θ*)."""

    fars: tuple[float, ...] = PLAN_FARS
    pauc_far: float = PAUC_FAR
    threshold: float | None = None


def _round_half_up(x: float, digits: int) -> float:
    return float(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def quantile_positions(ci_level: float, n: int) -> tuple[int, int]:
    """0-based positions of the interval bounds in the sorted replicate values (docs/detection.md §6.6)."""
    lower = _round_half_up((1 - ci_level) / 2, 3)
    upper = _round_half_up(1 - lower, 3)
    return int(lower * n), int(upper * n)


_states: OrderedDict[tuple[int, int, int], tuple] = OrderedDict()  # (rows, seed, replicates drawn) -> state
_states_lock = threading.Lock()


def _advance(rng: np.random.RandomState, n: int, replicates: int) -> None:
    """Move ``rng`` past ``replicates`` draws of ``rng.randint(0, n, size=n)`` without making them.

    numpy's legacy ``randint`` (rows up to 2**32) takes one 32-bit output per attempt and rejects it when its
    low bits (the smallest all-ones mask covering n - 1) exceed n - 1; asking for exactly as many outputs as
    values are still missing never takes one too many. One row draws nothing.
    """
    if n <= 1 or replicates <= 0:
        return
    if n - 1 > 0xFFFFFFFF:  # 64-bit outputs then: draw for real
        for _ in range(replicates):
            rng.randint(0, n, size=n)
        return
    mask, top = np.uint32((1 << (n - 1).bit_length()) - 1), np.uint32(n - 1)
    for _ in range(replicates):
        missing = n
        while missing:
            outputs = rng.randint(0, 1 << 32, size=missing, dtype=np.uint32)  # the raw outputs, one each
            np.bitwise_and(outputs, mask, out=outputs)
            missing = int(np.count_nonzero(outputs > top))


def _kept(n: int, first: int, seed: int) -> np.random.RandomState:
    """``RandomState(seed)`` after the draws of ``first`` replicates of ``n`` rows, advanced from the latest state
    this process kept at or before ``first`` (slices scored in order in one process advance nothing)."""
    rng = np.random.RandomState(seed)
    with _states_lock:
        start = max((done for rows, s, done in _states if (rows, s) == (n, seed) and done <= first), default=0)
        if start:
            rng.set_state(_states[n, seed, start])
            _states.move_to_end((n, seed, start))
    _advance(rng, n, first - start)
    return rng


def _keep(n: int, seed: int, drawn: int, rng: np.random.RandomState) -> None:
    with _states_lock:
        _states[n, seed, drawn] = rng.get_state()
        _states.move_to_end((n, seed, drawn))
        while len(_states) > KEPT_STATES:
            _states.popitem(last=False)


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED, order: np.ndarray | None = None,
                    first: int = 0):
    """Draw counts of each row (table order, or ``order``'s) for each replicate: MediScore's
    ``rng.choice(rows, n)``; from replicate ``first`` on (the draws before it are skipped, see ``_kept``).
    ``replicate_slice`` counts the same draws by score group instead (``group_counts``)."""
    def per_row(drawn: np.ndarray) -> np.ndarray:
        counts = np.bincount(drawn, minlength=n)
        return counts if order is None else counts[order]

    return _counted_draws(n, n_resamples, seed, first, per_row)


def group_counts(codes: np.ndarray, n_codes: int, n_resamples: int = N_RESAMPLES, seed: int = SEED, first: int = 0):
    """For each replicate, how many of its draws fell on each code (``SortedTrials.group_codes``): the same draws
    as ``resample_counts``, counted by (score group, label) rather than by row."""
    return _counted_draws(codes.size, n_resamples, seed, first, code_counter(codes, n_codes))


def code_counter(codes: np.ndarray, n_codes: int) -> Callable[[np.ndarray], np.ndarray]:
    """How many of a replicate's drawn rows carry each code: ``np.bincount`` of their codes, or OpenCV's 16-bit
    histogram of them (a table lookup a draw, 0.09 s to import; 7.6 ms a replicate of 10⁶ rows, against 10 ms)
    when the codes fit 16 bits, the float32 counts it returns are exact (fewer than 2**24 rows) and there are at
    least ``HISTOGRAM_MIN_ROWS`` rows. The same integers either way."""
    if n_codes > 1 << 16 or not HISTOGRAM_MIN_ROWS <= codes.size < 1 << 24:
        return lambda drawn: np.bincount(codes.take(drawn), minlength=n_codes)
    import cv2

    small = codes.astype(np.uint16)
    return lambda drawn: cv2.calcHist([small.take(drawn).reshape(1, -1)], [0], None, [n_codes],
                                      [0, n_codes]).ravel().astype(np.int64)


def _counted_draws(n: int, n_resamples: int, seed: int, first: int, count):
    """``count`` of each replicate's draws of ``n`` rows, from replicate ``first`` on.

    The draws, which follow one another through the generator's state, are made on a second thread a replicate or
    two ahead (numpy releases the GIL while it draws); counting them and the rest of a replicate, which take less
    time than drawing, on this one. A replicate then costs its draws alone, on two cores.
    """
    rng = _kept(n, first, seed)
    ahead: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    finished = threading.Event()

    def draw() -> None:
        for _ in range(n_resamples):
            drawn = rng.randint(0, n, size=n)
            while True:
                if stop.is_set():
                    return
                try:
                    ahead.put(drawn, timeout=0.1)
                    break
                except queue.Full:
                    continue
        finished.set()

    drawer = threading.Thread(target=draw, name="bootstrap-draws", daemon=True)
    drawer.start()
    try:
        for _ in range(n_resamples):
            yield count(ahead.get())
    finally:
        stop.set()
        drawer.join()
        if finished.is_set():
            _keep(n, seed, first + n_resamples, rng)


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates ``first`` to ``first + count`` of one subset, in draw order: MediScore's metrics (with a
    ``far_stop``; MediScore's integer ``0`` kept) and whether each drew both classes, and the SemaFor metrics (with
    ``SemaforDraws``) by report column name, NaN where a replicate drew one class."""

    first: int
    count: int
    auc: tuple[float | int, ...] = ()
    partial_auc: tuple[float | int, ...] = ()
    cdr: tuple[float | int, ...] = ()
    both_classes: tuple[bool, ...] = ()
    semafor: tuple[tuple[str, np.ndarray], ...] = ()
    band: np.ndarray | None = None  # (count, len(FAR_GRID)) detection rates (``roc_band``), NaN rows for one class


def semafor_names(semafor: SemaforDraws) -> list[str]:
    """The SemaFor metrics a replicate computes, in order."""
    names = [f"{kind}@FAR{f:g}" for f in semafor.fars for kind in ("pD", "pD_step")]
    return names + ["bACC@EER", f"pAUC@{semafor.pauc_far:g}", f"pAUC_norm@{semafor.pauc_far:g}"]


def replicate_slice(trials: SortedTrials, far_stop: float | None, semafor: SemaforDraws | None, first: int = 0,
                    count: int = N_RESAMPLES, seed: int = SEED, *, band: bool = False) -> Replicates:
    """Replicates ``first`` to ``first + count`` in one pass: MediScore's metrics (with ``far_stop``), the SemaFor
    ones (with ``semafor``) and the detection rates of the ROC band (with ``band``) of each, so the draws and
    cumulative counts are made once."""
    mediscore = {"auc": [], "partial_auc": [], "cdr": [], "both_classes": []}
    plan = {name: np.full(count, np.nan) for name in ([] if semafor is None else semafor_names(semafor))}
    rates = np.full((count, FAR_GRID.size), np.nan) if band else None
    if trials.scores.size:
        fixed = semafor is not None and semafor.threshold is not None
        codes_above = 2 * int(np.count_nonzero(trials.scores[trials.group_ends] >= semafor.threshold)) if fixed else 0
        codes = trials.group_codes()
        for i, drawn in enumerate(group_counts(codes, 2 * trials.group_ends.size, count, seed, first)):
            fps, tps, thr = trials.counts_of_groups(drawn)
            roc = roc_from_counts(fps, tps, thr)
            if far_stop is not None:
                mediscore["auc"].append(auc(roc))
                mediscore["partial_auc"].append(partial_auc(roc, far_stop))
                mediscore["cdr"].append(cdr_at_far(roc, far_stop))
                mediscore["both_classes"].append(roc.n_target > 0 and roc.n_nontarget > 0)
            if semafor is not None:
                above = int(drawn[1:codes_above:2].sum()), int(drawn[:codes_above:2].sum())
                _semafor_replicate(plan, i, (fps, tps, thr), roc, semafor, above)
            if band and roc.n_target > 0 and roc.n_nontarget > 0:
                rates[i] = tpr_on_grid(roc.fpr, roc.tpr)
    return Replicates(first, count, *(tuple(values) for values in mediscore.values()), tuple(plan.items()), rates)


def joined(slices: list[Replicates]) -> Replicates:
    """Consecutive slices (in any order) as one: the values of a single pass over all their replicates."""
    slices = sorted(slices, key=lambda r: r.first)
    for before, after in zip(slices, slices[1:]):
        if before.first + before.count != after.first:
            raise ValueError(f"bootstrap slices do not follow each other: replicates {before.first}+{before.count} "
                             f"then {after.first}")
    names = [name for name, _ in slices[0].semafor] if slices else []
    bands = [r.band for r in slices if r.band is not None]
    return Replicates(slices[0].first if slices else 0, sum(r.count for r in slices),
                      *(sum((getattr(r, part) for r in slices), ()) for part in ("auc", "partial_auc", "cdr",
                                                                                  "both_classes")),
                      tuple((name, np.concatenate([dict(r.semafor)[name] for r in slices])) for name in names),
                      np.concatenate(bands) if bands and len(bands) == len(slices) else None)


def _semafor_replicate(out: dict[str, np.ndarray], i: int, counts: tuple, roc, semafor: SemaforDraws,
                       above: tuple[int, int]) -> None:
    """Replicate ``i`` of each SemaFor metric; left NaN when it drew one class.

    ``bACC@EER`` finds θ* again (a competition), or stays at ``semafor.threshold`` (a bucket), at or above
    which the replicate drew ``above`` (targets, non-targets).
    """
    fps, tps, thr = counts
    n_t, n_nt = int(tps[-1]), int(fps[-1])
    if n_t == 0 or n_nt == 0:
        return
    full = roc_all_from_counts(fps, tps, thr)
    for f in semafor.fars:
        out[f"pD@FAR{f:g}"][i] = pd_at_far(roc, f, method="interpolate")
        out[f"pD_step@FAR{f:g}"][i] = pd_at_far(full, f, method="step")
    if semafor.threshold is None:
        best = eer_vertex(fps, tps, n_t, n_nt)
        tp, fp = int(tps[best]), int(fps[best])
    else:
        tp, fp = above
    if semafor.threshold is None or not np.isnan(semafor.threshold):
        out["bACC@EER"][i] = (tp / n_t + 1.0 - fp / n_nt) / 2.0  # docs/metrics.md §1.4: higher is better
    pauc = f"pAUC@{semafor.pauc_far:g}"
    out[pauc][i], out[f"pAUC_norm@{semafor.pauc_far:g}"][i] = partial_auc_interpolated(roc, semafor.pauc_far)


def replicate_metrics(scores: np.ndarray, labels: np.ndarray, far_stop: float,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, list]:
    """AUC, AUC@FAR and CDR@FAR of every replicate in draw order (MediScore's integer ``0`` kept),
    and whether the replicate drew both classes."""
    reps = replicate_slice(SortedTrials.from_arrays(scores, labels), far_stop, None, 0, n_resamples, seed)
    return {name: list(getattr(reps, name)) for name in ("auc", "partial_auc", "cdr", "both_classes")}


def roc_band(reps: Replicates, ci_level: float) -> RocBand | None:
    """The pointwise percentile band of the replicates' ROCs (``mfscore.detection.roc_band``): at each rate of the
    grid the order statistics the intervals take, among the replicates that drew both classes; None without any."""
    if reps.band is None:
        return None
    rows = reps.band[~np.isnan(reps.band).any(axis=1)]
    if not rows.shape[0]:
        return None
    ordered = np.sort(rows, axis=0)
    lo, hi = quantile_positions(ci_level, rows.shape[0])
    return RocBand(FAR_GRID.copy(), ordered[lo], ordered[min(hi, rows.shape[0] - 1)], ci_level)


def _interval(values: list, both_classes: list, ci_level: float, mediscore_compat: bool) -> Interval:
    ordered = sorted(values) if mediscore_compat else sorted(v for v, ok in zip(values, both_classes) if ok)
    if not ordered:
        return Interval(float("nan"), float("nan"))
    lo, hi = quantile_positions(ci_level, len(ordered))
    return Interval(ordered[lo], ordered[min(hi, len(ordered) - 1)])


def intervals(reps: Replicates, ci_level: float, *, mediscore_compat: bool = False) -> BootstrapIntervals:
    """The percentile intervals of all of a subset's replicates (``joined``)."""
    return BootstrapIntervals(*(_interval(list(getattr(reps, name)), list(reps.both_classes), ci_level,
                                          mediscore_compat) for name in ("auc", "partial_auc", "cdr")),
                              semafor=_semafor_intervals(dict(reps.semafor), ci_level))


def bootstrap_intervals(scores: np.ndarray, labels: np.ndarray, far_stop: float, ci_level: float, *,
                        n_resamples: int = N_RESAMPLES, seed: int = SEED, mediscore_compat: bool = False,
                        semafor: SemaforDraws | None = None) -> BootstrapIntervals:
    """Percentile intervals of the three metrics over bootstrap replicates of the rows, and of the
    SemaFor metrics from the same replicates when ``semafor`` says which."""
    reps = replicate_slice(SortedTrials.from_arrays(scores, labels), far_stop, semafor, 0, n_resamples, seed)
    return intervals(reps, ci_level, mediscore_compat=mediscore_compat)


def semafor_replicates(scores: np.ndarray, labels: np.ndarray, *, fars=PLAN_FARS, pauc_far: float = PAUC_FAR,
                       threshold: float | None = None, n_resamples: int = N_RESAMPLES,
                       seed: int = SEED) -> dict[str, np.ndarray]:
    """Every SemaFor metric of every replicate, in draw order, under its report column name; NaN
    where the replicate drew one class."""
    draws = SemaforDraws(tuple(fars), pauc_far, threshold)
    return dict(replicate_slice(SortedTrials.from_arrays(scores, labels), None, draws, 0, n_resamples, seed).semafor)


def semafor_intervals(scores: np.ndarray, labels: np.ndarray, ci_level: float, *, fars=PLAN_FARS,
                      pauc_far: float = PAUC_FAR, threshold: float | None = None,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """Percentile intervals of the SemaFor metrics; single-class replicates are left out."""
    return _semafor_intervals(semafor_replicates(scores, labels, fars=fars, pauc_far=pauc_far, threshold=threshold,
                                                 n_resamples=n_resamples, seed=seed), ci_level)


def _semafor_intervals(replicates: dict[str, np.ndarray], ci_level: float) -> dict[str, Interval]:
    return {name: _interval(values.tolist(), (~np.isnan(values)).tolist(), ci_level, mediscore_compat=False)
            for name, values in replicates.items()}
