"""Structuring elements and binary erosion/dilation for the no-score zones (docs/masks.md §5.1).

Morphology uses OpenCV with its default border (``BORDER_CONSTANT`` with
``morphologyDefaultBorderValue``): erosion treats pixels outside the image as set and dilation as
unset, so a region touching the image edge is not eroded from outside. That is what MediScore's
OpenCV calls do.
"""

from __future__ import annotations

import cv2
import numpy as np

from mfscore.errors import OptionError
from mfscore.masks import KERNEL_SHAPES



def structuring_element(shape: str, size: int) -> np.ndarray:
    """The ``size``×``size`` 0/1 ``uint8`` element of ``shape``.

    ``size`` must be a positive odd integer; 0 ("skip the operation") raises too, so callers
    handle it first (``erode``/``dilate`` do). ``gaussian`` is identical to ``box``: MediScore
    builds a Gaussian kernel and sets every positive entry to 1.
    """
    # docs/masks.md §5.1
    if shape not in KERNEL_SHAPES:
        raise OptionError(f"kernel shape {shape!r} is not one of {', '.join(KERNEL_SHAPES)}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1 or size % 2 == 0:
        raise OptionError(f"kernel size {size} is not a positive odd integer")
    size = int(size)
    if shape in ("box", "gaussian"):
        return np.ones((size, size), np.uint8)
    if shape == "disc":
        return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
    if shape == "diamond":
        r = np.abs(np.arange(size) - size // 2)
        return (r[:, None] + r[None, :] <= size // 2).astype(np.uint8)
    return np.eye(size, dtype=np.uint8)


def _as_bytes(region: np.ndarray) -> np.ndarray:
    """A 0/1 uint8 view of a boolean map (no copy when it is already contiguous)."""
    return np.ascontiguousarray(region, dtype=bool).view(np.uint8)


def erode(region: np.ndarray, shape: str, size: int) -> np.ndarray:
    """Boolean erosion of ``region``; size 0 returns a copy."""
    if size == 0:
        return region.astype(bool, copy=True)
    return cv2.erode(_as_bytes(region), structuring_element(shape, size)).view(bool)


def dilate(region: np.ndarray, shape: str, size: int) -> np.ndarray:
    """Boolean dilation of ``region``; size 0 returns a copy."""
    if size == 0:
        return region.astype(bool, copy=True)
    return cv2.dilate(_as_bytes(region), structuring_element(shape, size)).view(bool)
