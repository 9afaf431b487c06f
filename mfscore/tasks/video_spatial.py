"""Video spatial-temporal localization as a task (docs/video.md §B): one job per (``-qm`` query, spatial target).

A job streams the probe's reference and system HDF5 masks into a ``VideoRecord`` (the ``video``
pool). A probe whose masks cannot be used comes back as a ``Problem`` that counts as its record
(scored as docs/video.md §B.5 says), so the report writes every table
(the exit status: mfscore.tasks.unusable_masks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.formats.file_names import output_name
from mfscore.formats.journal import journal_paths
from mfscore.formats.tables import write_table
from mfscore.masks.journal_selection import (
    OPERATION,
    QuerySelection,
    journal_results,
    read_mask_journal,
    select_operations,
)
from mfscore.masks.mask_record import UNREADABLE
from mfscore.masks.run_metrics import maximum_threshold
from mfscore.masks.trials import MANIPULATION
from mfscore.reports.figure_data import DistributionFigure, Series
from mfscore.reports.mask_outputs import FULL, partitions, select_rows
from mfscore.reports.video_spatial_report import (
    METRIC_COLUMNS,
    ST,
    averaged_columns,
    averaged_row,
    averaged_videos,
    format_table,
    pervideo_frame,
    threshold_table,
)
from mfscore.results import ALL, HIGHER, LOWER, MetricSpec, Records, Results, Row, number
from mfscore.tasks.base import (
    OUTPUT_DIRECTORY,
    Inputs,
    Job,
    JobKey,
    Lines,
    Plan,
    Problem,
    Task,
)
from mfscore.tasks.reference_layout import reference_inputs
from mfscore.tasks.unusable_masks import VIDEO_SCORER, conclusion
from mfscore.tasks.video_spatial_options import Options
from mfscore.video.spatial_trials import VideoTrials, load_video_trials, plan_video_jobs
from mfscore.video.video_metrics import video_cells
from mfscore.video.video_record import VideoRecord
from mfscore.video.video_scoring import VideoJob, score_video


MCC_FIGURE = "_mcc_distribution.png"


@dataclass
class Prepared:
    """What the report needs besides the records: the trials, the journal, each query and what it selects."""

    trials: VideoTrials
    journal: pd.DataFrame
    queries: list[str | None]
    selections: list[QuerySelection | None]  # None: the -qm query selects no journal operation


PERVIDEO = "_pervideo.csv"
# The averaged table's headline columns (docs/video.md §B.5, §B.6): means over the averaged videos.
VIDEO_METRICS = (
    (f"{ST}OptimumMCC", HIGHER, "Matthews correlation coefficient of each video's pixels, summed over its scored "
                                "frames, at its best threshold, averaged over the videos: 1 is a perfect mask, 0 "
                                "no better than chance"),
    (f"{ST}OptimumNMM", HIGHER, "nimble mask metric (TP - FN - FP)/(TP + FN) of each video at its best-MCC "
                                "threshold, floored at -1 and averaged: 1 is a perfect mask"),
    (f"{ST}OptimumBWL1", LOWER, "binary weighted L1 loss, the share of each video's scored pixels misclassified at "
                                "its best-MCC threshold, averaged: 0 is a perfect mask"),
    (f"{ST}GWL1", LOWER, "grayscale weighted L1 loss, the mean |reference - system|/255 over each video's scored "
                         "pixels (no threshold), averaged: 0 is a perfect mask"),
    (f"{ST}AUC", HIGHER, "area under each video's pixel ROC over its thresholds, averaged: 1 separates the "
                         "manipulated pixels perfectly, 0.5 is chance"),
    (f"{ST}EER", LOWER, "equal error rate of each video's pixel ROC, averaged: 0 is a perfect mask"),
    ("TemporalMCC", HIGHER, "Matthews correlation coefficient of the frames each video's mask marks (at its optimum "
                            "threshold) against the manipulated frames, averaged: 1 is perfect, 0 chance"),
)


class VideoSpatial(Task):
    name = "video-spatial"
    options_type = Options
    work_type = VideoJob
    record_type = VideoRecord
    resource = "video"
    threads = True
    primary_metric = f"{ST}OptimumMCC|TemporalMCC"  # TemporalMCC under --temporal_scoring_only
    metric_names = "|".join(name for name, _, _ in VIDEO_METRICS)
    aggregate_reports = ("*_mask_score.csv",)

    def inputs(self, options: Options) -> Inputs:
        return reference_inputs(options, mediscore_compat=options.scoring.mediscore_compat)

    def plan(self, options: Options) -> Plan:
        index_path = Path(options.ref_dir) / options.index
        sys_path = Path(options.system)
        trials = load_video_trials(Path(options.ref_dir) / options.reference, index_path, sys_path, options.scoring)
        stderr = []
        if trials.missing_system:
            stderr.append(f"mfscore: warning: {len(trials.missing_system)} video target(s) have no system output "
                          f"row and are not scored (first: {trials.missing_system[0]})")
        journal = _journal(options)
        queries = list(options.query_manipulation or [None])
        selections: list[QuerySelection | None] = []
        jobs = []
        for q, text in enumerate(queries):
            selection = select_operations(trials.targets, journal, MANIPULATION, text)
            if text is not None and not selection.matched:
                selections.append(None)
                continue
            selections.append(selection)
            planned = plan_video_jobs(trials, selection, journal, options.scoring, ref_dir=options.ref_dir,
                                      system_root=str(sys_path.parent), index_path=index_path, sys_path=sys_path)
            jobs += [Job(JobKey(q, "probe", i), job) for i, job in enumerate(planned)]
        return Plan(options, jobs, Prepared(trials, journal, queries, selections), stderr=stderr)

    def blobs(self, work: VideoJob) -> dict[str, str]:
        return {"reference": work.reference_path, "system": work.system_path or ""}

    def with_blobs(self, work: VideoJob, paths: dict[str, str]) -> VideoJob:
        return replace(work, reference_path=paths["reference"], system_path=paths.get("system") or None)

    def score(self, work: VideoJob):
        record = score_video(work)
        return Problem(record.error, counts_as=record) if record.error else record

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        options: Options = plan.options
        prepared: Prepared = plan.prepared
        stderr = []
        unusable: dict[tuple[str, str], None] = {}  # (probe, message) of each unusable mask, once whatever the queries
        averaged: list[tuple[str, dict, int]] = []   # every averaged row written
        pervideo = []                                # the per-video files written
        distribution = []                            # each query's per-video temporal MCCs (--plots)
        for q, (text, selection) in enumerate(zip(prepared.queries, prepared.selections)):
            subdir = f"index_{q}" if len(prepared.queries) > 1 else ""
            if selection is None:
                stderr.append(f"mfscore: the query {text!r} selects no journal operation; nothing is written for it")
                continue
            records = []
            for job in (job for job in plan.jobs if job.key.query == q):
                outcome = outcomes[job.key]
                if isinstance(outcome, Problem):
                    if (job.work.probe_id, outcome.message) not in unusable:
                        unusable[job.work.probe_id, outcome.message] = None
                        stderr.append(f"mfscore: ERROR: probe {job.work.probe_id}: {outcome.message}")
                    outcome = outcome.counts_as or VideoRecord(job.work.probe_id, UNREADABLE, error=outcome.message)
                records.append(outcome)
            written, mccs = _write_query(stage, subdir, prepared.trials, selection.trials, records, prepared.journal,
                                         options, text)
            averaged += written
            distribution.append(Series(text or "all videos", mccs))
            pervideo.append(f"{subdir}/{stage.prefix}{PERVIDEO}" if subdir else stage.prefix + PERVIDEO)
            write_table(journal_results(prepared.journal, selection.evaluated, {"probe": set()}, MANIPULATION),
                        stage.path("_journalResults.csv", subdir))
            stage.path("_parameters.json", subdir).write_text(_parameters(options, text))
        if options.plots:
            stage.draw("mfscore.reports.summary_plots:plot_distribution",
                       DistributionFigure("Temporal MCC per video", tuple(distribution), "temporal MCC",
                                          ylabel="Videos"),
                       stage.path(MCC_FIGURE))
        closing, status = conclusion(len(unusable), len({probe for probe, _ in unusable}),
                                     "an unusable system mask is scored as all white, an unusable reference with "
                                     "the minimum scores", strict=options.strict,
                                     mediscore_compat=options.scoring.mediscore_compat, rule=VIDEO_SCORER)
        return Lines([f"reports in {OUTPUT_DIRECTORY}/ (prefix {stage.prefix!r})"], stderr + closing, status=status,
                     results=video_spatial_results(averaged, pervideo, temporal_only=options.scoring.temporal_only))


def _journal(options: Options) -> pd.DataFrame:
    """The probe-journal join ⋈ journal mask; empty when the reference has none (every bit then counts)."""
    compat = options.scoring.mediscore_compat
    paths = journal_paths(options.ref_dir, options.reference, mediscore_compat=compat)
    if not all(p.is_file() for p in paths):
        return pd.DataFrame(columns=["ProbeFileID", "JournalName", "StartNodeID", "EndNodeID"])
    joined = read_mask_journal(options.ref_dir, options.reference, mediscore_compat=compat)
    # the vidspatial branch's pandas grouped an inner join's rows by key, in order of first appearance
    first_seen = joined.groupby(OPERATION, sort=False).ngroup()
    return joined.iloc[first_seen.argsort(kind="stable")].reset_index(drop=True)


def _averaged(pervideo: pd.DataFrame, journal: pd.DataFrame, options: Options,
              query: str | None) -> list[tuple[str, str, pd.DataFrame]]:
    """(the table's Query label, the query as the results name it, the videos) of each averaged row."""
    if options.query:
        return [(q, q, select_rows(pervideo, journal, q, ["ProbeFileID"])) for q in options.query]
    if options.query_partition:
        return [(" & ".join(f"{k}=={v}" for k, v in s.label.items()), s.text, s.rows)
                for s in partitions(pervideo, journal, options.query_partition, ["ProbeFileID"])]
    return [(FULL, query or ALL, pervideo)]  # -qm: the table says Full, as the vidspatial branch's does


def _write_query(stage, subdir: str, trials: VideoTrials, rows: pd.DataFrame, records: list[VideoRecord],
                 journal: pd.DataFrame, options: Options,
                 query: str | None) -> tuple[list[tuple[str, dict, int]], np.ndarray]:
    """One query's ``_mask_score.csv``, ``_pervideo.csv`` and per-video ``_thresholds`` tables (each named by its
    ProbeFileID through ``output_name``, so that no ID names a file elsewhere); returns each
    averaged row written (its query, its values before ``--precision``, how many videos it averages), and the
    per-video temporal MCCs.

    A video whose reference is blank (no target pixel in any frame) is in none of them (docs/video.md §B.6)."""
    listed = [not r.blank_reference for r in records]
    rows = rows[listed]
    records = [r for r, keep in zip(records, listed) if keep]
    sbin = options.sbin
    compat = options.scoring.mediscore_compat
    scored_spatial = [r.spatial for r in records if r.scored and r.spatial_scored]
    maximum = maximum_threshold(scored_spatial) if sbin is not None else None
    cells = [video_cells(r, maximum=maximum, actual=sbin, temporal_only=options.scoring.temporal_only,
                         mediscore_compat=compat)
             for r in records]
    pervideo = pervideo_frame(trials, rows, cells)
    subsets = [(label, text, subset) for label, text, subset in _averaged(pervideo, journal, options, query)
               if len(subset)]
    averaged = [averaged_row(subset, pervideo, trials, label=label, maximum=maximum, actual=sbin,
                             opt_out=options.scoring.opt_out, task=MANIPULATION, mediscore_compat=compat)
                for label, _, subset in subsets]
    numeric = [c for c in averaged_columns() if c not in ("TaskID", "Query", "optOutScoring")]
    write_table(format_table(pd.DataFrame(averaged, columns=averaged_columns()), options.precision, numeric),
                stage.path("_mask_score.csv", subdir))
    write_table(format_table(pervideo, options.precision, METRIC_COLUMNS), stage.path(PERVIDEO, subdir))
    for record in records:
        if record.scored:
            write_table(threshold_table(record), stage.path(f"_thresholds/{output_name(record.probe_id)}.csv", subdir))
    mccs = pd.to_numeric(pervideo.get("TemporalMCC", pd.Series(dtype=float)), errors="coerce")
    return ([(text, row, len(averaged_videos(subset, mediscore_compat=compat)))
             for (_, text, subset), row in zip(subsets, averaged)], mccs.to_numpy(dtype=np.float64))


def video_spatial_results(averaged: list[tuple[str, dict, int]], pervideo: list[str], *,
                          temporal_only: bool = False) -> Results:
    """A row per averaged row written; primary the mean spatial-temporal Optimum MCC, the MFC2019 plan's
    localization metric (docs/video.md §B.5), or TemporalMCC when only time is scored."""
    specs = tuple(MetricSpec(name, better, text) for name, better, text in VIDEO_METRICS)
    rows = tuple(Row(query, {spec.name: number(row[spec.name]) for spec in specs},
                     {"trials": int(row["totalTrials"]), "opted_out": int(row["totalOptOut"]),
                      "targets": int(row["totalTargets"]), "scored": scored})
                 for query, row, scored in averaged)
    # each -qm query has its own per-video table (index_<i>/); the records are the first query's
    records = Records(pervideo[0], ("ProbeFileID",)) if pervideo else None
    return Results("video-spatial", "TemporalMCC" if temporal_only else f"{ST}OptimumMCC", specs, rows,
                   records=records)


def _parameters(options: Options, query: str | None) -> str:
    return json.dumps({"command": options.command_line, **json.loads(options.flags), "query": query}, indent=2,
                      default=str)


TASK = VideoSpatial()
