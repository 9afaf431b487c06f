"""Reference-region selection (docs/masks.md §4.2–§4.4) and ``score_mask`` on real image files.

Colour references: a pixel is in the region iff its exact colour is a selected colour; white is
background; every other non-white colour is a distractor. Bit-plane references: bit-plane ``b`` is
bit ``(b−1) mod 8`` of layer ``(b−1) div 8``; journal bit-planes not selected are distractors, bits
outside the journal are ignored, bit-planes beyond the file's layers are reported missing.

``score_mask`` is exercised on PNG files written with ``cv2.imwrite`` into ``tmp_path``; its record
is compared exactly with ``histogram_record`` over the expected region and weight map.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from mfscore.formats.images import read_colour
from mfscore.masks.mask_record import NOT_SCOREABLE, SCORED, UNREADABLE, histogram_record
from mfscore.masks.mask_scoring import MaskJob, ZoneOptions, score_mask
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.reference_selection import bit_is_set, bitplane_selection, colour_selection, parse_colour
from mfscore.masks.threshold_metrics import gwl1, mask_auc_eer, metrics_at, optimum_threshold

WHITE_BGR = (255, 255, 255)
RED = (255, 0, 0)      # RGB, as journals write colours
GREEN = (0, 255, 0)
NEAR_RED = (254, 0, 0)
BLUE = (0, 0, 255)
NO_ZONES = ZoneOptions(0, 0, 0, "box")


def bgr(rgb: tuple[int, int, int]) -> list[int]:
    return [rgb[2], rgb[1], rgb[0]]


def colour_reference(h: int = 12, w: int = 16) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A white BGR image with red, green, near-red and blue patches; returns the image and each patch."""
    image = np.full((h, w, 3), 255, np.uint8)
    patches = {name: np.zeros((h, w), bool) for name in ("red", "green", "near_red", "blue")}
    patches["red"][2:6, 2:6] = True
    patches["green"][7:10, 1:4] = True
    patches["near_red"][1:3, 10:14] = True
    patches["blue"][8:11, 10:15] = True
    for name, rgb in (("red", RED), ("green", GREEN), ("near_red", NEAR_RED), ("blue", BLUE)):
        image[patches[name]] = bgr(rgb)
    return image, patches


# --------------------------------------------------------------------------------------------
# Colour selection (docs/masks.md §4.2)


def test_colour_selection_exact_match_and_distractors():
    image, p = colour_reference()
    s = colour_selection(image, [RED])
    np.testing.assert_array_equal(s.region, p["red"])  # the near-red patch is not red
    np.testing.assert_array_equal(s.distractors, p["green"] | p["near_red"] | p["blue"])
    np.testing.assert_array_equal(s.all_regions, p["red"] | p["green"] | p["near_red"] | p["blue"])
    assert s.missing_bitplanes == ()
    assert not (s.region & s.distractors).any()


def test_colour_selection_reads_rgb_not_bgr():
    image, p = colour_reference()
    # BLUE is (0, 0, 255) in RGB, stored [255, 0, 0] in BGR: selecting "255 0 0" must not pick it
    s = colour_selection(image, [BLUE])
    np.testing.assert_array_equal(s.region, p["blue"])
    s = colour_selection(image, [RED, GREEN])
    np.testing.assert_array_equal(s.region, p["red"] | p["green"])
    np.testing.assert_array_equal(s.distractors, p["near_red"] | p["blue"])


def test_colour_selection_white_is_background():
    image, p = colour_reference()
    s = colour_selection(image, [RED])
    white = (image == 255).all(axis=2)
    assert not (s.region & white).any()
    assert not (s.distractors & white).any()
    assert not (s.all_regions & white).any()


def test_colour_selection_nothing_selected():
    image, p = colour_reference()
    s = colour_selection(image, [])
    assert not s.region.any()
    np.testing.assert_array_equal(s.distractors, s.all_regions)
    s = colour_selection(image, [(1, 2, 3)])  # a colour absent from the mask
    assert not s.region.any()


def test_colour_selection_without_distractors():
    image, p = colour_reference()
    s = colour_selection(image, [RED], with_distractors=False)
    np.testing.assert_array_equal(s.region, p["red"])
    assert s.distractors.dtype == bool and not s.distractors.any()
    np.testing.assert_array_equal(s.all_regions, p["red"] | p["green"] | p["near_red"] | p["blue"])


def test_grey_png_read_as_colour_gives_equal_channels(tmp_path):
    grey = np.full((6, 9), 255, np.uint8)
    grey[1:3, 1:4] = 0
    grey[4:6, 5:8] = 128
    path = str(tmp_path / "grey.png")
    assert cv2.imwrite(path, grey)
    image = read_colour(path)
    assert image.shape == (6, 9, 3) and image.dtype == np.uint8
    for channel in range(3):
        np.testing.assert_array_equal(image[:, :, channel], grey)
    s = colour_selection(image, [(0, 0, 0)])
    np.testing.assert_array_equal(s.region, grey == 0)
    np.testing.assert_array_equal(s.distractors, grey == 128)


@pytest.mark.parametrize("text, expected", [
    ("255 0 0", (255, 0, 0)),
    ("0 0 0", (0, 0, 0)),
    ("255 255 255", (255, 255, 255)),
    ("  12   34\t56 ", (12, 34, 56)),
    ("007 0 0", (7, 0, 0)),
    ("", None),
    ("   ", None),
    ("255 0", None),
    ("1 2 3 4", None),
    ("256 0 0", None),
    ("0 0 1000", None),
    ("-1 0 0", None),
    ("+1 0 0", None),
    ("1.0 2 3", None),
    ("255,0,0", None),
    ("a b c", None),
    ("0x10 0 0", None),
    ("nan", None),
    ("None", None),
    ("\u00b2 0 0", None),            # superscript two: str.isdigit() says yes, int() refuses
    ("\uff11 \uff12 \uff13", None),  # full-width digits are not a colour either
])
def test_parse_colour(text, expected):
    assert parse_colour(text) == expected


@pytest.mark.parametrize("value", [math.nan, None, 255])
def test_parse_colour_non_strings(value):
    assert parse_colour(value) is None


# --------------------------------------------------------------------------------------------
# Bit-plane selection (docs/masks.md §4.3)


def two_layers() -> np.ndarray:
    """1×8 pixels, 2 layers. Pixel k has the bits listed in ``BITS[k]``."""
    layers = np.zeros((1, len(BITS), 2), np.uint8)
    for k, planes in enumerate(BITS):
        for b in planes:
            layer, bit = divmod(b - 1, 8)
            layers[0, k, layer] |= 1 << bit
    return layers


BITS = [(1,), (8,), (9,), (16,), (2,), (1, 9), (), (8, 16)]


@pytest.mark.parametrize("bitplane, layer, value", [(1, 0, 1), (8, 0, 128), (9, 1, 1), (16, 1, 128)])
def test_bitplane_numbering(bitplane, layer, value):
    layers = np.zeros((2, 3, 2), np.uint8)
    layers[1, 2, layer] = value
    expected = np.zeros((2, 3), bool)
    expected[1, 2] = True
    np.testing.assert_array_equal(bit_is_set(layers, bitplane), expected)
    for other in (1, 8, 9, 16):
        if other != bitplane:
            assert not bit_is_set(layers, other).any()


def pixels_with(*planes: int) -> np.ndarray:
    """Pixels of ``two_layers`` having any of ``planes``."""
    return np.array([[any(b in bits for b in planes) for bits in BITS]])


@pytest.mark.parametrize("bitplane", [1, 8, 9, 16])
def test_bitplane_selection_each_plane(bitplane):
    s = bitplane_selection(two_layers(), [bitplane], [bitplane])
    np.testing.assert_array_equal(s.region, pixels_with(bitplane))
    assert not s.distractors.any()
    assert s.missing_bitplanes == ()


def test_unselected_journal_bits_are_distractors():
    s = bitplane_selection(two_layers(), [1], [1, 9, 16])
    np.testing.assert_array_equal(s.region, pixels_with(1))
    # pixel (1, 9) has a selected and an unselected bit: region and distractor (docs/masks.md §5.3: every
    # pixel carrying an unselected bit-plane is dilated; the eroded region is put back afterwards)
    assert s.region[0, 5] and s.distractors[0, 5]
    np.testing.assert_array_equal(s.distractors, pixels_with(9, 16))
    np.testing.assert_array_equal(s.all_regions, pixels_with(1, 9, 16))


def test_bits_outside_the_journal_are_ignored():
    s = bitplane_selection(two_layers(), [9], [9])
    # bit-planes 1, 2, 8, 16 are set in the file but not in this probe's journal: unmanipulated
    np.testing.assert_array_equal(s.region, pixels_with(9))
    assert not s.distractors.any()
    np.testing.assert_array_equal(s.all_regions, pixels_with(9))
    assert not s.all_regions[0, 4]  # only bit-plane 2 set


def test_selected_and_unselected_bit_on_one_pixel_is_region_and_distractor():
    layers = np.zeros((1, 1, 2), np.uint8)
    layers[0, 0, 0] = 0b1  # bit-plane 1
    layers[0, 0, 1] = 0b1  # bit-plane 9
    s = bitplane_selection(layers, [9], [1, 9])
    assert s.region[0, 0] and s.distractors[0, 0] and s.all_regions[0, 0]


def test_coinciding_bitplanes_make_a_distraction_ring(tmp_path):
    """MediScore's maskTests.test_jp2_noScore, "2 and 1 coincide" (docs/masks.md, no-score zones): bit-planes
    1 (selected) and 2 (not selected) cover the same square 30–49 of a 100×100 reference; eks 3, dks 5,
    ntdks 7. Every pixel of the square carries bit-plane 2, so the distraction zone is the square dilated
    by 7 (27–52) with the eroded core (31–48) put back: a ring of 26² − 18² = 352 pixels. The boundary
    band (28–51 minus 31–48) lies inside it, and SNS is counted before BNS, so PixelBNS is 0."""
    layer = np.zeros((100, 100), np.uint8)
    layer[30:50, 30:50] = 0b11
    system = grey_system(100, 100)
    job = MaskJob(write_png(tmp_path / "ref.png", layer), write_png(tmp_path / "sys.png", system),
                  bitplanes=True, selected_bitplanes=(1,), journal_bitplanes=(1, 2), zones=ZoneOptions(3, 5, 7, "box"))
    record = score_mask(job)
    ring = np.zeros((100, 100), bool)
    ring[27:53, 27:53] = True
    ring[31:49, 31:49] = False
    assert (record.pixel_sns, record.pixel_bns, record.pixel_pns) == (352, 0, 0)
    region = np.zeros((100, 100), bool)
    region[30:50, 30:50] = True
    expected = histogram_record(region, ~ring, system, pixel_bns=0, pixel_sns=352, pixel_pns=0)
    assert record_fields(record) == record_fields(expected)


def test_bitplanes_beyond_the_layers_are_missing():
    s = bitplane_selection(two_layers(), [1, 17], [1, 17, 25, 16])
    assert s.missing_bitplanes == (17, 25)
    np.testing.assert_array_equal(s.region, pixels_with(1))
    np.testing.assert_array_equal(s.distractors, pixels_with(16) & ~pixels_with(1))
    one_layer = two_layers()[:, :, :1]
    s = bitplane_selection(one_layer, [9], [1, 9])
    assert s.missing_bitplanes == (9,)
    assert not s.region.any()
    np.testing.assert_array_equal(s.distractors, pixels_with(1))


# --------------------------------------------------------------------------------------------
# score_mask on files (docs/masks.md §4, §5)


def write_png(path, array: np.ndarray) -> str:
    assert cv2.imwrite(str(path), array)
    return str(path)


def grey_system(h: int, w: int) -> np.ndarray:
    return ((np.arange(h * w).reshape(h, w) * 37) % 256).astype(np.uint8)


def record_fields(record):
    return (record.status, record.positive.tolist(), record.negative.tolist(), record.present.tolist(),
            record.pixel_bns, record.pixel_sns, record.pixel_pns, record.region_pixels, record.missing_bitplanes)


def test_score_mask_colour_reference_grey_system(tmp_path):
    image, p = colour_reference()
    system = grey_system(*image.shape[:2])
    job = MaskJob(write_png(tmp_path / "ref.png", image), write_png(tmp_path / "sys.png", system),
                  selected_colours=(RED,), zones=NO_ZONES)
    record = score_mask(job)
    assert record.status == SCORED and record.message == ""
    # kernel size 0 skips the dilation, but the distractor pixels themselves are still not scored
    distractors = p["green"] | p["near_red"] | p["blue"]
    expected = histogram_record(p["red"], ~distractors, system, pixel_bns=0, pixel_sns=int(distractors.sum()),
                                pixel_pns=0)
    assert record_fields(record) == record_fields(expected)
    assert record.region_pixels == 16 and record.pixel_n == system.size - 32
    # without distractors (splice probe side) every pixel is scored
    job = MaskJob(job.reference_path, job.system_path, selected_colours=(RED,), zones=NO_ZONES,
                  with_distractors=False)
    expected = histogram_record(p["red"], np.ones(system.shape, bool), system, pixel_bns=0, pixel_sns=0,
                                pixel_pns=0)
    assert record_fields(score_mask(job)) == record_fields(expected)


def test_score_mask_colour_reference_with_zones(tmp_path):
    image, p = colour_reference()
    system = grey_system(*image.shape[:2])
    zones = ZoneOptions(3, 3, 3, "box")
    job = MaskJob(write_png(tmp_path / "ref.png", image), write_png(tmp_path / "sys.png", system),
                  selected_colours=(RED,), zones=zones, pixel_value=int(system[0, 1]))
    record = score_mask(job)
    distractors = p["green"] | p["near_red"] | p["blue"]
    z = noscore_zones(p["red"], distractors, system, erode_size=3, dilate_size=3, distraction_size=3,
                      kernel="box", pixel_value=int(system[0, 1]))
    counts = noscore_counts(z)
    expected = histogram_record(p["red"], z.weight, system, pixel_bns=counts["PixelBNS"],
                                pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"])
    assert record_fields(record) == record_fields(expected)
    assert record.pixel_n == counts["PixelN"]
    assert record.pixel_sns > 0 and record.pixel_bns > 0 and record.pixel_pns > 0


def test_score_mask_grey_bitplane_png(tmp_path):
    layer = np.zeros((6, 8), np.uint8)
    layer[0:3, 0:4] |= 0b001   # bit-plane 1: selected
    layer[2:5, 3:7] |= 0b010   # bit-plane 2: in the journal, not selected → distractor
    layer[4:6, 0:2] |= 0b100   # bit-plane 3: not in the journal → ignored
    system = grey_system(6, 8)
    job = MaskJob(write_png(tmp_path / "ref.png", layer), write_png(tmp_path / "sys.png", system),
                  bitplanes=True, selected_bitplanes=(1,), journal_bitplanes=(1, 2, 9), zones=NO_ZONES)
    record = score_mask(job)
    region = (layer & 1) == 1
    distractors = (layer & 2) == 2  # bit-plane 3 pixels are neither; (2, 3) carries 1 and 2: both
    sns = ~distractors | region  # eks 0: the core put back is the whole region
    expected = histogram_record(region, sns, system, pixel_bns=0, pixel_sns=int((~sns).sum()),
                                pixel_pns=0, missing_bitplanes=(9,))
    assert record_fields(record) == record_fields(expected)
    assert record.region_pixels == 12 and record.pixel_sns == 11
    # a distraction zone of size 3 widens the no-score area around the distractors
    job = MaskJob(job.reference_path, job.system_path, bitplanes=True, selected_bitplanes=(1,),
                  journal_bitplanes=(1, 2), zones=ZoneOptions(0, 0, 3, "box"))
    z = noscore_zones(region, distractors, system, erode_size=0, dilate_size=0, distraction_size=3,
                      kernel="box", pixel_value=None)
    expected = histogram_record(region, z.weight, system, pixel_bns=0, pixel_sns=int((~z.sns).sum()), pixel_pns=0)
    assert record_fields(score_mask(job)) == record_fields(expected)
    assert int((~z.sns).sum()) > 11


def test_score_mask_colour_png_as_bitplanes_in_file_order(tmp_path):
    """A 3-channel PNG: layer 0 is the file's first component (R), so bit-plane 9 is bit 0 of G."""
    image = np.zeros((4, 5, 3), np.uint8)  # BGR as OpenCV writes it
    image[0, :, 2] = 1  # R: bit-plane 1
    image[1, :, 1] = 1  # G: bit-plane 9
    image[2, :, 0] = 1  # B: bit-plane 17
    system = grey_system(4, 5)
    ref = write_png(tmp_path / "ref.png", image)
    sys_path = write_png(tmp_path / "sys.png", system)
    for plane, row in ((1, 0), (9, 1), (17, 2)):
        record = score_mask(MaskJob(ref, sys_path, bitplanes=True, selected_bitplanes=(plane,),
                                    journal_bitplanes=(plane,), zones=NO_ZONES))
        region = np.zeros((4, 5), bool)
        region[row] = True
        expected = histogram_record(region, np.ones((4, 5), bool), system, pixel_bns=0, pixel_sns=0, pixel_pns=0)
        assert record_fields(record) == record_fields(expected), plane


def test_score_mask_blank_or_absent_reference(tmp_path):
    system = write_png(tmp_path / "sys.png", grey_system(5, 5))
    blank = write_png(tmp_path / "blank.png", np.full((5, 5, 3), 255, np.uint8))
    for job in (MaskJob(blank, system, selected_colours=(RED,)),
                MaskJob(None, system, selected_colours=(RED,)),
                MaskJob("", system, selected_colours=(RED,)),
                MaskJob(blank, None, selected_colours=(RED,))):
        record = score_mask(job)
        assert record.status == NOT_SCOREABLE and not record.scored
        assert record.pixel_n == 0
    # a reference whose selected colour is absent is not scoreable either
    image, _ = colour_reference()
    ref = write_png(tmp_path / "ref.png", image)
    assert score_mask(MaskJob(ref, None, selected_colours=((1, 2, 3),))).status == NOT_SCOREABLE
    # bit-plane reference whose selected plane is beyond its layers
    layer = write_png(tmp_path / "layer.png", np.ones((5, 5), np.uint8))
    record = score_mask(MaskJob(layer, system, bitplanes=True, selected_bitplanes=(9,), journal_bitplanes=(1, 9)))
    assert record.status == NOT_SCOREABLE and record.missing_bitplanes == (9,)


def truncated_png(path, array) -> str:
    ok, buf = cv2.imencode(".png", array)
    assert ok
    data = buf.tobytes()
    path.write_bytes(data[: len(data) // 2])
    return str(path)


@pytest.mark.parametrize("kind", ["missing", "truncated", "wrong size", "colour channels differ", "not an image"])
def test_score_mask_unreadable_system(tmp_path, kind):
    image, _ = colour_reference()
    ref = write_png(tmp_path / "ref.png", image)
    h, w = image.shape[:2]
    target = tmp_path / f"sys-{kind.replace(' ', '_')}.png"
    if kind == "missing":
        path = str(target)
    elif kind == "truncated":
        path = truncated_png(target, grey_system(h, w))
    elif kind == "wrong size":
        path = write_png(target, grey_system(h + 1, w))
    elif kind == "colour channels differ":
        colour = np.repeat(grey_system(h, w)[:, :, None], 3, axis=2)
        colour[0, 0, 1] ^= 1
        path = write_png(target, colour)
    else:
        target.write_bytes(b"this is not a PNG")
        path = str(target)
    record = score_mask(MaskJob(ref, path, selected_colours=(RED,), zones=NO_ZONES))
    assert record.status == UNREADABLE and not record.scored
    assert path in record.message
    assert "system mask" in record.message and "unreadable" in record.message
    assert record.pixel_n == 0


def test_score_mask_grey_system_saved_as_rgb_is_accepted(tmp_path):
    image, p = colour_reference()
    system = grey_system(*image.shape[:2])
    path = write_png(tmp_path / "sys.png", np.repeat(system[:, :, None], 3, axis=2))
    record = score_mask(MaskJob(write_png(tmp_path / "ref.png", image), path, selected_colours=(RED,),
                                zones=NO_ZONES, with_distractors=False))
    expected = histogram_record(p["red"], np.ones(system.shape, bool), system, pixel_bns=0, pixel_sns=0, pixel_pns=0)
    assert record_fields(record) == record_fields(expected)


def test_score_mask_unreadable_reference(tmp_path):
    system = write_png(tmp_path / "sys.png", grey_system(5, 5))
    missing = str(tmp_path / "nope.png")
    record = score_mask(MaskJob(missing, system, selected_colours=(RED,)))
    assert record.status == UNREADABLE and missing in record.message and "reference mask" in record.message


def test_score_mask_over_pixel_limit(tmp_path):
    image, _ = colour_reference()
    ref = write_png(tmp_path / "ref.png", image)
    system = write_png(tmp_path / "sys.png", grey_system(*image.shape[:2]))
    record = score_mask(MaskJob(ref, system, selected_colours=(RED,), max_pixels=image.shape[0] * image.shape[1]))
    assert record.status == SCORED
    record = score_mask(MaskJob(ref, system, selected_colours=(RED,), max_pixels=10))
    assert record.status == UNREADABLE and "limit of 10" in record.message and ref in record.message


def test_absent_system_mask_scores_as_nothing_detected(tmp_path):
    """docs/masks.md §4.4: no system mask → all-255 mask: θ* −1, NMM −1.0, MCC 0.0, AUC 0.5, EER 0.5."""
    image, p = colour_reference()
    ref = write_png(tmp_path / "ref.png", image)
    for system_path in (None, ""):
        record = score_mask(MaskJob(ref, system_path, selected_colours=(RED,), zones=NO_ZONES))
        assert record.status == SCORED
        assert np.flatnonzero(record.present).tolist() == [255]
        assert record.positive[255] == p["red"].sum() and record.positive.sum() == p["red"].sum()
        distractors = p["green"] | p["near_red"] | p["blue"]
        assert record.negative[255] == record.negative.sum() == image.shape[0] * image.shape[1] - 16 - distractors.sum()
        theta = optimum_threshold(record)
        assert theta == -1.0
        point = metrics_at(record, theta)
        assert point.nmm == -1.0 and point.mcc == 0.0
        assert (point.tp, point.fp) == (0, 0)
        assert mask_auc_eer(record) == (0.5, 0.5)
        assert gwl1(record) == pytest.approx(p["red"].sum() / record.pixel_n, abs=1e-15)
