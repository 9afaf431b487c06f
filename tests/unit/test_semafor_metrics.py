"""SemaFor plan metrics (mfscore.detection.semafor) against brute force and scikit-learn.

Tolerances: values picked from the same integer counts are compared exactly; areas and
McClish-standardised values to 1e-12 absolute.
"""

from __future__ import annotations

import math
from dataclasses import astuple
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import auc as sk_auc
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from mfscore.detection.roc import auc, cdr_at_far, roc_curve
from mfscore.detection.semafor import (
    OperatingPoint,
    confusion_at,
    dynamic_eer_threshold,
    partial_auc_interpolated,
    pd_at_far,
    roc_all_thresholds,
    semafor_report,
)

AREA_TOL = 1e-12


@st.composite
def trials(draw, both_classes: bool = True, max_size: int = 40):
    """(scores, labels); half the time scores are small integers, so ties are frequent."""
    score = draw(
        st.sampled_from(
            [
                st.integers(-4, 4).map(float),
                st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False),
            ]
        )
    )
    pairs = draw(st.lists(st.tuples(score, st.integers(0, 1)), max_size=max_size))
    if both_classes:  # guarantee one target and one non-target
        pairs += [(draw(score), 1), (draw(score), 0)]
    s = np.array([p[0] for p in pairs], dtype=np.float64)
    y = np.array([p[1] for p in pairs], dtype=np.int64)
    return s, y


def brute_vertices(s, y, *, with_origin: bool):
    """(threshold, TP, FP) for every distinct score (score >= threshold positive), by counting."""
    pts = [(math.inf, 0, 0)] if with_origin else []
    for th in np.unique(s):
        pos = s >= th
        pts.append((float(th), int(np.sum(pos & (y == 1))), int(np.sum(pos & (y == 0)))))
    return pts


def same(a, b) -> bool:
    """Equal, or both NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def same_op(a: OperatingPoint, b: OperatingPoint) -> bool:
    return all(same(u, v) for u, v in zip(astuple(a), astuple(b)))


# ---------------------------------------------------------------- p(D) at FAR (docs/metrics.md §1.3)


@given(trials(), st.floats(0.0, 1.0))
def test_step_pd_matches_brute_force_over_every_threshold(data, drawn_far):
    s, y = data
    n_t, n_nt = int(y.sum()), int((1 - y).sum())
    full = roc_all_thresholds(s, y)
    vertices = brute_vertices(s, y, with_origin=True)
    # every attainable FAR exactly, plus one arbitrary FAR and the plan's two
    for far in [k / n_nt for k in range(n_nt + 1)] + [drawn_far, 0.08, 0.1]:
        expected = max(tp / n_t for _, tp, fp in vertices if fp / n_nt <= far)
        assert pd_at_far(full, far, method="step") == expected
        # on MediScore's ROC (collinear points dropped) step can only be lower: never higher
        assert pd_at_far(roc_curve(s, y), far, method="step") <= expected


@given(trials(), st.floats(0.0, 1.0))
def test_interpolated_pd_is_mediscore_cdr_at_far(data, far):
    s, y = data
    roc = roc_curve(s, y)
    assert same(pd_at_far(roc, far), cdr_at_far(roc, far))
    assert same(pd_at_far(roc, far, method="interpolate"), cdr_at_far(roc, far))


def test_step_needs_every_threshold_collinear_example():
    # one target at 10, then three groups of (target, non-target) tied at 9, 8, 7: the groups
    # add equal steps, so roc_curve drops the two middle vertices (1/3, .5) and (2/3, .75)
    s = np.array([10, 9, 9, 8, 8, 7, 7], dtype=float)
    y = np.array([1, 1, 0, 1, 0, 1, 0])
    roc, full = roc_curve(s, y), roc_all_thresholds(s, y)
    assert roc.fpr.size == 2 and full.fpr.size == 4
    assert pd_at_far(full, 0.5, method="step") == 0.5
    assert pd_at_far(roc, 0.5, method="step") == 0.25
    assert pd_at_far(roc, 0.5) == pytest.approx(0.625, abs=1e-15)
    rep = semafor_report(s, y, fars=(0.5,))
    assert rep["pD_step@FAR0.5"] == 0.5 and rep["pD@FAR0.5"] == pd_at_far(roc, 0.5)


def test_pd_at_far_missing_class_and_bad_arguments():
    only_targets = roc_all_thresholds([1.0, 2.0], [1, 1])
    assert math.isnan(pd_at_far(only_targets, 0.08, method="step"))
    assert math.isnan(pd_at_far(only_targets, 0.08))
    roc = roc_curve([1.0, 2.0], [0, 1])
    with pytest.raises(ValueError):
        pd_at_far(roc, 0.08, method="nearest")
    with pytest.raises(ValueError):
        pd_at_far(roc, 1.5)


# ---------------------------------------------------------------- dynamic EER threshold (docs/metrics.md §1.4)


@given(trials())
def test_dynamic_threshold_matches_brute_force(data):
    s, y = data
    n_t, n_nt = int(y.sum()), int((1 - y).sum())

    def key(v):  # |FNR - FAR| exactly, then lower FAR, then higher p(D)
        _, tp, fp = v
        return abs(Fraction(n_t - tp, n_t) - Fraction(fp, n_nt)), Fraction(fp, n_nt), -tp

    th, tp, fp = min(brute_vertices(s, y, with_origin=False), key=key)
    op = dynamic_eer_threshold(s, y)
    assert op.threshold == th
    assert (op.tp, op.fp, op.fn, op.tn) == (tp, fp, n_t - tp, n_nt - fp)
    assert op.pd == tp / n_t and op.far == fp / n_nt
    assert op.bacc == pytest.approx((tp / n_t + 1 - fp / n_nt) / 2, abs=1e-15)
    assert op == confusion_at(s, y, th)


def test_dynamic_threshold_tie_goes_to_lower_far():
    # groups: 3 -> {t, t, nt}: FAR .25, FNR .5; 2 -> {t, nt}: FAR .5, FNR .25; 1 -> {t, nt, nt}
    s = np.array([3, 3, 3, 2, 2, 1, 1, 1], dtype=float)
    y = np.array([1, 1, 0, 1, 0, 1, 0, 0])
    assert dynamic_eer_threshold(s, y) == OperatingPoint(3.0, 2, 1, 2, 3, 0.5, 0.25, 0.625)


def test_dynamic_threshold_equal_far_tie_goes_to_higher_pd():
    # nt at 3, t at 2, nt at 1: vertices 3 (FAR .5, FNR 1) and 2 (FAR .5, FNR 0) both have gap .5
    op = dynamic_eer_threshold([3.0, 2.0, 1.0], [0, 1, 0])
    assert (op.threshold, op.tp, op.fp, op.pd, op.far) == (2.0, 1, 1, 1.0, 0.5)


def test_llr_equal_to_threshold_is_positive():
    op = confusion_at([0.0, 0.0, -1.0, 1.0], [1, 0, 1, 0], 0.0)
    assert (op.tp, op.fp, op.fn, op.tn) == (1, 2, 1, 0)


@pytest.mark.parametrize(
    "scores, labels, counts",
    [
        ([1.0, 2.0, 2.0], [1, 1, 1], (0, 0, 3, 0)),
        ([1.0, 5.0], [0, 0], (0, 0, 0, 2)),
        ([], [], (0, 0, 0, 0)),
    ],
)
def test_dynamic_threshold_missing_class(scores, labels, counts):
    op = dynamic_eer_threshold(scores, labels)
    assert (op.tp, op.fp, op.fn, op.tn) == counts
    assert all(math.isnan(v) for v in (op.threshold, op.pd, op.far, op.bacc))


def test_confusion_at_missing_class_gives_nan_rate_only_where_undefined():
    op = confusion_at([1.0, 2.0, 3.0], [0, 0, 0], 2.0)
    assert (op.tp, op.fp, op.fn, op.tn) == (0, 2, 0, 1)
    assert math.isnan(op.pd) and op.far == 2 / 3 and math.isnan(op.bacc)


# ---------------------------------------------------------------- partial AUC (docs/metrics.md §1.5)


def sklearn_clipped_area(s, y, far_max):
    """Area of sklearn's full ROC polygon cut at far_max, built point by point."""
    fpr, tpr, _ = sk_roc_curve(y, s, drop_intermediate=False)
    inside = fpr <= far_max  # keeps every point of a vertical run sitting at far_max
    x, t = list(fpr[inside]), list(tpr[inside])
    if x[-1] < far_max:  # close the polygon on the segment crossing far_max
        j = int(np.flatnonzero(~inside)[0])
        x0, y0, x1, y1 = fpr[j - 1], tpr[j - 1], fpr[j], tpr[j]
        x.append(far_max)
        t.append(y0 + (y1 - y0) * (far_max - x0) / (x1 - x0))
    return sk_auc(x, t)


@given(trials(), st.one_of(st.floats(0.01, 0.99), st.sampled_from([0.08, 0.1])), st.integers(0, 40))
def test_partial_auc_matches_sklearn(data, drawn, k):
    s, y = data
    n_nt = int((1 - y).sum())
    roc = roc_curve(s, y)
    at_vertex = (1 + k % (n_nt - 1)) / n_nt if n_nt > 1 else drawn  # an attainable FAR in (0, 1)
    for far_max in (drawn, at_vertex):
        raw, norm = partial_auc_interpolated(roc, far_max)
        assert abs(raw - sklearn_clipped_area(s, y, far_max)) <= AREA_TOL
        assert norm == raw / far_max
        # the collinear points dropped by roc_curve change nothing
        assert abs(raw - partial_auc_interpolated(roc_all_thresholds(s, y), far_max)[0]) <= AREA_TOL
        min_area, max_area = far_max**2 / 2, far_max
        mcclish = 0.5 * (1 + (raw - min_area) / (max_area - min_area))
        assert abs(roc_auc_score(y, s, max_fpr=far_max) - mcclish) <= AREA_TOL


def test_partial_auc_vertical_run_at_far_max():
    # ROC (0, .2), (.5, .2), then a vertical run at FPR .5 up to .8: area to .5 is .5 * .2
    s = np.array([9, 8, 7, 6, 5, 4, 3], dtype=float)
    y = np.array([1, 0, 1, 1, 1, 0, 1])
    full = roc_all_thresholds(s, y)
    assert np.count_nonzero(full.fpr == 0.5) == 4
    for roc in (roc_curve(s, y), full):
        raw, norm = partial_auc_interpolated(roc, 0.5)
        assert raw == pytest.approx(0.1, abs=1e-15) and norm == pytest.approx(0.2, abs=1e-15)


@given(trials())
def test_partial_auc_at_one_is_full_auc(data):
    roc = roc_curve(*data)
    raw, norm = partial_auc_interpolated(roc, 1.0)
    assert abs(raw - auc(roc)) <= AREA_TOL and norm == raw


def test_partial_auc_missing_class_and_bad_far_max():
    raw, norm = partial_auc_interpolated(roc_curve([1.0, 2.0], [0, 0]), 0.1)
    assert math.isnan(raw) and math.isnan(norm)
    with pytest.raises(ValueError):
        partial_auc_interpolated(roc_curve([1.0, 2.0], [0, 1]), 0.0)


# ---------------------------------------------------------------- report


def test_report_columns_and_values():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 300)
    s = rng.normal(size=300) + 1.5 * y
    rep = semafor_report(s, y, fars=(0.08, 0.1), pauc_far=0.1)
    assert list(rep) == [
        "pD@FAR0.08", "pD_step@FAR0.08", "pD@FAR0.1", "pD_step@FAR0.1",
        "EER", "THRESHOLD_EER", "bACC@EER", "pD@EER", "FAR@EER",
        "TP@EER", "FP@EER", "FN@EER", "TN@EER",
        "pAUC@0.1", "pAUC_norm@0.1", "N_TARGET", "N_NONTARGET",
    ]  # fmt: skip
    roc, op = roc_curve(s, y), dynamic_eer_threshold(s, y)
    assert rep["pD@FAR0.08"] == cdr_at_far(roc, 0.08)
    assert rep["pD_step@FAR0.1"] == pd_at_far(roc_all_thresholds(s, y), 0.1, method="step")
    assert rep["EER"] == pytest.approx((op.far + 1 - op.pd) / 2, abs=1e-15)
    assert rep["bACC@EER"] == pytest.approx(1 - rep["EER"], abs=1e-12)  # identity at θ*
    assert (rep["THRESHOLD_EER"], rep["TP@EER"], rep["TN@EER"]) == (op.threshold, op.tp, op.tn)
    assert rep["pAUC@0.1"] == partial_auc_interpolated(roc, 0.1)[0]
    assert (rep["N_TARGET"], rep["N_NONTARGET"]) == (int(y.sum()), int((1 - y).sum()))


# ---------------------------------------------------------------- row order


@settings(max_examples=60)
@given(trials(both_classes=False), st.data())
def test_every_metric_is_invariant_to_row_order(data, draw):
    s, y = data
    perm = np.array(draw.draw(st.permutations(range(s.size))), dtype=np.intp)
    ps, py = s[perm], y[perm]
    a, b = semafor_report(s, y, fars=(0.08, 0.1)), semafor_report(ps, py, fars=(0.08, 0.1))
    assert list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    th = float(s[0]) if s.size else 0.0
    assert same_op(confusion_at(s, y, th), confusion_at(ps, py, th))
    assert same_op(dynamic_eer_threshold(s, y), dynamic_eer_threshold(ps, py))
    for roc_a, roc_b in ((roc_curve(s, y), roc_curve(ps, py)), (roc_all_thresholds(s, y), roc_all_thresholds(ps, py))):
        for far in (0.08, 0.3):
            assert same(pd_at_far(roc_a, far, method="step"), pd_at_far(roc_b, far, method="step"))
            assert same(pd_at_far(roc_a, far), pd_at_far(roc_b, far))
        assert all(same(u, v) for u, v in zip(partial_auc_interpolated(roc_a), partial_auc_interpolated(roc_b)))
