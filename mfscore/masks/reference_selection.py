"""Which reference pixels are the scored manipulation, and which are distractors (docs/masks.md §4.2–4.3).

A reference mask marks every manipulation of a probe. A trial scores only the *selected* ones
(all of them, or those a ``-qm`` query picks); the other marked pixels are distractors, later
covered by the distraction no-score zone.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)


@dataclass(frozen=True)
class Selection:
    """Boolean maps over the reference: selected region, distractors, and every marked pixel."""

    region: np.ndarray
    distractors: np.ndarray
    all_regions: np.ndarray
    missing_bitplanes: tuple[int, ...] = ()


def parse_colour(text: str) -> tuple[int, int, int] | None:
    """A journal ``Color`` ``"R G B"``; ``None`` when empty or not three integers 0–255."""
    parts = str(text).split()
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    rgb = tuple(int(p) for p in parts)
    return rgb if all(v <= 255 for v in rgb) else None


def _has_colour(image: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """Where ``image`` (HxWx3 BGR, or HxW grey: a grey v is the colour (v, v, v)) has colour ``rgb``;
    OpenCV's 0/255 map is made 0/1 in place (``bitwise_and``: ``np.minimum`` on bytes is ~20× slower), so that it
    can be viewed as booleans without a copy."""
    if image.ndim == 2 and len(set(rgb)) > 1:
        return np.zeros(image.shape, bool)
    value = rgb[0] if image.ndim == 2 else rgb[::-1]
    hit = cv2.inRange(image, value, value)
    np.bitwise_and(hit, 1, out=hit)
    return hit.view(bool)


def colour_selection(image: np.ndarray, selected: list[tuple[int, int, int]], *,
                     with_distractors: bool = True) -> Selection:
    """NC2016/2017 colour masks (BGR, or grey): a pixel is positive iff its colour is one of ``selected``.

    Colours are compared with ``cv2.inRange`` rather than through a 4-byte code per pixel, and a
    grey image is read as it is, so the selection holds the image and three boolean maps at most.
    """
    # docs/masks.md §4.2
    marked = ~_has_colour(image, WHITE)
    region = np.zeros(marked.shape, bool)
    for colour in set(selected):
        region |= _has_colour(image, colour)
    if not with_distractors:
        return Selection(region, np.zeros(marked.shape, bool), marked)
    distractors = ~region
    distractors &= marked
    return Selection(region, distractors, marked)


def bit_is_set(layers: np.ndarray, bitplane: int) -> np.ndarray:
    """Bit-plane ``b`` is bit ``(b-1) mod 8`` of layer ``(b-1) div 8``."""
    layer, bit = divmod(bitplane - 1, 8)
    return (layers[..., layer] >> bit) & 1 == 1


def bitplane_selection(layers: np.ndarray, selected: list[int], journal: list[int]) -> Selection:
    """MFC18+ bit-plane masks: positive iff a selected bit is set; other journal bits distract.

    Bits not listed in the probe's journal are cleared first (treated as unmanipulated), and
    bit-planes beyond the file's layers are skipped and reported in ``missing_bitplanes``. A pixel
    carrying an unselected journal bit is a distractor even when it also carries a selected one
    (it is then in both maps): the distraction zone dilates every such pixel, and the eroded core
    of the region is put back afterwards (docs/masks.md, no-score zones).
    """
    # docs/masks.md §4.3
    n_bits = 8 * layers.shape[-1]
    missing = tuple(sorted({b for b in set(selected) | set(journal) if not 1 <= b <= n_bits}))
    shape = layers.shape[:2]
    region = np.zeros(shape, bool)
    distractors = np.zeros(shape, bool)
    for layer in range(layers.shape[-1]):
        def byte(planes) -> int:
            return sum(1 << (b - 1 - 8 * layer) for b in set(planes) if 8 * layer < b <= 8 * layer + 8)
        chosen, others = byte(selected), byte(set(journal) - set(selected))
        if chosen:
            np.logical_or(region, layers[..., layer] & chosen, out=region)
        if others:
            np.logical_or(distractors, layers[..., layer] & others, out=distractors)
    return Selection(region, distractors, region | distractors, missing)
