"""IoU, F1, soft confusion, size-binned MCC histograms and SemaFor localization rates, each checked
against an independent computation from its document: plain numpy pixel sums and scikit-learn's
jaccard, F1 and MCC (docs/metrics.md §1.7, §2)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, jaccard_score, matthews_corrcoef

from mfscore.masks.extra_metrics import (
    EXTRA_COLUMNS,
    IMAGE,
    SCORED_PIXELS,
    extra_cells,
    extra_summary,
    f1,
    iou,
    localization_iou,
    mcc_size_histogram,
    over,
    semafor_localization,
    soft_confusion,
    soft_mcc,
)
from mfscore.masks.mask_record import NOT_SCOREABLE, UNREADABLE, MaskRecord, histogram_record
from mfscore.reports.mask_extra_report import extra_table, mcc_histogram_plot

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


def _record(region, weight, system, system_given=True) -> MaskRecord:
    return histogram_record(region, weight, system, pixel_bns=0, pixel_sns=0, pixel_pns=0, system_given=system_given)


def _summed(region, weight, system, pixels):
    """The pixels a choice sums over, as flat (truth, system value) arrays."""
    keep = np.ones_like(weight) if pixels == IMAGE else weight
    return region[keep], system[keep].astype(np.int64)


def _sklearn_soft(truth, system):
    """Soft metrics from scikit-learn: each pixel is a positive prediction of weight Y = 1 − S/255
    and a negative one of weight 1 − Y (docs/metrics.md §2.2)."""
    y = 1.0 - system / 255.0
    labels = np.r_[truth, truth].astype(int)
    predicted = np.r_[np.ones(truth.size, int), np.zeros(truth.size, int)]
    weights = np.r_[y, 1.0 - y]
    return (matthews_corrcoef(labels, predicted, sample_weight=weights),
            jaccard_score(labels, predicted, sample_weight=weights, zero_division=1.0),
            f1_score(labels, predicted, sample_weight=weights, zero_division=1.0))


def _numpy_hard(truth, system, threshold):
    """IoU and F1 of ``system <= threshold`` by plain pixel counts (1 when both sides are empty)."""
    predicted = system <= threshold
    tp, fp, fn = (predicted & truth).sum(), (predicted & ~truth).sum(), (~predicted & truth).sum()
    union = tp + fp + fn
    return (tp / union, 2 * tp / (union + tp)) if union else (1.0, 1.0)


def _sklearn_hard(truth, system, threshold):
    predicted = (system <= threshold).astype(int)
    return (jaccard_score(truth.astype(int), predicted, zero_division=1.0),
            f1_score(truth.astype(int), predicted, zero_division=1.0))


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
# soft confusion and the pixels it sums over


@pytest.mark.parametrize("pixels", [IMAGE, SCORED_PIXELS])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("levels", [None, 2, 7])
def test_soft_confusion_matches_pixel_sums(seed, levels, pixels):
    region, weight, system = _masks(seed, levels=levels)
    truth, values = _summed(region, weight, system, pixels)
    y = 1.0 - values / 255.0
    want = (y[truth].sum(), (1 - y)[~truth].sum(), y[~truth].sum(), (1 - y)[truth].sum())
    got = soft_confusion(over(_record(region, weight, system), pixels))
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=1e-12, abs=1e-9)
    assert sum(got) == pytest.approx(truth.size, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 40))
def test_whole_image_histograms_count_every_pixel(seed, rows, cols):
    region, weight, system = _masks(seed, shape=(rows, cols))
    whole = over(_record(region, weight, system), IMAGE)
    assert whole.positive.tolist() == np.bincount(system[region], minlength=256).tolist()
    assert whole.negative.tolist() == np.bincount(system[~region], minlength=256).tolist()


def test_whole_image_histograms_survive_the_wire():
    record = _record(*_masks(3), system_given=False)
    again = MaskRecord.from_dict(record.to_dict())
    assert again.image_positive.tolist() == record.image_positive.tolist()
    assert again.image_negative.tolist() == record.image_negative.tolist()
    assert again.system_given is False
    with pytest.raises(ValueError, match="whole-image"):
        over(MaskRecord(status="scored"), IMAGE)
    with pytest.raises(ValueError, match="pixels must be"):
        over(record, "zones")


# --------------------------------------------------------------------------------------------
# extra_cells against scikit-learn (tolerance 1e-12: float sums in a different order)


@pytest.mark.parametrize("pixels", [IMAGE, SCORED_PIXELS])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("levels", [None, 3])
def test_extra_cells_match_sklearn(seed, levels, pixels):
    region, weight, system = _masks(seed, levels=levels)
    cells = extra_cells(_record(region, weight, system), 128, pixels)
    truth, values = _summed(region, weight, system, pixels)
    per_threshold = [_numpy_hard(truth, values, t) for t in [-1, *np.unique(system)]]
    assert cells["OptimumIoU"] == pytest.approx(max(i for i, _ in per_threshold), abs=1e-12)
    assert cells["OptimumF1"] == pytest.approx(max(f for _, f in per_threshold), abs=1e-12)
    actual_iou, actual_f1 = _sklearn_hard(truth, values, 128)
    assert cells["ActualIoU"] == pytest.approx(actual_iou, abs=1e-12)
    assert cells["ActualF1"] == pytest.approx(actual_f1, abs=1e-12)
    soft = _sklearn_soft(truth, values)
    assert (cells["SoftMCC"], cells["SoftIoU"], cells["SoftF1"]) == pytest.approx(soft, abs=1e-12)
    assert cells["ReferencePixels"] == int(region.sum())
    assert cells["SqrtReferencePixels"] == pytest.approx(math.sqrt(region.sum()))
    assert list(cells) == list(EXTRA_COLUMNS)


@pytest.mark.parametrize("seed", range(10))
def test_soft_equals_hard_on_binary_mask(seed):
    region, weight, system = _masks(seed, binary=True)
    cells = extra_cells(_record(region, weight, system), 254)
    assert cells["SoftIoU"] == pytest.approx(cells["ActualIoU"], abs=1e-15)
    assert cells["SoftF1"] == pytest.approx(cells["ActualF1"], abs=1e-15)
    predicted = (system <= 254).ravel().astype(int)
    assert cells["SoftMCC"] == pytest.approx(matthews_corrcoef(region.ravel().astype(int), predicted), abs=1e-12)


def test_extra_cells_without_actual_threshold_and_unscored():
    record = _record(*_masks(1))
    cells = extra_cells(record, None)
    assert math.isnan(cells["ActualIoU"]) and math.isnan(cells["ActualF1"])
    assert not math.isnan(cells["OptimumIoU"]) and not math.isnan(cells["SoftMCC"])
    for status in (NOT_SCOREABLE, UNREADABLE):
        cells = extra_cells(MaskRecord(status=status), 3.0)
        assert all(math.isnan(v) for v in cells.values())


def test_numpy_reference_agrees_with_sklearn():
    region, weight, system = _masks(0, levels=5)
    truth, values = _summed(region, weight, system, IMAGE)
    for t in [-1, *np.unique(system)]:
        assert _numpy_hard(truth, values, t) == pytest.approx(_sklearn_hard(truth, values, t), abs=1e-15)


def test_zones_covering_the_image_empty_only_the_scored_choice():
    region, _, system = _masks(2)
    record = _record(region, np.zeros_like(region), system)
    scored = extra_cells(record, 10, SCORED_PIXELS)
    assert all(math.isnan(scored[k]) for k in EXTRA_COLUMNS[:7])
    assert scored["ReferencePixels"] == int(region.sum())
    whole = extra_cells(record, 10, IMAGE)
    assert whole["ActualIoU"] == pytest.approx(_sklearn_hard(region.ravel(), system.ravel().astype(int), 10)[0])


def test_extra_summary_mean_and_population_std():
    table = pd.DataFrame({"SoftMCC": [0.5, 1.0, np.nan, 0.0], "SoftIoU": [np.nan] * 4})
    summary = extra_summary(table, ["SoftMCC", "SoftIoU"], IMAGE).set_index("Metric")
    assert summary.loc["SoftMCC", "Mean"] == pytest.approx(0.5)
    assert summary.loc["SoftMCC", "StdDev"] == pytest.approx(math.sqrt((0 + 0.25 + 0.25) / 3))
    assert summary.loc["SoftMCC", "Images"] == 3
    assert summary.loc["SoftIoU", "Images"] == 0 and math.isnan(summary.loc["SoftIoU", "Mean"])
    assert set(summary["Pixels"]) == {IMAGE}


# --------------------------------------------------------------------------------------------
# mcc_size_histogram: fixed √size columns, exact decimal MCC bins


def _decimal_bin(value: float, edges_tenths: range) -> int:
    """Independent binning: the decimal the float was written as, against k/10 exactly."""
    d = Decimal(repr(value))
    return max(k for k in edges_tenths if Decimal(k) / 10 <= d)


def test_mcc_bins_are_exact_decimals():
    values = [0.3, 0.6, 0.7, 0.9, -0.3, -0.4, 0.1, -0.9, 0.0, 1.0, -1.0, 0.29999999999999993]
    hist = mcc_size_histogram([10.0] * len(values), values)
    hit = hist[hist["Count"] > 0]
    expected = {}
    for v in values:
        low = min(_decimal_bin(v, range(-10, 11)), 9)  # MCC = 1 closes the top bin
        expected[low] = expected.get(low, 0) + 1
    got = {round(low * 10): int(c) for low, c in zip(hit["MCCBinLow"], hit["Count"])}
    assert got == expected
    assert got[3] == 1 and got[2] == 1  # 0.3 is in [0.3, 0.4); the float just below it is not
    assert set(hist["MCCBinLow"]) == {k / 10 for k in range(-10, 10)}


def test_size_columns_are_fixed_and_open_at_1250():
    sizes = [0.0, 124.999, 125.0, 1249.99, 1250.0, 5000.0]
    hist = mcc_size_histogram(sizes, [0.5] * len(sizes))
    other = mcc_size_histogram([3.0], [0.1])
    assert hist["SizeBinLow"].tolist() == other["SizeBinLow"].tolist()
    lows = sorted(set(hist["SizeBinLow"]))
    assert lows == [125.0 * k for k in range(11)]
    assert hist.loc[hist["SizeBinLow"] == 1250.0, "SizeBinHigh"].unique().tolist() == [math.inf]
    counts = hist.groupby("SizeBinLow")["Count"].sum()
    assert counts[0.0] == 2 and counts[125.0] == 1 and counts[1125.0] == 1 and counts[1250.0] == 2


@pytest.mark.parametrize("seed", range(5))
def test_mcc_histogram_shares_against_a_loop(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.uniform(0, 1500, 300)
    mccs = np.round(rng.uniform(-1, 1, 300), 1)  # many values exactly on an edge
    mccs[rng.random(300) < 0.1] = np.nan
    hist = mcc_size_histogram(sizes, mccs)
    assert len(hist) == 11 * 20
    for (low, mcc_low), cell in hist.set_index(["SizeBinLow", "MCCBinLow"]).iterrows():
        in_column = [m for s, m in zip(sizes, mccs) if not np.isnan(m) and (low <= s < low + 125 or (low == 1250 and s >= 1250))]
        count = sum(1 for m in in_column if min(_decimal_bin(float(m), range(-10, 11)), 9) == round(mcc_low * 10))
        assert cell["Count"] == count
        assert cell["Share"] == pytest.approx(count / len(in_column) if in_column else 0.0, abs=1e-15)


def test_mcc_histogram_empty():
    hist = mcc_size_histogram([], [])
    assert len(hist) == 220 and hist["Count"].sum() == 0 and hist["Share"].sum() == 0


def test_histogram_plot_writes_one_png(tmp_path):
    rng = np.random.default_rng(0)
    hist = mcc_size_histogram(rng.uniform(0, 1400, 80), rng.uniform(-1, 1, 80))
    path = mcc_histogram_plot(hist, tmp_path / "sub" / "mcc_hist.png", "Test")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcc_hist.png"]


# --------------------------------------------------------------------------------------------
# SemaFor localization (docs/metrics.md §1.7): TP if IoU >= t, FP if IoU < t, FN only without a localization


def test_semafor_localization_hand_example():
    table = semafor_localization([0.05, 0.15, 0.5, None, 0.0], 127).set_index("IoUThreshold")
    expected = {0.0001: (3, 1, 1), 0.1: (2, 2, 1), 0.2: (1, 3, 1), 0.4: (1, 3, 1)}
    for t, (tp, fp, fn) in expected.items():
        row = table.loc[t]
        assert (row["TP"], row["FP"], row["FN"], row["Probes"], row["SystemThreshold"]) == (tp, fp, fn, 5, 127)
        assert (row["pD"], row["FAR"], row["FNR"]) == (tp / 5, fp / 5, fn / 5)


def test_a_mask_marking_a_region_is_a_localization_whatever_region_it_marks():
    region = np.zeros((10, 12), bool)
    region[2:6, 3:8] = True
    inverted = np.where(region, 255, 0).astype(np.uint8)
    black = np.zeros((10, 12), np.uint8)
    ones = np.ones_like(region)
    assert localization_iou(_record(region, ones, inverted), 127) == 0.0
    assert localization_iou(_record(region, ones, black), 127) == pytest.approx(20 / 120)


def test_a_mask_marking_nothing_is_no_localization():
    """An all-white mask, or one whose every value lies above the system's threshold, claims no
    region: "no localization provided" (FN), like a missing file, not an incorrect detection (FP)."""
    region = np.zeros((10, 12), bool)
    region[2:6, 3:8] = True
    ones = np.ones_like(region)
    white = np.full((10, 12), 255, np.uint8)
    grey = np.full((10, 12), 200, np.uint8)
    assert localization_iou(_record(region, ones, white), 127) is None
    assert localization_iou(_record(region, ones, white, system_given=False), 127) is None
    assert localization_iou(_record(region, ones, grey), 127) is None
    assert localization_iou(_record(region, ones, grey), 200) == pytest.approx(20 / 120)  # marked at its own 200
    # one marked pixel anywhere, even in a no-score zone under --extras-pixels scored, is a claim
    one = white.copy()
    one[0, 0] = 0
    outside_zones = ones.copy()
    outside_zones[0, 0] = False
    assert localization_iou(_record(region, ones, one), 127) == 0.0
    assert localization_iou(_record(region, outside_zones, one), 127, SCORED_PIXELS) == 0.0
    assert localization_iou(_record(region, ones, one), -1) is None  # θ = -1 marks nothing


@pytest.mark.parametrize("seed", range(6))
def test_semafor_localization_properties(seed):
    rng = np.random.default_rng(seed)
    ious = [None if rng.random() < 0.2 else float(v) for v in rng.random(50) ** 2]
    table = semafor_localization(ious, 200)
    assert np.allclose(table["pD"] + table["FAR"] + table["FNR"], 1.0)
    assert table["FNR"].nunique() == 1
    assert (np.diff(table["pD"]) <= 0).all() and (np.diff(table["FAR"]) >= 0).all()
    assert (table["TP"] + table["FP"] + table["FN"] == 50).all()


def test_semafor_localization_no_probe():
    table = semafor_localization([], 127)
    assert table[["pD", "FAR", "FNR"]].isna().all().all()


# --------------------------------------------------------------------------------------------
# report


def test_extra_table_manipulation_and_splice():
    records = [_record(*_masks(s)) for s in range(3)] + [MaskRecord(status=UNREADABLE)]
    keys = pd.DataFrame({"ProbeFileID": ["a", "b", "c", "d"]})
    table = extra_table(keys, {"probe": records}, None)
    assert list(table.columns) == ["ProbeFileID", *EXTRA_COLUMNS, "Scored"]
    assert list(table["Scored"]) == ["Y", "Y", "Y", "N"]
    assert table.loc[0, "OptimumIoU"] == extra_cells(records[0], None)["OptimumIoU"]

    keys["DonorFileID"] = ["w", "x", "y", "z"]
    donors = records[::-1]
    table = extra_table(keys, {"probe": records, "donor": donors}, 200, SCORED_PIXELS)
    assert list(table.columns) == (["ProbeFileID", "DonorFileID"] + [f"p{c}" for c in EXTRA_COLUMNS]
                                   + [f"d{c}" for c in EXTRA_COLUMNS] + ["ProbeScored", "DonorScored"])
    assert list(table["DonorScored"]) == ["N", "Y", "Y", "Y"]
    assert table.loc[1, "dSoftMCC"] == extra_cells(donors[1], 200, SCORED_PIXELS)["SoftMCC"]
    assert table.loc[2, "pActualF1"] == extra_cells(records[2], 200, SCORED_PIXELS)["ActualF1"]
