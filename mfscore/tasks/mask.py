"""Image mask scoring as a task (docs/masks.md): one job per kept trial, role and ``-qm`` query.

Planning reads the tables and selects each query's journal operations; a job is one mask
(a probe, or one side of a splice pair) whose record is a pair of 256-bin histograms, so the
jobs go to the ``mask`` workers. The report builds the per-image, averaged and journal tables
of every query from the folded records alone (docs/masks.md §6–§10).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from mfscore.formats.images import ImageSource
from mfscore.masks.journal_selection import read_mask_journal
from mfscore.masks.mask_record import UNREADABLE, MaskRecord
from mfscore.masks.mask_scoring import MaskJob, read_next, score_mask
from mfscore.masks.scorer import QueryPlan, assemble_plan, plan_query
from mfscore.masks.trials import (
    MANIPULATION,
    SPLICE,
    TrialTable,
    index_dimensions,
    load_trials,
)
from mfscore.reports.mask_outputs import Averaged, write_query_outputs
from mfscore.reports.mask_visuals import Chosen, choose, write_visuals
from mfscore.results import HIGHER, LOWER, MetricSpec, Records, Results, Row, number
from mfscore.tasks.base import (
    OUTPUT_DIRECTORY,
    Inputs,
    Job,
    JobKey,
    Lines,
    Plan,
    Problem,
    Submission,
    Task,
)
from mfscore.tasks.mask_options import Options
from mfscore.tasks.reference_layout import reference_inputs
from mfscore.tasks.unusable_masks import MASKSCORER, conclusion


@dataclass
class Prepared:
    """What the report needs besides the records: the trials and each query's plan."""

    table: TrialTable
    plans: list[QueryPlan]


# The averaged table's headline columns (docs/masks.md §6.2–§6.4, §8): mean over the scored masks of each.
# PixelAverageAUC and MaskAverageAUC are left out: the table copies the whole run's into every -q/-qp row.
MASK_METRICS = (
    ("OptimumMCC", HIGHER, "Matthews correlation coefficient of each mask at its best threshold, averaged over the "
                           "scored masks: 1 is a perfect mask, 0 no better than chance, -1 the inverse"),
    ("OptimumNMM", HIGHER, "nimble mask metric (TP - FN - FP)/(TP + FN) of each mask at its best-MCC threshold, "
                           "floored at -1 and averaged: 1 is a perfect mask"),
    ("OptimumBWL1", LOWER, "binary weighted L1 loss, the share of scored pixels misclassified at each mask's "
                           "best-MCC threshold, averaged: 0 is a perfect mask"),
    ("GWL1", LOWER, "grayscale weighted L1 loss, the mean |reference - system|/255 over each mask's scored pixels "
                    "(no threshold), averaged: 0 is a perfect mask"),
    ("AUC", HIGHER, "area under each mask's pixel ROC over its thresholds, averaged: 1 separates the manipulated "
                    "pixels perfectly, 0.5 is chance"),
    ("EER", LOWER, "equal error rate of each mask's pixel ROC, averaged: 0 is a perfect mask"),
)
SIDES = {"p": "probe", "d": "donor"}


class Mask(Task):
    name = "mask"
    options_type = Options
    work_type = MaskJob
    record_type = MaskRecord
    resource = "mask"
    threads = True
    primary_metric = "p?OptimumMCC"
    metric_names = f"[pd]?(?:{'|'.join(name for name, _, _ in MASK_METRICS)})"
    aggregate_reports = ("*_mask_score.csv", "*_mask_extra_summary.csv", "*_mask_extra_semafor*.csv")

    def inputs(self, options: Options) -> Inputs:
        return reference_inputs(options, mediscore_compat=options.scoring.mediscore_compat)

    def plan(self, options: Options) -> Plan:
        scoring, ref_dir, sys_csv = options.scoring, options.ref_dir, Path(options.system)
        index = Path(ref_dir) / options.index
        table = load_trials(scoring.task, Path(ref_dir) / options.reference, sys_csv, index,
                            index_filter=options.index_filter, opt_out=options.report.opt_out,
                            pixel_value_columns=scoring.per_probe_pixel_value)
        journal = read_mask_journal(ref_dir, options.reference, mediscore_compat=scoring.mediscore_compat)
        index_sizes = index_dimensions(index, scoring.task) if scoring.mediscore_compat else None
        plans = [plan_query(table, journal, scoring, ref_dir, sys_csv, text, index_sizes)
                 for text in (options.manipulation_queries or (None,))]
        jobs = [Job(JobKey(q, role, position), work)
                for q, plan in enumerate(plans)
                for position, (role, work) in enumerate(zip(plan.roles, plan.jobs))]
        return Plan(options, _masks_read_once(jobs), Prepared(table, plans))

    def validation(self, options: Options) -> Submission:
        """The system table against the index; masks are checked when scored, pixel values only with -pppns."""
        from mfscore.validation.options import ValidatorOptions

        scoring = options.scoring
        return Submission(options.system, os.path.join(options.ref_dir, options.index),
                          ValidatorOptions(kind={MANIPULATION: "SSD", SPLICE: "DSD"}[scoring.task], neglect_mask=True,
                                           neglect_pixel=not scoring.per_probe_pixel_value,
                                           index_filter=options.index_filter,
                                           mediscore_compat=scoring.mediscore_compat))

    def blobs(self, work: MaskJob) -> dict[str, str]:
        return {"reference": work.reference_path or "", "system": work.system_path or ""}

    def with_blobs(self, work: MaskJob, paths: dict[str, ImageSource]) -> MaskJob:
        return replace(work, reference_path=paths["reference"] or None, system_path=paths["system"] or None)

    def blobs_in_memory(self, work: MaskJob) -> int:
        """A worker decodes the masks from memory; a file over the job's own limit could not be scored anyway
        (``score_mask`` counts the files in a job's memory)."""
        return work.max_job_bytes

    def report_blobs(self, plan: Plan, outcomes: dict) -> list[JobKey]:
        """The probe masks drawn by ``--visuals``: each query's best and worst (``chosen_masks``)."""
        return [JobKey(q, "probe", item.position) for q, chosen in chosen_masks(plan, outcomes).items()
                for item in chosen]

    def score(self, work: MaskJob) -> MaskRecord | Problem:
        """The mask's record; an unreadable mask is a Problem that still counts as its (unscored) record."""
        record = score_mask(work)
        if record.status == UNREADABLE:
            return Problem(record.message, counts_as=record)
        return record

    def read_ahead(self, work: MaskJob | None) -> None:
        read_next(work)

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        options: Options = plan.options
        prepared: Prepared = plan.prepared
        lines = []
        unusable: dict[str, None] = {}  # each unusable mask's message, once whatever the queries
        failed_trials = set()
        averaged: list[tuple[Averaged, dict]] = []  # every averaged row written, in the order written
        perimage = []                                # the per-image files written
        visuals = chosen_masks(plan, outcomes)
        for q, query_plan in enumerate(prepared.plans):
            records = [_record(outcomes[JobKey(q, role, position)]) for position, role in enumerate(query_plan.roles)]
            result = assemble_plan(query_plan, records, options.scoring)
            for position, record in enumerate(records):
                if record.status == UNREADABLE:
                    failed_trials.add(_trial(query_plan, position))
                    if record.message not in unusable:
                        unusable[record.message] = None
                        lines.append(f"mfscore: ERROR: {record.message}; the trial is left unscored")
            if not result.matched:
                lines.append(f"mfscore: the query {query_plan.query!r} yielded no journal data "
                             f"over which computation may take place")
                continue
            subdir = f"index_{q}" if len(prepared.plans) > 1 else ""
            written = write_query_outputs(result, prepared.table, stage, options.report, subdir)
            for note in written.notes:
                lines.append(f"mfscore: {note}" + (f" (query {query_plan.query!r})" if query_plan.query else ""))
            averaged += written.averaged
            perimage.append(written.perimage)
            if q in visuals:
                columns = ("ProbeFileID", "DonorFileID") if options.scoring.task == SPLICE else ("ProbeFileID",)
                lines += [f"mfscore: {note}" for note in write_visuals(
                    stage, subdir, visuals[q], query_plan.jobs, trial_columns=columns, query=query_plan.query)]
        closing, status = conclusion(len(unusable), len(failed_trials), "their trials are left unscored",
                                     strict=options.strict, mediscore_compat=options.scoring.mediscore_compat,
                                     rule=MASKSCORER)
        return Lines(stdout=[f"reports in {OUTPUT_DIRECTORY}/ (prefix {stage.prefix!r})"], stderr=lines + closing,
                     status=status, results=mask_results(options.scoring.task, averaged, perimage))


def mask_metrics(task: str) -> tuple[MetricSpec, ...]:
    """The headline metrics; splice has each twice, for the probe mask (p) and the donor mask (d)."""
    if task != SPLICE:
        return tuple(MetricSpec(name, better, text) for name, better, text in MASK_METRICS)
    return tuple(MetricSpec(f"{prefix}{name}", better, f"{side} mask: {text}"
                            + ("; a splice run is ranked by the probe mask's" if prefix + name == "pOptimumMCC" else ""))
                 for name, better, text in MASK_METRICS for prefix, side in SIDES.items())


def mask_results(task: str, averaged: list[tuple[Averaged, dict]], perimage: list[str]) -> Results:
    """A row per averaged row written; primary Optimum MCC, the MFC2019 plan's localization metric
    (docs/masks.md §6.3), of the probe mask for splice (pOptimumMCC)."""
    specs = mask_metrics(task)
    rows = []
    for subset, row in averaged:  # the row as numbers: means of the 16-digit per-image values, before --precision
        values = {spec.name: number(row[spec.name]) for spec in specs}
        if task == SPLICE:
            counts = {"trials": row["totalTrials"], "opted_out": row["totalOptOut"],
                      "scoreable_probes": row["ScoreableProbeTrials"], "scoreable_donors": row["ScoreableDonorTrials"],
                      "scored_probes": int((subset.rows["ProbeScored"] == "Y").sum()),
                      "scored_donors": int((subset.rows["DonorScored"] == "Y").sum())}
        else:
            counts = {"trials": row["totalTrials"], "opted_out": row["totalOptOut"],
                      "scoreable": row["ScoreableTrials"], "scored": int((subset.rows["Scored"] == "Y").sum())}
        rows.append(Row(subset.text, values, {k: int(v) for k, v in counts.items()}))
    # each -qm query has its own per-image table (index_<i>/); the records are the first query's
    records = Records(perimage[0], ("ProbeFileID", "DonorFileID") if task == SPLICE else ("ProbeFileID",)) \
        if perimage else None
    return Results("mask", "pOptimumMCC" if task == SPLICE else "OptimumMCC", specs, tuple(rows), records=records)


def chosen_masks(plan: Plan, outcomes: dict) -> dict[int, list[Chosen]]:
    """With ``--visuals N``, each matched query's N best and N worst probe masks by OptimumMCC (the primary metric;
    splice: the probe side's, pOptimumMCC), ties to the smaller trial ids (docs/masks.md "Per-probe visuals")."""
    options: Options = plan.options
    if not options.visuals:
        return {}
    chosen = {}
    for q, query_plan in enumerate(plan.prepared.plans):
        if not query_plan.matched:
            continue
        records = [(position, _trial(query_plan, position), _record(outcomes[JobKey(q, role, position)]))
                   for position, role in enumerate(query_plan.roles) if role == "probe"]
        chosen[q] = choose(records, options.visuals)
    return chosen


def _trial(query_plan, position: int) -> tuple:
    """The trial (its probe, and donor for splice) of the query's job at ``position`` (jobs are in trial order,
    one per role)."""
    row = query_plan.trials.iloc[position // len(set(query_plan.roles))]
    return tuple(str(row[column]) for column in ("ProbeFileID", "DonorFileID") if column in row.index)


def _record(outcome) -> MaskRecord:
    """A scored trial's record, or the record a Problem counts as (an unscored one naming the problem)."""
    if not isinstance(outcome, Problem):
        return outcome
    return outcome.counts_as if outcome.counts_as is not None else MaskRecord(status=UNREADABLE, message=outcome.message)


def _masks_read_once(jobs: list[Job]) -> list[Job]:
    """The jobs reading the same two masks (a probe under several ``-qm`` queries) next to each other, each
    knowing how many read them (``MaskJob.readers``), so the masks are decoded once (masks/decoded_masks.py)."""
    by_masks: dict[tuple, list[Job]] = {}
    for job in jobs:
        by_masks.setdefault((job.work.reference_path, job.work.system_path), []).append(job)
    return [Job(job.key, replace(job.work, readers=len(group))) if len(group) > 1 else job
            for group in by_masks.values() for job in group]


TASK = Mask()
