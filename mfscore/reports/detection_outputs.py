"""Every file a detection run writes, named as DetectionScorer names them (spec detection.md §9)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mfscore.detection.dprime import dprime
from mfscore.detection.scorer import DetectionOptions, SubsetResult
from mfscore.detection.trials import ScoredTable
from mfscore.formats.journal import join_journal
from mfscore.formats.tables import write_table
from mfscore.reports import plots
from mfscore.reports.detection_report import format_value, metric_cells, write_report
from mfscore.reports.staged_outputs import StagedOutputs



@dataclass(frozen=True)
class PlotOptions:
    kind: str = "roc"
    title: str = "Performance"
    subtitle: str = ""
    no_num: bool = False
    multi_figs: bool = False
    d_level: float = 0.0
    enabled: bool = True


def _mode_prefix(options: DetectionOptions) -> str:
    return "_all" if options.query_mode is None else f"_{options.query_mode}_query"


def write_reports(results: list[SubsetResult], stage: StagedOutputs, options: DetectionOptions) -> None:
    def cells(r: SubsetResult) -> dict:
        return metric_cells(r.metrics, trr=r.trr, opt_out=options.opt_out, far_stop=options.far_stop,
                            ci_level=options.ci_level)

    if options.query_mode is None:
        write_report([cells(results[0])], stage.path("_all_report.csv"))
    elif options.query_mode == "qp":
        write_report([{**r.subset.factors, **cells(r)} for r in results], stage.path("_qp_query_report.csv"))
    else:
        for i, r in enumerate(results):
            write_report([{"QUERY": r.subset.label, **cells(r)}], stage.path(f"_{options.query_mode}_query_{i}_report.csv"))


def write_semafor_report(results: list[SubsetResult], stage: StagedOutputs, options: DetectionOptions) -> None:
    """Metrics of the SemaFor plan, one row per subset, in a file of their own (docs/detection.md)."""
    write_report([semafor_row(r, options) for r in results], stage.path("_semafor_report.csv"))


def semafor_row(r: SubsetResult, options: DetectionOptions) -> dict:
    """One report row: the subset's SemaFor values, each followed by its interval with ``--ci``."""
    row = {"QUERY": r.subset.label or "all", "TRR": r.trr}
    if r.semafor_ci:
        row["CI_LEVEL"] = options.ci_level
    for name, value in r.semafor.items():
        row[name] = value
        if name in r.semafor_ci:
            row[f"{name}_CI_LOWER"] = r.semafor_ci[name].lower
            row[f"{name}_CI_UPPER"] = r.semafor_ci[name].upper
    return row


def semafor_panels(results: list[SubsetResult], fars) -> list[plots.SemaforPanel]:
    """What the SemaFor ROC marks for each subset: θ* and the pD@FAR points, the report's own values."""
    panels = []
    for r in results:
        v, roc = r.semafor, r.metrics.roc
        fpr, tpr = (roc.fpr, roc.tpr) if roc is not None else (np.zeros(0), np.zeros(0))
        whose = "θ* of all trials" if v.get("THRESHOLD_SET") == "all" else "θ*"
        eer = plots.OperatingMark(v["FAR@EER"], v["pD@EER"],
                                  f"{whose} = {v['THRESHOLD_EER']:.4g}: pD {v['pD@EER']:.3f}, "
                                  f"FAR {v['FAR@EER']:.3f}, bACC {v['bACC@EER']:.3f}")
        at_far = tuple(plots.OperatingMark(f, v[f"pD@FAR{f:g}"], f"pD@FAR{f:g} = {v[f'pD@FAR{f:g}']:.3f}")
                       for f in fars)
        panels.append(plots.SemaforPanel(r.subset.label or "all trials", fpr, tpr, eer, at_far,
                                         note=_no_curve(r.metrics.n_target, r.metrics.n_nontarget)))
    return panels


def _no_curve(n_target: int, n_nontarget: int) -> str:
    missing = [what for what, n in (("targets", n_target), ("non-targets", n_nontarget)) if n == 0]
    return f"no curve (no {' and no '.join(missing)})" if missing else ""


def write_semafor_plot(results: list[SubsetResult], stage: StagedOutputs, options: DetectionOptions,
                       plot: PlotOptions) -> None:
    """``<out>_semafor_ROC.pdf`` and ``.png``: every subset in one figure, one panel each."""
    if not plot.enabled:
        return
    stem = stage.path("_semafor_ROC.pdf").with_suffix("")
    stage.path("_semafor_ROC.png")
    plots.plot_semafor_roc(semafor_panels(results, options.semafor_fars), stem,
                           title=f"{plot.title}: SemaFor operating points")


def write_metadata(table: ScoredTable, journal, results: list[SubsetResult], stage: StagedOutputs,
                   options: DetectionOptions, *, out_meta: bool, out_sub_meta: bool) -> None:
    if out_meta and options.query_mode is None:
        write_table(join_journal(table.trials, journal), stage.path("_allmeta.csv"))
        write_table(table.trials, stage.path("_meta_scored.csv"))
    elif out_meta:
        for i, r in enumerate(results):
            write_table(r.subset.rows, stage.path(f"_{options.query_mode}_query_{i}_allmeta.csv"))
    if out_sub_meta:
        keys = table.index_ref_keys
        columns = keys + table.index_only_columns + ["IsTarget"] + table.system_only_columns
        write_table(table.trials[[c for c in dict.fromkeys(columns) if c in table.trials.columns]],
                    stage.path("_subset_meta.csv"))


def write_roc_dumps(results: list[SubsetResult], stage: StagedOutputs) -> None:
    """``--dump``: the ROC points of each subset as a table (MediScore pickles them instead)."""
    for i, r in enumerate(results):
        roc = r.metrics.roc
        frame = pd.DataFrame({"FPR": roc.fpr, "TPR": roc.tpr, "THRESHOLD": roc.thresholds} if roc else
                             {"FPR": [], "TPR": [], "THRESHOLD": []})
        write_table(frame.map(format_value), stage.path(f"_query_{i}_roc.csv"))


def _curve(r: SubsetResult, options: DetectionOptions, plot: PlotOptions) -> plots.Curve:
    m = r.metrics
    fpr, tpr = (m.roc.fpr, m.roc.tpr) if m.roc is not None else (np.array([np.nan]), np.array([np.nan]))
    d = dprime(fpr, tpr, plot.d_level)
    ci = (m.intervals.auc.lower, m.intervals.auc.upper) if m.intervals else None
    return plots.Curve(label=r.subset.label, fpr=fpr, tpr=tpr, auc=float(m.auc), eer=float(m.eer),
                       n_target=m.n_target, n_nontarget=m.n_nontarget,
                       trr=r.trr if options.opt_out else None, auc_ci=ci, dprime=d)


def write_plots(results: list[SubsetResult], stage: StagedOutputs, options: DetectionOptions, plot: PlotOptions) -> None:
    if not plot.enabled:
        return
    kind = plot.kind.upper()
    curves = [_curve(r, options, plot) for r in results]
    common = dict(kind=plot.kind, title=plot.title, subtitle=plot.subtitle, no_num=plot.no_num, opt_out=options.opt_out)
    if plot.multi_figs:
        for i, c in enumerate(curves):
            _plot(stage, f"{_mode_prefix(options)}_{i}_{kind}", [c], common)
    else:
        _plot(stage, f"{_mode_prefix(options)}_{kind}", curves, common)


def _plot(stage: StagedOutputs, suffix: str, curves: list, common: dict) -> None:
    """One figure, written by ``plot_curves`` as ``<stem>.pdf`` and ``<stem>.png``."""
    stem = stage.path(suffix + ".pdf").with_suffix("")
    stage.path(suffix + ".png")
    plots.plot_curves(curves, stem, **common)
