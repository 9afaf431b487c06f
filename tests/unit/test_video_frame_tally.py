"""``tally_frame``'s active-rectangle fast path against the plain full-frame computation.

The fast path (mfscore/video/frame_tally.py) scores only the rectangle holding every marked reference
pixel (grown by the largest kernel) and every non-white system pixel, and adds the rest of the frame
as one count of white, unmarked pixels. The slow reference below runs the image-mask pipeline on the
whole frame: ``bitplane_selection`` (or "every non-zero bit" without journal data), ``noscore_zones``,
``noscore_counts``, ``histogram_record``. Both must agree exactly on random small frames: rectangles
of bit codes (2-D, or 4-D layered references as (H, W, layers) frames), random system blobs, box and
disc kernels of sizes 0, 3, 5, ``--nspx`` None / 0 / 255.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mfscore.masks.mask_record import histogram_record
from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.reference_selection import bitplane_selection
from mfscore.video.frame_tally import (
    FrameRules,
    active_rectangle,
    tally_frame,
    white_frame,
)


def slow_tally(reference: np.ndarray, system: np.ndarray, rules: FrameRules):
    """The whole frame through the image pipeline: (record, system minimum)."""
    layers = reference if reference.ndim == 3 else reference[..., None]
    if rules.every_bit:
        region = np.bitwise_or.reduce(layers, axis=2) != 0
        distractors = np.zeros_like(region)
    else:
        selection = bitplane_selection(layers, list(rules.selected_bitplanes), list(rules.journal_bitplanes))
        region, distractors = selection.region, selection.distractors
    z = rules.zones
    zones = noscore_zones(region, distractors, system, erode_size=z.erode_size, dilate_size=z.dilate_size,
                          distraction_size=z.distraction_size, kernel=z.kernel, pixel_value=rules.pixel_value)
    counts = noscore_counts(zones)
    record = histogram_record(region, zones.weight, system, pixel_bns=counts["PixelBNS"],
                              pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"])
    return record, int(system.min())


def assert_same(reference, system, rules):
    fast = tally_frame(reference, system, rules)
    record, system_min = slow_tally(reference, system, rules)
    got = fast.record
    assert np.array_equal(got.positive, record.positive), (got.positive.nonzero(), record.positive.nonzero())
    assert np.array_equal(got.negative, record.negative)
    assert np.array_equal(got.present, record.present)
    assert (got.pixel_bns, got.pixel_sns, got.pixel_pns, got.region_pixels) == \
        (record.pixel_bns, record.pixel_sns, record.pixel_pns, record.region_pixels)
    assert got.scored
    assert fast.system_min == system_min
    # every pixel of the frame is counted once, scored or in a zone (BNS/SNS/PNS may overlap: >=)
    pixels = system.shape[0] * system.shape[1]
    assert got.pixel_n <= pixels


# --------------------------------------------------------------------------------------------
# Random frames

SIZES = st.sampled_from((0, 3, 5))


@st.composite
def frames(draw):
    height, width = draw(st.integers(1, 28)), draw(st.integers(1, 28))
    layers = draw(st.sampled_from((0, 0, 1, 2)))  # 0: a 2-D (H, W) frame; n: (H, W, n) layered frame
    reference = np.zeros((height, width, max(1, layers)), np.uint8)
    for _ in range(draw(st.integers(0, 4))):
        y, x = draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))
        h, w = draw(st.integers(1, height)), draw(st.integers(1, width))
        layer = draw(st.integers(0, reference.shape[2] - 1))
        reference[y:y + h, x:x + w, layer] |= np.uint8(draw(st.integers(1, 255)))
    if layers == 0:
        reference = reference[..., 0]
    system = np.full((height, width), 255, np.uint8)
    for _ in range(draw(st.integers(0, 3))):
        y, x = draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))
        h, w = draw(st.integers(1, height)), draw(st.integers(1, width))
        system[y:y + h, x:x + w] = draw(st.integers(0, 255))
    for _ in range(draw(st.integers(0, 3))):  # isolated pixels, possibly far from everything
        system[draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))] = draw(st.integers(0, 254))
    n_bits = 8 * max(1, layers)
    planes = st.lists(st.integers(1, n_bits + 2), max_size=4, unique=True)  # may name absent bit-planes
    journal = draw(planes)
    selected = draw(st.lists(st.sampled_from(journal), unique=True)) if journal else []
    zones = ZoneOptions(draw(SIZES), draw(SIZES), draw(SIZES), draw(st.sampled_from(("box", "disc"))))
    rules = FrameRules(selected_bitplanes=tuple(selected), journal_bitplanes=tuple(journal),
                       every_bit=draw(st.booleans()), zones=zones, pixel_value=draw(st.sampled_from((None, 0, 255))))
    return reference, system, rules


def _frame(height, width, reference_box=None, code=1, system_box=None, value=0, layers=0):
    reference = np.zeros((height, width) + ((layers,) if layers else ()), np.uint8)
    if reference_box:
        y0, x0, y1, x1 = reference_box
        reference[y0:y1, x0:x1] = code
    system = white_frame(height, width)
    if system_box:
        y0, x0, y1, x1 = system_box
        system[y0:y1, x0:x1] = value
    return reference, system


BOX5 = ZoneOptions(5, 5, 5, "box")


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
@example(_frame(9, 9) + (FrameRules(zones=BOX5),))                                  # nothing at all
@example(_frame(9, 9) + (FrameRules(zones=BOX5, pixel_value=255),))                 # all white, opted out
@example(_frame(20, 20, (0, 0, 3, 3)) + (FrameRules(zones=BOX5, every_bit=True),))  # region in a corner
@example(_frame(20, 20, (8, 8, 11, 11), system_box=(19, 19, 20, 20)) +              # far-away detection
         (FrameRules(zones=ZoneOptions(3, 5, 3, "disc"), every_bit=True, pixel_value=0),))
@example(_frame(20, 30, (5, 5, 9, 9), code=3, layers=2) +                          # distractor bit 2
         (FrameRules((1,), (1, 2), zones=BOX5),))
def test_fast_path_equals_full_frame(case):
    assert_same(*case)


def test_bit_outside_the_journal_is_ignored():
    """Bits not in the journal are neither target nor distractor, but still widen the rectangle."""
    reference, system = _frame(16, 16, (2, 2, 6, 6), code=4)  # bit-plane 3 only
    reference[10:14, 10:14] = 1                                 # bit-plane 1: the target
    rules = FrameRules((1,), (1,), zones=BOX5)
    assert_same(reference, system, rules)
    assert tally_frame(reference, system, rules).record.region_pixels == 16


# --------------------------------------------------------------------------------------------
# The rectangle itself


def test_active_rectangle():
    marked = np.zeros((10, 12), np.uint8)
    system = white_frame(10, 12)
    assert active_rectangle(marked, system, 2) is None
    marked[4:6, 5:7] = 1
    assert active_rectangle(marked, system, 2) == (3, 2, 9, 8)    # (x0, y0, x1, y1), grown by 2
    assert active_rectangle(marked, system, 10) == (0, 0, 12, 10)  # clipped to the frame
    system[9, 0] = 254
    assert active_rectangle(marked, system, 0) == (0, 4, 7, 10)    # reaches the detection, not grown


def test_outside_counts_as_white_negative():
    """A 1000x1000 frame with a 2x2 region: the far pixels are white negatives, or PNS under --nspx 255."""
    reference, system = _frame(1000, 1000, (500, 500, 502, 502))
    system[500:502, 500:502] = 0
    plain = tally_frame(reference, system, FrameRules(every_bit=True, zones=ZoneOptions(0, 0, 0)))
    assert plain.record.positive[0] == 4 and plain.record.negative[255] == 1000 * 1000 - 4
    assert plain.system_min == 0
    opted = tally_frame(reference, system, FrameRules(every_bit=True, zones=ZoneOptions(0, 0, 0), pixel_value=255))
    assert opted.record.negative.sum() == 0 and opted.record.pixel_pns == 1000 * 1000 - 4
    assert opted.record.present[255] and opted.record.present[0]
