"""Cllr / minCllr (mfscore.detection.calibration), an extension outside the SemaFor plan (docs/metrics.md §1.8).

Tolerances: 1e-12 absolute unless stated (values are O(1) sums of O(1) terms).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression

from mfscore.detection.calibration import cllr, min_cllr

TOL = 1e-12

pytestmark = pytest.mark.filterwarnings("error")  # 0·inf or log(0) must not even warn


@st.composite
def trials(draw, score=None, max_size: int = 40):
    """(llrs, labels) with both classes; by default half the draws use small integers (ties)."""
    if score is None:
        score = draw(
            st.sampled_from(
                [st.integers(-4, 4).map(float), st.floats(-60, 60, allow_nan=False, allow_subnormal=False)]
            )
        )
    pairs = draw(st.lists(st.tuples(score, st.integers(0, 1)), max_size=max_size))
    pairs += [(draw(score), 1), (draw(score), 0)]
    return np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs])


def cllr_loop(llrs, labels):
    tgt = [math.log2(1 + math.exp(-v)) for v, l in zip(llrs, labels) if l == 1]
    non = [math.log2(1 + math.exp(v)) for v, l in zip(llrs, labels) if l == 0]
    return 0.5 * (sum(tgt) / len(tgt) + sum(non) / len(non))


# ---------------------------------------------------------------- Cllr


def test_cllr_perfect_and_well_scaled_is_near_zero():
    y = np.array([1] * 5 + [0] * 7)
    llr = np.where(y == 1, 20.0, -20.0)
    assert cllr(llr, y) == pytest.approx(math.log2(1 + math.exp(-20)), rel=1e-12)
    assert 0 < cllr(llr, y) < 1e-8


def test_cllr_of_zero_llrs_is_one():
    assert abs(cllr(np.zeros(9), [1, 0, 0, 1, 1, 0, 1, 0, 0]) - 1.0) <= TOL


def test_cllr_matches_per_trial_loop():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    llr = rng.normal(size=500) * 4 + 2 * (2 * y - 1)
    assert abs(cllr(llr, y) - cllr_loop(llr, y)) <= TOL


def test_cllr_huge_llrs_do_not_overflow():
    # a confident miss costs |llr| / ln 2 bits: 1000 / ln 2 for the target at -1000
    got = cllr([-1000.0, -1000.0], [1, 0])
    assert got == pytest.approx(0.5 * 1000 / math.log(2), rel=1e-12)


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0], []])
def test_missing_class_is_nan(labels):
    llr = np.arange(len(labels), dtype=float)
    assert math.isnan(cllr(llr, labels)) and math.isnan(min_cllr(llr, labels))


# ---------------------------------------------------------------- minCllr


def min_cllr_reference(scores, labels):
    """scikit-learn's isotonic fit (which pools tied x) then a per-trial Cllr loop."""
    p = IsotonicRegression(y_min=0.0, y_max=1.0).fit(scores, labels.astype(float)).predict(scores)
    n_t, n_nt = int(labels.sum()), int((1 - labels).sum())
    tgt, non = [], []
    for pi, l in zip(p, labels):
        if l == 1:  # e^-llr = (1 - p)/p · Nt/Nnt; p == 0 cannot happen for a target
            tgt.append(math.log2(1 + (1 - pi) / pi * n_t / n_nt))
        else:
            non.append(math.log2(1 + pi / (1 - pi) * n_nt / n_t))
    return 0.5 * (sum(tgt) / n_t + sum(non) / n_nt)


def test_min_cllr_hand_example():
    # PAV posteriors 0, .5, .5, 1 with equal priors: LLRs -inf, 0, 0, +inf -> ½(½ + ½)
    assert min_cllr([1.0, 2.0, 3.0, 4.0], [0, 1, 0, 1]) == 0.5


# sklearn merges x values closer than ~1e-15 as ties, so keep distinct scores >= 1e-3 apart
@given(st.one_of(trials(score=st.integers(-4, 4).map(float)), trials(score=st.integers(-10**5, 10**5).map(lambda v: v / 1e3))))
def test_min_cllr_matches_sklearn_isotonic_reference(data):
    s, y = data
    assert abs(min_cllr(s, y) - min_cllr_reference(s, y)) <= 1e-9  # sklearn pools in float


@given(trials())
def test_min_cllr_never_exceeds_cllr(data):
    s, y = data
    m = min_cllr(s, y)
    assert 0.0 <= m <= cllr(s, y) + TOL


@given(
    st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=20),
    st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=20),
)
def test_min_cllr_of_separable_scores_is_zero(low, high):
    # every non-target strictly below every target, however the scores are scaled
    non = np.array(low) - 101.0
    tgt = np.array(high) + 101.0
    s = np.r_[non, tgt]
    y = np.r_[np.zeros(non.size, int), np.ones(tgt.size, int)]
    assert min_cllr(s, y) == 0.0


TRANSFORMS = {
    "cube": lambda s: s**3,
    "exp": lambda s: np.exp(s / 5.0),
    "arctan": lambda s: np.arctan(s) * 1e-3,
    "affine": lambda s: 2.0 * s - 7.0,
}


@given(trials(score=st.integers(-20, 20).map(float)), st.sampled_from(sorted(TRANSFORMS)))
def test_min_cllr_invariant_to_increasing_transform(data, name):
    s, y = data
    t = TRANSFORMS[name](s)
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(t, kind="stable"))  # order kept
    assert abs(min_cllr(t, y) - min_cllr(s, y)) <= TOL


@given(st.integers(1, 50), st.integers(1, 50), st.floats(-1e6, 1e6, allow_nan=False))
def test_min_cllr_of_one_tied_score_is_one(n_t, n_nt, value):
    # a single block: posterior = prior, prior-free LLR = 0 for every trial
    y = np.r_[np.ones(n_t, int), np.zeros(n_nt, int)]
    assert abs(min_cllr(np.full(y.size, value), y) - 1.0) <= TOL


# ---------------------------------------------------------------- row order


@settings(max_examples=60)
@given(trials(), st.data())
def test_invariant_to_row_order(data, draw):
    s, y = data
    perm = np.array(draw.draw(st.permutations(range(s.size))), dtype=np.intp)
    assert abs(cllr(s, y) - cllr(s[perm], y[perm])) <= TOL
    assert abs(min_cllr(s, y) - min_cllr(s[perm], y[perm])) <= TOL
