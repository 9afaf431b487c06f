"""The one-sort bootstrap against a straightforward resample-and-sort bootstrap (docs/detection.md §6.6), and its
replicates computed in slices (a cluster's jobs) against one pass.

The oracle draws ``positions = rng.randint(0, n, size=n)`` per replicate from
``numpy.random.RandomState(77)`` (MediScore's draws), re-sorts the resampled rows through
``roc_curve`` and computes AUC, AUC@FAR and CDR@FAR. The fast version must give the same values
exactly (==, NaN == NaN, and the same Python type: MediScore's integer ``0`` vs ``0.0``), since
both reduce to the same integer cumulative counts. No tolerance anywhere in this file.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from exact import identical
from mfscore.codec import encode
from mfscore.detection import bootstrap
from mfscore.detection.bootstrap import (
    N_RESAMPLES,
    SemaforDraws,
    bootstrap_intervals,
    intervals,
    joined,
    quantile_positions,
    replicate_metrics,
    replicate_slice,
    resample_counts,
)
from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, partial_auc, roc_curve


def slow_replicates(scores, labels, far_stop, n_resamples=N_RESAMPLES, seed=77):
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    rng = np.random.RandomState(seed)
    n = len(scores)
    out = {"auc": [], "partial_auc": [], "cdr": [], "both_classes": []}
    for _ in range(n_resamples):
        positions = rng.randint(0, n, size=n)
        s, y = scores[positions], labels[positions]
        roc = roc_curve(s, y)
        out["auc"].append(auc(roc))
        out["partial_auc"].append(partial_auc(roc, far_stop))
        out["cdr"].append(cdr_at_far(roc, far_stop))
        out["both_classes"].append(bool(0 < y.sum() < n))
    return out



def dataset(n, p_target, decimals, seed):
    rng = np.random.RandomState(seed)
    labels = (rng.random_sample(n) < p_target).astype(np.int64)
    labels[0], labels[-1] = 1, 0
    scores = np.round(rng.normal(size=n) * 0.3 + 0.4 * labels, decimals)
    return scores, labels


DATASETS = {
    # name: (scores, labels, expect single-class replicates)
    "n7_one_target": (*dataset(7, 0.0, 1, 1), True),        # 1 target: ~(6/7)^7 of replicates have none
    "n7_balanced": (np.array([0.9, 0.5, 0.5, 0.3, 0.2, 0.2, -0.0]), np.array([1, 0, 1, 0, 0, 1, 0]), True),
    "n7_signed_zero": (np.array([0.0, -0.0, 0.5, 0.5, 0.0, 0.1, -0.1]), np.array([1, 0, 1, 0, 0, 1, 0]), True),
    "n30": (*dataset(30, 0.5, 1, 3), False),
    "n500": (*dataset(500, 0.3, 2, 4), False),
    "n500_coarse": (*dataset(500, 0.6, 1, 5), False),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("far_stop", [0.1, 0.25, 0.5])
def test_fast_replicates_equal_resample_and_sort(name, far_stop):
    scores, labels, single_class_expected = DATASETS[name]
    assert len(np.unique(scores)) < len(scores)  # the data has ties
    fast = replicate_metrics(scores, labels, far_stop)
    slow = slow_replicates(scores, labels, far_stop)
    assert fast["both_classes"] == slow["both_classes"]
    assert (not all(slow["both_classes"])) == single_class_expected
    for metric in ("auc", "partial_auc", "cdr"):
        assert len(fast[metric]) == N_RESAMPLES
        bad = [i for i, (a, b) in enumerate(zip(fast[metric], slow[metric])) if not identical(a, b)]
        assert not bad, (metric, bad[:5], [(fast[metric][i], slow[metric][i]) for i in bad[:5]])


def test_single_class_replicates_give_mediscore_values():
    """Only targets drawn: AUC int 0, CDR NaN; only non-targets drawn: AUC NaN (docs/detection.md §6.6, §6.8)."""
    scores, labels, _ = DATASETS["n7_one_target"]
    reps = replicate_metrics(scores, labels, 0.1)
    slow = slow_replicates(scores, labels, 0.1)
    kinds = set()
    for i, ok in enumerate(reps["both_classes"]):
        if ok:
            continue
        drew_targets = slow["auc"][i] == 0  # the oracle tells which class was drawn
        if drew_targets:
            assert reps["auc"][i] == 0 and type(reps["auc"][i]) is int
        else:
            assert math.isnan(reps["auc"][i])
        assert math.isnan(reps["cdr"][i])
        kinds.add(drew_targets)
    assert kinds == {False}  # one target in 7: a target-only replicate is (1/7)^7, never drawn
    scores, labels, _ = DATASETS["n7_balanced"]
    reps = replicate_metrics(scores, labels, 0.1)
    assert not all(reps["both_classes"])


def test_resample_counts_are_randomstate_77_draws():
    rng = np.random.RandomState(77)
    for counts in resample_counts(13, n_resamples=5):
        expected = np.bincount(rng.randint(0, 13, size=13), minlength=13)
        np.testing.assert_array_equal(counts, expected)
        assert counts.sum() == 13


def test_resample_counts_in_another_order_and_closed_early():
    order = np.random.default_rng(2).permutation(13)
    for plain, reordered in zip(resample_counts(13, n_resamples=5), resample_counts(13, n_resamples=5, order=order)):
        np.testing.assert_array_equal(reordered, plain[order])
    draws = resample_counts(1000, n_resamples=400)
    next(draws)
    draws.close()  # the drawing thread stops instead of drawing the other 399
    assert not any(t.name == "bootstrap-draws" for t in threading.enumerate())


def test_quantile_positions():
    assert quantile_positions(0.9, 500) == (25, 475)
    assert quantile_positions(0.95, 500) == (12, 487)


def test_intervals_reproducible():
    scores, labels, _ = DATASETS["n30"]
    a = bootstrap_intervals(scores, labels, 0.1, 0.9)
    b = bootstrap_intervals(scores.copy(), labels.copy(), 0.1, 0.9)
    for f in ("auc", "partial_auc", "cdr"):
        for bound in ("lower", "upper"):
            assert identical(getattr(getattr(a, f), bound), getattr(getattr(b, f), bound))
    assert a.auc.lower <= a.auc.upper


def percentile(values, ci_level):
    """Bounds at the 0-based positions int(lb*m), int(ub*m) of the sorted values (docs/detection.md §6.6)."""
    ordered = sorted(values)
    lo, hi = quantile_positions(ci_level, len(ordered))
    return ordered[lo], ordered[min(hi, len(ordered) - 1)]


def test_default_mode_ignores_single_class_replicates():
    scores = np.array([0.9, 0.5, 0.5, 0.3, 0.2, 0.2, 0.1])
    labels = np.array([1, 0, 1, 0, 0, 1, 0])
    slow = slow_replicates(scores, labels, 0.1)
    both = slow["both_classes"]
    m = sum(both)
    assert 0 < m < N_RESAMPLES  # single-class replicates exist
    got = bootstrap_intervals(scores, labels, 0.1, 0.9)
    for name, interval in (("auc", got.auc), ("partial_auc", got.partial_auc), ("cdr", got.cdr)):
        kept = [v for v, ok in zip(slow[name], both) if ok]
        assert not any(isinstance(v, float) and math.isnan(v) for v in kept)
        lo, hi = percentile(kept, 0.9)
        assert identical(interval.lower, lo) and identical(interval.upper, hi), name
    # and the positions really are those of m values, not of 500
    lo_pos, hi_pos = quantile_positions(0.9, m)
    assert (lo_pos, hi_pos) == (int(0.05 * m), int(0.95 * m))


def test_compat_mode_is_python_sorted_over_all_replicates():
    scores = np.array([0.9, 0.5, 0.5, 0.3, 0.2, 0.2, 0.1])
    labels = np.array([1, 0, 1, 0, 0, 1, 0])
    slow = slow_replicates(scores, labels, 0.1)
    got = bootstrap_intervals(scores, labels, 0.1, 0.9, mediscore_compat=True)
    for name, interval in (("auc", got.auc), ("partial_auc", got.partial_auc), ("cdr", got.cdr)):
        ordered = sorted(slow[name])  # Python list sort, NaN wherever it lands
        assert identical(interval.lower, ordered[25]) and identical(interval.upper, ordered[475]), name
    default = bootstrap_intervals(scores, labels, 0.1, 0.9)
    pairs = [(getattr(getattr(got, f), b), getattr(getattr(default, f), b))
             for f in ("auc", "partial_auc", "cdr") for b in ("lower", "upper")]
    assert any(not identical(x, y) for x, y in pairs)  # the NaN/0 replicates matter on this dataset


def test_only_single_class_data_gives_nan_interval():
    got = bootstrap_intervals(np.array([0.3, 0.2, 0.2]), np.array([1, 1, 1]), 0.1, 0.9)
    assert math.isnan(got.auc.lower) and math.isnan(got.auc.upper)


# --- slices: replicates first..first+count, joined -------------------------------------------------

@pytest.fixture
def no_kept_states():
    """A process that has kept no generator state (every slice advances from the seed), before and after."""
    bootstrap._states.clear()
    yield
    bootstrap._states.clear()


def same_state(a: np.random.RandomState, b: np.random.RandomState) -> bool:
    (name_a, key_a, *rest_a), (name_b, key_b, *rest_b) = a.get_state(), b.get_state()
    return name_a == name_b and np.array_equal(key_a, key_b) and rest_a == rest_b


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 1000, 1024, 1025, 100_003])
def test_advancing_leaves_the_generator_where_the_draws_leave_it(n, no_kept_states):
    """Every start a slice can have (0 to 500), from the seed: the 32-bit outputs the draws consume, no more."""
    drawn = np.random.RandomState(77)
    starts = range(N_RESAMPLES + 1) if n < 1000 else (0, 1, 2, 17, 250)
    for start in range(max(starts) + 1):
        if start in starts:
            assert same_state(bootstrap._kept(n, start, 77), drawn), start
        drawn.randint(0, n, size=n)


def near_equal(k: int) -> list[tuple[int, int]]:
    size, longer = divmod(N_RESAMPLES, k)
    counts = [size + (i < longer) for i in range(k)]
    return [(sum(counts[:i]), c) for i, c in enumerate(counts)]


@pytest.mark.parametrize("k", [1, 2, 3, 7, 10, 13, 64, 99, 250, 499, 500])
@pytest.mark.parametrize("kept", [False, True], ids=["advanced", "kept"])
def test_sliced_replicates_are_the_unsliced_ones(k, kept, no_kept_states):
    """Slices (near-equal, so uneven when k does not divide 500), scored in any order, each advancing from the seed
    or from a state this process kept, joined: the same values, types, NaNs and intervals as one pass."""
    scores, labels, _ = DATASETS["n500"]
    trials = SortedTrials.from_arrays(scores, labels)
    draws = SemaforDraws()
    whole = replicate_slice(trials, 0.1, draws)
    parts = near_equal(k)
    np.random.default_rng(k).shuffle(parts)
    pieces = []
    for first, count in parts:
        if not kept:
            bootstrap._states.clear()
        pieces.append(replicate_slice(trials, 0.1, draws, first, count))
    got = joined(pieces)
    assert encode(got) == encode(whole)
    assert [type(v) for v in got.auc] == [type(v) for v in whole.auc]
    assert encode(intervals(got, 0.9)) == encode(intervals(whole, 0.9)) == \
        encode(bootstrap_intervals(scores, labels, 0.1, 0.9, semafor=draws))


def test_uneven_slices_and_single_class_slices_join_to_the_whole(no_kept_states):
    scores, labels, _ = DATASETS["n7_one_target"]
    trials = SortedTrials.from_arrays(scores, labels)
    whole = replicate_slice(trials, 0.25, SemaforDraws(threshold=0.1))
    bounds = [0, 1, 2, 40, 41, 333, 499, 500]
    pieces = [replicate_slice(trials, 0.25, SemaforDraws(threshold=0.1), a, b - a) for a, b in zip(bounds, bounds[1:])]
    assert encode(joined(pieces[::-1])) == encode(whole)
    assert not all(whole.both_classes)
    with pytest.raises(ValueError, match="do not follow"):
        joined([pieces[0], pieces[2]])


def replicates_by_row_weights(trials, far_stop, semafor, count=N_RESAMPLES):
    """The reference for ``replicate_slice``: each replicate's draw counts per row (``resample_counts``) re-weighting
    the sorted trials (``SortedTrials.counts(weights)``), a pass over every row, rather than counts per score group."""
    from mfscore.detection.roc import roc_from_counts
    from mfscore.detection.roc_band import FAR_GRID, tpr_on_grid

    mediscore = {"auc": [], "partial_auc": [], "cdr": [], "both_classes": []}
    plan = {name: np.full(count, np.nan) for name in bootstrap.semafor_names(semafor)}
    rates = np.full((count, FAR_GRID.size), np.nan)
    threshold = semafor.threshold
    n_above = int(np.count_nonzero(trials.scores >= threshold)) if threshold is not None else 0
    for i, weights in enumerate(resample_counts(trials.scores.size, count, 77, trials.order)):
        fps, tps, thr = trials.counts(weights)
        roc = roc_from_counts(fps, tps, thr)
        both = roc.n_target > 0 and roc.n_nontarget > 0
        for name, value in (("auc", auc(roc)), ("partial_auc", partial_auc(roc, far_stop)),
                            ("cdr", cdr_at_far(roc, far_stop)), ("both_classes", both)):
            mediscore[name].append(value)
        tp = int(weights[:n_above] @ trials.labels[:n_above])
        bootstrap._semafor_replicate(plan, i, (fps, tps, thr), roc, semafor, (tp, int(weights[:n_above].sum()) - tp))
        if both:
            rates[i] = tpr_on_grid(roc.fpr, roc.tpr)
    return bootstrap.Replicates(0, count, *(tuple(v) for v in mediscore.values()), tuple(plan.items()), rates)


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("threshold", [None, 0.1, 0.0, float("nan")], ids=["own", "0.1", "0.0", "nan"])
@pytest.mark.parametrize("histogram", [False, True], ids=["bincount", "opencv"])
def test_counts_by_score_group_equal_counts_by_row(name, threshold, histogram, no_kept_states, monkeypatch):
    """Every value of every replicate (MediScore's metrics with their types, the SemaFor ones, the ROC band) counted
    by score group, with either counter, is the value counted by row weights, bit for bit."""
    monkeypatch.setattr(bootstrap, "HISTOGRAM_MIN_ROWS", 0 if histogram else 1 << 30)
    scores, labels, _ = DATASETS[name]
    trials = SortedTrials.from_arrays(scores, labels)
    draws = SemaforDraws(threshold=threshold)
    fast = replicate_slice(trials, 0.1, draws, band=True)
    assert encode(fast) == encode(replicates_by_row_weights(trials, 0.1, draws))
    assert [type(v) for v in fast.auc] == [type(v) for v in slow_replicates(scores, labels, 0.1)["auc"]]


@pytest.mark.parametrize("n_codes", [1, 2, 3, 19_999, 1 << 16, (1 << 16) + 1])
def test_the_opencv_counter_counts_as_bincount_does(n_codes, monkeypatch):
    """``code_counter``'s histogram path gives ``np.bincount``'s integers, length and dtype; past 2**16 codes, or
    below ``HISTOGRAM_MIN_ROWS`` rows, it is ``np.bincount`` itself."""
    import cv2

    calls, calc_hist = [], cv2.calcHist
    monkeypatch.setattr(cv2, "calcHist", lambda *args: calls.append(1) or calc_hist(*args))
    rng = np.random.default_rng(n_codes)
    codes = rng.integers(0, n_codes, 50_000).astype(np.int32)
    codes[:2] = 0, n_codes - 1  # both ends of the range
    drawn = rng.integers(0, codes.size, codes.size)
    expected = np.bincount(codes.take(drawn), minlength=n_codes)
    for min_rows, used in ((0, n_codes <= 1 << 16), (codes.size + 1, False)):
        monkeypatch.setattr(bootstrap, "HISTOGRAM_MIN_ROWS", min_rows)
        calls.clear()
        got = bootstrap.code_counter(codes, n_codes)(drawn)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        assert bool(calls) == used
