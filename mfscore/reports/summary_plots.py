"""The summary figures of the mask, provenance-filtering and video commands (``--plots``): averaged ROCs, grouped
bars and per-probe distributions, each written as one PNG from its ``figure_data`` description in ``style``'s look.

Matplotlib is imported when a figure is drawn (by the figure worker when one runs), not with this module's callers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from mfscore.reports import style
from mfscore.reports.figure_data import BarFigure, DistributionFigure, RocFigure
from mfscore.reports.plots import plt, save_figure, thin_curve

_MAX_LABEL = 48  # characters of a legend or axis label kept


def plot_average_roc(figure: RocFigure, path: str | Path) -> Path:
    """The curves on square ROC axes with the chance diagonal; the legend in the lower right, below the curves."""
    path = Path(path)
    with style.figure_style():
        fig, ax = plt.subplots(figsize=style.FIG_SIZE, dpi=style.DPI, layout="constrained")
        try:
            ax.plot([0, 1], [0, 1], zorder=1, **style.GUIDE)
            for i, curve in enumerate(figure.curves):
                x, y = thin_curve(np.asarray(curve.x, dtype=np.float64), np.asarray(curve.y, dtype=np.float64))
                look = {**style.line(i), "marker": None}
                ax.plot(x, y, label=_cut(curve.label), gid=f"curve{i}", zorder=3, **look)
            ax.set(xlim=(-0.01, 1.01), ylim=(-0.01, 1.01), xlabel="False positive rate",
                   ylabel="True positive rate")
            ax.set_aspect("equal")
            ax.grid(True, **style.GRID)
            ax.set_axisbelow(True)
            ax.legend(loc="lower right")
            fig.suptitle(_cut(figure.title, 70))
            save_figure(fig, [path])
        finally:
            plt.close(fig)
    return path


def plot_bars(figure: BarFigure, path: str | Path) -> Path:
    """Grouped bars, each labelled with its value; the legend below the axes when there is more than one series."""
    path = Path(path)
    n = max(1, len(figure.series))
    width = 0.8 / n
    with style.figure_style():
        fig, ax = plt.subplots(figsize=style.WIDE_SIZE, dpi=style.DPI, layout="constrained")
        try:
            positions = np.arange(len(figure.categories), dtype=np.float64)
            for i, series in enumerate(figure.series):
                values = np.asarray(series.y, dtype=np.float64)
                bars = ax.bar(positions + (i - (n - 1) / 2) * width, np.nan_to_num(values), width * 0.95,
                              color=style.colour(i), label=_cut(series.label), gid=f"bars{i}")
                ax.bar_label(bars, labels=["" if np.isnan(v) else f"{v:.2f}" for v in values], padding=2,
                             fontsize=style.SMALL_SIZE if n <= 3 else 6.5)
            ax.set_xticks(positions, figure.categories)
            low, high = figure.limits
            ax.set(ylim=(low, high + 0.08 * (high - low)), xlabel=figure.xlabel, ylabel=figure.ylabel)
            ax.grid(True, axis="y", **style.GRID)
            ax.set_axisbelow(True)
            if n > 1:
                fig.legend(loc="outside lower center", ncol=min(n, 4), frameon=False)
            fig.suptitle(_cut(figure.title, 90))
            save_figure(fig, [path])
        finally:
            plt.close(fig)
    return path


def plot_distribution(figure: DistributionFigure, path: str | Path) -> Path:
    """A histogram of each series' values (outlined, so several stay readable) beside a box per series."""
    path = Path(path)
    low, high = figure.limits
    edges = np.linspace(low, high, figure.bins + 1)
    shown_range = (low - 0.02 * (high - low), high + 0.02 * (high - low))  # a value at an end stays off the frame
    with style.figure_style():
        fig, (hist, box) = plt.subplots(1, 2, figsize=style.WIDE_SIZE, dpi=style.DPI, layout="constrained",
                                        width_ratios=(3, 2))
        try:
            data = [np.asarray(s.y, dtype=np.float64) for s in figure.series]
            data = [v[~np.isnan(v)] for v in data]
            for i, (series, values) in enumerate(zip(figure.series, data)):
                hist.hist(np.clip(values, low, high), bins=edges, histtype="step", linewidth=style.LINE_WIDTH,
                          color=style.colour(i), linestyle=style.LINESTYLES[i % len(style.LINESTYLES)],
                          label=f"{_cut(series.label)} (n = {values.size})", gid=f"hist{i}")
            hist.set(xlim=shown_range, xlabel=figure.xlabel, ylabel=figure.ylabel)
            hist.yaxis.set_major_locator(MaxNLocator(integer=True))
            hist.grid(True, **style.GRID)
            hist.set_axisbelow(True)
            hist.legend(loc="upper left")
            shown = [v if v.size else np.array([np.nan]) for v in data]
            parts = box.boxplot(shown, orientation="horizontal", patch_artist=True, widths=0.6,
                                medianprops=dict(color="black", linewidth=style.LINE_WIDTH))
            for i, patch in enumerate(parts["boxes"]):
                patch.set(facecolor=style.colour(i), alpha=0.55)
            box.set_yticks(np.arange(1, len(shown) + 1), [_cut(s.label, 24) for s in figure.series])
            box.invert_yaxis()
            box.set(xlim=shown_range, xlabel=figure.xlabel)
            box.grid(True, axis="x", **style.GRID)
            box.set_axisbelow(True)
            fig.suptitle(_cut(figure.title, 90))
            save_figure(fig, [path])
        finally:
            plt.close(fig)
    return path


def _cut(text: str, most: int = _MAX_LABEL) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
