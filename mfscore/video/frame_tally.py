"""One frame of a video mask pair, reduced to a ``MaskRecord`` (video.md §B.3–B.4).

A frame is scored exactly like an image mask: bit-plane selection, boundary / distraction / pixel
no-score zones, then the histograms of system values on reference-positive and -negative scored
pixels. Video frames are large and mostly empty, so the work is confined to the *active
rectangle*: the marked reference pixels grown by the largest kernel, plus every system pixel that
is not 255. Outside it the reference is empty (no zone can reach there) and the system is 255, so
those pixels are counted as one number instead of pixel by pixel.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from mfscore.masks.mask_record import SCORED, MaskRecord, histogram_record
from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.reference_selection import bitplane_selection

WHITE = 255


@dataclass(frozen=True)
class FrameRules:
    """How a probe's frames are scored: which bit-planes are the target, the zones, the opt-out value."""

    selected_bitplanes: tuple[int, ...] = ()
    journal_bitplanes: tuple[int, ...] = ()
    every_bit: bool = False          # no journal data: every non-zero reference pixel is the target (§B.3)
    zones: ZoneOptions = ZoneOptions()
    pixel_value: int | None = None   # --nspx

    @property
    def margin(self) -> int:
        z = self.zones
        return max(z.erode_size, z.dilate_size, z.distraction_size) + 1


@dataclass(frozen=True)
class FrameTally:
    record: MaskRecord
    system_min: int  # the frame is a system positive at θ when system_min <= θ (§B.5)


def _marked(reference: np.ndarray) -> np.ndarray:
    """Non-zero reference pixels, as a (height, width) uint8 map."""
    return reference if reference.ndim == 2 else np.bitwise_or.reduce(reference, axis=2)


def _union(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """Bounding rectangle (x0, y0, x1, y1) of two rectangles, either possibly empty."""
    if a[2] <= a[0] or a[3] <= a[1]:
        return b
    if b[2] <= b[0] or b[3] <= b[1]:
        return a
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def active_rectangle(marked: np.ndarray, system: np.ndarray, margin: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) holding every marked reference pixel ± ``margin`` and every non-white system pixel."""
    height, width = system.shape
    x, y, w, h = cv2.boundingRect(marked)
    grown = (max(0, x - margin), max(0, y - margin), min(width, x + w + margin), min(height, y + h + margin))
    sx, sy, sw, sh = cv2.boundingRect(cv2.bitwise_not(system))
    return _union(grown if w else (0, 0, 0, 0), (sx, sy, sx + sw, sy + sh))


def _selection(reference: np.ndarray, rules: FrameRules):
    layers = reference if reference.ndim == 3 else reference[..., None]
    if rules.every_bit:
        region = _marked(reference) != 0
        return region, np.zeros_like(region)
    selection = bitplane_selection(layers, list(rules.selected_bitplanes), list(rules.journal_bitplanes))
    return selection.region, selection.distractors


def tally_frame(reference: np.ndarray, system: np.ndarray, rules: FrameRules) -> FrameTally:
    """The frame's record; ``reference`` is (H, W) or (H, W, layers) of bit codes, ``system`` (H, W)."""
    height, width = system.shape
    x0, y0, x1, y1 = active_rectangle(_marked(reference), system, rules.margin)
    outside = height * width - max(0, x1 - x0) * max(0, y1 - y0)
    if outside == height * width:
        record = MaskRecord(status=SCORED)
        system_min = WHITE
    else:
        ref, sys = reference[y0:y1, x0:x1], system[y0:y1, x0:x1]
        region, distractors = _selection(ref, rules)
        z = rules.zones
        zones = noscore_zones(region, distractors, sys, erode_size=z.erode_size, dilate_size=z.dilate_size,
                              distraction_size=z.distraction_size, kernel=z.kernel, pixel_value=rules.pixel_value)
        counts = noscore_counts(zones)
        record = histogram_record(region, zones.weight, sys, pixel_bns=counts["PixelBNS"],
                                  pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"])
        system_min = int(cv2.minMaxLoc(sys)[0])
    if outside:
        record = _with_white_pixels(record, outside, rules.pixel_value == WHITE)
    return FrameTally(record, system_min)


def _with_white_pixels(record: MaskRecord, count: int, opted_out: bool) -> MaskRecord:
    """``record`` plus ``count`` unmarked reference pixels whose system value is 255."""
    negative = record.negative.copy()
    present = record.present.copy()
    present[WHITE] = True
    if not opted_out:
        negative[WHITE] += count
    return MaskRecord(status=SCORED, positive=record.positive, negative=negative, present=present,
                      pixel_bns=record.pixel_bns, pixel_sns=record.pixel_sns,
                      pixel_pns=record.pixel_pns + (count if opted_out else 0),
                      region_pixels=record.region_pixels)


def white_frame(height: int, width: int) -> np.ndarray:
    """An uncovered system frame: nothing detected."""
    return np.full((height, width), WHITE, np.uint8)

