"""IoU, F1, soft confusion, size-binned MCC histograms and SemaFor localization rates."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.formats.tables import read_table
from mfscore.masks.extra_metrics import (
    EXTRA_COLUMNS, extra_cells, f1, iou, mcc_size_histogram, semafor_localization, soft_confusion, soft_mcc,
)
from mfscore.masks.mask_record import NOT_SCOREABLE, UNREADABLE, MaskRecord, histogram_record
from mfscore.masks.threshold_metrics import confusion_at, exact_mcc, optimum_threshold
from mfscore.reports.mask_extra_report import extra_table, mcc_histogram_plot, write_mask_extras

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _masks(seed: int, shape=(23, 31), levels: int | None = None, binary: bool = False):
    rng = np.random.default_rng(seed)
    region = rng.random(shape) < rng.uniform(0.05, 0.6)
    weight = rng.random(shape) < rng.uniform(0.5, 1.0)
    if binary:
        system = np.where(rng.random(shape) < 0.4, 0, 255).astype(np.uint8)
    elif levels is not None:
        system = rng.choice(rng.integers(0, 256, levels), size=shape).astype(np.uint8)
    else:
        system = rng.integers(0, 256, shape).astype(np.uint8)
    return region, weight, system


def _record(region, weight, system) -> MaskRecord:
    return histogram_record(region, weight, system, pixel_bns=0, pixel_sns=0, pixel_pns=0)


def _pixel_soft(region, weight, system):
    y = 1.0 - system.astype(np.float64) / 255.0
    pos, neg = region & weight, ~region & weight
    return (float(y[pos].sum()), float((1 - y)[neg].sum()), float(y[neg].sum()), float((1 - y)[pos].sum()))


def _pixel_hard(region, weight, system, threshold):
    pred = system.astype(np.int64) <= threshold
    pos, neg = region & weight, ~region & weight
    return (int((pred & pos).sum()), int((~pred & neg).sum()), int((pred & neg).sum()), int((~pred & pos).sum()))


# --------------------------------------------------------------------------------------------
# IoU and F1


@pytest.mark.parametrize("tp, fp, fn, expected_iou, expected_f1", [
    (3, 1, 2, Fraction(3, 6), Fraction(6, 9)),
    (1, 0, 0, Fraction(1), Fraction(1)),
    (5, 7, 11, Fraction(5, 23), Fraction(10, 28)),
    (0, 4, 3, Fraction(0), Fraction(0)),
    (2.5, 0.5, 1.0, Fraction(5, 8), Fraction(10, 13)),
])
def test_iou_f1_hand_computed(tp, fp, fn, expected_iou, expected_f1):
    assert iou(tp, fp, fn) == pytest.approx(float(expected_iou), rel=1e-15)
    assert f1(tp, fp, fn) == pytest.approx(float(expected_f1), rel=1e-15)


def test_iou_f1_degenerate():
    assert iou(0, 0, 0) == 1.0 and f1(0, 0, 0) == 1.0          # both empty
    assert iou(0, 5, 0) == 0.0 and f1(0, 5, 0) == 0.0          # truth empty, prediction not
    assert iou(0, 0, 5) == 0.0 and f1(0, 0, 5) == 0.0          # prediction empty, truth not
    assert iou(0.0, 0.0, 0.0) == 1.0


def test_soft_mcc_degenerate():
    assert math.isnan(soft_mcc(0, 0, 0, 0))
    assert soft_mcc(3.5, 0, 1.5, 0) == 0.0                     # no negative prediction
    assert soft_mcc(0, 2.0, 0, 0) == 0.0
    assert soft_mcc(2.0, 2.0, 0, 0) == pytest.approx(1.0)
    assert soft_mcc(0, 0, 2.0, 2.0) == pytest.approx(-1.0)


# --------------------------------------------------------------------------------------------
# soft confusion


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("levels", [None, 2, 7])
def test_soft_confusion_matches_pixel_sums(seed, levels):
    region, weight, system = _masks(seed, levels=levels)
    tp, tn, fp, fn = soft_confusion(_record(region, weight, system))
    for got, want in zip((tp, tn, fp, fn), _pixel_soft(region, weight, system)):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert tp + tn + fp + fn == pytest.approx(int(weight.sum()), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 40))
def test_soft_confusion_random_shapes(seed, rows, cols):
    region, weight, system = _masks(seed, shape=(rows, cols))
    soft = soft_confusion(_record(region, weight, system))
    for got, want in zip(soft, _pixel_soft(region, weight, system)):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert sum(soft) == pytest.approx(int(weight.sum()), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_soft_equals_hard_on_binary_mask(seed):
    region, weight, system = _masks(seed, binary=True)
    record = _record(region, weight, system)
    c = confusion_at(record, np.array([254]))
    tp, tn, fp, fn = (int(x[0]) for x in (c.tp, c.tn, c.fp, c.fn))
    soft = soft_confusion(record)
    assert soft == (tp, tn, fp, fn)
    cells = extra_cells(record, optimum_threshold(record), 254)
    assert cells["SoftMCC"] == pytest.approx(exact_mcc(tp, tn, fp, fn), rel=1e-12, abs=1e-15)
    assert cells["SoftIoU"] == iou(tp, fp, fn) == cells["ActualIoU"]
    assert cells["SoftF1"] == f1(tp, fp, fn) == cells["ActualF1"]


# --------------------------------------------------------------------------------------------
# extra_cells


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("levels", [None, 3])
def test_optimum_and_actual_iou_f1_match_pixel_loop(seed, levels):
    region, weight, system = _masks(seed, levels=levels)
    record = _record(region, weight, system)
    theta = optimum_threshold(record)
    cells = extra_cells(record, theta, 128)
    tp, _, fp, fn = _pixel_hard(region, weight, system, theta)
    assert cells["OptimumIoU"] == iou(tp, fp, fn)
    assert cells["OptimumF1"] == f1(tp, fp, fn)
    tp, _, fp, fn = _pixel_hard(region, weight, system, 128)
    assert cells["ActualIoU"] == iou(tp, fp, fn)
    assert cells["ActualF1"] == f1(tp, fp, fn)
    assert cells["ReferencePixels"] == int(region.sum())
    assert cells["SqrtReferencePixels"] == pytest.approx(math.sqrt(region.sum()))
    assert list(cells) == list(EXTRA_COLUMNS)


def test_extra_cells_missing_thresholds_and_unscored():
    region, weight, system = _masks(1)
    record = _record(region, weight, system)
    cells = extra_cells(record, math.nan, None)
    assert all(math.isnan(cells[k]) for k in ("OptimumIoU", "OptimumF1", "ActualIoU", "ActualF1"))
    assert not math.isnan(cells["SoftMCC"])
    for status in (NOT_SCOREABLE, UNREADABLE):
        cells = extra_cells(MaskRecord(status=status), 3.0, 3.0)
        assert all(math.isnan(v) for v in cells.values())


def test_extra_cells_no_scored_pixel():
    region, _, system = _masks(2)
    record = _record(region, np.zeros_like(region), system)
    cells = extra_cells(record, optimum_threshold(record), 10)
    assert all(math.isnan(cells[k]) for k in EXTRA_COLUMNS[:7])
    assert cells["ReferencePixels"] == int(region.sum())


# --------------------------------------------------------------------------------------------
# mcc_size_histogram


@pytest.mark.parametrize("seed", range(10))
def test_mcc_histogram_columns_and_totals(seed):
    rng = np.random.default_rng(seed)
    n = 200
    sizes = rng.uniform(0, 1300, n)
    mccs = rng.uniform(-1, 1, n)
    mccs[rng.random(n) < 0.1] = np.nan
    mccs[:3] = [1.0, -1.0, 1.0]
    sizes[:2] = [0.0, 1300.0]
    hist = mcc_size_histogram(sizes, mccs)
    assert list(hist.columns) == ["SizeBinLow", "SizeBinHigh", "MCCBinLow", "MCCBinHigh", "Count", "Share"]
    assert len(hist) == 10 * 20
    assert hist["Count"].sum() == int(np.count_nonzero(~np.isnan(mccs)))
    per_column = hist.groupby("SizeBinLow").agg(count=("Count", "sum"), share=("Share", "sum"))
    assert np.allclose(per_column.loc[per_column["count"] > 0, "share"], 1.0)
    assert (per_column.loc[per_column["count"] == 0, "share"] == 0).all()
    assert np.allclose(hist["MCCBinHigh"] - hist["MCCBinLow"], 0.1)
    assert hist["SizeBinHigh"].max() == pytest.approx(sizes[~np.isnan(mccs)].max())


def test_mcc_histogram_end_bins():
    hist = mcc_size_histogram([5.0, 5.0, 95.0, 500.0], [1.0, -1.0, 0.05, 0.3], max_size=100.0)
    top = hist[(hist["MCCBinHigh"] == 1.0) & (hist["SizeBinLow"] == 0.0)]
    bottom = hist[(hist["MCCBinLow"] == -1.0) & (hist["SizeBinLow"] == 0.0)]
    assert top["Count"].item() == 1 and top["Share"].item() == 0.5
    assert bottom["Count"].item() == 1 and bottom["Share"].item() == 0.5
    last = hist[hist["SizeBinHigh"] == 100.0]
    assert last["Count"].sum() == 2                            # 95 and the clipped 500
    assert last["Share"].sum() == pytest.approx(1.0)
    assert hist["Count"].sum() == 4


def test_mcc_histogram_empty():
    hist = mcc_size_histogram([], [])
    assert len(hist) == 200 and hist["Count"].sum() == 0 and hist["Share"].sum() == 0


# --------------------------------------------------------------------------------------------
# semafor_localization


def test_semafor_localization_hand_example():
    table = semafor_localization([0.05, 0.15, 0.5, None]).set_index("IoUThreshold")
    expected = {0.0001: (3, 0, 1), 0.1: (2, 1, 1), 0.2: (1, 2, 1), 0.4: (1, 2, 1)}
    for t, (tp, fp, fn) in expected.items():
        row = table.loc[t]
        assert (row["TP"], row["FP"], row["FN"], row["Probes"]) == (tp, fp, fn, 4)
        assert (row["pD"], row["FAR"], row["FNR"]) == (tp / 4, fp / 4, fn / 4)


@pytest.mark.parametrize("seed", range(10))
def test_semafor_localization_properties(seed):
    rng = np.random.default_rng(seed)
    ious = [None if rng.random() < 0.2 else float(v) for v in rng.random(50) ** 2]
    table = semafor_localization(ious)
    assert list(table.columns) == ["IoUThreshold", "pD", "FAR", "FNR", "TP", "FP", "FN", "Probes"]
    assert np.allclose(table["pD"] + table["FAR"] + table["FNR"], 1.0)
    assert table["FNR"].nunique() == 1
    assert (np.diff(table["pD"]) <= 0).all()
    assert (np.diff(table["FAR"]) >= 0).all()
    assert (table["TP"] + table["FP"] + table["FN"] == 50).all()


def test_semafor_localization_no_probe():
    table = semafor_localization([])
    assert table[["pD", "FAR", "FNR"]].isna().all().all()


# --------------------------------------------------------------------------------------------
# report


def test_extra_table_manipulation_and_splice():
    records = [_record(*_masks(s)) for s in range(3)] + [MaskRecord(status=UNREADABLE)]
    thresholds = [optimum_threshold(r) if r.scored else math.nan for r in records]
    keys = pd.DataFrame({"ProbeFileID": ["a", "b", "c", "d"]})
    table = extra_table(keys, {"probe": records}, {"probe": thresholds}, None)
    assert list(table.columns) == ["ProbeFileID", *EXTRA_COLUMNS, "Scored"]
    assert list(table["Scored"]) == ["Y", "Y", "Y", "N"]
    assert table.loc[0, "OptimumIoU"] == extra_cells(records[0], thresholds[0], None)["OptimumIoU"]

    keys["DonorFileID"] = ["w", "x", "y", "z"]
    donors = records[::-1]
    table = extra_table(keys, {"probe": records, "donor": donors},
                        {"probe": thresholds, "donor": thresholds[::-1]}, 200)
    assert list(table.columns) == (["ProbeFileID", "DonorFileID"] + [f"p{c}" for c in EXTRA_COLUMNS]
                                   + [f"d{c}" for c in EXTRA_COLUMNS] + ["ProbeScored", "DonorScored"])
    assert list(table["DonorScored"]) == ["N", "Y", "Y", "Y"]
    assert table.loc[1, "dSoftMCC"] == extra_cells(donors[1], thresholds[2], 200)["SoftMCC"]
    assert table.loc[2, "pActualF1"] == extra_cells(records[2], thresholds[2], 200)["ActualF1"]


def test_histogram_plot_writes_png_and_pdf(tmp_path):
    rng = np.random.default_rng(0)
    hist = mcc_size_histogram(rng.uniform(0, 1000, 80), rng.uniform(-1, 1, 80))
    paths = mcc_histogram_plot(hist, tmp_path / "sub" / "mcc_hist", "Test")
    assert [p.name for p in paths] == ["mcc_hist.pdf", "mcc_hist.png"]
    assert paths[0].read_bytes()[:5] == b"%PDF-"
    assert paths[1].read_bytes()[:8] == PNG_SIGNATURE


def test_write_mask_extras(tmp_path):
    records = [_record(*_masks(s)) for s in range(4)]
    thresholds = [optimum_threshold(r) for r in records]
    table = extra_table(pd.DataFrame({"ProbeFileID": list("abcd")}), {"probe": records}, {"probe": thresholds}, None)
    hist = mcc_size_histogram(table["SqrtReferencePixels"], table["SoftMCC"])
    loc = semafor_localization(list(table["OptimumIoU"]))
    paths = write_mask_extras(tmp_path / "run", table, histogram=hist, localization=loc)
    assert all(p.exists() for p in paths)
    back = read_table(paths[0])
    assert list(back.columns) == list(table.columns)
    assert np.allclose(back["SoftMCC"], table["SoftMCC"])
    assert "|" in paths[0].read_text().splitlines()[0]
