"""The histogram path of the mask scorer against slow, obviously-correct pixel loops (docs/masks.md §6).

``histogram_record`` reduces a (reference region, weight map, system mask) triple to two 256-bin
histograms, and every per-mask and per-run metric is read off those histograms. Here each metric is
recomputed from the pixels themselves, one threshold at a time, straight from docs/masks.md §6:

* confusion counts (docs/masks.md §6.1): for every θ, loop over the pixels with weight 1; a pixel is predicted
  manipulated iff ``system <= θ``;
* MCC, NMM, BWL1, GWL1 (docs/masks.md §6.2) with the degenerate rules; MCC in 50-digit decimals, and the optimum
  threshold (docs/masks.md §6.3) chosen by an exact comparison (``sign(MCC)·MCC²`` as a fraction);
* the per-mask ROC, AUC and EER (docs/masks.md §6.4);
* pixel- and mask-average AUC and the run's maximum threshold (docs/masks.md §6.5), the per-mask counts at every
  global threshold counted afresh from the pixels (which is what the step lookup must equal).

Tolerances: counts and thresholds exact; floats 1e-12 absolute (numpy's pairwise sums and float64
MCC against sequential Python sums and decimal MCC).

Where docs/masks.md §6.5 is silent — a global threshold at which no mask has a reference pixel (pixel-average
TPR 0/0) or every mask's TPR is NaN (mask average) — the point is left out of the curve, as the
implementation does; the closing points (0,0) and (1,1) are always there.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mfscore.masks.mask_record import BINS, SCORED, MaskRecord, coded_histogram, histogram_record
from mfscore.masks.run_metrics import average_aucs, global_thresholds, maximum_threshold
from mfscore.masks.threshold_metrics import (
    bwl1,
    confusion_at,
    exact_mcc,
    gwl1,
    mask_auc_eer,
    mask_thresholds,
    mcc,
    metrics_at,
    nmm,
    optimum_threshold,
)

TOL = 1e-12
NAN = math.nan


# --------------------------------------------------------------------------------------------
# Random cases


@st.composite
def mask_case(draw, max_side: int = 24):
    """(region, weight, system): bool, bool, uint8 arrays of one random shape."""
    h = draw(st.integers(1, max_side))
    w = draw(st.integers(1, max_side))
    kind = draw(st.sampled_from(["binary", "few", "constant", "grey", "informative"]))
    if kind == "binary":
        elements = st.sampled_from([0, 255])
    elif kind == "few":
        elements = st.sampled_from(draw(st.lists(st.integers(0, 255), min_size=2, max_size=4, unique=True)))
    elif kind == "constant":
        elements = st.just(draw(st.integers(0, 255)))
    else:
        elements = st.integers(0, 255)
    system = draw(hnp.arrays(np.uint8, (h, w), elements=elements))
    region = draw(hnp.arrays(np.bool_, (h, w)))
    if kind == "informative":  # low values on the region, high values off it, so MCC is not ~0
        system = np.where(region, system // 2, 128 + system // 2).astype(np.uint8)
        flips = draw(hnp.arrays(np.bool_, (h, w), elements=st.sampled_from([False, False, False, True])))
        system = np.where(flips, 255 - system, system).astype(np.uint8)
    weight_kind = draw(st.sampled_from(["random", "random", "ones", "zeros", "mostly zero"]))
    if weight_kind == "ones":
        weight = np.ones((h, w), bool)
    elif weight_kind == "zeros":
        weight = np.zeros((h, w), bool)
    elif weight_kind == "mostly zero":
        weight = draw(hnp.arrays(np.bool_, (h, w), elements=st.sampled_from([False] * 7 + [True])))
    else:
        weight = draw(hnp.arrays(np.bool_, (h, w)))
    return region, weight, system


def record_of(case) -> MaskRecord:
    region, weight, system = case
    return histogram_record(region, weight, system, pixel_bns=0, pixel_sns=0, pixel_pns=0)


# --------------------------------------------------------------------------------------------
# The reference: pixel loops and the formulas of docs/masks.md §6.2


def scored_pixels(case) -> list[tuple[bool, int]]:
    """(is reference region, system value) of every pixel with weight 1, by an explicit loop."""
    region, weight, system = (a.tolist() for a in case)
    out = []
    for i in range(len(system)):
        for j in range(len(system[i])):
            if weight[i][j]:
                out.append((bool(region[i][j]), int(system[i][j])))
    return out


def ref_thresholds(system: np.ndarray) -> list[int]:
    return sorted({-1} | {int(v) for row in system.tolist() for v in row})


def ref_counts(pixels: list[tuple[bool, int]], theta: int) -> tuple[int, int, int, int]:
    """(TP, TN, FP, FN) at θ: predicted manipulated iff system <= θ."""
    tp = tn = fp = fn = 0
    for is_region, value in pixels:
        predicted = value <= theta
        if is_region and predicted:
            tp += 1
        elif is_region:
            fn += 1
        elif predicted:
            fp += 1
        else:
            tn += 1
    return tp, tn, fp, fn


def ref_mcc(tp, tn, fp, fn) -> float:
    n = tp + tn + fp + fn
    if n == 0:
        return NAN
    if tp + fn in (0, n) or tp + fp in (0, n):
        return 0.0
    with localcontext() as ctx:
        ctx.prec = 50
        return float(Decimal(tp * tn - fp * fn) / Decimal((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)).sqrt())


def ref_mcc_key(tp, tn, fp, fn) -> Fraction | None:
    """An exact, order-preserving image of MCC: sign(MCC)·MCC² as a fraction (None for NaN)."""
    n = tp + tn + fp + fn
    if n == 0:
        return None
    if tp + fn in (0, n) or tp + fp in (0, n):
        return Fraction(0)
    num = tp * tn - fp * fn
    return Fraction(num * abs(num), (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))


def ref_nmm(tp, tn, fp, fn) -> float:
    if tp + fn == 0:
        return NAN
    return float(max(Fraction(-1), Fraction(tp - fn - fp, tp + fn)))


def ref_bwl1(tp, tn, fp, fn) -> float:
    n = tp + tn + fp + fn
    return NAN if n == 0 else float(Fraction(fp + fn, n))


def ref_gwl1(pixels) -> float:
    """Σ_w |ref_bin − sys| / 255 / Σw, ref_bin 0 on the region and 255 off it."""
    if not pixels:
        return NAN
    total = sum(abs((0 if is_region else 255) - value) for is_region, value in pixels)
    return float(Fraction(total, 255 * len(pixels)))


def ref_optimum(pixels, thresholds) -> float:
    """Largest MCC, lowest θ on ties (exact comparison), NaN MCCs skipped; NaN if none."""
    best, best_theta = None, NAN
    for theta in thresholds:  # ascending
        key = ref_mcc_key(*ref_counts(pixels, theta))
        if key is not None and (best is None or key > best):
            best, best_theta = key, float(theta)
    return best_theta


def ref_rates(tp, tn, fp, fn) -> tuple[float, float]:
    """(TPR, FPR) with 0 where a denominator is 0 (docs/masks.md §6.4)."""
    tpr = tp / (tp + fn) if tp + fn else 0.0
    fpr = fp / (fp + tn) if fp + tn else 0.0
    return tpr, fpr


def trapezoid(points: list[tuple[float, float]]) -> float:
    """Points (FPR, TPR), sorted by FPR then TPR, summed by trapezoids in order."""
    points = sorted(points)
    area = 0.0
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        area += (x1 - x0) * (y1 + y0) / 2.0
    return area


def ref_auc_eer(pixels, thresholds) -> tuple[float, float]:
    points = []
    for theta in thresholds:
        tpr, fpr = ref_rates(*ref_counts(pixels, theta))
        points.append((fpr, tpr))
    points.append((0.0, 0.0))
    points.sort()
    auc = trapezoid(points)
    best_gap, eer = None, NAN
    for fpr, tpr in points:
        fnr = 1.0 - tpr
        gap = abs(fpr - fnr)
        if best_gap is None or gap < best_gap:  # first argmin
            best_gap, eer = gap, (fpr + fnr) / 2.0
    return auc, eer


def close(a: float, b: float) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOL


# --------------------------------------------------------------------------------------------
# Per-mask metrics

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mask_case())
def test_record_matches_pixels(case):
    region, weight, system = case
    record = record_of(case)
    pixels = scored_pixels(case)
    assert record.status == SCORED
    assert record.positive.dtype == np.int64 and record.negative.dtype == np.int64
    assert record.positive.shape == (BINS,) and record.negative.shape == (BINS,)
    assert record.pixel_n == len(pixels)
    assert record.region_pixels == sum(v for row in region.tolist() for v in row)
    for value in range(BINS):
        assert record.positive[value] == sum(1 for r, v in pixels if r and v == value)
        assert record.negative[value] == sum(1 for r, v in pixels if not r and v == value)
    assert mask_thresholds(record).tolist() == ref_thresholds(system)


@SETTINGS
@given(mask_case())
def test_counts_at_every_threshold(case):
    record = record_of(case)
    pixels = scored_pixels(case)
    every = np.arange(-1, 256)  # the step function between present values too
    c = confusion_at(record, every)
    for dtype_array in (c.tp, c.tn, c.fp, c.fn):
        assert dtype_array.dtype == np.int64
    got = list(zip(c.tp.tolist(), c.tn.tolist(), c.fp.tolist(), c.fn.tolist()))
    assert got == [ref_counts(pixels, theta) for theta in range(-1, 256)]
    assert c.n.tolist() == [len(pixels)] * 257


@SETTINGS
@given(mask_case())
def test_metrics_at_each_threshold(case):
    region, weight, system = case
    record = record_of(case)
    pixels = scored_pixels(case)
    thresholds = ref_thresholds(system)
    c = confusion_at(record, np.array(thresholds))
    vector_mcc, vector_nmm, vector_bwl1 = mcc(c), nmm(c), bwl1(c)
    for k, theta in enumerate(thresholds):
        counts = ref_counts(pixels, theta)
        assert (int(c.tp[k]), int(c.tn[k]), int(c.fp[k]), int(c.fn[k])) == counts
        want_mcc, want_nmm, want_bwl1 = ref_mcc(*counts), ref_nmm(*counts), ref_bwl1(*counts)
        assert close(vector_mcc[k], want_mcc), (theta, counts, vector_mcc[k], want_mcc)
        assert close(exact_mcc(*counts), want_mcc), (theta, counts)
        assert close(vector_nmm[k], want_nmm), (theta, counts)
        assert close(vector_bwl1[k], want_bwl1), (theta, counts)
        point = metrics_at(record, float(theta))
        assert (point.tp, point.tn, point.fp, point.fn) == counts
        assert close(point.mcc, want_mcc) and close(point.nmm, want_nmm) and close(point.bwl1, want_bwl1)
    assert close(gwl1(record), ref_gwl1(pixels))


@SETTINGS
@given(mask_case())
def test_optimum_threshold_and_auc_eer(case):
    region, weight, system = case
    record = record_of(case)
    pixels = scored_pixels(case)
    thresholds = ref_thresholds(system)
    want = ref_optimum(pixels, thresholds)
    got = optimum_threshold(record)
    assert (math.isnan(got) and math.isnan(want)) or got == want, (got, want)
    assert math.isnan(want) == (len(pixels) == 0)
    auc, eer = mask_auc_eer(record)
    want_auc, want_eer = ref_auc_eer(pixels, thresholds)
    assert close(auc, want_auc), (auc, want_auc)
    assert close(eer, want_eer), (eer, want_eer)


def test_all_zero_weight_is_nan_everywhere():
    region = np.eye(5, dtype=bool)
    system = np.arange(25, dtype=np.uint8).reshape(5, 5)
    record = histogram_record(region, np.zeros((5, 5), bool), system, pixel_bns=0, pixel_sns=0, pixel_pns=0)
    assert record.pixel_n == 0 and record.region_pixels == 5
    assert math.isnan(optimum_threshold(record))
    assert math.isnan(gwl1(record))
    c = confusion_at(record, mask_thresholds(record))
    assert np.isnan(mcc(c)).all() and np.isnan(nmm(c)).all() and np.isnan(bwl1(c)).all()
    assert math.isnan(exact_mcc(0, 0, 0, 0))


def test_exact_mcc_degenerate_rules():
    assert exact_mcc(0, 5, 0, 0) == 0.0          # TP+FN = 0
    assert exact_mcc(5, 0, 0, 0) == 0.0          # TP+FN = N
    assert exact_mcc(0, 3, 0, 2) == 0.0          # TP+FP = 0
    assert exact_mcc(2, 0, 3, 0) == 0.0          # TP+FP = N
    assert exact_mcc(3, 3, 0, 0) == 1.0
    assert exact_mcc(0, 0, 3, 3) == -1.0


# --------------------------------------------------------------------------------------------
# Run-level metrics (docs/masks.md §6.5)


def ref_run(cases) -> tuple[float, float, float]:
    """(PixelAverageAUC, MaskAverageAUC, MaximumThreshold) from the pixels of every mask."""
    thresholds = sorted(set().union(*(ref_thresholds(system) for _, _, system in cases)))
    all_pixels = [scored_pixels(case) for case in cases]
    pixel_points, mask_points = [(0.0, 0.0), (1.0, 1.0)], [(0.0, 0.0), (1.0, 1.0)]
    best_total, maximum = None, NAN
    for theta in thresholds:
        counts = [ref_counts(pixels, theta) for pixels in all_pixels]
        tp = sum(c[0] for c in counts)
        tn = sum(c[1] for c in counts)
        fp = sum(c[2] for c in counts)
        fn = sum(c[3] for c in counts)
        if tp + fn and fp + tn:
            pixel_points.append((fp / (fp + tn), tp / (tp + fn)))
        tprs = [c[0] / (c[0] + c[3]) for c in counts if c[0] + c[3]]
        fprs = [c[2] / (c[2] + c[1]) for c in counts if c[2] + c[1]]
        if tprs and fprs:
            mask_points.append((sum(fprs) / len(fprs), sum(tprs) / len(tprs)))
        # sum of MCC over masks, NaN ignored; 50-digit decimals, ties within 1e-30 go to the lowest θ
        with localcontext() as ctx:
            ctx.prec = 50
            total = Decimal(0)
            for c in counts:
                n = sum(c)
                if n == 0:
                    continue
                t_p, t_n, f_p, f_n = c
                if t_p + f_n in (0, n) or t_p + f_p in (0, n):
                    continue
                total += Decimal(t_p * t_n - f_p * f_n) / Decimal(
                    (t_p + f_p) * (t_p + f_n) * (t_n + f_p) * (t_n + f_n)).sqrt()
            if best_total is None or total > best_total + Decimal("1e-30"):
                best_total, maximum = total, float(theta)
    return trapezoid(pixel_points), trapezoid(mask_points), maximum


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(mask_case(max_side=16), min_size=1, max_size=5))
def test_run_metrics_against_pixels(cases):
    records = [record_of(case) for case in cases]
    union = sorted(set().union(*(ref_thresholds(system) for _, _, system in cases)))
    assert global_thresholds(records).tolist() == union
    want_pixel, want_mask, want_maximum = ref_run(cases)
    pixel, mask = average_aucs(records)
    assert close(pixel, want_pixel), (pixel, want_pixel)
    assert close(mask, want_mask), (mask, want_mask)
    assert maximum_threshold(records) == want_maximum


def test_run_metrics_of_no_records():
    assert all(math.isnan(v) for v in average_aucs([]))
    assert math.isnan(maximum_threshold([]))


def test_step_lookup_between_masks_thresholds():
    """A mask's counts at a global threshold it lacks are its counts at its largest threshold below."""
    region = np.array([[True, False, True, False]])
    weight = np.ones((1, 4), bool)
    a = histogram_record(region, weight, np.array([[10, 10, 200, 200]], np.uint8), pixel_bns=0, pixel_sns=0, pixel_pns=0)
    b = histogram_record(region, weight, np.array([[50, 100, 150, 250]], np.uint8), pixel_bns=0, pixel_sns=0, pixel_pns=0)
    assert global_thresholds([a, b]).tolist() == [-1, 10, 50, 100, 150, 200, 250]
    c = confusion_at(a, np.array([50, 100, 150, 199, 200, 250]))
    assert c.tp.tolist() == [1, 1, 1, 1, 2, 2]
    assert c.fp.tolist() == [1, 1, 1, 1, 2, 2]


# --------------------------------------------------------------------------------------------
# Counts beyond float32 / 2**24


def test_counts_stay_exact_past_2_pow_24():
    big = 2 ** 40
    positive = np.zeros(BINS, np.int64)
    negative = np.zeros(BINS, np.int64)
    positive[0] = big
    positive[7] = 1
    positive[255] = 2 ** 24 + 1
    negative[0] = 3
    negative[200] = big + 5
    negative[255] = 2 ** 24 + 3
    present = (positive + negative) > 0
    record = MaskRecord(status=SCORED, positive=positive, negative=negative, present=present)
    assert record.pixel_n == 2 * big + 1 + 2 ** 25 + 4 + 5 + 3
    assert mask_thresholds(record).tolist() == [-1, 0, 7, 200, 255]
    c = confusion_at(record, np.array([-1, 0, 6, 7, 199, 200, 254, 255]))
    for array in (c.tp, c.tn, c.fp, c.fn, c.n):
        assert array.dtype == np.int64
    assert c.tp.tolist() == [0, big, big, big + 1, big + 1, big + 1, big + 1, big + 2 + 2 ** 24]
    assert c.fp.tolist() == [0, 3, 3, 3, 3, big + 8, big + 8, big + 2 ** 24 + 11]
    assert c.fn.tolist() == [big + 2 + 2 ** 24, 2 ** 24 + 2, 2 ** 24 + 2, 2 ** 24 + 1, 2 ** 24 + 1,
                             2 ** 24 + 1, 2 ** 24 + 1, 0]
    assert c.tn.tolist() == [big + 2 ** 24 + 11, big + 2 ** 24 + 8, big + 2 ** 24 + 8, big + 2 ** 24 + 8,
                             big + 2 ** 24 + 8, 2 ** 24 + 3, 2 ** 24 + 3, 0]
    assert set(c.n.tolist()) == {record.pixel_n}
    # the reported MCC uses the exact integers
    point = metrics_at(record, 7.0)
    assert (point.tp, point.tn, point.fp, point.fn) == (big + 1, big + 2 ** 24 + 8, 3, 2 ** 24 + 1)
    assert all(type(v) is int for v in (point.tp, point.tn, point.fp, point.fn))
    assert close(point.mcc, ref_mcc(point.tp, point.tn, point.fp, point.fn))
    # the wire form keeps them exact too
    again = MaskRecord.from_dict(record.to_dict())
    assert again.positive.dtype == np.int64 and again.positive.tolist() == positive.tolist()
    assert again.negative.tolist() == negative.tolist()


def test_coded_histogram_exact_past_2_pow_24_in_one_bin():
    """histogram_record's counting pass: more than 2**24 pixels fall in one bin (float32 would stall)."""
    codes = np.zeros((4097, 4096), np.uint16)  # 2**24 + 4096 pixels
    codes[0, :3] = 5
    codes[-1, -1] = 1023
    counts = coded_histogram(codes, 1024)
    assert counts.dtype == np.int64
    assert int(counts[0]) == 4097 * 4096 - 4 and int(counts[5]) == 3 and int(counts[1023]) == 1
    assert int(counts.sum()) == 4097 * 4096


@pytest.mark.parametrize("theta", [-1, 0, 127, 255])
def test_confusion_at_single_threshold_types(theta):
    record = histogram_record(np.ones((2, 2), bool), np.ones((2, 2), bool),
                              np.array([[0, 127], [128, 255]], np.uint8), pixel_bns=0, pixel_sns=0, pixel_pns=0)
    c = confusion_at(record, np.array([theta]))
    assert c.tp.dtype == np.int64
    assert int(c.tp[0]) == sum(1 for v in (0, 127, 128, 255) if v <= theta)


# --------------------------------------------------------------------------------------------
# Exact ties that float64 MCC orders by one ulp


def tied_mask() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """20 pixels, 3 reference positives, thresholds {-1, 10, 20, 255}.

    At θ = 10 the counts are TP 1, FP 3 (MCC 8/√3264) and at θ = 20 TP 2, FP 8 (MCC 10/√5100):
    the same number (8²·5100 = 10²·3264), but float64 makes the second one ulp larger.
    """
    region = np.array([True] * 3 + [False] * 17)
    system = np.array([10, 20, 255] + [10] * 3 + [20] * 5 + [255] * 9, np.uint8)
    return region.reshape(4, 5), np.ones((4, 5), bool), system.reshape(4, 5)


def test_tied_mask_is_a_float_tie():
    record = record_of(tied_mask())
    c = confusion_at(record, np.array([10, 20]))
    assert list(zip(c.tp.tolist(), c.fp.tolist())) == [(1, 3), (2, 8)]
    assert ref_mcc_key(1, 14, 3, 2) == ref_mcc_key(2, 9, 8, 1)  # mathematically equal
    assert exact_mcc(1, 14, 3, 2) == exact_mcc(2, 9, 8, 1)
    float_values = mcc(c)
    assert float_values[0] != float_values[1]  # ... but not in float64


def test_optimum_threshold_exact_tie_takes_lowest():
    """docs/masks.md §6.3: largest MCC, the lowest θ on ties — ties judged on the exact MCC, not float64's."""
    case = tied_mask()
    assert ref_optimum(scored_pixels(case), ref_thresholds(case[2])) == 10.0
    assert optimum_threshold(record_of(case)) == 10.0


def test_maximum_threshold_exact_tie_takes_lowest():
    case = tied_mask()
    assert ref_run([case])[2] == 10.0
    assert maximum_threshold([record_of(case)]) == 10.0
    assert maximum_threshold([record_of(case), record_of(case)]) == 10.0
