"""The SemaFor plan's detection metrics (the SemaFor evaluation-3 design document, docs/metrics.md §1) against
independent implementations written from the plan, issue 15.

References, none of which calls mfscore's metric code:
- pD@FAR: scikit-learn's ``roc_curve`` (every threshold), read as MediScore's CDR@FAR (first vertex
  on an exact FAR, else linear interpolation) and as the step reading (largest pD with FAR <= f);
- θ*, pD, FAR, bACC: a loop over every distinct score with a plain numpy confusion sum;
- pAUC: ``roc_auc_score(max_fpr=f)`` with McClish's standardisation inverted;
- buckets: a plain numpy confusion at the whole set's θ*;
- intervals: a loop that resamples rows with ``RandomState(77)`` and recomputes each metric with the
  references above.

Tolerances: counts, thresholds, step pD, pD, FAR and bACC exact (the same integer ratios); the
interpolated pD and the areas to 1e-12 absolute. Report cells are compared as formatted text.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from output_files import beside_reports
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from mfscore.cli.main import build_parser, main
from mfscore.detection.bootstrap import semafor_intervals, semafor_replicates
from mfscore.detection.calibration import cllr, min_cllr
from mfscore.detection.scorer import DetectionOptions, score_subset
from mfscore.detection.semafor import bucket_report, semafor_report
from mfscore.detection.subsets import Subset
from mfscore.reports import plots
from mfscore.reports.detection_outputs import semafor_row
from mfscore.reports.detection_plots import semafor_panels
from mfscore.reports.detection_report import format_value
from mfscore.sample_data.detection import generate_detection_dataset

TOL = 1e-12
FARS = (0.08, 0.1)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NAN = float("nan")


# ---------------------------------------------------------------- references


def sk_pd_interpolated(s, y, far):
    """MediScore's CDR@FAR on scikit-learn's ROC: the first point exactly at ``far``, else the line
    between the last point below it and the next one (far in (0, 1])."""
    fpr, tpr, _ = sk_roc_curve(y, s, drop_intermediate=False)
    exact = np.flatnonzero(fpr == far)
    if exact.size:
        return float(tpr[exact[0]])
    i = int(np.flatnonzero(fpr < far)[-1])
    x0, x1, y0, y1 = fpr[i], fpr[i + 1], tpr[i], tpr[i + 1]
    return float((y0 * (x1 - far) + y1 * (far - x0)) / (x1 - x0))


def sk_pd_step(s, y, far):
    """The conservative reading (docs/metrics.md §1.3 (a)): the largest pD over thresholds with FAR <= far."""
    fpr, tpr, _ = sk_roc_curve(y, s, drop_intermediate=False)
    return float(tpr[fpr <= far].max())


def sk_raw_pauc(s, y, far):
    """Raw area for FAR <= far, from scikit-learn's McClish-standardised partial AUC."""
    std = roc_auc_score(y, s, max_fpr=far)
    lo, hi = far**2 / 2, far
    return lo + (2 * std - 1) * (hi - lo)


def confusion(s, y, theta):
    """(TP, FP, FN, TN) with ``score >= theta`` positive, by plain sums."""
    pos = s >= theta
    tp, fp = int(np.sum(pos & (y == 1))), int(np.sum(pos & (y == 0)))
    return tp, fp, int(np.sum(y == 1)) - tp, int(np.sum(y == 0)) - fp


def rates(tp, fp, fn, tn):
    pd = tp / (tp + fn) if tp + fn else NAN
    far = fp / (fp + tn) if fp + tn else NAN
    return pd, far, (pd + 1.0 - far) / 2.0


def brute_theta_star(s, y):
    """θ* over every distinct score: least |FNR - FAR| (exact), then lower FAR, then higher pD."""
    n_t, n_nt = int(np.sum(y == 1)), int(np.sum(y == 0))

    def key(theta):
        tp, fp, fn, _ = confusion(s, y, theta)
        return abs(Fraction(fn, n_t) - Fraction(fp, n_nt)), Fraction(fp, n_nt), -tp

    return float(min(np.unique(s), key=key))


def both_classes(y):
    return 0 < int(np.sum(y)) < y.size


def reference_metrics(s, y, threshold=None, fars=FARS):
    """Every metric with an interval, by the references; ``threshold`` fixes θ (a bucket)."""
    out = {}
    for f in fars:
        out[f"pD@FAR{f:g}"] = sk_pd_interpolated(s, y, f)
        out[f"pD_step@FAR{f:g}"] = sk_pd_step(s, y, f)
    theta = brute_theta_star(s, y) if threshold is None else threshold
    out["bACC@EER"] = rates(*confusion(s, y, theta))[2]
    out["pAUC@0.1"] = sk_raw_pauc(s, y, 0.1)
    out["pAUC_norm@0.1"] = out["pAUC@0.1"] / 0.1
    return out


def quantile_positions(level, m):
    """docs/detection.md §6.6: lb = round((1 − level)/2, 3), ub = round(1 − lb, 3), positions int(·m)."""
    lb = Decimal(1 - level) / 2
    lb = lb.quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    ub = (1 - lb).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    return int(lb * m), min(int(ub * m), m - 1)


def loop_intervals(s, y, level, threshold=None):
    """Resample rows with RandomState(77) 500 times; drop one-class draws; percentile bounds."""
    rng = np.random.RandomState(77)
    values = {}
    for _ in range(500):
        pos = rng.randint(0, s.size, size=s.size)
        if not both_classes(y[pos]):
            continue
        for name, v in reference_metrics(s[pos], y[pos], threshold).items():
            values.setdefault(name, []).append(v)
    out = {}
    for name, vs in values.items():
        vs = sorted(vs)
        lo, hi = quantile_positions(level, len(vs))
        out[name] = (vs[lo], vs[hi])
    return out


def close(a, b, tol=TOL):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def same(a, b):
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@st.composite
def trials(draw, max_size=40):
    """(scores, labels) with both classes; half the draws use small integers, so ties are frequent."""
    score = draw(st.sampled_from([st.integers(-4, 4).map(float),
                                  st.floats(-50, 50, allow_nan=False, allow_subnormal=False)]))
    pairs = draw(st.lists(st.tuples(score, st.integers(0, 1)), max_size=max_size))
    pairs += [(draw(score), 1), (draw(score), 0)]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def make_dataset(n, decimals, seed, p_target=0.5):
    rng = np.random.RandomState(seed)
    y = (rng.random_sample(n) < p_target).astype(np.int64)
    y[0], y[-1] = 1, 0
    return np.round(rng.normal(size=n) + 1.0 * y, decimals), y


# ---------------------------------------------------------------- every metric against its reference


@settings(max_examples=150, deadline=None)
@given(trials(), st.one_of(st.floats(0.01, 1.0), st.sampled_from(FARS)))
def test_whole_set_metrics_match_references(data, far):
    s, y = data
    fars = (far, *FARS)
    rep = semafor_report(s, y, fars=fars)
    for f in fars:
        assert close(rep[f"pD@FAR{f:g}"], sk_pd_interpolated(s, y, f))
        assert rep[f"pD_step@FAR{f:g}"] == sk_pd_step(s, y, f)
    theta = brute_theta_star(s, y)
    tp, fp, fn, tn = confusion(s, y, theta)
    pd, far_, bacc = rates(tp, fp, fn, tn)
    assert rep["THRESHOLD_EER"] == theta
    assert (rep["TP@EER"], rep["FP@EER"], rep["FN@EER"], rep["TN@EER"]) == (tp, fp, fn, tn)
    assert (rep["pD@EER"], rep["FAR@EER"], rep["bACC@EER"]) == (pd, far_, bacc)
    assert close(rep["pAUC@0.1"], sk_raw_pauc(s, y, 0.1))
    assert close(rep["pAUC_norm@0.1"], sk_raw_pauc(s, y, 0.1) / 0.1)


@settings(max_examples=150, deadline=None)
@given(trials(), st.lists(st.booleans(), min_size=42, max_size=42))
def test_bucket_rates_are_at_the_whole_set_threshold(data, in_bucket):
    s, y = data
    theta = brute_theta_star(s, y)
    b = np.array(in_bucket[: s.size])
    sb, yb = s[b], y[b]
    rep = bucket_report(sb, yb, theta, fars=FARS)
    tp, fp, fn, tn = confusion(sb, yb, theta)
    pd, far, bacc = rates(tp, fp, fn, tn)
    assert rep["THRESHOLD_EER"] == theta
    assert (rep["TP@EER"], rep["FP@EER"], rep["FN@EER"], rep["TN@EER"]) == (tp, fp, fn, tn)
    assert all(same(a, e) for a, e in zip((rep["pD@EER"], rep["FAR@EER"], rep["bACC@EER"]), (pd, far, bacc)))
    own = semafor_report(sb, yb, fars=FARS)  # the bucket's own optimum, kept beside
    for name in ("EER", "THRESHOLD_EER", "bACC@EER", "pD@EER", "FAR@EER"):
        assert same(rep[f"BUCKET_{name}"], own[name])
    if both_classes(yb):
        theta_b = brute_theta_star(sb, yb)
        assert rep["BUCKET_THRESHOLD_EER"] == theta_b
        assert rep["BUCKET_bACC@EER"] == rates(*confusion(sb, yb, theta_b))[2]


# ---------------------------------------------------------------- hand-checkable cases


def test_tie_group_at_the_eer_vertex():
    # score: 5  4  3  3  2  1  1  0          n_t = 4, n_nt = 4
    # class: T  T  T  N  N  T  N  N
    # θ   TP FP  pD   FAR  |FNR-FAR|
    # 5   1  0   .25  0    .75
    # 4   2  0   .5   0    .5
    # 3   3  1   .75  .25  0      <- θ* = 3; the T and the N tied at 3 are both positive (>= θ)
    # 2   3  2   .75  .5   .25
    # bACC = (.75 + 1 - .25)/2 = .75; EER = (.25 + .25)/2 = .25
    s = np.array([5, 4, 3, 3, 2, 1, 1, 0], dtype=float)
    y = np.array([1, 1, 1, 0, 0, 1, 0, 0])
    rep = semafor_report(s, y)
    assert (rep["THRESHOLD_EER"], rep["TP@EER"], rep["FP@EER"], rep["FN@EER"], rep["TN@EER"]) == (3.0, 3, 1, 1, 3)
    assert (rep["pD@EER"], rep["FAR@EER"], rep["bACC@EER"], rep["EER"]) == (0.75, 0.25, 0.75, 0.25)


def test_equal_gaps_at_two_vertices_go_to_the_lower_far():
    # score: 3  2  2  1                       n_t = 2, n_nt = 2
    # class: T  T  N  N
    # θ = 3: TP 1 FP 0 -> FAR 0,  FNR .5, gap .5  <- chosen: same gap, lower FAR
    # θ = 2: TP 2 FP 1 -> FAR .5, FNR 0,  gap .5
    # at θ* = 3: pD .5, FAR 0, bACC .75, EER .25
    rep = semafor_report(np.array([3, 2, 2, 1], dtype=float), np.array([1, 1, 0, 0]))
    assert (rep["THRESHOLD_EER"], rep["pD@EER"], rep["FAR@EER"], rep["bACC@EER"], rep["EER"]) == (3.0, 0.5, 0.0, 0.75, 0.25)


def test_roc_point_exactly_on_far_0_1():
    # score: 10  9  8  7  6  5  4 3 2 1 0 -1 -2 -3      n_t = 4, n_nt = 10
    # class: T   N  T  T  N  T  N N N N N  N  N  N
    # vertices (FAR, pD): 10 (0, .25), 9 (.1, .25), 8 (.1, .5), 7 (.1, .75), 6 (.2, .75), 5 (.2, 1), ...
    # FAR .1 is hit exactly by a vertical run from .25 to .75:
    #   interpolated (MediScore's CDR@FAR): the first vertex at FAR .1 -> .25
    #   step: the largest pD with FAR <= .1 -> .75
    # FAR .08 lies on the flat segment (0, .25)-(.1, .25): both readings .25
    # pAUC@0.1 = .1 * .25 = .025 (the vertical run has no width); normalised .25
    # θ*: gaps .75, .65, .4, .15, .05 (θ = 6), .2, ... -> θ* = 6, TP 3 FP 2: pD .75, FAR .2, bACC .775
    s = np.array([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1, -2, -3], dtype=float)
    y = np.array([1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    rep = semafor_report(s, y)
    assert (rep["pD@FAR0.1"], rep["pD_step@FAR0.1"]) == (0.25, 0.75)
    assert (rep["pD@FAR0.08"], rep["pD_step@FAR0.08"]) == (0.25, 0.25)
    assert (sk_pd_interpolated(s, y, 0.1), sk_pd_step(s, y, 0.1)) == (0.25, 0.75)
    assert close(rep["pAUC@0.1"], 0.025) and close(rep["pAUC_norm@0.1"], 0.25)
    assert close(sk_raw_pauc(s, y, 0.1), 0.025)
    assert (rep["THRESHOLD_EER"], rep["pD@EER"], rep["FAR@EER"]) == (6.0, 0.75, 0.2)
    assert close(rep["bACC@EER"], 0.775)


def test_bucket_hand_case_and_a_bucket_without_non_targets():
    # whole set as in test_tie_group_at_the_eer_vertex: θ* = 3
    # bucket A = rows 0, 3, 4, 5 -> (5 T) (3 N) (2 N) (1 T): at θ = 3: TP 1 FP 1 FN 1 TN 1
    #   pD .5, FAR .5, bACC .5
    #   own vertices: 5 (TP 1 FP 0: FNR .5, FAR 0, gap .5), 3 (TP 1 FP 1: FNR .5, FAR .5, gap 0) -> own θ* = 3
    # bucket B = rows 0, 1, 5 (targets only) -> at θ = 3: TP 2 FN 1: pD 2/3, FAR and bACC undefined
    s = np.array([5, 4, 3, 3, 2, 1, 1, 0], dtype=float)
    y = np.array([1, 1, 1, 0, 0, 1, 0, 0])
    a = bucket_report(s[[0, 3, 4, 5]], y[[0, 3, 4, 5]], 3.0)
    assert (a["TP@EER"], a["FP@EER"], a["FN@EER"], a["TN@EER"]) == (1, 1, 1, 1)
    assert (a["pD@EER"], a["FAR@EER"], a["bACC@EER"], a["BUCKET_THRESHOLD_EER"]) == (0.5, 0.5, 0.5, 3.0)
    b = bucket_report(s[[0, 1, 5]], y[[0, 1, 5]], 3.0)
    assert (b["TP@EER"], b["FN@EER"], b["pD@EER"]) == (2, 1, 2 / 3)
    assert math.isnan(b["FAR@EER"]) and math.isnan(b["bACC@EER"]) and math.isnan(b["BUCKET_THRESHOLD_EER"])
    assert math.isnan(b["pD@FAR0.1"]) and math.isnan(b["pAUC@0.1"])  # no ROC without non-targets


def test_a_missing_class():
    # only targets: no ROC, no θ*; the counts stay: every trial negative at an undefined θ*
    rep = semafor_report(np.array([3.0, 1.0, 2.0]), np.array([1, 1, 1]))
    assert all(math.isnan(rep[k]) for k in ("pD@FAR0.08", "pD_step@FAR0.1", "THRESHOLD_EER", "bACC@EER", "pAUC@0.1"))
    assert (rep["TP@EER"], rep["FN@EER"], rep["N_TARGET"], rep["N_NONTARGET"]) == (0, 3, 3, 0)
    # a bucket of a competition whose θ* is undefined: its rates at θ* are undefined too
    rep = bucket_report(np.array([3.0, 0.0]), np.array([1, 0]), NAN)
    assert math.isnan(rep["pD@EER"]) and math.isnan(rep["bACC@EER"]) and rep["BUCKET_THRESHOLD_EER"] == 3.0
    iv = semafor_intervals(np.array([3.0, 1.0]), np.array([1, 1]), 0.9)
    assert all(math.isnan(i.lower) and math.isnan(i.upper) for i in iv.values())


# ---------------------------------------------------------------- bootstrap intervals


CI_CASES = {
    # name: (scores, labels, fixed threshold or None)
    "n40_ties": (*make_dataset(40, 1, 3), None),
    "n9_one_target": (np.array([0.9, 0.4, 0.4, 0.3, 0.3, 0.2, 0.1, 0.1, 0.0]), np.array([0, 1, 0, 0, 0, 0, 0, 0, 0]), None),
    "n40_bucket": (*make_dataset(40, 1, 5), 0.5),
    "n12_bucket_ties": (np.array([2, 2, 1, 1, 1, 0, 0, 3, 3, 1, 0, 2], dtype=float),
                        np.array([1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0]), 1.0),
}


@pytest.mark.parametrize("name, level", [(name, 0.9) for name in sorted(CI_CASES)] + [("n12_bucket_ties", 0.95)])
def test_intervals_match_a_resample_loop(name, level):
    s, y, threshold = CI_CASES[name]
    expected = loop_intervals(s, y, level, threshold)
    got = semafor_intervals(s, y, level, threshold=threshold)
    assert sorted(got) == sorted(expected)
    for metric, (lo, hi) in expected.items():
        exact = metric.startswith(("pD_step", "bACC"))
        tol = 0.0 if exact else TOL
        assert close(got[metric].lower, lo, tol) and close(got[metric].upper, hi, tol), (metric, got[metric], lo, hi)


def test_one_class_replicates_are_left_out():
    # one target in nine rows: (8/9)^9 ≈ 35% of the draws miss it, and those draws are left out
    s, y, _ = CI_CASES["n9_one_target"]
    rng = np.random.RandomState(77)
    kept = sum(both_classes(y[rng.randint(0, 9, size=9)]) for _ in range(500))
    assert 250 < kept < 400
    reps = semafor_replicates(s, y)
    assert int(np.count_nonzero(~np.isnan(reps["bACC@EER"]))) == kept


def test_bucket_interval_keeps_the_threshold_fixed():
    # at a fixed θ far below every score each replicate says "all positive": bACC = .5 every time;
    # finding θ* again would give bACC 1 (the classes are separable)
    s = np.array([5.0, 6.0, 7.0, 1.0, 2.0, 3.0])
    y = np.array([1, 1, 1, 0, 0, 0])
    fixed = semafor_intervals(s, y, 0.9, threshold=-100.0)["bACC@EER"]
    own = semafor_intervals(s, y, 0.9)["bACC@EER"]
    assert (fixed.lower, fixed.upper) == (0.5, 0.5) and (own.lower, own.upper) == (1.0, 1.0)


# ---------------------------------------------------------------- LLR base (Cllr)


@pytest.mark.parametrize("base, factor", [("e", 1.0), ("10", math.log(10)), ("2", math.log(2))])
def test_llr_base(base, factor):
    s, y = make_dataset(50, 3, 8)
    r = score_subset(Subset("", frame(s, y)), 50, DetectionOptions(semafor=True, llr_base=base))
    assert r.semafor["LLR_BASE"] == base
    # the definition with natural-log LLRs: ½[mean_t log2(1 + e^-λ) + mean_n log2(1 + e^λ)], λ = llr·ln(base)
    lam = s * factor
    expected = 0.5 * (np.mean(np.log2(1 + np.exp(-lam[y == 1]))) + np.mean(np.log2(1 + np.exp(lam[y == 0]))))
    assert close(r.semafor["Cllr"], expected)
    assert r.semafor["minCllr"] == min_cllr(s, y)  # PAV: invariant to the base
    assert r.semafor["Cllr"] == cllr(s * factor, y)


def test_zero_llrs_cost_one_bit_in_every_base():
    for base in ("e", "10", "2"):
        r = score_subset(Subset("", frame(np.zeros(6), np.array([1, 0, 1, 0, 0, 1]))), 6,
                         DetectionOptions(semafor=True, llr_base=base))
        assert close(r.semafor["Cllr"], 1.0)


# ---------------------------------------------------------------- the figure


def frame(s, y):
    return pd.DataFrame({"ConfidenceScore": s, "IsTarget": np.where(y == 1, "Y", "N")})


def artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_figure_marks_the_report_values(tmp_path):
    s, y = make_dataset(300, 2, 11)
    options = DetectionOptions(semafor=True, ci=True, query_mode="qp")
    theta = brute_theta_star(s, y)
    buckets = [np.arange(300) % 3 == k for k in range(3)] + [(np.arange(300) % 3 == 0) & (y == 1)]
    results = [score_subset(Subset(f"bucket {k}", frame(s[b], y[b])), 300, options, theta)
               for k, b in enumerate(buckets)]
    panels = semafor_panels(results, options.semafor_fars)
    fig = plots.draw_semafor_roc(panels)
    try:
        for ax, r in zip(fig.axes, results[:3]):
            v = r.semafor
            eer = artist(ax, "eer")
            assert (eer.get_xdata()[0], eer.get_ydata()[0]) == (v["FAR@EER"], v["pD@EER"])
            assert f"{v['bACC@EER']:.3f}" in eer.get_label() and f"{theta:.4g}" in eer.get_label()
            for f in FARS:
                mark = artist(ax, f"pd@far{f:g}")
                assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (f, v[f"pD@FAR{f:g}"])
                assert list(artist(ax, f"far_guide{f:g}").get_xdata()) == [f, f]
                # the same numbers as the report's cells
                row = semafor_row(r, options)
                assert format_value(mark.get_ydata()[0]) == format_value(row[f"pD@FAR{f:g}"])
            # θ* of all trials applied to the bucket is a vertex of the bucket's ROC (every threshold)
            sb, yb = r.subset.rows["ConfidenceScore"].to_numpy(), (r.subset.rows["IsTarget"] == "Y").to_numpy()
            fpr, tpr, _ = sk_roc_curve(yb, sb, drop_intermediate=False)
            assert np.any((fpr == v["FAR@EER"]) & (tpr == v["pD@EER"]))
            assert artist(ax, "roc").get_xdata().size == r.metrics.roc.fpr.size  # small: drawn unthinned
        last = fig.axes[3]  # targets only: no curve, no mark
        assert not [a for a in last.get_children() if a.get_gid() in ("roc", "eer")]
    finally:
        plt.close(fig)
    paths = plots.plot_semafor_roc(panels, tmp_path / "x_semafor_ROC")
    assert [p.name for p in paths] == ["x_semafor_ROC.pdf", "x_semafor_ROC.png"]
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(PNG_SIGNATURE)
    assert mpimg.imread(paths[1]).shape[2] in (3, 4)


def test_thinning_keeps_a_monotone_curve_within_one_cell():
    rng = np.random.default_rng(4)
    x = np.r_[0.0, np.sort(rng.random(50_000)), 1.0]
    y = np.r_[0.0, np.sort(rng.random(50_000)), 1.0]
    tx, ty = plots.thin_curve(x, y, cells=500)
    assert tx.size <= 4 * 500 + 2 and (tx[0], tx[-1]) == (0.0, 1.0)
    kept = np.isin(x, tx)
    cell = np.floor(x * 500) * 501 + np.floor(y * 500)
    idx = np.flatnonzero(kept)
    previous_kept = idx[np.searchsorted(idx, np.arange(x.size), side="right") - 1]
    assert np.all(cell[~kept] == cell[previous_kept[~kept]])  # a dropped point shares its kept neighbour's cell
    small = np.linspace(0, 1, 10)
    assert plots.thin_curve(small, small)[0].size == 10


# ---------------------------------------------------------------- command line


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("semafor_plan")
    data = generate_detection_dataset(root / "data", 600, seed=15)
    return root, data


def run_cli(root, data, out, *extra):
    d = str(data.directory)
    return main(["detection", "--refDir", d, "-r", data.reference, "-x", data.index, "--sysDir", d,
                 "-s", data.system, "-o", str(root / out / "run"), *extra])


def read_report(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


def scored_trials(data) -> pd.DataFrame:
    """ProbeFileID, score, label, Collection and the set of Purposes, straight from the files."""
    ref = pd.read_csv(data.directory / data.reference, sep="|", dtype=str, keep_default_na=False)
    sys_ = pd.read_csv(data.directory / data.system, sep="|", dtype=str, keep_default_na=False)
    t = ref.merge(sys_[["ProbeFileID", "ConfidenceScore"]], on="ProbeFileID")
    stem = data.reference.removesuffix(".csv")
    pj = pd.read_csv(data.directory / f"{stem}-probejournaljoin.csv", sep="|", dtype=str, keep_default_na=False)
    jm = pd.read_csv(data.directory / f"{stem}-journalmask.csv", sep="|", dtype=str, keep_default_na=False)
    ops = pj.merge(jm, on=["JournalName", "StartNodeID", "EndNodeID"]).groupby("ProbeFileID")["Purpose"].agg(set)
    t["purposes"] = t["ProbeFileID"].map(ops).apply(lambda v: v if isinstance(v, set) else set())
    t["score"] = t["ConfidenceScore"].astype(float)
    t["label"] = (t["IsTarget"] == "Y").astype(np.int64)
    return t


def test_cli_query_partition_reports_buckets_at_the_competition_threshold(generated, capsys):
    root, data = generated
    assert run_cli(root, data, "all", "--semafor", "--noPlot") == 0
    qp = "Collection==['Nimble-SCI','Nimble-WEB','MFC-Eval'] & Purpose==['add','remove']"
    assert run_cli(root, data, "qp", "--semafor", "--ci", "-qp", qp) == 0
    assert run_cli(root, data, "qp_plain", "--semafor", "--noPlot", "-qp", "Collection==['Nimble-SCI','MFC-Eval']") == 0
    capsys.readouterr()
    t = scored_trials(data)
    s, y = t["score"].to_numpy(), t["label"].to_numpy()
    theta = brute_theta_star(s, y)  # θ* of all scored trials: the competition

    whole = read_report(root / "all" / "run_semafor_report.csv")
    assert whole.loc[0, "THRESHOLD_SET"] == "own" and whole.loc[0, "THRESHOLD_EER"] == format_value(theta)
    assert whole.loc[0, "LLR_BASE"] == "e"
    for f in FARS:  # the default --far reports both of the plan's FARs
        assert whole.loc[0, f"pD@FAR{f:g}"] == format_value(sk_pd_interpolated(s, y, f))

    report = read_report(root / "qp" / "run_semafor_report.csv")
    assert len(report) == 6
    assert sorted(p.name for p in (root / "qp").iterdir()) == sorted([
        "run_qp_query_report.csv", "run_qp_query_ROC.pdf", "run_qp_query_ROC.png",
        "run_semafor_report.csv", "run_semafor_ROC.pdf", "run_semafor_ROC.png", *beside_reports()])
    assert (root / "qp" / "run_semafor_ROC.png").read_bytes().startswith(PNG_SIGNATURE)
    for col in ("CI_LEVEL", "bACC@EER_CI_LOWER", "bACC@EER_CI_UPPER", "pD@FAR0.1_CI_LOWER", "pAUC@0.1_CI_UPPER",
                "BUCKET_THRESHOLD_EER", "BUCKET_bACC@EER", "BUCKET_EER"):
        assert col in report.columns
    assert "EER" not in report.columns  # a bucket has no EER at the competition θ*: BUCKET_EER is its own
    for _, row in report.iterrows():
        collection = row["QUERY"].split("'")[1]
        purpose = row["QUERY"].split("'")[3]
        b = ((t["Collection"] == collection) & t["purposes"].apply(lambda p: purpose in p)).to_numpy()
        sb, yb = s[b], y[b]
        assert not (yb == 0).any()  # Purpose is a target property: the bucket holds targets only
        tp, fp, fn, tn = confusion(sb, yb, theta)
        pd_, far, bacc = rates(tp, fp, fn, tn)
        assert row["THRESHOLD_SET"] == "all" and row["THRESHOLD_EER"] == format_value(theta)
        assert (row["TP@EER"], row["FP@EER"], row["FN@EER"], row["TN@EER"]) == tuple(map(str, (tp, fp, fn, tn)))
        assert (row["pD@EER"], row["FAR@EER"], row["bACC@EER"]) == (format_value(pd_), "", "")
        assert row["BUCKET_THRESHOLD_EER"] == "" and row["bACC@EER_CI_LOWER"] == ""

    report = read_report(root / "qp_plain" / "run_semafor_report.csv")
    assert len(report) == 2
    for _, row in report.iterrows():
        b = (t["Collection"] == row["QUERY"].split("'")[1]).to_numpy()
        sb, yb = s[b], y[b]
        tp, fp, fn, tn = confusion(sb, yb, theta)
        pd_, far, bacc = rates(tp, fp, fn, tn)
        assert row["THRESHOLD_EER"] == format_value(theta)
        assert (row["TP@EER"], row["FP@EER"], row["FN@EER"], row["TN@EER"]) == tuple(map(str, (tp, fp, fn, tn)))
        assert (row["pD@EER"], row["FAR@EER"], row["bACC@EER"]) == tuple(map(format_value, (pd_, far, bacc)))
        own = brute_theta_star(sb, yb)  # the bucket's own optimum, kept beside
        assert row["BUCKET_THRESHOLD_EER"] == format_value(own)
        assert row["BUCKET_bACC@EER"] == format_value(rates(*confusion(sb, yb, own))[2])


def test_cli_query_partition_intervals_at_the_competition_threshold(generated, capsys):
    root, data = generated
    assert run_cli(root, data, "qp_ci", "--semafor", "--ci", "--noPlot", "-qp", "Collection==['Nimble-WEB']") == 0
    capsys.readouterr()
    t = scored_trials(data)
    s, y = t["score"].to_numpy(), t["label"].to_numpy()
    theta = brute_theta_star(s, y)
    b = (t["Collection"] == "Nimble-WEB").to_numpy()
    row = read_report(root / "qp_ci" / "run_semafor_report.csv").iloc[0]
    expected = loop_intervals(s[b], y[b], 0.9, threshold=theta)
    assert row["CI_LEVEL"] == "0.9"
    for metric, (lo, hi) in expected.items():
        for cell, value in ((row[f"{metric}_CI_LOWER"], lo), (row[f"{metric}_CI_UPPER"], hi)):
            # cells hold 6 decimals: identical text, or (areas, interpolation) within half a unit of the 6th
            assert cell == format_value(value) or abs(float(cell) - value) <= 5e-7 + TOL, (metric, cell, value)


def test_cli_queries_are_competitions_of_their_own(generated, capsys):
    root, data = generated
    assert run_cli(root, data, "q", "--semafor", "--noPlot", "--far", "0.05",
                   "-q", "Collection==['Nimble-SCI']", "Collection==['MFC-Eval']") == 0
    capsys.readouterr()
    t = scored_trials(data)
    report = read_report(root / "q" / "run_semafor_report.csv")
    assert "pD@FAR0.05" in report.columns and "pD@FAR0.1" not in report.columns
    for _, row in report.iterrows():
        q = t[t["Collection"] == row["QUERY"].split("'")[1]]
        sq, yq = q["score"].to_numpy(), q["label"].to_numpy()
        assert row["THRESHOLD_SET"] == "own" and row["THRESHOLD_EER"] == format_value(brute_theta_star(sq, yq))


def test_cli_defaults():
    args = build_parser().parse_args(["detection", "-r", "r.csv", "-x", "x.csv", "-s", "s.csv", "--semafor"])
    scoring = args.task_options(args).options.scoring
    assert scoring.semafor_fars == (0.08, 0.1) and scoring.llr_base == "e"
    args = build_parser().parse_args(["detection", "-r", "r.csv", "-x", "x.csv", "-s", "s.csv", "--llr-base", "10"])
    assert args.task_options(args).options.scoring.llr_base == "10"
