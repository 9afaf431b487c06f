"""No-score weight maps and counts (docs/masks.md §5.2–§5.5), on MediScore's unit-test examples."""

from __future__ import annotations

import numpy as np
import pytest

from mfscore.masks.noscore_zones import (
    NoScoreZones,
    boundary_noscore,
    distraction_noscore,
    noscore_counts,
    noscore_zones,
    pixel_noscore,
)


def square(lo: int, hi: int, size: int = 100) -> np.ndarray:
    """Rows and columns lo..hi inclusive."""
    mask = np.zeros((size, size), bool)
    mask[lo : hi + 1, lo : hi + 1] = True
    return mask


def test_bns_spec_example():
    # Region 40–59, eks 3 / dks 5: eroded 41–58, dilated 38–61.
    bns = boundary_noscore(square(40, 59), 3, 5, "box")
    np.testing.assert_array_equal(bns, ~(square(38, 61) & ~square(41, 58)))
    zero_rows = np.flatnonzero(~bns[:, 50])
    assert zero_rows.tolist() == [38, 39, 40, 59, 60, 61]
    zero_cols = np.flatnonzero(~bns[50, :])
    assert zero_cols.tolist() == [38, 39, 40, 59, 60, 61]
    assert (~bns).sum() == 24 * 24 - 18 * 18


def test_bns_all_true_when_both_sizes_zero():
    bns = boundary_noscore(square(40, 59), 0, 0, "box")
    assert bns.dtype == bool and bns.all()


def test_bns_one_side_only():
    region = square(40, 59)
    np.testing.assert_array_equal(boundary_noscore(region, 0, 5, "box"), ~(square(38, 61) & ~region))
    np.testing.assert_array_equal(boundary_noscore(region, 3, 0, "box"), ~(region & ~square(41, 58)))


def test_sns_spec_example():
    # maskTests.test_jp2_noScore, "2 and 1 coincide": the selected bit-plane and the distractor
    # bit-plane cover the same square 30–49; eks 3, ntdks 7.
    dis = square(30, 49)
    sns = distraction_noscore(dis, dis.copy(), 3, 7, "box")
    np.testing.assert_array_equal(sns, ~(square(27, 52) & ~square(31, 48)))


def test_sns_all_true_without_distractors():
    sns = distraction_noscore(np.zeros((10, 10), bool), square(2, 5, 10), 3, 7, "box")
    assert sns.dtype == bool and sns.all()


def test_sns_eroded_region_forced_back():
    # A distractor next to the region: its dilation reaches into the region, but only the band
    # outside the eroded core stays no-score.
    region = square(40, 59)
    dis = np.zeros((100, 100), bool)
    dis[40:60, 62:70] = True
    sns = distraction_noscore(dis, region, 3, 7, "box")
    dilated = np.zeros((100, 100), bool)
    dilated[37:63, 59:73] = True
    np.testing.assert_array_equal(sns, ~dilated | square(41, 58))
    assert not sns[45, 59] and sns[45, 58]


def test_pns():
    system = np.array([[0, 200, 255], [200, 17, 200]], np.uint8)
    np.testing.assert_array_equal(pixel_noscore(system, 200), system != 200)
    assert pixel_noscore(system, None).all()
    assert pixel_noscore(system, -1).all()


def test_pixel_value_minus_one_never_matches():
    zones = noscore_zones(
        np.zeros((4, 4), bool),
        np.zeros((4, 4), bool),
        np.full((4, 4), 255, np.uint8),
        erode_size=0,
        dilate_size=0,
        distraction_size=0,
        kernel="box",
        pixel_value=-1,
    )
    assert noscore_counts(zones) == {"PixelN": 16, "PixelSNS": 0, "PixelBNS": 0, "PixelPNS": 0}


def test_counts_double_count_pns():
    # Region 40–59 (BNS ring 38–61 minus 41–58), distractor 70–79 (SNS 67–82 with ntdks 7), and a
    # system mask declaring value 200 on rows 0–64 of column 60 — through both the BNS ring and
    # plain scored pixels — and on the whole SNS square.
    region = square(40, 59)
    dis = square(70, 79)
    system = np.full((100, 100), 255, np.uint8)
    system[0:65, 60] = 200
    system[67:83, 67:83] = 200
    zones = noscore_zones(
        region, dis, system, erode_size=3, dilate_size=5, distraction_size=7, kernel="box", pixel_value=200
    )
    counts = noscore_counts(zones)
    bns_zero = 24 * 24 - 18 * 18
    sns_zero = 16 * 16
    pns_zero = 65 + sns_zero
    pns_outside = 65 - 24  # column 60, rows 38–61 lie in the BNS ring
    assert counts == {
        "PixelN": 100 * 100 - bns_zero - sns_zero - pns_outside,
        "PixelSNS": sns_zero,
        "PixelBNS": bns_zero,
        "PixelPNS": pns_zero,
    }
    # Every PNS pixel inside the BNS ring or the SNS square is counted twice.
    total = counts["PixelN"] + counts["PixelBNS"] + counts["PixelSNS"] + counts["PixelPNS"]
    assert total == 100 * 100 + 24 + sns_zero > 100 * 100


def test_sns_has_priority_over_bns():
    # A distractor dilation overlapping the BNS ring: those pixels count as SNS only.
    region = square(40, 59)
    dis = np.zeros((100, 100), bool)
    dis[40:60, 63:70] = True
    zones = noscore_zones(
        region,
        dis,
        np.zeros((100, 100), np.uint8),
        erode_size=3,
        dilate_size=5,
        distraction_size=7,
        kernel="box",
        pixel_value=None,
    )
    counts = noscore_counts(zones)
    overlap = int((~zones.bns & ~zones.sns).sum())
    assert overlap > 0
    assert counts["PixelBNS"] == int((~zones.bns).sum()) - overlap
    assert counts["PixelN"] + counts["PixelBNS"] + counts["PixelSNS"] + counts["PixelPNS"] == 100 * 100


def test_weight_and_frozen():
    t, f = np.array([True, True]), np.array([True, False])
    zones = NoScoreZones(bns=t, sns=f, pns=t)
    np.testing.assert_array_equal(zones.weight, [True, False])
    with pytest.raises(AttributeError):
        zones.bns = f


@pytest.mark.parametrize("everywhere", [(b, s, p) for b in (0, 1) for s in (0, 1) for p in (0, 1)])
def test_counts_and_weight_skip_all_true_maps_exactly(everywhere):
    # Zones that leave out nothing are all-True broadcasts, counted and combined without reading their pixels;
    # the result must be what counting the same maps written out pixel by pixel gives.
    rng = np.random.default_rng(sum(everywhere))
    maps = [np.broadcast_to(np.True_, (37, 53)) if whole else rng.random((37, 53)) < 0.7 for whole in everywhere]
    zones = NoScoreZones(*maps)
    plain = NoScoreZones(*(np.array(m) for m in maps))  # the same maps as ordinary arrays
    bns, sns, pns = (np.array(m) for m in maps)
    assert noscore_counts(zones) == noscore_counts(plain) == {
        "PixelN": int((bns & sns & pns).sum()),
        "PixelSNS": int((~sns).sum()),
        "PixelBNS": int((~bns & sns).sum()),
        "PixelPNS": int((~pns).sum()),
    }
    np.testing.assert_array_equal(zones.weight, bns & sns & pns)
    assert zones.weight.flags.writeable and zones.weight.flags.c_contiguous
    assert not np.shares_memory(zones.weight, sns) and not np.shares_memory(zones.weight, bns)
