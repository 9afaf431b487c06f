"""The extra mask metrics on ten hand-checkable 12×10 probes, through ``mfscore mask``.

Each probe is drawn below ('#' = manipulated in the reference, 'o' = marked by the system, black
in its mask; '@' = both). The reference rectangle R is rows 2–5 × columns 3–7 (20 pixels) unless
a probe says otherwise. Every number is checked against plain numpy sums over the whole image
(Bammey et al., docs/metrics.md §2.1–§2.2), and the SemaFor localization table
(docs/metrics.md §1.7) against the TP/FP/FN written beside each probe:

  perfect        system = R                          IoU 1        TP at every t
  inverted       system = everything but R           IoU 0        FP (a localization, never FN)
  empty          an all-white mask file              none         FN: it marks no pixel, so claims no region
  all            an all-black mask                   IoU 20/120   TP at t ≤ 0.1, FP above
  grey           64 on R, 192 elsewhere              IoU 1        TP (binarised at 127: Y ≥ 0.5)
  shifted        R moved 2 columns right             IoU 12/28    TP at every t
  random         uniform noise (seeded)              from numpy
  one-pixel      reference (5, 6) only; system (5, 6) and (5, 7)   IoU 1/2   TP at every t
  half           reference columns 0–5, system rows 0–4            IoU 30/90 TP at t ≤ 0.2, FP at 0.4
  no-mask        no mask file                        none         FN at every t

"Provided" means the mask marks at least one pixel of the image at the system's threshold (docs/metrics.md,
Masks, ``_mask_extra_semafor``): the all-white file and the missing file are both FN; the all-black and
the inverted masks are localizations, scored by their IoU.

      perfect        inverted       shifted         half
  ............   oooooooooooo   ............   @@@@@@oooooo
  ............   oooooooooooo   ............   @@@@@@oooooo
  ...@@@@@....   ooo#####oooo   ...##@@@oo..   @@@@@@oooooo
  ...@@@@@....   ooo#####oooo   ...##@@@oo..   @@@@@@oooooo
  ...@@@@@....   ooo#####oooo   ...##@@@oo..   @@@@@@oooooo
  ...@@@@@....   ooo#####oooo   ...##@@@oo..   ######......
  ............   oooooooooooo   ............   ######......
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from mfscore.cli.main import main
from mfscore.formats.tables import read_table, write_table
from mfscore.sample_data.masks import MaskDataset, generate_mask_dataset

H, W = 10, 12
WHITE = 255


def _rectangle(rows: slice, cols: slice) -> np.ndarray:
    region = np.zeros((H, W), bool)
    region[rows, cols] = True
    return region


R = _rectangle(slice(2, 6), slice(3, 8))


def _marked(region: np.ndarray) -> np.ndarray:
    return np.where(region, 0, WHITE).astype(np.uint8)


def _probes() -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """name -> (reference region, system mask or None for no mask file)."""
    one_pixel = _rectangle(slice(5, 6), slice(6, 7))
    return {
        "perfect": (R, _marked(R)),
        "inverted": (R, _marked(~R)),
        "empty": (R, np.full((H, W), WHITE, np.uint8)),
        "all": (R, np.zeros((H, W), np.uint8)),
        "grey": (R, np.where(R, 64, 192).astype(np.uint8)),
        "shifted": (R, _marked(_rectangle(slice(2, 6), slice(5, 10)))),
        "random": (R, np.random.default_rng(7).integers(0, 256, (H, W)).astype(np.uint8)),
        "one-pixel": (one_pixel, _marked(_rectangle(slice(5, 6), slice(6, 8)))),
        "half": (_rectangle(slice(0, H), slice(0, 6)), _marked(_rectangle(slice(0, 5), slice(0, W)))),
        "no-mask": (R, None),
    }


# (TP, FP, FN) per probe at t = 0.0001, 0.1, 0.2, 0.4; the random probe is added from numpy
HAND = {
    "perfect": "TTTT", "inverted": "PPPP", "empty": "NNNN", "all": "TTPP", "grey": "TTTT",
    "shifted": "TTTT", "one-pixel": "TTTT", "half": "TTTP", "no-mask": "NNNN",
}
THRESHOLDS = (0.0001, 0.1, 0.2, 0.4)


@pytest.fixture(scope="module")
def ten_probes(tmp_path_factory) -> tuple[MaskDataset, dict[str, str]]:
    """The generated layout (journals, index) with its masks replaced by the ten drawings."""
    data = generate_mask_dataset(tmp_path_factory.mktemp("ten"), n_probes=10, width=W, height=H,
                                 non_target_share=0.0, seed=5)
    reference = read_table(data.directory / data.reference)
    system = read_table(data.directory / data.system)
    names = {}
    for (name, (region, mask)), ref_row, sys_index in zip(_probes().items(), reference.itertuples(), system.index):
        names[ref_row.ProbeFileID] = name
        colour = np.full((H, W, 3), WHITE, np.uint8)
        colour[region] = 0
        cv2.imwrite(str(data.directory / ref_row.ProbeMaskFileName), colour)
        if mask is None:
            system.loc[sys_index, "OutputProbeMaskFileName"] = ""
        else:
            cv2.imwrite(str(data.directory / "system" / system.loc[sys_index, "OutputProbeMaskFileName"]), mask)
    system["ProbeStatus"] = "Processed"
    write_table(system, data.directory / data.system)
    return data, names


def _run(data: MaskDataset, out: Path, *extra: str) -> dict[str, pd.DataFrame]:
    code = main(["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "-s", str(data.directory / data.system), "-oR", str(out / "run"), "--rbin", "0", *extra])
    assert code == 0
    return {name: read_table(out / f"run_mask_extra{name}.csv")
            for name in ("", "_summary", "_semafor", "_mcc_by_size")}


def _independent(region: np.ndarray, mask: np.ndarray | None, actual: int | None) -> dict[str, float]:
    """Whole-image sums with numpy alone (docs/metrics.md §2.1–2.2)."""
    system = np.full((H, W), WHITE, np.uint8) if mask is None else mask
    y = 1.0 - system.astype(np.float64) / 255.0
    tp, fp = y[region].sum(), y[~region].sum()
    fn, tn = (1 - y)[region].sum(), (1 - y)[~region].sum()
    mcc = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) if min(
        tp + fp, tp + fn, tn + fp, tn + fn) > 0 else 0.0

    def hard(threshold: int) -> tuple[float, float]:
        predicted = system <= threshold
        a, b, c = (predicted & region).sum(), (predicted & ~region).sum(), (~predicted & region).sum()
        return a / (a + b + c), 2 * a / (2 * a + b + c)

    best = [hard(t) for t in range(-1, 256)]
    cells = {"OptimumIoU": max(i for i, _ in best), "OptimumF1": max(f for _, f in best),
             "SoftMCC": mcc, "SoftIoU": tp / (tp + fp + fn), "SoftF1": 2 * tp / (2 * tp + fp + fn),
             "ReferencePixels": float(region.sum())}
    cells["ActualIoU"], cells["ActualF1"] = hard(actual) if actual is not None else (math.nan, math.nan)
    threshold = 127 if actual is None else actual
    marks_a_pixel = mask is not None and bool((mask <= threshold).any())
    cells["LocalizationIoU"] = hard(threshold)[0] if marks_a_pixel else None
    return cells


@pytest.mark.parametrize("sbin", [None, 100])
def test_ten_probes_against_numpy(ten_probes, tmp_path, sbin):
    data, names = ten_probes
    outputs = _run(data, tmp_path, *(["--sbin", str(sbin)] if sbin is not None else []))
    table = outputs[""].set_index("ProbeFileID")
    expected = {probe: _independent(*_probes()[name], sbin) for probe, name in names.items()}
    largest = 0.0
    for probe, cells in expected.items():
        for column in ("OptimumIoU", "OptimumF1", "ActualIoU", "ActualF1", "SoftMCC", "SoftIoU", "SoftF1",
                       "ReferencePixels"):
            got, want = float(table.loc[probe, column]), cells[column]
            if math.isnan(want):
                assert math.isnan(got), (names[probe], column)
            else:
                assert got == pytest.approx(want, abs=1e-12), (names[probe], column)
                largest = max(largest, abs(got - want))
    assert largest < 1e-12

    summary = outputs["_summary"].set_index("Metric")
    for column in ("OptimumIoU", "SoftMCC", "SoftF1"):
        values = np.array([cells[column] for cells in expected.values()])
        assert summary.loc[column, "Mean"] == pytest.approx(values.mean(), abs=1e-12)
        assert summary.loc[column, "StdDev"] == pytest.approx(values.std(), abs=1e-12)
        assert summary.loc[column, "Images"] == 10
    assert set(summary["Pixels"]) == {"image"}

    semafor = outputs["_semafor"].set_index("IoUThreshold")
    random_iou = expected[next(p for p, n in names.items() if n == "random")]["LocalizationIoU"]
    for k, t in enumerate(THRESHOLDS):
        verdicts = [HAND[name][k] for name in HAND] if sbin is None else [
            "N" if c["LocalizationIoU"] is None else "T" if c["LocalizationIoU"] >= t else "P"
            for c in expected.values()]
        if sbin is None:
            verdicts.append("T" if random_iou >= t else "P")
        row = semafor.loc[t]
        assert (row["TP"], row["FP"], row["FN"], row["Probes"]) == (
            verdicts.count("T"), verdicts.count("P"), verdicts.count("N"), 10)
        assert row["SystemThreshold"] == (127 if sbin is None else sbin)


def test_histogram_bins_the_soft_mcc(ten_probes, tmp_path):
    data, names = ten_probes
    histogram = _run(data, tmp_path)["_mcc_by_size"]
    expected: dict[tuple[float, int], int] = {}
    for name in names.values():
        region, mask = _probes()[name]
        mcc = _independent(region, mask, None)["SoftMCC"]
        tenths = max(k for k in range(-10, 10) if Decimal(k) / 10 <= Decimal(repr(float(mcc))))
        column = min(math.floor(math.sqrt(region.sum()) / 125), 10) * 125.0
        expected[(column, tenths)] = expected.get((column, tenths), 0) + 1
    hit = histogram[histogram["Count"] > 0]
    got = {(low, round(m * 10)): count for low, m, count in zip(hit["SizeBinLow"], hit["MCCBinLow"], hit["Count"])}
    assert got == expected
    assert len(histogram) == 11 * 20


def test_scored_pixels_choice_is_empty_on_a_small_image(ten_probes, tmp_path):
    """MediScore's default zones (erosion 15, dilation 11 px) leave no scored pixel around the 4×5
    rectangle R in a 12×10 image: summed over the scored pixels, those probes have no value."""
    data, names = ten_probes
    outputs = _run(data, tmp_path, "--extras-pixels", "scored")
    table = outputs[""].set_index("ProbeFileID")
    on_r = [p for p, n in names.items() if _probes()[n][0] is R]
    assert len(on_r) == 8 and table.loc[on_r, "SoftMCC"].isna().all()
    assert table.loc[on_r, "OptimumIoU"].isna().all()
    assert set(outputs["_summary"]["Pixels"]) == {"scored"}
    summary = outputs["_summary"].set_index("Metric")
    assert (summary.drop(index=["ActualIoU", "ActualF1"])["Images"] == 10 - len(on_r)).all()
    assert (summary.loc[["ActualIoU", "ActualF1"], "Images"] == 0).all()  # no --sbin: no actual threshold
    assert (outputs["_semafor"]["Probes"] == 10 - len(on_r)).all()
