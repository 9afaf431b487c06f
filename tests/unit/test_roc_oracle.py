"""ROC curve and ROC metrics against independent oracles (docs/detection.md §6.1-§6.5, §6.8).

* scikit-learn (modern) is the oracle for the ROC points and the AUC. Modern sklearn always
  prepends the origin; ours (0.19 semantics) prepends it only when the first point has false
  alarms, so sklearn's first point is removed when our curve does not start at the origin.
* partial AUC, EER and CDR@FAR are checked against plain loops over the ROC points, written
  straight from docs/detection.md §6.
* The U-DET unit examples and the docs/detection.md §6.8 degenerate cases are checked with exact values and types.

Tolerances: 1e-12 absolute wherever two different summation orders meet (numpy pairwise sums vs
sequential Python sums, sklearn's trapezoid vs ours); exact otherwise (types always exact).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from mfscore.detection.roc import Roc, auc, cdr_at_far, drop_collinear, eer, partial_auc, roc_curve

TOL = 1e-12  # absolute; see module docstring


def random_tied_cases(n_cases: int, seed: int):
    """(scores, labels) with many ties: scores rounded to 1 or 2 decimals, both classes present."""
    rng = np.random.default_rng(seed)
    for case in range(n_cases):
        n = int(rng.integers(5, 2001)) if case % 4 else int(rng.integers(5, 40))
        p_target = rng.uniform(0.05, 0.95)
        labels = (rng.random(n) < p_target).astype(np.int64)
        labels[rng.integers(n)] = 1
        labels[rng.integers(n)] = 0
        if labels.sum() in (0, n):  # both positions drawn the same: force both classes
            labels[0], labels[-1] = 1, 0
        shift = rng.uniform(0.0, 1.5)
        raw = rng.normal(size=n) * 0.3 + 0.5 + shift * labels * rng.uniform(0, 1)
        scores = np.round(raw, int(rng.integers(1, 3)))
        yield scores, labels


CASES = list(random_tied_cases(200, seed=20240601))


def our_points_vs_sklearn(scores, labels):
    roc = roc_curve(scores, labels)
    sk_fpr, sk_tpr, sk_thr = sk_roc_curve(labels, scores, drop_intermediate=True)
    # sklearn always prepends (0, 0) with threshold inf; ours only when the first point has false alarms.
    assert sk_fpr[0] == 0 and sk_tpr[0] == 0 and np.isinf(sk_thr[0])
    top_group_has_false_alarm = bool((labels[scores == scores.max()] == 0).any())
    if not top_group_has_false_alarm:  # 0.19 rule: no origin, the curve starts at (0, tpr>0)
        assert roc.fpr[0] == 0 and roc.tpr[0] > 0
        sk_fpr, sk_tpr, sk_thr = sk_fpr[1:], sk_tpr[1:], sk_thr[1:]
        our_thr = roc.thresholds
    else:
        assert roc.fpr[0] == 0 and roc.tpr[0] == 0
        our_thr = roc.thresholds[1:]
        sk_thr = sk_thr[1:]
    return roc, sk_fpr, sk_tpr, sk_thr, our_thr


@pytest.mark.parametrize("case", range(len(CASES)))
def test_roc_points_and_auc_match_sklearn(case):
    scores, labels = CASES[case]
    roc, sk_fpr, sk_tpr, sk_thr, our_thr = our_points_vs_sklearn(scores, labels)
    assert roc.fpr.shape == sk_fpr.shape
    np.testing.assert_allclose(roc.fpr, sk_fpr, rtol=0, atol=TOL)
    np.testing.assert_allclose(roc.tpr, sk_tpr, rtol=0, atol=TOL)
    np.testing.assert_array_equal(our_thr, sk_thr)  # thresholds are input scores: exact
    assert roc.n_target == int(labels.sum()) and roc.n_nontarget == int((1 - labels).sum())
    a = auc(roc)
    assert isinstance(a, float)
    assert abs(a - roc_auc_score(labels, scores)) <= TOL


def test_cases_cover_both_origin_rules():
    """The random cases must exercise curves with and without a prepended origin."""
    starts_at_origin = [bool((l[s == s.max()] == 0).any()) for s, l in CASES]
    assert any(starts_at_origin) and not all(starts_at_origin)


def test_origin_prepended_only_when_first_group_has_false_alarms():
    # top group is target-only -> no origin; threshold of first point = top score
    r = roc_curve([0.9, 0.5, 0.5, 0.1], [1, 0, 1, 0])
    assert (r.fpr[0], r.tpr[0]) == (0.0, 0.5) and r.thresholds[0] == 0.9
    # top group mixed -> origin with threshold max + 1
    r = roc_curve([0.9, 0.9, 0.5, 0.1], [1, 0, 1, 0])
    assert (r.fpr[0], r.tpr[0]) == (0.0, 0.0) and r.thresholds[0] == pytest.approx(1.9, abs=0)
    # top group non-target-only -> origin
    r = roc_curve([0.9, 0.5], [0, 1])
    assert list(r.fpr) == [0.0, 1.0, 1.0] and list(r.tpr) == [0.0, 0.0, 1.0]


def test_drop_collinear_matches_second_difference_rule():
    fps = np.array([0, 1, 2, 3, 3, 3, 4])
    tps = np.array([1, 1, 1, 1, 2, 3, 3])
    # interior points 1, 2 (horizontal run) and 4 (vertical run) are collinear with their neighbours
    assert list(drop_collinear(fps, tps)) == [0, 3, 5, 6]
    assert list(drop_collinear(fps[:2], tps[:2])) == [0, 1]


# --- oracles written from docs/detection.md §6 ---------------------------------------------------

def oracle_partial_auc(fpr, tpr, stop):
    """docs/detection.md §6.3: trapezoids over the leading segments whose right endpoint FPR <= stop; int 0 if none."""
    total = 0
    for i in range(len(fpr) - 1):
        if not (fpr[i + 1] <= stop):  # NaN never qualifies
            break
        total = total + (fpr[i + 1] - fpr[i]) * (tpr[i + 1] + tpr[i]) / 2
    return total  # stays the int 0 when no segment qualifies


def oracle_eer(fpr, tpr):
    """docs/detection.md §6.4: first argmin of |FPR - FNR|; NaN if the gaps are NaN."""
    gaps = [abs(f - (1 - t)) for f, t in zip(fpr, tpr)]
    if not gaps or all(math.isnan(g) for g in gaps):
        return math.nan
    best = None
    for k, g in enumerate(gaps):
        if best is None or g < gaps[best]:
            best = k
    return (fpr[best] + (1 - tpr[best])) / 2


def oracle_cdr(fpr, tpr, stop):
    """docs/detection.md §6.5: interpolated TPR at FPR=stop over the points (already in stable FPR order)."""
    if any(math.isnan(v) for v in list(fpr) + list(tpr)):
        return math.nan
    pts = list(zip(fpr, tpr))
    for x, y in pts:  # exact match: the first such point
        if x == stop:
            return float(y)
    left, right = (0.0, 0.0), None
    for i, (x, y) in enumerate(pts):
        if x < stop:
            left = (x, y)
            right = pts[i + 1] if i + 1 < len(pts) else (1.0, 1.0)
    if right is None:  # no point below: left (0,0), right the first point
        right = pts[0]
    (x1, y1), (x2, y2) = left, right
    if x1 == x2:
        return float((y1 + y2) / 2)
    return float(y1 + (y2 - y1) * (stop - x1) / (x2 - x1))


def same(a, b, tol=TOL):
    """Equal within tol, NaN equal to NaN, and the same Python type (int 0 vs float)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return abs(a - b) <= tol


def stops_for(roc, rng):
    """Stops hitting ROC FPRs exactly (exact-match rule) and falling between them."""
    fprs = list(roc.fpr[np.isfinite(roc.fpr)])
    picks = [fprs[int(rng.integers(len(fprs)))] for _ in range(3)] if fprs else []
    return [0.0, 1.0, 0.1, 0.05, 0.5, *rng.uniform(0, 1, 3), *picks]


@pytest.mark.parametrize("case", range(0, len(CASES), 2))
def test_partial_auc_eer_cdr_against_loops(case):
    scores, labels = CASES[case]
    roc = roc_curve(scores, labels)
    fpr, tpr = [float(v) for v in roc.fpr], [float(v) for v in roc.tpr]
    rng = np.random.default_rng(case)
    for stop in stops_for(roc, rng):
        stop = float(stop)
        assert same(partial_auc(roc, stop), oracle_partial_auc(fpr, tpr, stop)), stop
        assert same(cdr_at_far(roc, stop), oracle_cdr(fpr, tpr, stop)), stop
    got = eer(roc)
    assert isinstance(got, float)
    assert got == oracle_eer(fpr, tpr)  # same point, same formula: exact


def test_loops_on_degenerate_curves():
    """The loop oracles and the implementation agree on one-class curves too."""
    for scores, labels in [([0.3, 0.2], [1, 1]), ([0.3, 0.2], [0, 0]), ([0.5] * 5, [1, 0, 1, 0, 0]),
                           ([0.1, 0.9], [1, 0])]:
        roc = roc_curve(scores, labels)
        fpr, tpr = [float(v) for v in roc.fpr], [float(v) for v in roc.tpr]
        for stop in (0.0, 0.1, 0.5, 1.0):
            assert same(partial_auc(roc, stop), oracle_partial_auc(fpr, tpr, stop))
            assert same(cdr_at_far(roc, stop), oracle_cdr(fpr, tpr, stop))
        assert same(eer(roc), float(oracle_eer(fpr, tpr)))


# --- U-DET unit examples (docs/detection.md §6.3-§6.5) ---------------------------------------------------------

def test_unit_example_four_scores():
    roc = roc_curve([0.0345, 0.0209, 0.0165, 0.0149], [1, 0, 1, 0])  # Y, N, Y, N
    assert list(roc.fpr) == [0, 0.5, 0.5, 1]  # exact: small integer ratios
    assert list(roc.tpr) == [0.5, 0.5, 1, 1]
    assert auc(roc) == 0.75 and isinstance(auc(roc), float)
    got = [partial_auc(roc, s) for s in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert got == [0, 0, 0.25, 0.25, 0.25]
    assert [type(v) for v in got] == [int, int, float, float, float]
    assert eer(roc) == 0.5
    assert cdr_at_far(roc, 0.5) == 0.5  # exact FPR match on a vertical segment: first (lowest) point


def test_unit_example_seven_tied_scores():
    # 1 target alone on top, 2 non-targets tied, then 1 non-target tied with 2 targets, 1 non-target last
    scores = [0.9, 0.8, 0.8, 0.5, 0.5, 0.5, 0.1]
    labels = [1, 0, 0, 0, 1, 1, 0]
    roc = roc_curve(scores, labels)
    np.testing.assert_allclose(roc.fpr, [0, 0.5, 0.75, 1], rtol=0, atol=0)
    np.testing.assert_allclose(roc.tpr, [1 / 3, 1 / 3, 1, 1], rtol=0, atol=0)
    assert auc(roc) == pytest.approx(7 / 12, abs=TOL)
    got = [partial_auc(roc, s) for s in (0.2, 0.4, 0.6, 0.8, 1.0)]
    assert got[:2] == [0, 0] and [type(v) for v in got[:2]] == [int, int]
    np.testing.assert_allclose(got[2:], [1 / 6, 1 / 3, 7 / 12], rtol=0, atol=TOL)
    assert all(type(v) is float for v in got[2:])
    assert eer(roc) == pytest.approx(7 / 12, abs=TOL)


# --- degenerate inputs (docs/detection.md §6.8) ---------------------------------------------------------------

def test_all_scores_equal():
    roc = roc_curve([0.4] * 7, [1, 0, 1, 0, 1, 0, 0])
    assert auc(roc) == 0.5 and type(auc(roc)) is float
    assert eer(roc) == 0.5
    assert partial_auc(roc, 0.1) == 0 and type(partial_auc(roc, 0.1)) is int
    assert cdr_at_far(roc, 0.1) == pytest.approx(0.1, abs=TOL)


def test_no_nontargets():
    roc = roc_curve([0.9, 0.2], [1, 1])
    assert auc(roc) == 0 and type(auc(roc)) is int
    assert math.isnan(eer(roc))
    assert math.isnan(cdr_at_far(roc, 0.1))
    assert partial_auc(roc, 0.1) == 0 and type(partial_auc(roc, 0.1)) is int


def test_no_targets():
    roc = roc_curve([0.9, 0.2, 0.2], [0, 0, 0])
    assert isinstance(auc(roc), float) and math.isnan(auc(roc))
    assert math.isnan(eer(roc))
    assert math.isnan(cdr_at_far(roc, 0.1))


def test_one_target_below_one_nontarget():
    roc = roc_curve([0.1, 0.9], [1, 0])
    assert auc(roc) == 0.0 and type(auc(roc)) is float
    assert eer(roc) == 1.0
    assert partial_auc(roc, 0.1) == 0 and type(partial_auc(roc, 0.1)) is int
    assert cdr_at_far(roc, 0.1) == 0.0


def test_perfect_separation():
    roc = roc_curve([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0])
    assert auc(roc) == 1.0 and eer(roc) == 0.0 and cdr_at_far(roc, 0.1) == 1.0
    p = partial_auc(roc, 0.1)  # zero-width segment (0,.5)->(0,1) qualifies: float 0.0 (test c4_1)
    assert p == 0.0 and type(p) is float


def test_roc_is_a_frozen_dataclass_with_fnr():
    roc = roc_curve([0.3, 0.1], [1, 0])
    assert isinstance(roc, Roc)
    np.testing.assert_array_equal(roc.fnr, 1 - roc.tpr)
