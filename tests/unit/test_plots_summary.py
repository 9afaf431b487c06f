"""The summary figures (``--plots``) and the mask heat map: their contents through the data they are drawn from,
and the PNGs they write decode, have their size and are not blank."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from mfscore.masks.extra_metrics import mcc_size_histogram
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.run_metrics import average_aucs
from mfscore.masks.scorer import RoleResult
from mfscore.masks.threshold_metrics import trapezoid_auc
from mfscore.provenance.filtering import RANKS
from mfscore.reports import mask_extra_report, mask_heatmap, style, summary_plots
from mfscore.reports.figure_data import DistributionFigure, Series
from mfscore.reports.mask_figures import average_roc_figure
from mfscore.reports.provenance_filtering_report import recall_figure
from mfscore.reports.video_temporal_report import mcc_figure


def _png(path, size=style.WIDE_SIZE):
    image = mpimg.imread(path)
    assert image.shape[:2] == (round(size[1] * style.DPI), round(size[0] * style.DPI))
    assert image[..., :3].std() > 0.05
    return image


def _records(seed=1, n=4):
    """Masks as histograms: pixel counts by system value (0 = surely manipulated), reference-positive or not."""
    rng = np.random.default_rng(seed)
    records = []
    for _ in range(n):
        positive = np.bincount(rng.integers(0, 120, 300), minlength=256)
        negative = np.bincount(rng.integers(60, 256, 3000), minlength=256)
        records.append(MaskRecord(status="scored", positive=positive, negative=negative,
                                  present=(positive + negative) > 0))
    return records


def test_the_mask_roc_figure_draws_the_curves_of_the_reported_aucs(tmp_path):
    records = _records()
    pixel_auc, mask_auc = average_aucs(records)
    figure = average_roc_figure(RoleResult(records, [], pixel_auc, mask_auc, None, None), "Average mask ROC")
    pixel, mask = figure.curves
    assert trapezoid_auc(pixel.x, pixel.y) == pixel_auc and trapezoid_auc(mask.x, mask.y) == mask_auc
    assert f"AUC {pixel_auc:.4f}" in pixel.label and f"AUC {mask_auc:.4f}" in mask.label
    # the pooled pixels' ROC: every pixel a trial scored 255 - its value (a low value marks manipulation)
    scores = np.concatenate([np.r_[np.repeat(255 - np.arange(256), r.positive), np.repeat(255 - np.arange(256),
                                                                                            r.negative)]
                             for r in records])
    labels = np.concatenate([np.r_[np.ones(r.positive.sum()), np.zeros(r.negative.sum())] for r in records])
    assert pixel_auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    path = summary_plots.plot_average_roc(figure, tmp_path / "x_mask_roc.png")
    _png(path, style.FIG_SIZE)


def test_recall_bars_show_the_scores_table(tmp_path):
    means = pd.DataFrame([{"NodeType": "All", **{f"NodeRecallAt{n}": n / 400 for n in RANKS}},
                          {"NodeType": "donor", **{f"NodeRecallAt{n}": 0.5 for n in RANKS}}])
    figure = recall_figure(means.to_dict("records"))
    assert figure.categories == tuple(f"k = {n}" for n in RANKS)
    assert [s.label for s in figure.series] == ["All", "donor"]
    np.testing.assert_array_equal(figure.series[0].y, [n / 400 for n in RANKS])
    _png(summary_plots.plot_bars(figure, tmp_path / "recall_at_k.png"))


def test_the_mcc_distribution_holds_each_querys_probe_mccs(tmp_path):
    records = [SimpleNamespace(query=q, mcc=m) for q, m in ((0, 0.5), (0, -0.25), (1, 0.9), (0, 1.0))]
    figure = mcc_figure(records, ("*", "Operation == 'x'"))
    assert [s.label for s in figure.series] == ["all probes", "Operation == 'x'"]
    np.testing.assert_array_equal(figure.series[0].y, [0.5, -0.25, 1.0])
    np.testing.assert_array_equal(figure.series[1].y, [0.9])
    _png(summary_plots.plot_distribution(figure, tmp_path / "mcc_distribution.png"))


def test_a_distribution_with_an_empty_series_still_draws(tmp_path):
    figure = DistributionFigure("t", (Series("none", np.array([])), Series("nan", np.array([np.nan, 0.2]))), "MCC")
    _png(summary_plots.plot_distribution(figure, tmp_path / "d.png"))


def _heat(seed=2):
    rng = np.random.default_rng(seed)
    sizes, mccs = np.r_[rng.uniform(0, 1250, 400), [1300] * 6], np.r_[rng.uniform(-1, 1, 400), [0.95] * 6]
    return mask_extra_report.heat_map(mcc_size_histogram(sizes, mccs))  # the last column's masks share a bright cell


def test_the_heat_maps_cells_are_their_shares_colour_with_their_count_in_a_colour_that_reads():
    heat = _heat()
    cells = mask_heatmap.cells(heat)
    rows, columns = heat.shares.shape
    assert len(cells) == rows * columns
    assert sorted(int(c.text) for c in cells if c.text) == sorted(heat.counts[heat.counts > 0].astype(int).tolist())
    viridis = matplotlib.colormaps["viridis"]
    for cell, share in zip(cells, heat.shares.ravel()):  # row by row from the lowest MCC, as the shares
        np.testing.assert_allclose(np.array(cell.fill[::-1]) / 255, viridis(share)[:3], atol=1.5 / 255)
        assert cell.text_colour == mask_heatmap.text_colour_on(cell.fill)
    assert {c.text_colour for c in cells if c.text} == {mask_heatmap.BLACK, mask_heatmap.WHITE}
    lowest_first = [c.box[1] for c in cells[::columns]]
    assert lowest_first == sorted(lowest_first, reverse=True)  # MCC grows upwards


def test_the_heat_maps_picture_shows_each_cell_and_its_count():
    """Read back from the picture: a cell's corner has its fill; its middle holds text of the chosen colour exactly
    where it has a count."""
    heat = _heat()
    picture = mask_heatmap.render_heat_map(heat, "title").astype(int)
    assert picture.shape == (mask_heatmap.HEIGHT, mask_heatmap.WIDTH, 3)
    for cell in mask_heatmap.cells(heat):
        left, top, right, bottom = (int(round(v)) for v in cell.box)
        np.testing.assert_allclose(picture[top + 3, left + 3], cell.fill, atol=2)
        middle = picture[(top + bottom) // 2 - 4:(top + bottom) // 2 + 5, left + 6:right - 6].reshape(-1, 3)
        away = np.abs(middle - cell.fill).max(axis=1)
        if not cell.text:
            assert away.max() <= 2
            continue
        inked = middle[away > 40]
        assert len(inked) > 0
        nearest = np.abs(inked - cell.text_colour).max(axis=1).min()
        assert nearest < 60, (cell, nearest)


def test_the_heat_map_writes_one_png_of_its_size(tmp_path):
    path = mask_extra_report.mcc_histogram_plot(mcc_size_histogram([10.0, 700.0], [0.5, -0.2]), tmp_path / "h.png",
                                                "title")
    _png(path, style.FIG_SIZE)


@pytest.mark.parametrize("rgb, want", [((68, 1, 84), "white"), ((253, 231, 37), "black"), ((0, 0, 0), "white"),
                                       ((255, 255, 255), "black")])
def test_text_colour_contrasts_with_the_cell(rgb, want):
    assert mask_heatmap.text_colour_on(rgb[::-1]) == {"white": mask_heatmap.WHITE, "black": mask_heatmap.BLACK}[want]
