"""ROC and DET plots of detection curves (docs/detection.md §10): AUC and EER in the legend, the EER point and
the false-alarm stop marked, the bootstrap band with ``--ci``; and the SemaFor ROC with its marked operating
points (``plot_semafor_roc``), written as PDF and PNG. Their look is ``style``'s.

Rendering uses the non-interactive Agg backend, so no display is ever needed. Every figure is
closed after saving, and each file is written under a temporary name in its final directory and
then renamed over the final name, so an interrupted run never leaves a half-written plot behind.
"""

from __future__ import annotations

import math
import os
import uuid
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (must follow matplotlib.use)
import numpy as np  # noqa: E402

from mfscore.detection.probit import probit  # noqa: E402
from mfscore.reports import style  # noqa: E402
from mfscore.reports.figure_data import Band, Curve, CurveFigure, OperatingMark, SemaforPanel  # noqa: E402,F401
from mfscore.reports.style import DPI, FIG_SIZE  # noqa: E402,F401

_CLIP = 1e-5
_DET_TICKS = [0.01, 0.1, 1, 2, 5, 10, 20, 40, 60, 80, 90, 95, 98, 99, 99.9]  # percent
_MAX_LABEL = 60  # characters of a query label kept in a multi-curve legend


def plot_curves(curves: list[Curve], stem: str | Path, *, kind: str = "roc", title: str = "Performance",
                subtitle: str = "", no_num: bool = False, opt_out: bool = False,
                far_stop: float | None = None) -> list[Path]:
    """Draw ``curves`` as a ROC or DET plot and write ``<stem>.pdf`` and ``<stem>.png``; ``far_stop`` is marked.

    Returns the two paths, PDF first. ``stem`` is used verbatim (a dot in it is not a suffix).
    """
    kind = kind.lower()
    if kind not in ("roc", "det"):
        raise ValueError(f"unknown plot kind {kind!r} (expected 'roc' or 'det')")
    if not curves:
        raise ValueError("no curve to plot")
    stem = Path(stem)
    paths = [Path(f"{stem}.pdf"), Path(f"{stem}.png")]

    with style.figure_style():
        fig, ax = plt.subplots(figsize=FIG_SIZE, dpi=DPI, layout="constrained")
        try:
            _draw(fig, ax, curves, kind=kind, title=title, subtitle=subtitle, no_num=no_num, opt_out=opt_out,
                  far_stop=far_stop)
            save_figure(fig, paths)
        finally:
            plt.close(fig)
    return paths


def plot_curve_figure(figure: CurveFigure, stem: str | Path) -> list[Path]:
    """``plot_curves`` of a ``CurveFigure``."""
    return plot_curves(figure.curves, stem, kind=figure.kind, title=figure.title, subtitle=figure.subtitle,
                       no_num=figure.no_num, opt_out=figure.opt_out, far_stop=figure.far_stop)


def save_figure(fig, paths: list[Path]) -> None:
    """Save ``fig`` to each path (format from the suffix), creating the directory. The layout is computed
    for the first file and kept for the others."""
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(paths):
        _save_atomically(fig, path)
        if i == 0:
            fig.set_layout_engine("none")


# --------------------------------------------------------------------------------------------
# drawing


def _draw(fig, ax, curves: list[Curve], *, kind: str, title: str, subtitle: str, no_num: bool,
          opt_out: bool, far_stop: float | None = None) -> None:
    """Axes and guides first, then each curve with its band and EER point; marks are named by their gid."""
    single = len(curves) == 1
    if kind == "roc":
        _setup_roc_axes(ax)
    else:
        _setup_det_axes(ax)
    if far_stop is not None:
        x = far_stop * 100.0 if kind == "roc" else float(_probit(np.asarray(far_stop)))
        ax.axvline(x, color="0.3", linestyle=":", linewidth=1.4, label=f"FAR stop = {far_stop:g}",
                   gid="far_stop", zorder=2)

    for i, curve in enumerate(curves):
        look = style.line(i)
        missing = _missing_class(curve)
        if single:
            label = _single_text(curve, kind=kind, no_num=no_num, opt_out=opt_out, missing=missing)
        else:
            label = _legend_entry(curve, kind=kind, no_num=no_num, opt_out=opt_out, missing=missing,
                                  max_label=_MAX_LABEL // _legend_columns(len(curves)))
        if missing is not None:
            ax.plot([], [], label=label, gid=f"curve{i}", **look)  # legend entry only: there is no curve to draw
            continue
        if curve.band is not None:
            _draw_band(ax, curve.band, kind, look["color"], label=f"{curve.band.level:.0%} CI band" if single
                       or i == 0 else None)
        x, y = _coordinates(curve, kind)
        ax.plot(x, y, label=label, markevery=0.1, gid=f"curve{i}", zorder=3, **look)
        if curve.eer_point is not None:
            _mark_eer(ax, curve.eer_point, kind, look["color"], label="EER point" if i == 0 else None, gid=f"eer{i}")
        if single and kind == "roc" and curve.dprime is not None:
            _mark_dprime(ax, curve.dprime)

    fig.suptitle(title)
    if subtitle:
        ax.set_title(subtitle, style="italic")

    handles, labels = ax.get_legend_handles_labels()
    first = sorted(range(len(handles)), key=lambda j: not str(handles[j].get_gid() or "").startswith("curve"))
    legend = dict(handles=[handles[j] for j in first], labels=[labels[j] for j in first], handlelength=3.0)
    if single:
        # ROC curves of useful systems live above the diagonal, DET curves below the anti-diagonal:
        # the lower-right (ROC) and upper-right (DET) corners are where a small box hides nothing.
        loc = "lower right" if kind == "roc" else "upper right"
        ax.legend(loc=loc, borderaxespad=0.8, **legend)
    else:
        # Query labels are long and there may be many: below the axes, the legend covers no curve.
        # Past eight entries two columns keep the axes from being squeezed flat.
        ncol = _legend_columns(len(curves))
        fontsize = style.SMALL_SIZE if len(curves) <= 6 else (7.5 if ncol == 1 else 6.5)
        fig.legend(loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False, labelspacing=0.3,
                   columnspacing=1.2, **legend)


def _draw_band(ax, band: Band, kind: str, colour, label: str | None) -> None:
    far, lower, upper = (np.asarray(v, dtype=np.float64) for v in (band.far, band.lower, band.upper))
    if kind == "roc":
        x, low, high = far * 100.0, lower * 100.0, upper * 100.0
    else:  # the miss rate falls as the detection rate rises: the upper detection bound is the lower miss bound
        inside = (far > 0.0) & (far < 1.0)  # the ends lie off a DET's axes
        far, lower, upper = far[inside], lower[inside], upper[inside]
        x, low, high = _probit(far), _probit(1.0 - upper), _probit(1.0 - lower)
    ax.fill_between(x, low, high, color=colour, alpha=0.22, linewidth=0, label=label, gid="band", zorder=2)


def _mark_eer(ax, point: tuple[float, float], kind: str, colour, label: str | None, gid: str) -> None:
    far, pd = point
    x, y = (far * 100.0, pd * 100.0) if kind == "roc" else (float(_probit(np.asarray(far))),
                                                            float(_probit(np.asarray(1.0 - pd))))
    ax.plot([x], [y], linestyle="none", marker="o", markersize=9, markerfacecolor="white",
            markeredgecolor=colour, markeredgewidth=2.2, label=label, gid=gid, zorder=6)


def _setup_roc_axes(ax) -> None:
    ticks = np.arange(0, 101, 10)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlim(-1, 101)
    ax.set_ylim(-1, 101)
    ax.set_xlabel("False Alarm Rate [%]")
    ax.set_ylabel("Correct Detection Rate [%]")
    ax.plot([0, 100], [0, 100], zorder=1, **style.GUIDE)
    ax.plot([0, 100], [100, 0], color="0.6", linestyle=(0, (1, 3)), linewidth=1.0, zorder=1,
            label="EER line (FAR = miss rate)", gid="eer_line")
    ax.grid(True, **style.GRID)
    ax.set_axisbelow(True)


def _setup_det_axes(ax) -> None:
    ticks = probit(np.asarray(_DET_TICKS) / 100.0)
    labels = [f"{t:g}" for t in _DET_TICKS]
    ax.set_xticks(ticks, labels)
    ax.set_yticks(ticks, labels)
    lim = _det_limit()
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel("False Alarm Rate [%]")
    ax.set_ylabel("Miss Detection Rate [%]")
    ax.plot([-lim, lim], [-lim, lim], color="0.6", linestyle=(0, (1, 3)), linewidth=1.0, zorder=1,
            label="EER line (FAR = miss rate)", gid="eer_line")
    ax.grid(True, **style.GRID)
    ax.set_axisbelow(True)
    ax.tick_params(axis="both", labelsize=style.SMALL_SIZE)


def _coordinates(curve: Curve, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The curve in the axes' coordinates, thinned to what the axes can show (``thin_curve`` on the
    frame scaled to the unit square, so a DET keeps its detail at low rates)."""
    fpr = np.asarray(curve.fpr, dtype=np.float64)
    tpr = np.asarray(curve.tpr, dtype=np.float64)
    if kind == "roc":
        x, y = thin_curve(fpr, tpr)
        return x * 100.0, y * 100.0
    lim = _det_limit()
    x, y = thin_curve((_probit(fpr) + lim) / (2 * lim), (_probit(1.0 - tpr) + lim) / (2 * lim))
    return x * (2 * lim) - lim, y * (2 * lim) - lim


def _det_limit() -> float:
    """Half the width of a DET frame in probit units: every clipped point stays inside it."""
    return float(probit(1.0 - _CLIP)) + 0.1


def _probit(rate: np.ndarray) -> np.ndarray:
    return probit(np.clip(rate, _CLIP, 1.0 - _CLIP))


def _mark_dprime(ax, dprime: tuple[float, float, float]) -> None:
    """The d' point, named in the legend: a label beside the point could cross the tick labels or a curve."""
    d, f, t = dprime
    ax.plot([f * 100.0], [t * 100.0], linestyle="none", marker="*", markersize=13, color=style.HIGHLIGHT,
            markeredgecolor="black", markeredgewidth=0.6, zorder=5, label=f"d' = {d:.2f}", gid="dprime")


# --------------------------------------------------------------------------------------------
# text


def _missing_class(curve: Curve) -> str | None:
    """Why there is no curve (``"no targets"``/``"no non-targets"``/``"no trials"``), else None."""
    fpr = np.asarray(curve.fpr, dtype=np.float64)
    tpr = np.asarray(curve.tpr, dtype=np.float64)
    no_t = tpr.size == 0 or bool(np.isnan(tpr).any())
    no_nt = fpr.size == 0 or bool(np.isnan(fpr).any())
    if no_t and no_nt:
        return "no trials"
    if no_t:
        return "no targets"
    if no_nt:
        return "no non-targets"
    return None


def _num(value) -> str:
    if value is None:
        return "NaN"
    value = float(value)
    return "NaN" if math.isnan(value) else f"{value:.2f}"


def _counts(curve: Curve) -> str:
    return f"T#: {curve.n_target}, NT#: {curve.n_nontarget}"


def _single_text(curve: Curve, *, kind: str, no_num: bool, opt_out: bool, missing: str | None) -> str:
    """Multi-line annotation of a lone curve, e.g. ``AUC=0.52 [0.49, 0.54]`` / ``T#: 4, NT#: 5``."""
    prefix = "tr" if opt_out else ""
    lines = [curve.label] if curve.label else []
    if missing is not None:
        lines.append(f"no curve ({missing})")
    else:
        text = f"{prefix}AUC={_num(curve.auc)}"
        if curve.auc_ci is not None:
            text += f" [{_num(curve.auc_ci[0])}, {_num(curve.auc_ci[1])}]"
        lines.append(text)
        lines.append(f"{prefix}EER={_num(curve.eer)}")
    if opt_out and curve.trr is not None:
        lines.append(f"TRR: {_num(curve.trr)}")
    if not no_num:
        lines.append(_counts(curve))
    return "\n".join(lines)


def _legend_columns(n_curves: int) -> int:
    return 1 if n_curves <= 8 else 2


def _legend_entry(curve: Curve, *, kind: str, no_num: bool, opt_out: bool, missing: str | None,
                  max_label: int = _MAX_LABEL) -> str:
    """``<label> (AUC: 0.52, EER: 0.31[, TRR: t], T#: n, NT#: m)``. Long labels are cut."""
    label = curve.label if len(curve.label) <= max_label else curve.label[: max_label - 1] + "…"
    if missing is not None:
        parts = [f"no curve ({missing})"]
    else:
        parts = [f"AUC: {_num(curve.auc)}", f"EER: {_num(curve.eer)}"]
    if opt_out and curve.trr is not None:
        parts.append(f"TRR: {_num(curve.trr)}")
    if not no_num:
        parts.append(_counts(curve))
    return f"{label} ({', '.join(parts)})"


# --------------------------------------------------------------------------------------------
# SemaFor ROC: θ* and pD@FAR marked (plan Appendix A, Figures 31 and 32)

_THIN_CELLS = 1000
_FAR_COLOURS = [style.colour(i) for i in (1, 2, 4, 5)]
_FAR_MARKERS = ["s", "^", "D", "v"]


def thin_curve(x: np.ndarray, y: np.ndarray, cells: int = _THIN_CELLS) -> tuple[np.ndarray, np.ndarray]:
    """The points of a monotone curve needed to draw it at 1/``cells`` resolution.

    A point is kept when its grid cell differs from a neighbour's (and the two ends), so every
    dropped point lies in the cell of the drawn segment that replaces it; at most ~4·cells points.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.size <= 4 * cells + 2:
        return x, y
    cell = np.floor(x * cells) * (cells + 1) + np.floor(y * cells)
    change = np.diff(cell) != 0
    keep = np.r_[True, change] | np.r_[change, True]
    keep[0] = keep[-1] = True
    return x[keep], y[keep]


def draw_semafor_roc(panels: list[SemaforPanel], *, title: str = "SemaFor ROC"):
    """A figure with one ROC panel per subset, θ* and each pD@FAR marked; the caller closes it.

    Artists carry gids: ``roc`` (the curve), ``eer`` (θ*), ``pd@far<f>`` and ``far_guide<f>``.
    """
    if not panels:
        raise ValueError("no panel to plot")
    ncols = 1 if len(panels) == 1 else (2 if len(panels) <= 4 else 3)
    nrows = math.ceil(len(panels) / ncols)
    size = FIG_SIZE if len(panels) == 1 else (4.6 * ncols, 4.4 * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, dpi=DPI, layout="constrained", squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        _draw_semafor_panel(ax, panel)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig


def plot_semafor_roc(panels: list[SemaforPanel], stem: str | Path, *, title: str = "SemaFor ROC") -> list[Path]:
    """Draw once, write ``<stem>.pdf`` and ``<stem>.png``; returns the two paths."""
    paths = [Path(f"{stem}.pdf"), Path(f"{stem}.png")]
    with style.figure_style():
        fig = draw_semafor_roc(panels, title=title)
        try:
            save_figure(fig, paths)
        finally:
            plt.close(fig)
    return paths


def _draw_semafor_panel(ax, panel: SemaforPanel) -> None:
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_aspect("equal")
    ax.set_xlabel("FAR")
    ax.set_ylabel("p(D)")
    ax.plot([0, 1], [0, 1], zorder=1, **style.GUIDE)
    ax.grid(True, **style.GRID)
    ax.set_axisbelow(True)
    ax.set_title(panel.title if len(panel.title) <= _MAX_LABEL else panel.title[: _MAX_LABEL - 1] + "…")
    fpr, tpr = np.asarray(panel.fpr, dtype=np.float64), np.asarray(panel.tpr, dtype=np.float64)
    if panel.note or fpr.size == 0 or np.isnan(fpr).any() or np.isnan(tpr).any():
        ax.text(0.5, 0.5, panel.note or "no curve", ha="center", va="center", transform=ax.transAxes)
        return
    ax.plot(*thin_curve(fpr, tpr), color=style.colour(0), linewidth=style.LINE_WIDTH, label="ROC", gid="roc", zorder=2)
    for i, mark in enumerate(panel.at_far):
        ax.axvline(mark.far, color="0.45", linestyle=":", linewidth=1.0, gid=f"far_guide{mark.far:g}", zorder=1)
        if math.isfinite(mark.pd):
            ax.plot([mark.far], [mark.pd], linestyle="none", marker=_FAR_MARKERS[i % 4], markersize=7,
                    color=_FAR_COLOURS[i % 4], markeredgecolor="black", markeredgewidth=0.5,
                    label=mark.text, gid=f"pd@far{mark.far:g}", zorder=4)
    eer = panel.eer
    if math.isfinite(eer.far) and math.isfinite(eer.pd):
        ax.plot([eer.far], [eer.pd], linestyle="none", marker="o", markersize=9, color=style.HIGHLIGHT,
                markeredgecolor="black", markeredgewidth=0.6, label=eer.text, gid="eer", zorder=5)
        ax.annotate("θ*", (eer.far, eer.pd), xytext=(8, -12), textcoords="offset points",
                    color=style.HIGHLIGHT, fontweight="bold")
    ax.legend(loc="lower right", fontsize=style.SMALL_SIZE, handlelength=1.5, borderaxespad=0.5)


# --------------------------------------------------------------------------------------------
# output


def _save_atomically(fig, path: Path) -> None:
    """Save under a temporary name next to ``path``, then rename it into place."""
    fmt = path.suffix.lstrip(".")
    # A fresh unique name rather than mkstemp, so the file gets the usual umask permissions, not 0600.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        # No creation date in the PDF, so the same input renders to the same bytes.
        metadata = {"CreationDate": None} if fmt == "pdf" else None
        fig.savefig(tmp, format=fmt, dpi=DPI, metadata=metadata)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
