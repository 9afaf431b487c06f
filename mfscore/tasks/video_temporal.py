"""Video temporal localization as a task (docs/video.md §A): one job per (query, scored probe).

Planning reads and checks every table and leaves each job the probe's interval sets; scoring one is
interval algebra, microseconds of work, so the jobs are scored where they are planned (``PLANNER``).
The report writes MediScore's three tables and the ``-d``/``-l``/``-R``/``-T`` extras.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from mfscore.reports.video_temporal_report import (
    MCC_FIGURE,
    empty_queries,
    mcc_figure,
    probe_scores,
    query_means,
    timeline_name,
    write_html,
    write_records,
    write_scores,
    write_timeline,
)
from mfscore.results import ALL, HIGHER, MetricSpec, Records, Results, Row, number
from mfscore.tasks.base import (
    OUTPUT_DIRECTORY,
    PLANNER,
    Inputs,
    Job,
    JobKey,
    Lines,
    Plan,
    Task,
)
from mfscore.tasks.video_temporal_options import Options
from mfscore.video.temporal_scorer import (
    ALL as EVERY_ROW,
    ProbeIntervals,
    ProbeRecord,
    TemporalInputs,
    TemporalOptions,
    score_probe,
    select_video_temporal,
)

PICKLE_SUFFIXES = (".pkl", ".pickle")
PLOTS = "plots"


def _temporal_inputs(options: Options) -> TemporalInputs:
    """The run's tables as the scorer reads them."""
    return TemporalInputs(index=Path(options.index), journal_mask=Path(options.journal_mask),
                          probe_journal_join=Path(options.probe_journal_join), system=Path(options.system),
                          reference=None if options.reference is None else Path(options.reference))


def dump_name(name: str) -> tuple[str, str | None]:
    """The records file name (a bare file name: ``Options`` checks it), and a note when a pickle name was asked for."""
    stem, suffix = os.path.splitext(name)
    if suffix.lower() in PICKLE_SUFFIXES:
        return stem + ".csv", f"-d writes {stem}.csv (pipe-separated records) instead of the pickle {name}"
    return name, None


def _directory(path: str | None) -> str:
    return (os.path.dirname(path) if path else "") or "."


class VideoTemporal(Task):
    name = "video-temporal"
    options_type = Options
    work_type = ProbeIntervals
    record_type = ProbeRecord
    resource = PLANNER
    primary_metric = "MCC"
    metric_names = "MCC"
    aggregate_reports = ("scores.csv", "query_table_join.csv")  # the MCC per query, and each query's text

    def inputs(self, options: Options) -> Inputs:
        files = {"index-table": options.index, "journalmask-table": options.journal_mask,
                 "probejournaljoin-table": options.probe_journal_join, "system-table": options.system,
                 "reference-table": options.reference}
        return Inputs(roots={name: _directory(path) for name, path in files.items()},
                      tables=tuple(path for path in files.values() if path is not None))

    def plan(self, options: Options) -> Plan:
        selected = select_video_temporal(_temporal_inputs(options), options.scoring)
        jobs = [Job(JobKey(probe.query, "probe", probe.ordinal), probe) for probe in selected.probes]
        return Plan(options, jobs, selected.not_scored)

    def score(self, work: ProbeIntervals) -> ProbeRecord:
        return score_probe(work)

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        options: Options = plan.options
        queries = options.scoring.queries
        probes = [job.work for job in plan.jobs]
        records = [outcomes[job.key] for job in plan.jobs]
        stderr = [f"mfscore: warning: query {q} ({queries[q]}) scores no probe; its MCC in scores.csv is empty"
                  for q in empty_queries(records, queries)]
        timelines = None
        if options.timeline:
            timelines = {}
            for probe, record in zip(probes, records):
                name = timeline_name(record.probe_id, record.query)
                write_timeline(probe, record, stage.path(name, subdir=PLOTS))
                timelines[record.query, record.probe_id] = f"{PLOTS}/{name}"
        write_scores(records, queries, stage.path, timelines)
        if options.plots:
            stage.draw("mfscore.reports.summary_plots:plot_distribution", mcc_figure(records, queries),
                       stage.path(MCC_FIGURE))
        if options.dump is not None:
            name, note = dump_name(options.dump)
            write_records(records, stage.path(name))
            if note:
                stderr.append(f"mfscore: note: {note}")
        if options.html:
            write_html(probe_scores(records, timelines), stage.path("scores_probes.html"))
        if options.log:
            lines = _log_lines(options.scoring, plan.prepared, probes, records)
            stage.path("log.txt").write_text("\n".join(lines) + "\n")
        stdout = [f"scored {len(records)} probe(s) over {len(queries)} query(ies); reports in {OUTPUT_DIRECTORY}/",
                  "Done."]
        return Lines(stdout, stderr, results=video_temporal_results(records, queries, stage.prefix))


def video_temporal_results(records: list[ProbeRecord], queries: tuple[str, ...], prefix: str = "") -> Results:
    """A row per query of ``scores.csv`` (``*`` is the whole run's); primary its MCC, the mean temporal MCC,
    the MFC2019 plan's temporal localization metric (docs/video.md §A.5)."""
    spec = MetricSpec("MCC", HIGHER, "Matthews correlation coefficient of the frames each probe's intervals mark "
                                     "against its manipulated frames (collars and opt-out frames left out), "
                                     "averaged over the query's probes: 1 is perfect, 0 chance or no reference")
    probes = Counter(record.query for record in records)
    rows = tuple(Row(ALL if text.strip() == EVERY_ROW else text, {"MCC": number(mean)}, {"probes": probes[q]})
                 for q, (text, mean) in enumerate(zip(queries, query_means(records, queries))))  # before round(x, 12)
    return Results("video-temporal", "MCC", (spec,), rows,
                   records=Records(f"{prefix}scores_probes.csv", ("query", "ProbeFileID")))


def _log_lines(scoring: TemporalOptions, not_scored: dict[str, str], probes: list[ProbeIntervals],
               records: list[ProbeRecord]) -> list[str]:
    """``log.txt``: the options, the queries, the opted-out probes, and each probe's intervals and counts."""
    header = (f"mfscore video-temporal: {len(scoring.queries)} query(ies), collar {scoring.collar}, "
              f"truncate {scoring.clips}, opt-out {scoring.opt_out}, video opt-out {scoring.video_opt_out}")
    lines = [header]
    lines += [f"query {q}: {text}" for q, text in enumerate(scoring.queries)]
    lines += [f"probe {probe} not scored: ProbeStatus {status!r}" for probe, status in not_scored.items()]
    for probe, record in zip(probes, records):
        c = record.counts
        lines.append(f"query {record.query} probe {record.probe_id}: FrameCount {probe.frame_count}, "
                     f"reference {list(probe.reference)}, system {list(probe.system)}, collars {list(probe.collars)}, "
                     f"opt-out {list(probe.no_score)}; TP {c.tp} TN {c.tn} FP {c.fp} FN {c.fn} MCC {record.mcc!r}")
    return lines


TASK = VideoTemporal()
