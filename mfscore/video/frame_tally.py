"""One frame of a video mask pair, reduced to a ``MaskRecord`` (docs/video.md §B.3–B.4).

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
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.reference_selection import bitplane_selection
from mfscore.video.options import FrameRules

WHITE = 255


@dataclass(frozen=True)
class FrameTally:
    record: MaskRecord
    system_min: int  # the frame is a system positive at θ when system_min <= θ (docs/video.md §B.5)


def _marked(reference: np.ndarray) -> np.ndarray:
    """Non-zero reference pixels, as a (height, width) uint8 map."""
    return reference if reference.ndim == 2 else np.bitwise_or.reduce(reference, axis=2)


def _span(flags: np.ndarray) -> tuple[int, int]:
    """First index and one past the last index of the True entries (at least one)."""
    found = np.flatnonzero(flags)
    return int(found[0]), int(found[-1]) + 1


def _box(flagged: np.ndarray, rows: np.ndarray, columns_of) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of the flagged pixels, from per-row flags and the columns of the row band."""
    y0, y1 = _span(rows)
    x0, x1 = _span(columns_of(flagged[y0:y1]))
    return x0, y0, x1, y1


def active_rectangle(marked: np.ndarray, system: np.ndarray, margin: int) -> tuple[int, int, int, int] | None:
    """(x0, y0, x1, y1) holding every marked reference pixel ± ``margin`` and every non-white system pixel;
    None when the reference is empty and the system all white. Row and column reductions, not a pixel scan."""
    height, width = system.shape
    boxes = []
    marked_rows = marked.max(axis=1) > 0
    if marked_rows.any():
        x0, y0, x1, y1 = _box(marked, marked_rows, lambda band: band.max(axis=0) > 0)
        boxes.append((max(0, x0 - margin), max(0, y0 - margin), min(width, x1 + margin), min(height, y1 + margin)))
    detected_rows = system.min(axis=1) < WHITE
    if detected_rows.any():
        boxes.append(_box(system, detected_rows, lambda band: band.min(axis=0) < WHITE))
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


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
    active = active_rectangle(_marked(reference), system, rules.margin)
    if active is None:
        record, system_min, outside = MaskRecord(status=SCORED), WHITE, height * width
    else:
        x0, y0, x1, y1 = active
        outside = height * width - (x1 - x0) * (y1 - y0)
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

