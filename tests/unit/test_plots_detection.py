"""The detection ROC/DET figures: the bootstrap band against a slow reference, and what the figures mark, read
from the data they are drawn from (``figure_data``) and from the drawn artists."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_curve as sk_roc_curve

from mfscore.detection.bootstrap import N_RESAMPLES, SEED, joined, quantile_positions, replicate_slice
from mfscore.detection.options import PlotOptions
from mfscore.detection.roc import SortedTrials
from mfscore.detection.roc_band import FAR_GRID, tpr_on_grid
from mfscore.detection.scorer import DetectionOptions, score_subset
from mfscore.detection.subsets import Subset
from mfscore.reports import plots
from mfscore.reports.detection_plots import curve_figures
from mfscore.reports.detection_report import metric_cells


def _trials(n_t: int, n_nt: int, seed: int = 3, shift: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = np.round(np.r_[rng.normal(shift, 1, n_t), rng.normal(0, 1, n_nt)], 2)  # rounding makes ties
    return scores, np.r_[np.ones(n_t, np.int64), np.zeros(n_nt, np.int64)]


def _tpr_at_loop(fpr: np.ndarray, tpr: np.ndarray, f: float) -> float:
    """The drawn ROC at rate ``f``, one point at a time: the top vertex at ``f``, else the line between neighbours."""
    points = [(0.0, 0.0)] + list(zip(fpr.tolist(), tpr.tolist())) + [(1.0, 1.0)]
    at = [y for x, y in points if x == f]
    if at:
        return max(at)
    left = max((p for p in points if p[0] < f), key=lambda p: (p[0], p[1]))
    right = min((p for p in points if p[0] > f), key=lambda p: (p[0], p[1]))  # the curve climbs a vertical step
    return left[1] + (f - left[0]) / (right[0] - left[0]) * (right[1] - left[1])


def _reference_band(scores, labels, level, replicates=N_RESAMPLES):
    """MediScore's draws, one replicate at a time, each with scikit-learn's ROC."""
    rng = np.random.RandomState(SEED)
    rows = []
    for _ in range(replicates):
        drawn = rng.randint(0, scores.size, size=scores.size)
        s, lab = scores[drawn], labels[drawn]
        if lab.min() == lab.max():
            continue
        fpr, tpr, _ = sk_roc_curve(lab, s, drop_intermediate=False)
        rows.append([_tpr_at_loop(fpr, tpr, f) for f in FAR_GRID])
    ordered = np.sort(np.array(rows), axis=0)
    lo, hi = quantile_positions(level, len(rows))
    return ordered[lo], ordered[min(hi, len(rows) - 1)]


def _result(scores, labels, **options):
    frame = pd.DataFrame({"ConfidenceScore": scores, "IsTarget": np.where(labels == 1, "Y", "N")})
    return score_subset(Subset("", frame), len(frame), DetectionOptions(ci=True, **options), band=True)


@pytest.mark.parametrize("n_t, n_nt, level", [(40, 60, 0.9), (7, 5, 0.95)])
def test_the_band_is_the_slow_reference_band(n_t, n_nt, level):
    scores, labels = _trials(n_t, n_nt)
    band = _result(scores, labels, ci_level=level).band
    lower, upper = _reference_band(scores, labels, level)
    assert band.level == level
    np.testing.assert_allclose(band.lower, lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.upper, upper, rtol=0, atol=1e-12)


def test_the_band_is_monotone_and_holds_the_curve():
    scores, labels = _trials(300, 400, seed=5)
    result = _result(scores, labels)
    band, roc = result.band, result.metrics.roc
    assert (np.diff(band.lower) >= 0).all() and (np.diff(band.upper) >= 0).all()
    assert (band.lower <= band.upper).all() and band.upper[-1] == band.lower[-1] == 1.0
    curve = tpr_on_grid(roc.fpr, roc.tpr)
    inside = (curve >= band.lower) & (curve <= band.upper)
    assert inside.all(), FAR_GRID[~inside]
    assert (band.upper - band.lower)[1:FAR_GRID.searchsorted(0.5)].min() > 0  # a band, not a line, where it matters


def test_sliced_replicates_join_into_the_same_band():
    trials = SortedTrials.from_arrays(*_trials(30, 30))
    whole = replicate_slice(trials, 0.1, None, 0, 60, band=True)
    parts = [replicate_slice(trials, 0.1, None, first, count, band=True) for first, count in ((40, 20), (0, 25),
                                                                                               (25, 15))]
    np.testing.assert_array_equal(joined(parts).band, whole.band)
    assert replicate_slice(trials, 0.1, None, 0, 5).band is None


def test_tpr_on_grid_takes_the_top_of_a_vertical_step_and_the_line_between_vertices():
    fpr, tpr = np.array([0.0, 0.0, 0.5, 0.5, 1.0]), np.array([0.2, 0.4, 0.6, 0.9, 1.0])
    got = tpr_on_grid(fpr, tpr, np.array([0.0, 0.25, 0.5, 0.75, 1.0]))
    np.testing.assert_allclose(got, [0.4, 0.5, 0.9, 0.95, 1.0])


def _figures(opt_out=False, compat=False, multi=False, kind="roc", far_stop=0.05):
    scores, labels = _trials(80, 120)
    options = DetectionOptions(ci=True, far_stop=far_stop, opt_out=opt_out, mediscore_compat=compat)
    frame = pd.DataFrame({"ConfidenceScore": scores, "IsTarget": np.where(labels == 1, "Y", "N")})
    results = [score_subset(Subset(q, frame), len(frame), options, band=True) for q in ("q1", "q2")]
    return results, options, curve_figures(results, options, PlotOptions(kind=kind, multi_figs=multi))


def test_the_figure_marks_the_reported_eer_and_the_far_stop():
    results, options, figures = _figures()
    [(suffix, figure)] = figures
    assert suffix == "_all_ROC" and figure.far_stop == options.far_stop == 0.05
    assert [c.label for c in figure.curves] == ["q1", "q2"]  # one curve per query
    for curve, result in zip(figure.curves, results):
        cells = metric_cells(result.metrics, trr=result.trr, opt_out=False, far_stop=0.05, ci_level=0.9)
        assert curve.eer_point == (cells["EER"], 1.0 - cells["EER"])
        assert curve.auc_ci == (cells["AUC_CI_LOWER"], cells["AUC_CI_UPPER"])
        np.testing.assert_array_equal(curve.band.lower, result.band.lower)


def test_the_opt_out_title_and_its_mediscore_form():
    assert _figures(opt_out=True)[2][0][1].title == "Performance (opted-in trials)"
    assert _figures(opt_out=True, compat=True)[2][0][1].title == "trPerformance"
    assert _figures()[2][0][1].title == "Performance"
    assert [s for s, _ in _figures(multi=True, kind="det")[2]] == ["_all_0_DET", "_all_1_DET"]


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_the_drawn_figure_places_its_marks_where_the_data_says(kind, tmp_path):
    _, _, [(_, figure)] = _figures(kind=kind, far_stop=0.2)
    fig, ax = plt_figure(figure, kind)
    try:
        far_stop = _gid(ax, "far_stop")
        want = 20.0 if kind == "roc" else float(plots._probit(np.asarray(0.2)))
        assert far_stop.get_xdata()[0] == pytest.approx(want)
        eer, _ = figure.curves[0].eer_point, None
        x, y = _gid(ax, "eer0").get_data()
        if kind == "roc":
            assert (x[0], y[0]) == pytest.approx((eer[0] * 100, eer[1] * 100))
        else:
            assert x[0] == pytest.approx(y[0])  # on the DET's EER line
        assert _gid(ax, "eer_line") is not None and len([a for a in ax.collections if a.get_gid() == "band"]) == 2
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert texts[0].startswith("q1 (AUC: ") and "EER: " in texts[0] and "90% CI band" in texts
    finally:
        plots.plt.close(fig)


def plt_figure(figure, kind):
    fig, ax = plots.plt.subplots(figsize=plots.FIG_SIZE, dpi=plots.DPI, layout="constrained")
    plots._draw(fig, ax, figure.curves, kind=kind, title=figure.title, subtitle="", no_num=False, opt_out=False,
                far_stop=figure.far_stop)
    return fig, ax


def _gid(ax, gid):
    found = [a for a in ax.lines if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_the_written_png_decodes_at_its_size_and_is_not_blank(kind, tmp_path):
    _, _, [(_, figure)] = _figures(kind=kind)
    pdf, png = plots.plot_curve_figure(figure, tmp_path / "x")
    image = mpimg.imread(png)
    assert image.shape[:2] == (round(plots.FIG_SIZE[1] * plots.DPI), round(plots.FIG_SIZE[0] * plots.DPI))
    assert image[..., :3].std() > 0.05 and pdf.read_bytes().startswith(b"%PDF")
    again = plots.plot_curve_figure(figure, tmp_path / "y")
    assert [p.read_bytes() for p in again] == [pdf.read_bytes(), png.read_bytes()]  # deterministic bytes
