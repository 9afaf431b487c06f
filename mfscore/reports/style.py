"""The one look of every figure mfscore draws: sizes, fonts, line widths and a colour-blind-safe palette.

Each drawing function opens its figure inside ``figure_style()``; nothing else sets a font size or a colour
cycle. The palette is Okabe and Ito's eight colours (distinguishable under the common colour-vision
deficiencies), black last; line styles and markers vary with the colour, so curves stay apart in grey print.
Sizes suit the figures as written (``FIG_SIZE`` inches at ``DPI``, about 840 × 780 pixels): 10-point text
is about 17 pixels high.
"""

from __future__ import annotations

from contextlib import contextmanager

import matplotlib

FIG_SIZE = (7.0, 6.5)  # inches
WIDE_SIZE = (9.0, 5.0)  # inches: bar charts and distributions, whose labels run along x
DPI = 120

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")

LINE_WIDTH = 1.8
GUIDE = dict(color="0.45", linewidth=1.0, linestyle="--")  # chance, EER and FAR-stop lines
GRID = dict(color="0.88", linewidth=0.6)
HIGHLIGHT = "#D55E00"  # a marked point (EER, d')

TITLE_SIZE = 13
TEXT_SIZE = 10
SMALL_SIZE = 8.5

_RC = {
    "font.size": TEXT_SIZE,
    "axes.titlesize": TEXT_SIZE + 1,
    "axes.labelsize": TEXT_SIZE,
    "xtick.labelsize": SMALL_SIZE + 0.5,
    "ytick.labelsize": SMALL_SIZE + 0.5,
    "legend.fontsize": SMALL_SIZE + 0.5,
    "legend.framealpha": 0.9,
    "figure.titlesize": TITLE_SIZE,
    "figure.titleweight": "bold",
    "lines.linewidth": LINE_WIDTH,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO),
    "image.cmap": "viridis",
    "svg.hashsalt": "mfscore",  # fixed ids, so an SVG is the same bytes on every run
}


@contextmanager
def figure_style():
    """Matplotlib's settings while a figure is made and saved."""
    with matplotlib.rc_context(_RC):
        yield


def colour(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


def line(i: int) -> dict:
    """The colour, line style and marker of the ``i``-th curve of a figure."""
    return dict(color=colour(i), linestyle=LINESTYLES[i % len(LINESTYLES)], marker=MARKERS[i % len(MARKERS)],
                linewidth=LINE_WIDTH, markersize=5)
