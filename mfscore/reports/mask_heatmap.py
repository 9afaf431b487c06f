"""Drawing the heat map of the soft MCC by reference mask size (docs/metrics.md §2.4) from plain arrays.

The figure worker (``mfscore.run.figure_process``) draws it; this module imports neither pandas nor the mask
scorer, so the worker's only imports are matplotlib's (``mask_extra_report.heat_map`` turns the table into
a ``HeatMap`` in the command's process, which has pandas already).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class HeatMap:
    """The cells of an ``mcc_size_histogram`` table: ``shares`` and ``counts`` are (MCC bins × size columns)."""

    size_lows: np.ndarray    # each size column's lower edge
    size_width: float        # the width every column is drawn at (the open last one included)
    mcc_edges: np.ndarray    # the MCC bins' edges, one more than the bins
    shares: np.ndarray
    counts: np.ndarray


def plot_heat_map(heat: HeatMap, path: str | Path, title: str) -> Path:
    """The heat map written as one PNG at ``path`` (a grid of cells: a raster serves, and a second rendering as
    PDF would cost a run more than the rest of its report)."""
    from mfscore.reports import style
    from mfscore.reports.plots import plt, save_figure

    path = Path(path)
    with style.figure_style():
        fig = draw_heat_map(heat, title)
        try:
            save_figure(fig, [path])
        finally:
            plt.close(fig)
    return path


def draw_heat_map(heat: HeatMap, title: str):
    """The heat map's figure (in ``style``'s look when drawn inside ``figure_style``); the caller closes it.

    A cell's colour is its share of the masks of its size column; its text is their count, black or white
    by the cell's colour, and left out where the count is 0. The open last size column is drawn as wide as
    the others and labelled "1250+".
    """
    from mfscore.reports import style
    from mfscore.reports.plots import plt

    size_lows, mcc_edges = heat.size_lows, heat.mcc_edges
    drawn_edges = np.r_[size_lows, size_lows[-1] + heat.size_width]
    fig, ax = plt.subplots(figsize=style.FIG_SIZE, dpi=style.DPI)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.09, top=0.94)  # fixed: a solved layout costs more than drawing
    mesh = ax.pcolormesh(drawn_edges, mcc_edges, heat.shares, cmap="viridis", vmin=0.0, vmax=1.0)
    fig.colorbar(mesh, ax=ax, label="Share of masks in the size column (text: count)")
    _write_counts(ax, mesh, heat.counts, drawn_edges, mcc_edges)
    ticks = size_lows[::2]
    ax.set_xticks(ticks, [f"{t:g}+" if t == size_lows[-1] else f"{t:g}" for t in ticks])
    ax.set_xlabel("√(reference pixels)")
    ax.set_ylabel("soft MCC (weighted confusion matrix)")
    ax.set_title(title)
    return fig


def _write_counts(ax, mesh, counts: np.ndarray, x_edges: np.ndarray, y_edges: np.ndarray) -> None:
    """Each non-empty cell's count at its centre, in the colour that reads on the cell."""
    from mfscore.reports import style

    size = 7.0 if counts.max(initial=0) < 1000 else 5.5
    centre_x, centre_y = (x_edges[:-1] + x_edges[1:]) / 2, (y_edges[:-1] + y_edges[1:]) / 2
    colours = mesh.cmap(mesh.norm(mesh.get_array().reshape(counts.shape)))
    for row, col in zip(*np.nonzero(counts)):
        ax.text(centre_x[col], centre_y[row], f"{int(counts[row, col])}", ha="center", va="center", fontsize=size,
                color=style.text_colour_on(colours[row, col]), gid="count")
