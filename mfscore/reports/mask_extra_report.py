"""Tables and the heat map of the extra mask metrics (docs/metrics.md §1.7, §2).

Floats are left unrounded; the caller rounds before writing if it wants to.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.masks.extra_metrics import EXTRA_COLUMNS, IMAGE, SIZE_EDGES, extra_cells
from mfscore.masks.mask_record import MaskRecord

_PREFIXES = {"probe": ("p", "ProbeScored"), "donor": ("d", "DonorScored")}


def extra_table(keys: pd.DataFrame, roles: dict[str, list[MaskRecord]], actual: float | None,
                pixels: str = IMAGE) -> pd.DataFrame:
    """One row per trial: the key columns, then ``extra_cells`` per role and the Scored flags.

    With only a "probe" role (manipulation) the cells are unprefixed and the flag is ``Scored``;
    with "probe" and "donor" (splice) they are prefixed ``p``/``d`` with ``ProbeScored``/``DonorScored``.
    """
    splice = "donor" in roles
    names = ["probe", "donor"] if splice else ["probe"]
    metrics, flags = {}, {}
    for role in names:
        prefix, flag = _PREFIXES[role] if splice else ("", "Scored")
        records = roles[role]
        if len(records) != len(keys):
            raise ValueError(f"{role}: {len(records)} records for {len(keys)} trials")
        cells = [extra_cells(r, actual, pixels) for r in records]
        for column in EXTRA_COLUMNS:
            metrics[f"{prefix}{column}"] = [c[column] for c in cells]
        flags[flag] = ["Y" if r.scored else "N" for r in records]
    body = pd.DataFrame({**metrics, **flags}, index=keys.index)
    return pd.concat([keys, body], axis=1)


def mcc_histogram_plot(histogram: pd.DataFrame, path: str | Path, title: str) -> Path:
    """Heat map of an ``mcc_size_histogram`` table, written as one PNG at ``path`` (a grid of cells: a
    raster serves, and a second rendering as PDF would cost a run more than the rest of its report).

    A cell's colour is its share of the masks of its size column; its text is their count, black or white
    by the cell's colour, and left out where the count is 0. The open last size column is drawn as wide as
    the others and labelled "1250+". Matplotlib is imported here, when a run draws, not when the module is.
    """
    from mfscore.reports import style
    from mfscore.reports.plots import plt, save_figure

    path = Path(path)
    with style.figure_style():
        fig = draw_mcc_histogram(histogram, title)
        try:
            save_figure(fig, [path])
        finally:
            plt.close(fig)
    return path


def draw_mcc_histogram(histogram: pd.DataFrame, title: str):
    """The heat map's figure (in ``style``'s look when drawn inside ``figure_style``); the caller closes it."""
    from mfscore.reports import style
    from mfscore.reports.plots import plt

    size_lows = np.unique(histogram["SizeBinLow"].to_numpy(dtype=float))
    mcc_edges = np.unique(np.concatenate([histogram["MCCBinLow"], histogram["MCCBinHigh"]]))
    shares, counts = (histogram.pivot_table(index="MCCBinLow", columns="SizeBinLow", values=value, aggfunc="sum")
                      .reindex(index=mcc_edges[:-1], columns=size_lows, fill_value=0).to_numpy(dtype=float)
                      for value in ("Share", "Count"))
    width = SIZE_EDGES[1] - SIZE_EDGES[0]
    drawn_edges = np.r_[size_lows, size_lows[-1] + width]

    fig, ax = plt.subplots(figsize=style.FIG_SIZE, dpi=style.DPI)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.09, top=0.94)  # fixed: a solved layout costs more than drawing
    mesh = ax.pcolormesh(drawn_edges, mcc_edges, shares, cmap="viridis", vmin=0.0, vmax=1.0)
    fig.colorbar(mesh, ax=ax, label="Share of masks in the size column (text: count)")
    _write_counts(ax, mesh, counts, drawn_edges, mcc_edges)
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
