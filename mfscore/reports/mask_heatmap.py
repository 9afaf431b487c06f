"""The heat map of the soft MCC by reference mask size (docs/metrics.md §2.4), drawn with OpenCV.

Every mask run writes it, so it is drawn in the command's own process with the library that decoded the masks:
a grid of cells, ticks and labels needs no matplotlib, whose import (about 0.7 s of CPU in a figure worker) cost
a 120-probe run more than a fifth of its whole CPU. The picture is drawn at ``SUPERSAMPLE`` times its size and
reduced by area averaging, which smooths OpenCV's stroke font as anti-aliasing alone does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

WIDTH, HEIGHT = 840, 780  # pixels, the size of the matplotlib figures (reports/style.py: 7 × 6.5 inches at 120 dpi)
SUPERSAMPLE = 2
PLOT = (92, 47, 670, 710)          # the cells' area: left, top, right, bottom
COLOUR_BAR = (706, 742)            # its left and right; it spans the plot's height
MCC_TICKS = np.linspace(-1.0, 1.0, 9)
SHARE_TICKS = np.linspace(0.0, 1.0, 6)
X_LABEL = "sqrt(reference pixels)"  # the stroke font has no radical sign
Y_LABEL = "soft MCC (weighted confusion matrix)"
BAR_LABEL = "Share of masks in the size column (text: count)"
BLACK, WHITE = (0, 0, 0), (255, 255, 255)


@dataclass(frozen=True)
class HeatMap:
    """The cells of an ``mcc_size_histogram`` table: ``shares`` and ``counts`` are (MCC bins × size columns)."""

    size_lows: np.ndarray    # each size column's lower edge
    size_width: float        # the width every column is drawn at (the open last one included)
    mcc_edges: np.ndarray    # the MCC bins' edges, one more than the bins
    shares: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True)
class Cell:
    """One cell as drawn: its box in pixels (left, top, right, bottom), fill (BGR), and count text, if any."""

    box: tuple[float, float, float, float]
    fill: tuple[int, int, int]
    text: str
    text_colour: tuple[int, int, int]


def plot_heat_map(heat: HeatMap, path: str | Path, title: str) -> Path:
    """The heat map written as one PNG at ``path`` (its directory created): into a run's stage, which lands whole."""
    ok, png = cv2.imencode(".png", render_heat_map(heat, title))
    if not ok:
        raise ValueError(f"{path}: OpenCV could not encode the heat map")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png.tobytes())
    return path


def viridis() -> np.ndarray:
    """matplotlib's viridis as 256 BGR colours (OpenCV's table of it, equal to matplotlib's within half a step)."""
    return cv2.applyColorMap(np.arange(256, dtype=np.uint8).reshape(-1, 1), cv2.COLORMAP_VIRIDIS)[:, 0]


def text_colour_on(bgr) -> tuple[int, int, int]:
    """Black or white, whichever reads better on a cell of colour ``bgr`` (0–255), by its relative luminance."""
    b, g, r = (_linear(c / 255) for c in bgr)
    return BLACK if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.18 else WHITE


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _x(heat: HeatMap, size) -> np.ndarray:
    """Where a √(reference pixels) value is drawn: the open last column as wide as the others."""
    first, last = heat.size_lows[0], heat.size_lows[-1] + heat.size_width
    return PLOT[0] + (np.asarray(size, dtype=float) - first) / (last - first) * (PLOT[2] - PLOT[0])


def _y(mcc) -> np.ndarray:
    """Where an MCC in [-1, 1] is drawn: -1 at the bottom of the plot."""
    return PLOT[3] - (np.asarray(mcc, dtype=float) + 1) / 2 * (PLOT[3] - PLOT[1])


def cells(heat: HeatMap) -> list[Cell]:
    """Each cell's box, colour (its share of its size column) and count (left out where 0); MCC grows upwards."""
    colours = viridis()
    rows, columns = heat.shares.shape
    xs, ys = _x(heat, np.r_[heat.size_lows, heat.size_lows[-1] + heat.size_width]), _y(heat.mcc_edges)
    drawn = []
    for row in range(rows):
        for column in range(columns):
            fill = tuple(int(v) for v in colours[_level(heat.shares[row, column])])
            count = int(heat.counts[row, column])
            drawn.append(Cell((xs[column], ys[row + 1], xs[column + 1], ys[row]), fill,
                              str(count) if count else "", text_colour_on(fill)))
    return drawn


def render_heat_map(heat: HeatMap, title: str) -> np.ndarray:
    """The heat map as a BGR image of ``HEIGHT`` × ``WIDTH``: cells with their counts, axes, colour bar, labels.

    The open last size column is drawn as wide as the others and labelled "1250+".
    """
    canvas = _Canvas()
    left, top, right, bottom = PLOT
    small = 9 if heat.counts.max(initial=0) < 1000 else 7.5
    for cell in cells(heat):
        canvas.box(cell.box, cell.fill)
        if cell.text:
            canvas.text(cell.text, (cell.box[0] + cell.box[2]) / 2, (cell.box[1] + cell.box[3]) / 2, small,
                        cell.text_colour)
    canvas.frame(PLOT)
    for value in MCC_TICKS:
        y = _y(value)
        canvas.line((left - 5, y), (left, y))
        canvas.text(f"{value:.2f}", left - 8, y, 11, anchor_x="right")
    for low in heat.size_lows[::2]:
        x = _x(heat, low)
        canvas.line((x, bottom), (x, bottom + 5))
        canvas.text(f"{low:g}+" if low == heat.size_lows[-1] else f"{low:g}", x, bottom + 9, 11, anchor_y="top")
    canvas.text(X_LABEL, (left + right) / 2, bottom + 40, 12)
    canvas.text(Y_LABEL, 22, (top + bottom) / 2, 12, upright=False)
    canvas.text(title, (left + right) / 2, 25, 13, thickness=1.5)
    bar_left, bar_right = COLOUR_BAR
    canvas.image(viridis()[::-1].reshape(-1, 1, 3), (bar_left, top, bar_right, bottom))
    canvas.frame((bar_left, top, bar_right, bottom))
    for value in SHARE_TICKS:
        y = bottom - value * (bottom - top)
        canvas.line((bar_right, y), (bar_right + 5, y))
        canvas.text(f"{value:.1f}", bar_right + 8, y, 11, anchor_x="left")
    canvas.text(BAR_LABEL, 805, (top + bottom) / 2, 12, upright=False)
    return canvas.picture()


def _level(share: float) -> int:
    """The colour table's entry for a share in [0, 1], as matplotlib picks it (the lower of 256 equal steps)."""
    return min(int(min(max(float(share), 0.0), 1.0) * 256), 255)


class _Canvas:
    """A white picture drawn at ``SUPERSAMPLE`` times ``WIDTH`` × ``HEIGHT``, in the final picture's coordinates."""

    FONT_HEIGHT = 22.0  # pixels of OpenCV's simplex font at scale 1

    def __init__(self):
        self.pixels = np.full((HEIGHT * SUPERSAMPLE, WIDTH * SUPERSAMPLE, 3), 255, np.uint8)

    @staticmethod
    def _at(value: float) -> int:
        return int(round(value * SUPERSAMPLE))

    def box(self, box, colour) -> None:
        left, top, right, bottom = (self._at(v) for v in box)
        cv2.rectangle(self.pixels, (left, top), (right, bottom), colour, -1)

    def image(self, picture: np.ndarray, box) -> None:
        left, top, right, bottom = (self._at(v) for v in box)
        self.pixels[top:bottom, left:right] = cv2.resize(picture, (right - left, bottom - top),
                                                        interpolation=cv2.INTER_NEAREST)

    def frame(self, box) -> None:
        left, top, right, bottom = (self._at(v) for v in box)
        cv2.rectangle(self.pixels, (left, top), (right, bottom), BLACK, SUPERSAMPLE)

    def line(self, start, end) -> None:
        cv2.line(self.pixels, tuple(self._at(v) for v in start), tuple(self._at(v) for v in end), BLACK, SUPERSAMPLE)

    def text(self, text: str, x: float, y: float, size: float, colour=BLACK, anchor_x: str = "center",
             anchor_y: str = "center", upright: bool = True, thickness: float = 1.0) -> None:
        """``text`` of cap height ``size`` pixels, placed by its anchors at (x, y); not upright: turned a quarter
        anticlockwise, centred there."""
        font, scale = cv2.FONT_HERSHEY_SIMPLEX, size * SUPERSAMPLE / self.FONT_HEIGHT
        weight = max(1, int(round(thickness * SUPERSAMPLE * 2 / 3)))
        (width, height), below = cv2.getTextSize(text, font, scale, weight)
        if not upright:
            tile = np.full((height + below + 2 * weight, width + 2 * weight, 3), 255, np.uint8)
            cv2.putText(tile, text, (weight, height + weight), font, scale, colour, weight, cv2.LINE_AA)
            tile = cv2.rotate(tile, cv2.ROTATE_90_COUNTERCLOCKWISE)
            rows, columns = tile.shape[:2]
            top, left = self._at(y) - rows // 2, self._at(x) - columns // 2
            region = self.pixels[top:top + rows, left:left + columns]
            np.minimum(region, tile, out=region)
            return
        left = self._at(x) - {"left": 0, "center": width / 2, "right": width}[anchor_x]
        baseline = self._at(y) + {"top": height, "center": height / 2, "bottom": 0}[anchor_y]
        cv2.putText(self.pixels, text, (int(round(left)), int(round(baseline))), font, scale, colour, weight,
                    cv2.LINE_AA)

    def picture(self) -> np.ndarray:
        return cv2.resize(self.pixels, (WIDTH, HEIGHT), interpolation=cv2.INTER_AREA)
