"""The figures of a detection run: MediScore's ROC/DET plots and the SemaFor ROC (docs/detection.md §10).

Kept apart from the tables; this module builds what the figures show, and the figure worker (``mfscore.run.figure_process``) has
``plots`` draw it (in its worker when one runs), so a run imports matplotlib only where it draws.
"""

from __future__ import annotations

import numpy as np

from mfscore.detection.dprime import dprime
from mfscore.detection.options import DetectionOptions, PlotOptions
from mfscore.detection.scorer import SubsetResult
from mfscore.reports.figure_data import Band, Curve, CurveFigure, OperatingMark, SemaforPanel
from mfscore.reports.stage import Stage


def _mode_prefix(options: DetectionOptions) -> str:
    return "_all" if options.query_mode is None else f"_{options.query_mode}_query"


def semafor_panels(results: list[SubsetResult], fars) -> list[SemaforPanel]:
    """What the SemaFor ROC marks for each subset: θ* and the pD@FAR points, the report's own values."""
    panels = []
    for r in results:
        v, roc = r.semafor, r.metrics.roc
        fpr, tpr = (roc.fpr, roc.tpr) if roc is not None else (np.zeros(0), np.zeros(0))
        whose = "θ* of all trials" if v.get("THRESHOLD_SET") == "all" else "θ*"
        eer = OperatingMark(v["FAR@EER"], v["pD@EER"],
                            f"{whose} = {v['THRESHOLD_EER']:.4g}: pD {v['pD@EER']:.3f}, "
                            f"FAR {v['FAR@EER']:.3f}, bACC {v['bACC@EER']:.3f}")
        at_far = tuple(OperatingMark(f, v[f"pD@FAR{f:g}"], f"pD@FAR{f:g} = {v[f'pD@FAR{f:g}']:.3f}")
                       for f in fars)
        panels.append(SemaforPanel(r.subset.label or "all trials", fpr, tpr, eer, at_far,
                                   note=_no_curve(r.metrics.n_target, r.metrics.n_nontarget)))
    return panels


def _no_curve(n_target: int, n_nontarget: int) -> str:
    missing = [what for what, n in (("targets", n_target), ("non-targets", n_nontarget)) if n == 0]
    return f"no curve (no {' and no '.join(missing)})" if missing else ""


def write_semafor_plot(results: list[SubsetResult], stage: Stage, options: DetectionOptions,
                       plot: PlotOptions) -> None:
    """``<out>_semafor_ROC.pdf`` and ``.png``: every subset in one figure, one panel each."""
    stem = stage.path("_semafor_ROC.pdf").with_suffix("")
    stage.path("_semafor_ROC.png")
    stage.draw("mfscore.reports.plots:plot_semafor_roc", semafor_panels(results, options.semafor_fars), stem,
                        title=f"{plot.title}: SemaFor operating points")


def _curve(r: SubsetResult, options: DetectionOptions, plot: PlotOptions) -> Curve:
    m = r.metrics
    fpr, tpr = (m.roc.fpr, m.roc.tpr) if m.roc is not None else (np.array([np.nan]), np.array([np.nan]))
    d = dprime(fpr, tpr, plot.d_level)
    ci = (m.intervals.auc.lower, m.intervals.auc.upper) if m.intervals else None
    band = Band(r.band.far, r.band.lower, r.band.upper, r.band.level) if r.band is not None else None
    return Curve(label=r.subset.label, fpr=fpr, tpr=tpr, auc=float(m.auc), eer=float(m.eer),
                 n_target=m.n_target, n_nontarget=m.n_nontarget,
                 trr=r.trr if options.opt_out else None, auc_ci=ci, dprime=d, band=band)


def figure_title(options: DetectionOptions, plot: PlotOptions) -> str:
    """``--plotTitle``, saying when only the opted-in trials were scored (``--optOut``). MediScore glues "tr" to
    the title ("trPerformance"); ``--mediscore-compat`` keeps that (docs/compatibility.md)."""
    if not options.opt_out:
        return plot.title
    return f"tr{plot.title}" if options.mediscore_compat else f"{plot.title} (opted-in trials)"


def curve_figures(results: list[SubsetResult], options: DetectionOptions,
                  plot: PlotOptions) -> list[tuple[str, CurveFigure]]:
    """Each ROC/DET figure a run writes with its file suffix: all subsets in one, or one each with ``--multiFigs``."""
    kind = plot.kind.upper()
    curves = [_curve(r, options, plot) for r in results]
    common = dict(kind=plot.kind, title=figure_title(options, plot), subtitle=plot.subtitle,
                  far_stop=options.far_stop, no_num=plot.no_num, opt_out=options.opt_out)
    if plot.multi_figs:
        return [(f"{_mode_prefix(options)}_{i}_{kind}", CurveFigure([c], **common)) for i, c in enumerate(curves)]
    return [(f"{_mode_prefix(options)}_{kind}", CurveFigure(curves, **common))]


def write_plots(results: list[SubsetResult], stage: Stage, options: DetectionOptions, plot: PlotOptions) -> None:
    """MediScore's ROC or DET figure: all subsets in one, or one each with ``--multiFigs``; each written by
    ``plot_curves`` as ``<stem>.pdf`` and ``<stem>.png``."""
    for suffix, figure in curve_figures(results, options, plot):
        stem = stage.path(suffix + ".pdf").with_suffix("")
        stage.path(suffix + ".png")
        stage.draw("mfscore.reports.plots:plot_curve_figure", figure, stem)
