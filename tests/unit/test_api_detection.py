"""The public detection API on arrays (``mfscore.api.detection``) against independent references.

* scikit-learn (modern) on random data with ties, several seeds: AUC within 1e-12 (two summation
  orders meet); the ROC points exactly. Which point sets: every point of ours is a point of
  sklearn's ``roc_curve(drop_intermediate=False)`` (same FPR, TPR and threshold), and ours *equals*
  sklearn's ``drop_intermediate=True`` curve once sklearn's always-prepended origin is removed
  where ours has none (ours keeps scikit-learn 0.19's rule, docs/detection.md §6.1). EER, AUC@FAR
  and CDR@FAR are recomputed from sklearn's curve by plain loops, within 1e-12.
* A Mann-Whitney pair count on small tied data as the slow, obvious AUC, within 1e-12.
* A registry of the array metrics drives the shared checks (sklearn's ``test_common`` idea): a
  table of bad inputs, each a ``ValueError`` naming the argument; label encodings giving the same
  value exactly.
* Merge invariance: shards merged with ``DetectionScores`` give exactly what all trials at once
  give, bootstrap intervals included when the shards are merged in order.
* Bootstrap intervals: equal to ``mfscore detection --ci``'s report cells (the CSV's 6-decimal
  text, so within 5e-7, and identical once formatted as the report formats them); a shuffled input
  sorted by (score, label) gives exactly the intervals of the sorted original.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score as sk_roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from mfscore.api.detection import (
    DetectionIntervals,
    DetectionScores,
    bootstrap_intervals,
    cdr_at_far_score,
    cllr_loss,
    eer_error,
    min_cllr_loss,
    partial_auc_score,
    pd_at_far_score,
    roc_auc_score,
    roc_curve,
    semafor_metrics,
)

TOL = 1e-12  # absolute, where two summation orders meet; see the module docstring
SEEDS = range(8)


def tied_data(seed: int, n: int | None = None):
    """(y_true 0/1, y_score) with many ties (scores on a 0.05 grid), both classes present."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 600)) if n is None else n
    y_true = (rng.random(n) < rng.uniform(0.2, 0.8)).astype(np.int64)
    y_true[0], y_true[-1] = 1, 0
    y_score = np.round((rng.normal(size=n) + rng.uniform(0, 1.5) * y_true) * 20) / 20
    return y_true, y_score


# ---- scikit-learn as the reference --------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_auc_equals_sklearn(seed):
    y_true, y_score = tied_data(seed)
    assert abs(roc_auc_score(y_true, y_score) - sk_roc_auc_score(y_true, y_score)) <= TOL


@pytest.mark.parametrize("seed", SEEDS)
def test_roc_points_lie_on_sklearns_full_curve(seed):
    y_true, y_score = tied_data(seed)
    fpr, tpr, thresholds = roc_curve(y_true, y_score)
    sk_fpr, sk_tpr, sk_thr = sk_roc_curve(y_true, y_score, drop_intermediate=False)
    full = set(zip(sk_fpr.tolist(), sk_tpr.tolist(), sk_thr.tolist()))
    prepended = fpr[0] == 0 and tpr[0] == 0  # ours: threshold max + 1, sklearn: inf
    assert thresholds[0] == (y_score.max() + 1 if prepended else y_score.max())
    for point in list(zip(fpr.tolist(), tpr.tolist(), thresholds.tolist()))[1 if prepended else 0:]:
        assert point in full


@pytest.mark.parametrize("seed", SEEDS)
def test_roc_points_equal_sklearns_dropped_curve(seed):
    y_true, y_score = tied_data(seed)
    fpr, tpr, thresholds = roc_curve(y_true, y_score)
    sk_fpr, sk_tpr, sk_thr = sk_roc_curve(y_true, y_score, drop_intermediate=True)
    start = 0 if (fpr[0], tpr[0]) == (0, 0) else 1  # sklearn always prepends the origin; ours when needed
    np.testing.assert_array_equal(fpr, sk_fpr[start:])
    np.testing.assert_array_equal(tpr, sk_tpr[start:])
    np.testing.assert_array_equal(thresholds[1 - start:], sk_thr[1:])


def sk_curve(y_true, y_score):
    fpr, tpr, _ = sk_roc_curve(y_true, y_score, drop_intermediate=True)
    return fpr.tolist(), tpr.tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_eer_from_sklearns_curve(seed):
    """EER: (FPR + FNR)/2 at the first point of least |FPR - FNR| of the (collinear-dropped) curve."""
    y_true, y_score = tied_data(seed)
    fpr, tpr = sk_curve(y_true, y_score)
    best = min(range(len(fpr)), key=lambda i: abs(fpr[i] - (1 - tpr[i])))
    assert abs(eer_error(y_true, y_score) - (fpr[best] + 1 - tpr[best]) / 2) <= TOL


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("far", [0.01, 0.05, 0.1, 0.3])
def test_partial_auc_and_cdr_from_sklearns_curve(seed, far):
    """AUC@FAR: trapezoids over the points with FPR <= far; CDR@FAR: the segment crossing far."""
    y_true, y_score = tied_data(seed)
    fpr, tpr = sk_curve(y_true, y_score)
    area = sum((fpr[i + 1] - fpr[i]) * (tpr[i + 1] + tpr[i]) / 2 for i in range(len(fpr) - 1) if fpr[i + 1] <= far)
    assert abs(partial_auc_score(y_true, y_score, max_far=far) - area) <= TOL
    if far in fpr:
        expected = tpr[fpr.index(far)]  # docs/detection.md §6.5: the first point at exactly far
    else:
        i = max(i for i in range(len(fpr)) if fpr[i] < far)
        expected = tpr[i] + (tpr[i + 1] - tpr[i]) * (far - fpr[i]) / (fpr[i + 1] - fpr[i])
    assert abs(cdr_at_far_score(y_true, y_score, far=far) - expected) <= TOL
    assert pd_at_far_score(y_true, y_score, far=far) == cdr_at_far_score(y_true, y_score, far=far)


@pytest.mark.parametrize("seed", range(20))
def test_auc_equals_a_mann_whitney_pair_count(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 13))
    y_true = rng.integers(0, 2, n)
    y_true[0], y_true[-1] = 1, 0
    y_score = rng.integers(0, 4, n).astype(float)  # few values: many ties
    wins = 0.0
    for s_pos, s_neg in itertools.product(y_score[y_true == 1], y_score[y_true == 0]):
        wins += 1.0 if s_pos > s_neg else 0.5 if s_pos == s_neg else 0.0
    expected = wins / ((y_true == 1).sum() * (y_true == 0).sum())
    assert abs(roc_auc_score(y_true, y_score) - expected) <= TOL


# ---- the registry: every array metric, one score argument name each ------------------------------

METRICS = {
    # name: (function of (y_true, scores, **kw), the name of its score argument)
    "roc_auc_score": (roc_auc_score, "y_score"),
    "eer_error": (eer_error, "y_score"),
    "partial_auc_score": (partial_auc_score, "y_score"),
    "cdr_at_far_score": (cdr_at_far_score, "y_score"),
    "pd_at_far_score": (lambda t, s, **kw: pd_at_far_score(t, s, far=0.1, **kw), "y_score"),
    "pd_at_far_score_step": (lambda t, s, **kw: pd_at_far_score(t, s, far=0.1, method="step", **kw), "y_score"),
    "roc_curve": (lambda t, s, **kw: np.concatenate(roc_curve(t, s, **kw)), "y_score"),
    "bootstrap_intervals": (bootstrap_intervals, "y_score"),
    "semafor_metrics": (lambda t, s, **kw: list(semafor_metrics(t, s, **kw).values()), "y_score"),
    "cllr_loss": (cllr_loss, "llr"),
    "min_cllr_loss": (min_cllr_loss, "llr"),
    "DetectionScores": (lambda t, s, **kw: DetectionScores().update(t, s, **kw).compute(ci=True), "y_score"),
}

NAN, INF = float("nan"), float("inf")
SCORE = "<score>"  # stands for the metric's score argument name
BAD_INPUTS = {
    # case: (y_true, scores, keyword arguments, the name the message must contain)
    "NaN score": ([0, 1, 0, 1], [0.1, NAN, 0.3, 0.4], {}, SCORE),
    "inf score": ([0, 1, 0, 1], [0.1, INF, 0.3, 0.4], {}, SCORE),
    "-inf score": ([0, 1, 0, 1], [0.1, 0.2, -INF, 0.4], {}, SCORE),
    "text scores": ([0, 1, 0, 1], ["a", "b", "c", "d"], {}, SCORE),
    "labels {0, 2}": ([0, 2, 0, 2], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "swapped arguments": ([0.9, 0.15, 0.4, 0.77], [1, 0, 0, 1], {}, "y_true"),
    "2-D scores": ([0, 1], [[0.1, 0.2], [0.3, 0.4]], {}, SCORE),
    "scalar labels": (1, [0.1], {}, "y_true"),
    "length mismatch": ([0, 1, 0, 1], [0.1, 0.2, 0.3], {}, SCORE),
    "empty": ([], [], {}, "y_true"),
    "one class only": ([1, 1, 1], [0.1, 0.2, 0.3], {}, "y_true"),
    "three labels": ([0, 1, 2, 1], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "labels {-1, 0}": ([-1, 0, -1, 0], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "NaN label": ([0, 1, NAN, 1], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "text labels other than Y/N": (["pos", "neg", "neg", "pos"], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "lower-case y/n": (["y", "n", "n", "y"], [0.1, 0.2, 0.3, 0.4], {}, "y_true"),
    "pos_label not a label": (["pos", "neg", "neg", "pos"], [0.1, 0.2, 0.3, 0.4], {"pos_label": "P"}, "pos_label"),
    "pos_label with three labels": (["a", "b", "c", "a"], [0.1, 0.2, 0.3, 0.4], {"pos_label": "a"}, "y_true"),
}


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_a_value_error_naming_the_argument(metric, case):
    function, score_name = METRICS[metric]
    y_true, scores, kwargs, name = BAD_INPUTS[case]
    name = score_name if name == SCORE else name
    with pytest.raises(ValueError) as raised:
        function(y_true, scores, **kwargs)
    assert name in str(raised.value), str(raised.value)


BAD_OPTIONS = [
    (partial_auc_score, {"max_far": 1.5}, "max_far"),
    (partial_auc_score, {"max_far": NAN}, "max_far"),
    (cdr_at_far_score, {"far": -0.1}, "far"),
    (lambda t, s, **kw: pd_at_far_score(t, s, **kw), {"far": 2}, "far"),
    (lambda t, s, **kw: pd_at_far_score(t, s, far=0.1, **kw), {"method": "nearest"}, "method"),
    (bootstrap_intervals, {"ci_level": 1.0}, "ci_level"),
    (bootstrap_intervals, {"far_stop": "0.1"}, "far_stop"),
    (semafor_metrics, {"fars": (0.1, 1.2)}, "fars"),
    (semafor_metrics, {"base": "7"}, "base"),
    (cllr_loss, {"base": 7}, "base"),
    (lambda t, s, **kw: DetectionScores().update(t, s).compute(**kw), {"far_stop": -1}, "far_stop"),
    (lambda t, s, **kw: DetectionScores().update(t, s).compute(ci=True, **kw), {"ci_level": 0}, "ci_level"),
]


@pytest.mark.parametrize("function, kwargs, name", BAD_OPTIONS)
def test_bad_option_is_a_value_error_naming_it(function, kwargs, name):
    with pytest.raises(ValueError) as raised:
        function([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], **kwargs)
    assert name in str(raised.value), str(raised.value)


def test_swapped_arguments_say_so():
    with pytest.raises(ValueError, match="swapped"):
        roc_auc_score([0.9, 0.15, 0.4, 0.77, 0.3], [1, 0, 0, 1, 1])


# ---- label encodings ----------------------------------------------------------------------------

def encodings(y_true01: np.ndarray) -> dict:
    """The same labels under every accepted encoding: (y_true, keyword arguments)."""
    positive = y_true01 == 1
    return {
        "bool": (positive, {}),
        "0/1": (y_true01, {}),
        "0./1. floats": (y_true01.astype(float), {}),
        "-1/1": (np.where(positive, 1, -1), {}),
        "Y/N": (np.where(positive, "Y", "N"), {}),
        "Y/N, object dtype (pandas)": (pd.Series(np.where(positive, "Y", "N"), dtype=object), {}),
        "list of Y/N": (np.where(positive, "Y", "N").tolist(), {}),
        "pos_label on text": (np.where(positive, "manipulated", "pristine"), {"pos_label": "manipulated"}),
        "pos_label=0": (np.where(positive, 0, 1), {"pos_label": 0}),
        "pos_label=2 on {2, 7}": (np.where(positive, 2, 7), {"pos_label": 2}),
    }


@pytest.mark.parametrize("metric", METRICS)
def test_label_encodings_give_the_same_value(metric):
    function, _ = METRICS[metric]
    y_true, y_score = tied_data(3, n=60)
    results = {name: function(labels, y_score, **kwargs) for name, (labels, kwargs) in encodings(y_true).items()}
    reference = results["0/1"]
    for name, value in results.items():
        if isinstance(reference, DetectionIntervals) or np.isscalar(reference):
            assert value == reference, name
        elif metric == "DetectionScores":
            assert (value.auc, value.eer, value.intervals) == (reference.auc, reference.eer, reference.intervals), name
        else:
            np.testing.assert_array_equal(np.asarray(value, float), np.asarray(reference, float), err_msg=name)


def test_auc_of_the_encodings_is_sklearns():
    y_true, y_score = tied_data(5, n=80)
    expected = sk_roc_auc_score(y_true, y_score)
    for name, (labels, kwargs) in encodings(y_true).items():
        assert abs(roc_auc_score(labels, y_score, **kwargs) - expected) <= TOL, name


# ---- mergeable state ----------------------------------------------------------------------------

def shards(n: int, rng) -> list[slice]:
    """Cut points splitting range(n) into pieces, an empty one and a one-trial one among them."""
    cuts = sorted({0, 1, n // 3, int(rng.integers(2, n - 1)), n})
    return [slice(a, b) for a, b in zip(cuts, cuts[1:] + [n])]


@pytest.mark.parametrize("seed", range(5))
def test_merging_shards_equals_scoring_everything_at_once(seed):
    y_true, y_score = tied_data(seed, n=300)
    pieces = shards(y_true.size, np.random.default_rng(seed))
    states = [DetectionScores().update(y_true[p], y_score[p]) for p in pieces]
    assert any(s.n_trials == 0 for s in states) and any(s.n_trials == 1 for s in states)
    left_fold = states[0]
    for state in states[1:]:
        left_fold = left_fold.merge(state)
    right_fold = states[-1]
    for state in reversed(states[:-1]):
        right_fold = state.merge(right_fold)
    at_once = DetectionScores().update(y_true, y_score).compute(ci=True)
    for merged in (left_fold, right_fold):
        got = merged.compute(ci=True)
        assert (got.n_target, got.n_nontarget) == (at_once.n_target, at_once.n_nontarget)
        assert (got.auc, got.eer, got.partial_auc, got.cdr) == (at_once.auc, at_once.eer, at_once.partial_auc,
                                                                at_once.cdr)
        for ours, theirs in zip(got.roc, at_once.roc):
            np.testing.assert_array_equal(ours, theirs)
        assert got.intervals == at_once.intervals  # the shards concatenated in the trials' order
    assert at_once.auc == roc_auc_score(y_true, y_score)
    assert at_once.eer == eer_error(y_true, y_score)
    assert at_once.partial_auc == partial_auc_score(y_true, y_score, max_far=0.1)
    assert at_once.cdr == cdr_at_far_score(y_true, y_score, far=0.1)
    assert at_once.intervals == bootstrap_intervals(y_true, y_score)


def test_merge_leaves_its_operands_alone_and_out_of_order_shards_keep_the_metrics():
    y_true, y_score = tied_data(11, n=200)
    first = DetectionScores().update(y_true[:120], y_score[:120])
    second = DetectionScores().update(y_true[120:], y_score[120:])
    swapped = second.merge(first)
    assert (first.n_trials, second.n_trials, swapped.n_trials) == (120, 80, 200)
    in_order = first.merge(second).compute()
    out_of_order = swapped.compute()
    assert (out_of_order.auc, out_of_order.eer) == (in_order.auc, in_order.eer)


def test_compute_needs_both_classes_overall():
    state = DetectionScores().update([1, 1], [0.3, 0.4])
    with pytest.raises(ValueError, match="y_true"):
        state.compute()
    with pytest.raises(ValueError, match="y_true"):
        DetectionScores().compute()
    assert state.merge(DetectionScores().update([0], [0.1])).compute().auc == 1.0
    with pytest.raises(TypeError):
        state.merge([0, 1])


# ---- bootstrap: the command line's draws and the documented order ----------------------------------

def test_intervals_are_the_command_lines(tmp_path):
    """``mfscore detection --ci`` on generated MFC-style data: its trials are the reference file's rows
    (all have a score here), so the arrays are read from the files in that order."""
    from mfscore.cli.main import main
    from mfscore.reports.detection_report import format_value
    from mfscore.sample_data.detection import generate_detection_dataset

    data = generate_detection_dataset(tmp_path / "in", n_trials=700, seed=5)
    out = tmp_path / "out" / "run"
    status = main(["detection", "-t", "manipulation", "--refDir", str(data.directory), "-r", data.reference,
                   "-x", data.index, "--sysDir", str(data.directory), "-s", data.system, "-o", str(out),
                   "--ci", "--ciLevel", "0.85", "--farStop", "0.2", "--noPlot"])
    assert status == 0
    reference = pd.read_csv(data.directory / data.reference, sep="|", dtype=str, keep_default_na=False)
    system = pd.read_csv(data.directory / data.system, sep="|", dtype=str, keep_default_na=False)
    y_score = reference["ProbeFileID"].map(system.set_index("ProbeFileID")["ConfidenceScore"].astype(float))
    assert not y_score.isna().any()
    y_true = reference["IsTarget"].to_numpy()

    found = bootstrap_intervals(y_true, y_score.to_numpy(), far_stop=0.2, ci_level=0.85)
    report = pd.read_csv(f"{out}_all_report.csv", sep="|", dtype=str, keep_default_na=False).iloc[0]
    cells = {"AUC_CI_LOWER": found.auc[0], "AUC_CI_UPPER": found.auc[1],
             "AUC_CI_LOWER@FAR": found.partial_auc[0], "AUC_CI_UPPER@FAR": found.partial_auc[1],
             "CDR_CI_LOWER@FAR": found.cdr[0], "CDR_CI_UPPER@FAR": found.cdr[1],
             "AUC": roc_auc_score(y_true, y_score), "EER": eer_error(y_true, y_score),
             "AUC@FAR": partial_auc_score(y_true, y_score, max_far=0.2),
             "CDR@FAR": cdr_at_far_score(y_true, y_score, far=0.2)}
    for column, value in cells.items():
        assert abs(float(report[column]) - value) <= 5e-7, column  # the report keeps 6 decimals
        assert report[column] == format_value(value), column
    assert found.auc[0] < found.auc[1]

    order = np.lexsort((y_true, y_score.to_numpy()))  # the documented order-free recipe, on the same run
    shuffled = np.random.default_rng(0).permutation(y_true.size)
    again = np.lexsort((y_true[shuffled], y_score.to_numpy()[shuffled]))
    assert (bootstrap_intervals(y_true[order], y_score.to_numpy()[order], far_stop=0.2, ci_level=0.85)
            == bootstrap_intervals(y_true[shuffled][again], y_score.to_numpy()[shuffled][again],
                                   far_stop=0.2, ci_level=0.85))


@pytest.mark.parametrize("seed", range(4))
def test_shuffled_input_sorted_by_score_then_label_gives_the_same_intervals(seed):
    y_true, y_score = tied_data(seed, n=250)  # ties within and across classes
    rng = np.random.default_rng(100 + seed)
    shuffled = rng.permutation(y_true.size)
    t2, s2 = y_true[shuffled], y_score[shuffled]

    def by_score_then_label(t, s):
        order = np.lexsort((t, s))
        return bootstrap_intervals(t[order], s[order])

    assert by_score_then_label(t2, s2) == by_score_then_label(y_true, y_score)
    # the draws do follow the input order: unsorted, the shuffle changes the intervals
    assert bootstrap_intervals(t2, s2) != bootstrap_intervals(y_true, y_score)


def test_intervals_hold_the_point_estimates_and_are_floats():
    y_true, y_score = tied_data(2, n=400)
    found = bootstrap_intervals(y_true, y_score, far_stop=0.1, ci_level=0.9)
    for (low, high), value in [(found.auc, roc_auc_score(y_true, y_score)),
                               (found.cdr, cdr_at_far_score(y_true, y_score, far=0.1))]:
        assert type(low) is float and type(high) is float
        assert low <= value <= high
    assert found.ci_level == 0.9


# ---- SemaFor and calibration: the core's numbers under the report's names ----------------------------

def test_semafor_metrics_are_the_report_columns():
    from mfscore.detection.calibration import cllr, min_cllr
    from mfscore.detection.semafor import semafor_report

    y_true, y_score = tied_data(7, n=200)
    found = semafor_metrics(y_true, y_score, fars=(0.05, 0.1), base="10")
    core = semafor_report(y_score, y_true, fars=(0.05, 0.1))
    assert list(found) == [*core, "Cllr", "minCllr"]
    assert all(found[k] == v for k, v in core.items())
    assert found["Cllr"] == cllr(y_score * math.log(10), y_true) == cllr_loss(y_true, y_score, base="10")
    assert found["minCllr"] == min_cllr(y_score, y_true) == min_cllr_loss(y_true, y_score)
    assert found["pD@FAR0.1"] == pd_at_far_score(y_true, y_score, far=0.1)
    assert found["pD_step@FAR0.05"] == pd_at_far_score(y_true, y_score, far=0.05, method="step")
