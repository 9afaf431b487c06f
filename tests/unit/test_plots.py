"""d-prime and the ROC/DET plot writer."""

from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy.special import ndtri

from mfscore.detection.dprime import dprime
from mfscore.detection.roc import auc, eer, roc_curve
from mfscore.reports import plots
from mfscore.reports.plots import Curve, plot_curves

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------
# dprime


def _dprime_loop(fpr, tpr, d_level=0.0):
    best = None
    for f, t in zip(fpr, tpr):
        if not (d_level <= t <= 1 - d_level and d_level <= f <= 1 - d_level):
            continue
        d = ndtri(min(max(t, 1e-5), 1 - 1e-5)) - ndtri(min(max(f, 1e-5), 1 - 1e-5))
        if best is None or d > best[0]:
            best = (float(d), float(f), float(t))
    return best


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("d_level", [0.0, 0.05, 0.2])
def test_dprime_matches_direct_loop(seed, d_level):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    fpr = np.sort(rng.random(n))
    tpr = np.sort(rng.random(n))
    if seed % 3 == 0:  # include the exact corners, where the clip matters
        fpr = np.r_[0.0, fpr, 1.0]
        tpr = np.r_[0.0, tpr, 1.0]
    got = dprime(fpr, tpr, d_level)
    want = _dprime_loop(fpr, tpr, d_level)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got[0] == pytest.approx(want[0], abs=1e-12)
        assert (got[1], got[2]) == (want[1], want[2])


def test_dprime_on_a_real_roc():
    rng = np.random.default_rng(7)
    scores = np.r_[rng.normal(1, 1, 60), rng.normal(0, 1, 80)]
    labels = np.r_[np.ones(60, int), np.zeros(80, int)]
    roc = roc_curve(scores, labels)
    got = dprime(roc.fpr, roc.tpr, 0.1)
    want = _dprime_loop(roc.fpr, roc.tpr, 0.1)
    assert got[0] == pytest.approx(want[0], abs=1e-12)
    assert got[1:] == want[1:]


def test_dprime_clips_rates():
    d, f, t = dprime([0.0], [1.0])
    assert d == pytest.approx(ndtri(1 - 1e-5) - ndtri(1e-5), abs=1e-12)
    assert (f, t) == (0.0, 1.0)


def test_dprime_d_level_excludes_points():
    fpr = np.array([0.0, 0.01, 0.3, 0.6, 1.0])
    tpr = np.array([0.0, 0.5, 0.9, 0.95, 1.0])
    # Without a band the corner (0.0, 0.0) gives 0 but (0.01, 0.5) is best.
    assert dprime(fpr, tpr)[1:] == (0.01, 0.5)
    # With d_level 0.05 FPR 0.01 is out; TPR 0.95 and 1.0 are out too, (0.3, 0.9) is left.
    d, f, t = dprime(fpr, tpr, 0.05)
    assert (f, t) == (0.3, 0.9)
    assert d == pytest.approx(ndtri(0.9) - ndtri(0.3), abs=1e-12)
    # Band edges are inclusive.
    assert dprime([0.05], [0.95], 0.05) == pytest.approx((ndtri(0.95) - ndtri(0.05), 0.05, 0.95))


def test_dprime_ties_take_the_first_point():
    # FPR 0 and 1e-6 both clip to 1e-5, so the two points have exactly the same d'.
    assert dprime([0.0, 1e-6], [0.5, 0.5])[1:] == (0.0, 0.5)
    assert dprime([1e-6, 0.0], [0.5, 0.5])[1:] == (1e-6, 0.5)


@pytest.mark.parametrize(
    "fpr, tpr, d_level",
    [
        ([], [], 0.0),                                 # no point
        ([0.0, 0.5, 1.0], [np.nan] * 3, 0.0),          # no targets
        ([np.nan] * 2, [0.5, 1.0], 0.0),               # no non-targets
        ([0.0, 1.0], [0.0, 1.0], 0.1),                 # every point outside the band
        ([0.2, 0.5], [0.3, 0.6], 0.6),                 # empty band (d_level > 0.5)
    ],
)
def test_dprime_none(fpr, tpr, d_level):
    assert dprime(np.asarray(fpr, float), np.asarray(tpr, float), d_level) is None


def test_dprime_returns_python_floats():
    got = dprime(np.array([0.1, 0.4]), np.array([0.6, 0.9]))
    assert all(type(v) is float for v in got)


# --------------------------------------------------------------------------------------------
# plot_curves


def _curve(seed=0, label="", n_t=40, n_nt=50, shift=1.0, **kw) -> Curve:
    rng = np.random.default_rng(seed)
    scores = np.r_[rng.normal(shift, 1, n_t), rng.normal(0, 1, n_nt)]
    labels = np.r_[np.ones(n_t, int), np.zeros(n_nt, int)]
    roc = roc_curve(scores, labels)
    return Curve(label, roc.fpr, roc.tpr, auc(roc), eer(roc), roc.n_target, roc.n_nontarget,
                 dprime=dprime(roc.fpr, roc.tpr), **kw)


def _nan_curve(label="", targets=False) -> Curve:
    labels = [1, 1, 1] if targets else [0, 0, 0]
    roc = roc_curve([0.2, 0.5, 0.9], labels)
    return Curve(label, roc.fpr, roc.tpr, auc(roc), eer(roc), roc.n_target, roc.n_nontarget)


@pytest.fixture(autouse=True)
def _no_figure_left_open():
    plt.close("all")
    yield
    assert plt.get_fignums() == []


def _check_files(paths, stem: Path):
    assert paths == [Path(f"{stem}.pdf"), Path(f"{stem}.png")]
    pdf, png = paths
    assert pdf.stat().st_size > 0 and pdf.read_bytes()[:4] == b"%PDF"
    assert png.stat().st_size > 0 and png.read_bytes()[:8] == PNG_SIGNATURE
    height, width = mpimg.imread(png).shape[:2]
    assert (width, height) == (840, 780)
    # Nothing of the temporary files is left behind.
    assert sorted(p.name for p in stem.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_single_curve(tmp_path, kind):
    stem = tmp_path / f"NIST_001_{kind.upper()}_all"
    curve = _curve(auc_ci=(0.6, 0.8))
    _check_files(plot_curves([curve], stem, kind=kind, subtitle="a subtitle"), stem)


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_multiple_curves_with_a_nan_curve(tmp_path, kind):
    stem = tmp_path / "queries"
    curves = [_curve(i, label=f"Operation == 'op{i}'", shift=0.4 * i) for i in range(5)]
    curves += [_nan_curve("Operation == 'none'"), _nan_curve("Operation == 'all'", targets=True)]
    _check_files(plot_curves(curves, stem, kind=kind, title="Queries"), stem)


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_many_curves_cycle_styles(tmp_path, kind):
    stem = tmp_path / "many"
    curves = [_curve(i, label=f"q{i} " + "x" * 80, n_t=10, n_nt=10) for i in range(23)]
    _check_files(plot_curves(curves, stem, kind=kind), stem)


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_single_nan_curve(tmp_path, kind):
    stem = tmp_path / "nan"
    _check_files(plot_curves([_nan_curve()], stem, kind=kind), stem)


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_opt_out_and_no_num(tmp_path, kind):
    stem = tmp_path / "optout"
    curve = _curve(trr=0.85, auc_ci=(0.7, 0.9))
    _check_files(plot_curves([curve], stem, kind=kind, opt_out=True, no_num=True), stem)
    stem2 = tmp_path / "optout_multi"
    curves = [_curve(1, "a", trr=0.9), _curve(2, "b", trr=0.5)]
    _check_files(plot_curves(curves, stem2, kind=kind, opt_out=True), stem2)


def test_stem_with_dots_and_existing_files(tmp_path):
    stem = tmp_path / "out" / "NIST_001.v2_ROC"
    stem.parent.mkdir()
    Path(f"{stem}.png").write_bytes(b"old")
    paths = plot_curves([_curve()], str(stem))
    _check_files(paths, stem)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        plot_curves([_curve()], tmp_path / "x", kind="pr")
    with pytest.raises(ValueError):
        plot_curves([], tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    stem = tmp_path / "crash"
    real_savefig = plt.Figure.savefig

    def crashing_savefig(self, fname, *args, **kwargs):
        real_savefig(self, fname, *args, **kwargs)  # a partly written temporary file exists
        raise RuntimeError("disk full")

    monkeypatch.setattr(plt.Figure, "savefig", crashing_savefig)
    with pytest.raises(RuntimeError):
        plot_curves([_curve()], stem)
    assert list(tmp_path.iterdir()) == []


def test_replace_is_atomic(tmp_path, monkeypatch):
    stem = tmp_path / "atomic"
    calls = []
    real_replace = os.replace

    def spy(src, dst):
        calls.append((Path(src), Path(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(plots.os, "replace", spy)
    plot_curves([_curve()], stem)
    assert [dst.name for _, dst in calls] == ["atomic.pdf", "atomic.png"]
    assert all(src.parent == dst.parent and src != dst for src, dst in calls)


# The annotation text, through the private helpers that build it.


def test_single_annotation_text():
    c = _curve(auc_ci=(0.49, 0.54), trr=0.75)
    text = plots._single_text(c, kind="roc", no_num=False, opt_out=False, missing=None)
    assert text == f"AUC={c.auc:.2f} [0.49, 0.54]\nEER={c.eer:.2f}\nT#: {c.n_target}, NT#: {c.n_nontarget}"
    text = plots._single_text(c, kind="roc", no_num=True, opt_out=True, missing=None)
    assert text == f"trAUC={c.auc:.2f} [0.49, 0.54]\ntrEER={c.eer:.2f}\nTRR: 0.75"
    text = plots._single_text(c, kind="det", no_num=False, opt_out=True, missing=None)
    assert text.startswith(f"trAUC={c.auc:.2f} [0.49, 0.54]\ntrEER={c.eer:.2f}\nTRR: 0.75\nT#: ")


def test_legend_entry_text():
    c = _curve(label="Operation == 'crop'", trr=0.5)
    entry = plots._legend_entry(c, kind="roc", no_num=False, opt_out=True, missing=None)
    assert entry == (f"Operation == 'crop' (AUC: {c.auc:.2f}, EER: {c.eer:.2f}, TRR: 0.50, T#: {c.n_target}, "
                     f"NT#: {c.n_nontarget})")
    entry = plots._legend_entry(c, kind="det", no_num=True, opt_out=False, missing=None)
    assert entry == f"Operation == 'crop' (AUC: {c.auc:.2f}, EER: {c.eer:.2f})"


def test_missing_class_text():
    no_t, no_nt = _nan_curve(targets=False), _nan_curve(targets=True)
    assert plots._missing_class(no_t) == "no targets"
    assert plots._missing_class(no_nt) == "no non-targets"
    assert plots._missing_class(_curve()) is None
    entry = plots._legend_entry(Curve("q", no_t.fpr, no_t.tpr, no_t.auc, no_t.eer, 0, 3), kind="roc",
                                no_num=False, opt_out=False, missing="no targets")
    assert "no curve (no targets)" in entry
    assert math.isnan(no_t.auc)


def _curve_of(fpr: np.ndarray, tpr: np.ndarray) -> Curve:
    return Curve(label="", fpr=fpr, tpr=tpr, auc=0.5, eer=0.5, n_target=1, n_nontarget=1)


def _within_one_cell(full: np.ndarray, drawn: np.ndarray, width: float) -> bool:
    """Every point of the full curve lies within one grid cell of a drawn point (the frame is ``width`` wide)."""
    cell = width / plots._THIN_CELLS
    tree = np.abs(full[:, None, :] - drawn[None, :, :]).max(axis=2).min(axis=1)
    return bool((tree <= 2 * cell).all())


@pytest.mark.parametrize("kind", ["roc", "det"])
def test_drawn_curves_are_thinned_in_the_axes_own_coordinates(kind):
    rng = np.random.default_rng(4)
    roc = roc_curve(np.r_[rng.normal(1, 1, 20000), rng.normal(0, 1, 20000)], np.r_[np.ones(20000), np.zeros(20000)])
    x, y = plots._coordinates(_curve_of(roc.fpr, roc.tpr), kind)
    assert x.size <= 4 * plots._THIN_CELLS + 2 < roc.fpr.size
    if kind == "roc":
        full, width = np.c_[roc.fpr, roc.tpr] * 100, 100.0
    else:
        full = np.c_[ndtri(np.clip(roc.fpr, 1e-5, 1 - 1e-5)), ndtri(np.clip(1 - roc.tpr, 1e-5, 1 - 1e-5))]
        width = 2 * plots._det_limit()
    sample = full[:: max(1, len(full) // 3000)]
    assert _within_one_cell(sample, np.c_[x, y], width)
    if kind == "det":  # the low false-alarm end, one cell wide on a linear axis, keeps its corners
        assert np.count_nonzero(x < ndtri(1e-3)) > 20  # thinning by index every k-th point keeps 10
