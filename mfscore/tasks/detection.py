"""Detection scoring as a task (docs/detection.md "On a cluster"): a subset's metrics and its bootstrap replicates
are its jobs, their values its records.

Planning reads the tables, selects the subsets (the whole set, or one per ``-q``/``-qm`` query or ``-qp``
bucket), sorts each subset's trials once and writes them as a file of its own (``Plan.generated``), which
its jobs name. A subset's first job computes its point metrics (AUC, EER, AUC@FAR, CDR@FAR, the SemaFor
columns); with ``--ci`` the 500 bootstrap replicates are split into slices of about ``SLICE_WORK``
trial-replicates each, the first slice in that same job. The report puts each subset's parts together
(``mfscore.detection.scorer.subset_result``), so the files are those of one pass over the subset.

The jobs read nothing but the plan's files (``Task.portable``): the embedded command scores them in its
own process, one after another, and so does a cluster for a run of fewer trials than its
``MFSCORE_POOL_MIN_TRIALS``; larger runs go to the detection scorer pool.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mfscore.detection.bootstrap import N_RESAMPLES, Replicates, joined, replicate_slice, semafor_names
from mfscore.detection.roc import SortedTrials
from mfscore.detection.roc_band import FAR_GRID
from mfscore.detection.scorer import (
    DetectionOptions,
    PointMetrics,
    SubsetResult,
    build_subsets,
    competition_threshold,
    point_metrics,
    semafor_draws,
    subset_result,
)
from mfscore.detection.subsets import Subset
from mfscore.detection.trials import ScoredTable, apply_opt_out, load_scored_table, scores_and_labels
from mfscore.errors import MfscoreError
from mfscore.formats.journal import read_journal
from mfscore.records import Problem, RecordConflictError
from mfscore.reports import detection_outputs as outputs
from mfscore.results import ALL, HIGHER, LOWER, NEITHER, Curve, MetricSpec, Records, Results, Row, number
from mfscore.tasks.base import (
    OUTPUT_DIRECTORY,
    PLANNED,
    Inputs,
    Job,
    JobKey,
    Lines,
    Plan,
    Submission,
    Task,
    key_of,
)
from mfscore.tasks.detection_options import Options
from mfscore.tasks.reference_layout import reference_inputs

if TYPE_CHECKING:
    import pandas as pd

SLICE_WORK = 50_000_000  # trial-replicates a bootstrap job draws at most (1M trials: 10 jobs of 50 replicates)
MAX_RECORD_VALUES = 20_000  # replicate values a job's record holds at most (~500 KB of JSON; a NATS message, 1 MiB)
MAX_CURVE_POINTS = 1001  # ROC points a curve of the results keeps (a 10^6-trial ROC has about as many)


@dataclass(frozen=True)
class SubsetJob:
    """One job of a subset: its point metrics (``metrics``) and/or its bootstrap replicates ``first`` to ``first +
    count``, over the ``n`` trials of the file ``trials`` the plan made (``SortedTrials.to_npy``)."""

    trials: str
    n: int
    metrics: bool
    first: int
    count: int
    scoring: DetectionOptions
    threshold: float | None = None  # a -qp bucket's competition θ* (--semafor; mfscore.detection.scorer)
    band: bool = False  # the replicates also read their ROC on the band's grid (--ci with figures)


@dataclass(frozen=True)
class SubsetRecord:
    """What a subset's job computed: its point metrics, its slice of replicates (None: not this job's)."""

    metrics: PointMetrics | None = None
    replicates: Replicates | None = None


@dataclass
class Prepared:
    """What the report needs besides the records: the table, the journal, each subset and its sorted trials."""

    table: ScoredTable
    journal: pd.DataFrame | None
    subsets: list[Subset] = field(default_factory=list)
    trials: list[SortedTrials] = field(default_factory=list)  # each subset's, sorted once
    error: MfscoreError | None = None  # selecting the subsets failed: the report says so, after planning's lines


def slices(n: int, ci: bool, values: int = 4) -> list[tuple[int, int]]:
    """(first replicate, replicates) of each job of a subset of ``n`` trials: one job without ``--ci`` (or trials),
    else the 500 replicates in near-equal slices of at most ``SLICE_WORK`` trial-replicates and, at ``values`` a
    replicate, ``MAX_RECORD_VALUES`` values."""
    if not ci or n == 0:
        return [(0, 0)]
    k = min(N_RESAMPLES, max(math.ceil(n * N_RESAMPLES / SLICE_WORK),
                             math.ceil(N_RESAMPLES * values / MAX_RECORD_VALUES)))
    size, longer = divmod(N_RESAMPLES, k)
    counts = [size + (i < longer) for i in range(k)]
    return [(sum(counts[:i]), count) for i, count in enumerate(counts)]


class Detection(Task):
    name = "detection"
    options_type = Options
    work_type = SubsetJob
    record_type = SubsetRecord
    resource = "detection"
    portable = True
    primary_metric = r"AUC|pD@FAR[0-9.e+-]+"
    metric_names = r"AUC|EER|AUC@FAR|CDR@FAR|TRR|pD@FAR[0-9.e+-]+|bACC@EER|Cllr|minCllr"
    aggregate_reports = ("*_report.csv",)  # a row per query or partition: _all_, _q_query_<i>_, _qp_query_, _semafor_

    def inputs(self, options: Options) -> Inputs:
        return reference_inputs(options, mediscore_compat=options.scoring.mediscore_compat)

    def plan(self, options: Options) -> Plan:
        querying = options.scoring.query_mode is not None
        table = load_scored_table(Path(options.ref_dir) / options.reference, Path(options.ref_dir) / options.index,
                                  Path(options.system),
                                  all_columns=querying or options.out_meta or options.out_sub_meta)
        said = [f"mfscore: joined {table.total_num} trials"]
        if options.scoring.opt_out:
            table = apply_opt_out(table, Path(options.system))
            said.append(f"mfscore: {len(table.rows)} opted-in trials")
        journal = (read_journal(options.ref_dir, options.reference, mediscore_compat=options.scoring.mediscore_compat)
                   if querying or options.out_meta else None)
        stderr = (said if options.verbose else []) + [f"mfscore: warning: {warning}" for warning in table.warnings]
        prepared = Prepared(table, journal)
        try:
            subsets = build_subsets(table, journal, options.scoring)
            threshold = competition_threshold(table, options.scoring)
        except MfscoreError as error:
            prepared.error = error
            return Plan(options, [], prepared, stderr=stderr)
        jobs, generated = [], {}
        draws = semafor_draws(options.scoring, threshold)
        band = options.scoring.ci and options.plot.enabled
        values = (4 + (len(semafor_names(draws)) if draws is not None else 0)  # a replicate's, in its record
                  + (FAR_GRID.size if band else 0))
        for i, subset in enumerate(subsets):
            trials = SortedTrials.from_arrays(*scores_and_labels(subset.rows))
            prepared.subsets.append(subset)
            prepared.trials.append(trials)
            key = f"{PLANNED}/detection/subset-{i}.npy"
            generated[key] = trials.to_npy()
            n = trials.labels.size
            jobs += [Job(JobKey(i, "subset", first),
                         SubsetJob(key, n, first == 0, first, count, options.scoring, threshold, band))
                     for first, count in slices(n, options.scoring.ci, values)]
        return Plan(options, jobs, prepared, stderr=stderr, generated=generated)

    def blobs(self, work: SubsetJob) -> dict[str, str]:
        return {"trials": work.trials}

    def with_blobs(self, work: SubsetJob, paths: dict[str, str]) -> SubsetJob:
        return replace(work, trials=paths["trials"])

    def trials(self, work: SubsetJob) -> int:
        """The job's share of its subset's trials, by the replicates it draws (all of them without ``--ci``)."""
        if not work.count:
            return max(1, work.n)
        share = (work.n * (work.first + work.count)) // N_RESAMPLES - (work.n * work.first) // N_RESAMPLES
        return max(1, share)

    def validation(self, options: Options) -> Submission:
        from mfscore.validation.options import ValidatorOptions

        kind = {"manipulation": "SSD", "splice": "DSD", "eventverification": "SSD-event", "camera": "SSD-camera"}
        return Submission(options.system, os.path.join(options.ref_dir, options.index),
                          ValidatorOptions(kind=kind[options.kind], neglect_mask=True, neglect_pixel=True,
                                           mediscore_compat=options.scoring.mediscore_compat))

    def score(self, work: SubsetJob) -> SubsetRecord | Problem:
        try:
            trials = SortedTrials.read_npy(work.trials, work.n)
        except (OSError, ValueError) as error:
            return Problem(f"the planned trial table {work.trials} cannot be read ({error})", fatal=True)
        point = point_metrics(trials, work.scoring, work.threshold) if work.metrics else None
        replicates = (replicate_slice(trials, work.scoring.far_stop, semafor_draws(work.scoring, work.threshold),
                                      work.first, work.count, band=work.band) if work.count else None)
        return SubsetRecord(point, replicates)

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        options: Options = plan.options
        prepared: Prepared = plan.prepared
        if prepared.error is not None:
            raise prepared.error
        results = [subset_result(subset, prepared.table.total_num, trials, point, replicates, options.scoring)
                   for subset, trials, (point, replicates) in zip(prepared.subsets, prepared.trials,
                                                                   assembled(plan, outcomes))]
        table = prepared.table
        if options.plot.enabled:  # first, so that a figure worker draws while the tables are written
            from mfscore.reports.detection_plots import write_plots, write_semafor_plot

            write_plots(results, stage, options.scoring, options.plot)
            if options.scoring.semafor:
                write_semafor_plot(results, stage, options.scoring, options.plot)
        outputs.write_reports(results, stage, options.scoring)
        if options.scoring.semafor:
            outputs.write_semafor_report(results, stage, options.scoring)
        outputs.write_metadata(table, prepared.journal, results, stage, options.scoring, out_meta=options.out_meta,
                               out_sub_meta=options.out_sub_meta)
        if options.dump:
            outputs.write_roc_dumps(results, stage)
        stderr = [f"mfscore: warning: query {r.subset.label!r} selects no trial; its metrics are empty"
                  for r in results if r.metrics.n_trials == 0]
        system = key_of(options.system, self.inputs(options).roots, what=f"the system output {options.system}")
        return Lines([f"reports in {OUTPUT_DIRECTORY}/ (prefix {stage.prefix!r})"], stderr,
                     results=detection_results(results, options.scoring, Records(system, tuple(table.sys_ref_keys),
                                                                                 where="inputs")))


def assembled(plan: Plan, outcomes: dict) -> list[tuple[PointMetrics, Replicates | None]]:
    """Each subset's point metrics and its replicates joined, from its jobs' records; a record that is not what its
    job computes raises ``RecordConflictError``, a job's fatal problem stops the run with its sentence."""
    parts: dict[int, tuple[list, list]] = {}
    for job in plan.jobs:
        record, work = outcomes[job.key], job.work
        if isinstance(record, Problem):
            raise MfscoreError(record.message)
        slice_ = record.replicates
        if ((record.metrics is not None) != work.metrics or (slice_ is None) != (work.count == 0)
                or (slice_ is not None and (slice_.first, slice_.count) != (work.first, work.count))):
            raise RecordConflictError(f"the record of the job {job.key} is not what the job computes")
        points, replicates = parts.setdefault(job.key.query, ([], []))
        points += [record.metrics] if record.metrics is not None else []
        replicates += [slice_] if slice_ is not None else []
    return [(points[0], joined(replicates) if replicates else None) for points, replicates in parts.values()]


def metric_specs(options: DetectionOptions) -> tuple[MetricSpec, ...]:
    """The headline metrics of a detection run (docs/detection.md §6; the SemaFor plan's with ``--semafor``)."""
    far = format(options.far_stop, "g")
    specs = [MetricSpec("AUC", HIGHER, "area under the ROC curve (MFC2019 plan §2.1): 1 separates every target "
                                       "from every non-target, 0.5 is chance"),
             MetricSpec("EER", LOWER, "equal error rate: where the false-alarm and miss rates of the ROC meet"),
             MetricSpec("AUC@FAR", HIGHER, f"area under the ROC curve up to a false-alarm rate of {far}"),
             MetricSpec("CDR@FAR", HIGHER, f"correct detection rate at a false-alarm rate of {far}"),
             MetricSpec("TRR", NEITHER, "trial response rate: the share of the trials the system scored")]
    if options.semafor:
        specs += [MetricSpec(f"pD@FAR{format(f, 'g')}", HIGHER, f"probability of detection at a false-alarm rate "
                                                                 f"of {format(f, 'g')} (SemaFor plan)")
                  for f in options.semafor_fars]
        specs += [MetricSpec("bACC@EER", HIGHER, "balanced accuracy at the EER threshold (SemaFor plan)"),
                  MetricSpec("Cllr", LOWER, "log-likelihood-ratio cost of the scores read as LLRs: 0 is perfect, "
                                            "1 is an uninformative system"),
                  MetricSpec("minCllr", LOWER, "Cllr after the best monotone recalibration: the discrimination "
                                               "part of Cllr")]
    return tuple(specs)


def primary_metric(options: DetectionOptions) -> str:
    """AUC (MFC2019 plan §2.1); with ``--semafor``, pD at a false-alarm rate of 0.08, or the first ``--far``."""
    if not options.semafor:
        return "AUC"
    far = 0.08 if 0.08 in options.semafor_fars else options.semafor_fars[0]
    return f"pD@FAR{format(far, 'g')}"


def detection_results(results: list[SubsetResult], options: DetectionOptions, records: Records) -> Results:
    """The results model of a detection run: a row and an ROC curve per subset."""
    specs = metric_specs(options)
    names = {spec.name for spec in specs}
    rows, curves = [], []
    for r in results:
        m = r.metrics
        query = r.subset.label or ALL
        values = {"AUC": m.auc, "EER": m.eer, "AUC@FAR": m.partial_auc, "CDR@FAR": m.cdr, "TRR": r.trr}
        values |= {name: value for name, value in r.semafor.items() if name in names}
        intervals = {}
        if m.intervals is not None:
            intervals = {"AUC": m.intervals.auc, "AUC@FAR": m.intervals.partial_auc, "CDR@FAR": m.intervals.cdr}
        intervals |= {name: interval for name, interval in r.semafor_ci.items() if name in names}
        rows.append(Row(query, {name: number(v) for name, v in values.items()},
                        {"targets": m.n_target, "nontargets": m.n_nontarget},
                        {name: (number(i.lower), number(i.upper)) for name, i in intervals.items()}))
        if m.roc is not None:
            keep = thinned(len(m.roc.fpr))
            curves.append(Curve(query, tuple(m.roc.fpr[keep].tolist()), tuple(m.roc.tpr[keep].tolist())))
    return Results("detection", primary_metric(options), specs, tuple(rows), tuple(curves), records)


def thinned(n: int, most: int = MAX_CURVE_POINTS) -> np.ndarray:
    """Indexes of at most ``most`` of ``n`` curve points, evenly spaced, the first and last kept."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(np.int64))


TASK = Detection()
