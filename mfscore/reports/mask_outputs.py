"""Writing a mask run's files: per-image, averaged (per ``-q``/``-qp``) and journal tables (docs/masks.md §8, §10)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mfscore import query
from mfscore.detection.subsets import query_frame
from mfscore.formats.tables import write_table
from mfscore.masks.extra_metrics import (
    DEFAULT_BINARIZATION,
    SUMMARIZED,
    extra_summary,
    localization_iou,
    mcc_size_histogram,
    over,
    semafor_localization,
)
from mfscore.masks.options import ReportOptions
from mfscore.masks.scorer import QueryRun
from mfscore.masks.trials import SPLICE, TrialTable, mask_roles, trial_keys
from mfscore.reports.mask_extra_report import extra_table, mcc_histogram_plot
from mfscore.reports.mask_report import averaged_columns, averaged_row, format_frame, perimage_frame, round_metrics
from mfscore.reports.stage import Stage

FULL = "Full"
PERIMAGE = "_mask_scores_perimage.csv"


@dataclass
class Averaged:
    """One averaged row's subset: its label columns in the table, its per-image rows, and its query as text
    (the ``-q`` query, the ``-qp`` partition's conditions joined by ``&``, the ``-qm`` query, or '' for the
    whole run)."""

    label: dict
    rows: pd.DataFrame
    text: str = ""


@dataclass
class QueryOutputs:
    """What writing one query's files gives back: notes for the user, and each averaged row written as
    numbers (before ``--precision``), with its subset and the per-image file's name (``subdir``-relative)."""

    notes: list[str]
    averaged: list[tuple[Averaged, dict]]
    perimage: str


def _scored_any(frame: pd.DataFrame, task: str) -> pd.Series:
    if task == SPLICE:
        return (frame["ProbeScored"] == "Y") | (frame["DonorScored"] == "Y")
    return frame["Scored"] == "Y"


def select_rows(frame: pd.DataFrame, journal: pd.DataFrame, text: str, keys: list[str]) -> pd.DataFrame:
    joined = query_frame(frame, journal.drop(columns=[c for c in journal.columns if c.endswith("Evaluated")]))
    hits = joined.loc[query.select(joined, text), keys].drop_duplicates()
    wanted = set(map(tuple, hits.to_numpy()))
    return frame[[tuple(k) in wanted for k in frame[keys].to_numpy()]]


def partitions(frame: pd.DataFrame, journal: pd.DataFrame, text: str, keys: list[str]) -> list[Averaged]:
    """``-qp``: one subset per combination of the ``==[...]`` factor values (docs/masks.md §8)."""
    return [Averaged({t.name: t.cell for t in terms},
                     select_rows(frame, journal, " & ".join(f"({t.condition})" for t in terms), keys),
                     " & ".join(t.condition for t in terms))
            for terms in query.partitions(text)]


def averaged_subsets(frame: pd.DataFrame, run: QueryRun, options: ReportOptions) -> list[tuple[str, Averaged]]:
    """(file suffix, subset) for each averaged table to write; empty subsets write nothing."""
    keys = trial_keys(options.task)
    scored = frame[_scored_any(frame, options.task)]
    if options.queries:
        subsets = [Averaged({"Query": q}, select_rows(scored, run.journal, q, keys), q) for q in options.queries]
        non_empty = [s for s in subsets if len(s.rows)]
        return [(f"_mask_scores_{i}.csv", s) for i, s in enumerate(non_empty)]
    if options.partition:
        non_empty = [s for s in partitions(scored, run.journal, options.partition, keys) if len(s.rows)]
        if options.mediscore_compat:
            non_empty = non_empty[-1:]  # MediScore keeps only the last partition (docs/masks.md §8)
        return [("_mask_score.csv", s) for s in non_empty]
    if scored.empty:
        return []
    return [("_mask_score.csv", Averaged({"Query": run.query or FULL}, scored, run.query or ""))]


def write_query_outputs(run: QueryRun, table: TrialTable, stage: Stage, options: ReportOptions,
                        subdir: str = "") -> QueryOutputs:
    """Write one query's files; returns notes for the user (e.g. nothing to average) and the averaged rows
    written. The extras come first: their heat map is drawn (by a figure worker, if one runs) while the other
    tables are written."""
    write_extras(run, stage, options, subdir)
    if options.plots:
        write_average_rocs(run, stage, options, subdir)
    notes = []
    raw = round_metrics(perimage_frame(run, table, options.task), 16)
    averaged = averaged_subsets(raw, run, options)
    by_file: dict[str, list[dict]] = {}
    label_columns: dict[str, list[str]] = {}
    written = []
    for suffix, subset in averaged:
        row = averaged_row(subset.rows, raw, run, table, task=options.task, opt_out=options.opt_out, label=subset.label)
        by_file.setdefault(suffix, []).append(row)
        written.append((subset, row))
        label_columns[suffix] = list(subset.label)
    for suffix, rows in by_file.items():
        frame = pd.DataFrame(rows, columns=averaged_columns(options.task, label_columns[suffix]), dtype=object)
        write_table(format_frame(round_metrics(frame, options.precision, truncate=options.truncate)),
                    stage.path(suffix, subdir))
    if not averaged and not options.queries and not options.partition:
        records = [r for role in run.roles.values() for r in role.records]
        why = ("no mask could be read" if records and all(r.status == "unreadable" for r in records)
               else "none of the masks had a region to score")
        notes.append(f"{why}, so no averaged table was written")
    perimage = raw
    if options.display_scored_only:
        perimage = perimage[_scored_any(perimage, options.task)]
    perimage = round_metrics(perimage, options.precision, truncate=options.truncate)
    write_table(format_frame(perimage), stage.path(PERIMAGE, subdir))
    write_table(run.journal, stage.path("_journalResults.csv", subdir))
    return QueryOutputs(notes, written, f"{subdir}/{stage.prefix}{PERIMAGE}" if subdir else stage.prefix + PERIMAGE)


def write_average_rocs(run: QueryRun, stage: Stage, options: ReportOptions, subdir: str = "") -> None:
    """``--plots``: ``_mask_roc[_<role>].png``, the query's pixel- and mask-weighted average ROCs."""
    from mfscore.reports.mask_figures import average_roc_figure

    for role, _, _ in mask_roles(options.task):
        suffix = f"_{role}" if options.task == SPLICE else ""
        title = "Average mask ROC" + (f" ({role})" if suffix else "") + (f": {run.query}" if run.query else "")
        stage.draw("mfscore.reports.summary_plots:plot_average_roc", average_roc_figure(run.roles[role], title),
                   stage.path(f"_mask_roc{suffix}.png", subdir))


def write_extras(run: QueryRun, stage: Stage, options: ReportOptions, subdir: str = "") -> None:
    """mfscore's metrics beyond MediScore, in files of their own (docs/metrics.md §1.7, §2).

    ``_mask_extra.csv``: IoU/F1 (best and actual threshold), soft MCC/IoU/F1 per mask;
    ``_mask_extra_summary.csv``: their mean and standard deviation (the paper's Tables 1–2);
    ``_mask_extra_mcc_by_size[_<role>]``: soft MCC by √(reference pixels), table and heat map;
    ``_mask_extra_semafor[_<role>].csv``: pD/FAR/FNR at IoU thresholds of the system's own
    binarisation (``--sbin``, else the documented default).
    """
    keys = run.trials[trial_keys(options.task)]
    prefixes = {"probe": "p", "donor": "d"} if options.task == SPLICE else {"probe": ""}
    roles = {role: run.roles[role].records for role, _, _ in mask_roles(options.task)}
    actual = run.roles["probe"].actual_threshold
    pixels = options.extras_pixels
    table = extra_table(keys, roles, actual, pixels)
    write_table(format_frame(round_metrics(table, options.precision, truncate=options.truncate)),
                stage.path("_mask_extra.csv", subdir))
    summarized = [f"{prefixes[role]}{column}" for role in roles for column in SUMMARIZED]
    write_table(format_frame(round_metrics(extra_summary(table, summarized, pixels), options.precision,
                                           truncate=options.truncate)),
                stage.path("_mask_extra_summary.csv", subdir))
    binarization = int(actual) if actual is not None else DEFAULT_BINARIZATION
    for role, records in roles.items():
        suffix = f"_{role}" if options.task == SPLICE else ""
        usable = [r.scored and over(r, pixels).pixel_n > 0 for r in records]
        ious = [localization_iou(r, binarization, pixels) for r, u in zip(records, usable) if u]
        write_table(semafor_localization(ious, binarization), stage.path(f"_mask_extra_semafor{suffix}.csv", subdir))
        column = table[f"{prefixes[role]}SoftMCC"][usable]
        histogram = mcc_size_histogram([r.region_pixels ** 0.5 for r, u in zip(records, usable) if u],
                                       column.to_numpy(dtype=float))
        name = f"_mask_extra_mcc_by_size{suffix}"
        write_table(histogram, stage.path(f"{name}.csv", subdir))
        title = "Soft MCC by reference mask size" + (f" ({role})" if suffix else "")
        mcc_histogram_plot(histogram, stage.path(f"{name}.png", subdir), title)
