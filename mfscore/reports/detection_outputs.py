"""Every table a detection run writes, named as DetectionScorer names them (docs/detection.md §9); the
figures are `detection_plots`."""

from __future__ import annotations

from mfscore.detection.scorer import DetectionOptions, SubsetResult
from mfscore.detection.trials import ScoredTable
from mfscore.formats.journal import join_journal
from mfscore.formats.tables import write_table
from mfscore.reports.detection_report import CI_COLUMNS, format_value, metric_cells, write_report
from mfscore.reports.stage import Stage


def write_reports(results: list[SubsetResult], stage: Stage, options: DetectionOptions) -> None:
    def cells(r: SubsetResult) -> dict:
        return metric_cells(r.metrics, trr=r.trr, opt_out=options.opt_out, far_stop=options.far_stop,
                            ci_level=options.ci_level)

    if options.query_mode is None:
        write_report([cells(results[0])], stage.path("_all_report.csv"))
    elif options.query_mode == "qp":  # mfscore's own table (MediScore's -qp crashes): no interval columns without --ci
        dropped = () if options.ci else CI_COLUMNS
        write_report([{**r.subset.factors, **{k: v for k, v in cells(r).items() if k not in dropped}} for r in results],
                     stage.path("_qp_query_report.csv"))
    else:
        for i, r in enumerate(results):
            write_report([{"QUERY": r.subset.label, **cells(r)}], stage.path(f"_{options.query_mode}_query_{i}_report.csv"))


def write_semafor_report(results: list[SubsetResult], stage: Stage, options: DetectionOptions) -> None:
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


def write_metadata(table: ScoredTable, journal, results: list[SubsetResult], stage: Stage,
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


def write_roc_dumps(results: list[SubsetResult], stage: Stage) -> None:
    """``--dump``: the ROC points of each subset as a table (MediScore pickles them instead)."""
    import pandas as pd

    for i, r in enumerate(results):
        roc = r.metrics.roc
        frame = pd.DataFrame({"FPR": roc.fpr, "TPR": roc.tpr, "THRESHOLD": roc.thresholds} if roc else
                             {"FPR": [], "TPR": [], "THRESHOLD": []})
        write_table(frame.map(format_value), stage.path(f"_query_{i}_roc.csv"))
