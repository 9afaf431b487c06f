"""Which reference pixels are the scored manipulation, and which are distractors (mask.md §4.2–4.3).

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


def _rgb_codes(bgr: np.ndarray) -> np.ndarray:
    """One 32-bit code per pixel (an opaque BGRA pixel read as little-endian), equal iff the colours are."""
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA).view("<u4")[..., 0]


def _code(rgb: tuple[int, int, int]) -> np.uint32:
    return np.uint32((255 << 24) | (rgb[0] << 16) | (rgb[1] << 8) | rgb[2])


def colour_selection(bgr: np.ndarray, selected: list[tuple[int, int, int]], *,
                     with_distractors: bool = True) -> Selection:
    """NC2016/2017 colour masks: a pixel is positive iff its colour is one of ``selected``."""
    # mask.md §4.2
    codes = _rgb_codes(bgr)
    marked = codes != _code(WHITE)
    region = np.zeros(codes.shape, bool)
    for colour in set(selected):
        region |= codes == _code(colour)
    distractors = marked & ~region if with_distractors else np.zeros(codes.shape, bool)
    return Selection(region, distractors, marked)


def bit_is_set(layers: np.ndarray, bitplane: int) -> np.ndarray:
    """Bit-plane ``b`` is bit ``(b-1) mod 8`` of layer ``(b-1) div 8``."""
    layer, bit = divmod(bitplane - 1, 8)
    return (layers[..., layer] >> bit) & 1 == 1


def bitplane_selection(layers: np.ndarray, selected: list[int], journal: list[int]) -> Selection:
    """MFC18+ bit-plane masks: positive iff a selected bit is set; other journal bits distract.

    Bits not listed in the probe's journal are cleared first (treated as unmanipulated), and
    bit-planes beyond the file's layers are skipped and reported in ``missing_bitplanes``.
    """
    # mask.md §4.3
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
            region |= (layers[..., layer] & chosen) != 0
        if others:
            distractors |= (layers[..., layer] & others) != 0
    distractors &= ~region
    return Selection(region, distractors, region | distractors, missing)
