"""Structuring elements and erosion/dilation (docs/masks.md §5.1).

The OpenCV path is compared with a pixel-by-pixel loop that states the definition directly,
including OpenCV's default border: outside pixels count as set for erosion, unset for dilation.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mfscore.errors import OptionError
from mfscore.masks.kernels import KERNEL_SHAPES, dilate, erode, structuring_element


def rows(*lines: str) -> np.ndarray:
    return np.array([[int(c) for c in line] for line in lines], np.uint8)


EXPECTED = {
    ("box", 3): np.ones((3, 3), np.uint8),
    ("box", 5): np.ones((5, 5), np.uint8),
    ("box", 7): np.ones((7, 7), np.uint8),
    ("disc", 3): rows("010", "111", "010"),
    ("disc", 5): rows("00100", "11111", "11111", "11111", "00100"),
    ("disc", 7): rows("0001000", "0111110", "1111111", "1111111", "1111111", "0111110", "0001000"),
    ("diamond", 3): rows("010", "111", "010"),
    ("diamond", 5): rows("00100", "01110", "11111", "01110", "00100"),
    ("diamond", 7): rows("0001000", "0011100", "0111110", "1111111", "0111110", "0011100", "0001000"),
    ("line", 3): np.eye(3, dtype=np.uint8),
    ("line", 5): rows("10000", "01000", "00100", "00010", "00001"),
    ("line", 7): np.eye(7, dtype=np.uint8),
}


@pytest.mark.parametrize(("shape", "size"), sorted(EXPECTED))
def test_structuring_element_exact(shape, size):
    element = structuring_element(shape, size)
    assert element.dtype == np.uint8
    np.testing.assert_array_equal(element, EXPECTED[(shape, size)])


@pytest.mark.parametrize("size", [1, 3, 5, 7, 9])
def test_gaussian_is_box(size):
    np.testing.assert_array_equal(structuring_element("gaussian", size), structuring_element("box", size))


@pytest.mark.parametrize("shape", KERNEL_SHAPES)
@pytest.mark.parametrize("size", [0, 2, 4, 10, -3, -4])
def test_bad_size_raises(shape, size):
    with pytest.raises(OptionError, match=f"kernel size {size} is not a positive odd integer"):
        structuring_element(shape, size)


def test_unknown_shape_raises():
    with pytest.raises(OptionError, match="kernel shape 'square'"):
        structuring_element("square", 3)


def test_even_size_raises_from_erode_and_dilate():
    region = np.zeros((5, 5), bool)
    with pytest.raises(OptionError):
        erode(region, "box", 4)
    with pytest.raises(OptionError):
        dilate(region, "box", 4)


def test_spec_example_rows():
    region = np.zeros((100, 30), bool)
    region[40:60, :] = True
    eroded, dilated = erode(region, "box", 3), dilate(region, "box", 5)
    assert np.flatnonzero(eroded.any(axis=1)).tolist() == list(range(41, 59))
    assert np.flatnonzero(dilated.any(axis=1)).tolist() == list(range(38, 62))
    # The region spans every column: the image edge does not erode it.
    assert eroded[41:59].all() and dilated[38:62].all()


@pytest.mark.parametrize("op", [erode, dilate])
def test_size_zero_returns_a_copy(op):
    region = np.zeros((4, 4), bool)
    region[1, 1] = True
    out = op(region, "box", 0)
    np.testing.assert_array_equal(out, region)
    assert out is not region and out.dtype == bool


def reference_morphology(region: np.ndarray, element: np.ndarray, *, erosion: bool) -> np.ndarray:
    """OpenCV's definition, one pixel at a time: min (erosion) or max (dilation) of
    ``src[y + i - a, x + j - a]`` over the element's set cells, with outside = erosion."""
    h, w = region.shape
    a = element.shape[0] // 2
    out = np.zeros_like(region)
    for y in range(h):
        for x in range(w):
            values = []
            for i in range(element.shape[0]):
                for j in range(element.shape[1]):
                    if element[i, j]:
                        yy, xx = y + i - a, x + j - a
                        inside = 0 <= yy < h and 0 <= xx < w
                        values.append(bool(region[yy, xx]) if inside else erosion)
            out[y, x] = all(values) if erosion else any(values)
    return out


@settings(max_examples=80, deadline=None)
@given(
    region=arrays(bool, st.tuples(st.integers(1, 12), st.integers(1, 15))),
    shape=st.sampled_from(KERNEL_SHAPES),
    size=st.sampled_from([1, 3, 5, 7, 9, 13, 17]),
)
def test_cv2_matches_reference_loops(region, shape, size):
    element = structuring_element(shape, size)
    np.testing.assert_array_equal(erode(region, shape, size), reference_morphology(region, element, erosion=True))
    np.testing.assert_array_equal(dilate(region, shape, size), reference_morphology(region, element, erosion=False))


@pytest.mark.parametrize("shape", KERNEL_SHAPES)
def test_border_behaviour(shape):
    full = np.ones((6, 7), bool)
    np.testing.assert_array_equal(erode(full, shape, 5), full)
    np.testing.assert_array_equal(dilate(~full, shape, 5), ~full)
