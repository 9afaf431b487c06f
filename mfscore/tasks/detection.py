"""Detection scoring as a task (docs/detection.md): the scored table's trials are its records.

Scoring a detection trial is reading one number, microseconds of work, so the jobs (batches of
the scored table's rows) are scored where they are planned (``PLANNER``): shipping a batch to a
worker and back would cost more than the work. What a cluster distributes for detection is whole
runs; the metrics (ROC, EER, bootstrap CIs) are the report's work, on the folded records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.detection import KINDS
from mfscore.detection.scorer import DetectionOptions, SubsetResult, score_detection
from mfscore.detection.trials import (
    SCORE,
    ScoredTable,
    apply_opt_out,
    load_scored_table,
    opt_out_column,
)
from mfscore.errors import OptionError
from mfscore.formats.journal import read_journal
from mfscore.options import one_of, option, validate
from mfscore.records import RecordConflictError
from mfscore.reports import detection_outputs as outputs
from mfscore.results import ALL, HIGHER, LOWER, NEITHER, Curve, MetricSpec, Records, Results, Row, number
from mfscore.tasks.base import (
    OUTPUT_DIRECTORY,
    PLANNER,
    Inputs,
    Job,
    JobKey,
    Lines,
    Plan,
    Submission,
    Task,
    key_of,
)
from mfscore.tasks.reference_layout import ReferenceLayout, reference_inputs

BATCH = 1000  # trials per job
MAX_CURVE_POINTS = 1001  # ROC points a curve of the results keeps (a 10^6-trial ROC has about as many)


@dataclass(frozen=True)
class Options(ReferenceLayout):
    """A detection run: where its tables are, how to score them, and which files to write."""

    kind: str = field(metadata=option("-t/--task", one_of(KINDS, what="the evaluation task")))
    scoring: DetectionOptions = DetectionOptions()
    plot: outputs.PlotOptions = outputs.PlotOptions()
    out_meta: bool = field(default=False, metadata=option("--outMeta"))
    out_sub_meta: bool = field(default=False, metadata=option("--outSubMeta"))
    dump: bool = field(default=False, metadata=option("--dump"))
    verbose: bool = field(default=False, metadata=option("-v/--verbose"))

    def __post_init__(self):
        validate(self)
        if self.plot.multi_figs and self.scoring.query_mode is None:
            raise OptionError("--multiFigs needs a query option (-q, -qp or -qm)", option="multi_figs",
                              flag="--multiFigs")


@dataclass(frozen=True)
class Trials:
    """Scored-table rows: a job's work and, unchanged, its record (docs/architecture.md "Mergeable per-trial records")."""

    ordinal: np.ndarray    # int64: the row in the scored table
    score: np.ndarray      # float64
    is_target: np.ndarray  # bool
    status: np.ndarray     # object: the opt-out status, "" without one


@dataclass
class State:
    table: ScoredTable
    journal: pd.DataFrame | None


class Detection(Task):
    name = "detection"
    options_type = Options
    work_type = Trials
    record_type = Trials
    resource = PLANNER
    primary_metric = r"AUC|pD@FAR[0-9.e+-]+"
    metric_names = r"AUC|EER|AUC@FAR|CDR@FAR|TRR|pD@FAR[0-9.e+-]+|bACC@EER|Cllr|minCllr"

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
            said.append(f"mfscore: {len(table.trials)} opted-in trials")
        journal = (read_journal(options.ref_dir, options.reference, mediscore_compat=options.scoring.mediscore_compat)
                   if querying or options.out_meta else None)
        trials = table.trials
        column = opt_out_column(trials)
        status = trials[column].fillna("").astype(str).to_numpy(dtype=object) if column else np.full(len(trials), "", object)
        score = trials[SCORE].to_numpy(dtype=np.float64)
        target = (trials["IsTarget"] == "Y").to_numpy()
        jobs = [Job(JobKey(0, "trials", start),
                    Trials(np.arange(start, min(start + BATCH, len(trials)), dtype=np.int64),
                           score[start:start + BATCH], target[start:start + BATCH], status[start:start + BATCH]))
                for start in range(0, len(trials), BATCH)]
        stderr = [f"mfscore: warning: {warning}" for warning in table.warnings]
        return Plan(options, jobs, State(table, journal), stderr=(said if options.verbose else []) + stderr)

    def validation(self, options: Options) -> Submission:
        from mfscore.validation.options import ValidatorOptions

        kind = {"manipulation": "SSD", "splice": "DSD", "eventverification": "SSD-event", "camera": "SSD-camera"}
        return Submission(options.system, os.path.join(options.ref_dir, options.index),
                          ValidatorOptions(kind=kind[options.kind], neglect_mask=True, neglect_pixel=True,
                                           mediscore_compat=options.scoring.mediscore_compat))

    def score(self, work: Trials) -> Trials:
        return work

    def trials(self, work: Trials) -> int:
        return len(work.ordinal)  # a job is a batch of up to BATCH rows

    def draws(self, options: Options) -> bool:
        return options.plot.enabled

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        options: Options = plan.options
        state: State = plan.state
        records = list(outcomes.values())
        scores = np.concatenate([r.score for r in records]) if records else np.zeros(0)
        targets = np.concatenate([r.is_target for r in records]) if records else np.zeros(0, bool)
        if not np.array_equal(targets, (state.table.trials["IsTarget"] == "Y").to_numpy()):
            raise RecordConflictError("the detection records do not match the planned trials")
        table = replace(state.table, trials=state.table.trials.assign(**{SCORE: scores}))
        results = score_detection(table, state.journal, options.scoring)
        if options.plot.enabled:  # first, so that a figure worker draws while the tables are written
            from mfscore.reports.detection_plots import write_plots, write_semafor_plot

            write_plots(results, stage, options.scoring, options.plot)
            if options.scoring.semafor:
                write_semafor_plot(results, stage, options.scoring, options.plot)
        outputs.write_reports(results, stage, options.scoring)
        if options.scoring.semafor:
            outputs.write_semafor_report(results, stage, options.scoring)
        outputs.write_metadata(table, state.journal, results, stage, options.scoring, out_meta=options.out_meta,
                               out_sub_meta=options.out_sub_meta)
        if options.dump:
            outputs.write_roc_dumps(results, stage)
        stderr = [f"mfscore: warning: query {r.subset.label!r} selects no trial; its metrics are empty"
                  for r in results if r.metrics.n_trials == 0]
        system = key_of(options.system, self.inputs(options).roots, what=f"the system output {options.system}")
        return Lines([f"reports in {OUTPUT_DIRECTORY}/ (prefix {stage.prefix!r})"], stderr,
                     results=detection_results(results, options.scoring, Records(system, tuple(table.sys_ref_keys),
                                                                                 where="inputs")))


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
