"""Provenance filtering as a task (docs/provenance.md §2): node recall at fixed ranks, one record per trial.

A trial whose system JSON cannot be scored (too large, not JSON, failing the filtering schema, a
link end outside ``nodes``) is a Problem: reported on stderr and left out of the tables, the run
goes on. A problem with the run as a whole (an unreadable journal, a requested node type absent
from a reference) stops it when its trial comes, with one sentence and nothing written.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass

from mfscore.errors import InputFileError, OptionError
from mfscore.formats.provenance_json import FILTERING
from mfscore.provenance.filtering import (
    ALL as ALL_TYPES,
    RANKS,
    FilteringRecord,
    node_types,
    reference_nodes,
    score_trial,
    world_nodes,
)
from mfscore.provenance.trials import (
    OUTPUT,
    PROBE,
    ProvenanceInputs,
    TrialInputError,
    check_trial_disparity,
    load_journal,
    records,
    trial_table,
)
from mfscore.reports.provenance_filtering_report import RECALL_FIGURE, recall_figure, write_filtering_report
from mfscore.results import ALL, HIGHER, MetricSpec, Records, Results, Row, number
from mfscore.tasks import provenance
from mfscore.tasks.base import OUTPUT_DIRECTORY, Lines, Plan, Problem
from mfscore.tasks.provenance_options import FilteringOptions as Options


@dataclass(frozen=True)
class FilteringJob:
    """One trial, planned: its reference rows and everything scoring its system JSON needs."""

    ordinal: int
    journal_name: str
    probe_id: str
    output_file: str
    system_path: str                    # the system JSON as the command names it (-S joined with output_file)
    reference: tuple[tuple[str, str], ...]
    types: tuple[str, ...]
    max_json_bytes: int
    read_from: str | None = None        # a fetched copy of system_path to read instead


def _journal_nodes(inputs: ProvenanceInputs, name: str) -> list[dict]:
    nodes = load_journal(inputs, name).get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(node, dict) for node in nodes):
        raise InputFileError("the journal has no list of node objects under 'nodes'",
                             path=os.path.join(inputs.reference_dir, name))
    return nodes


# recall@300, the MFC2019 plan's primary metric (docs/provenance.md §2.3), or the largest rank if 300 is not one
PRIMARY = "NodeRecallAt300" if 300 in RANKS else f"NodeRecallAt{max(RANKS)}"


class ProvenanceFiltering(provenance.ProvenanceTask):
    name = "provenance-filtering"
    options_type = Options
    work_type = FilteringJob
    record_type = FilteringRecord
    primary_metric = PRIMARY
    metric_names = "|".join(f"NodeRecallAt{n}" for n in RANKS)
    aggregate_reports = ("scores.csv",)  # the mean recalls, a row per node type

    def plan(self, options: Options) -> Plan:
        """Read the tables and journals and plan a job per trial; no system JSON is read. With ``-v`` the
        table warnings go to stderr; filtering says nothing on stdout."""
        started = time.time()
        inputs = provenance.read_tables(options)
        check_trial_disparity(inputs, skip=options.skip_trial_disparity_check, one_to_one=False)
        stderr = [f"mfscore: warning: {warning}" for warning in inputs.warnings] if options.verbose else []
        trials = trial_table(inputs)
        types = node_types(list(options.nodetype))
        by_probe = world_nodes(records(inputs.nodes), list(zip(inputs.world["WorldFileID"], inputs.world["WorldFileName"])))

        def work_of(ordinal: int, trial: dict, journal: list[dict] | None) -> FilteringJob:
            probe, output = trial[PROBE], trial[OUTPUT]
            reference = () if journal is None else tuple(
                reference_nodes(by_probe.get(probe, []), journal, trial["ProvenanceProbeFileName"]))
            return FilteringJob(ordinal, trial["JournalName"], probe, output, os.path.join(inputs.system_dir, output),
                                reference, types, options.max_json_bytes)

        jobs, prepared = provenance.planned_trials(trials, lambda name: _journal_nodes(inputs, name), work_of, started)
        return Plan(options, jobs, prepared, stderr=stderr, tables=provenance.journal_tables(options, prepared))

    def score(self, work: FilteringJob):
        """The trial's record; an unusable JSON leaves the trial out, a requested node type absent from
        the reference stops the run."""
        try:
            system = provenance.load_system_json(work.read_from or work.system_path, work.system_path, FILTERING,
                                                 work.max_json_bytes)
        except TrialInputError as exc:
            return Problem(f"probe {work.probe_id}: {exc.sentence()}")
        try:
            return score_trial(ordinal=work.ordinal, journal_name=work.journal_name, probe_id=work.probe_id,
                               output_file=work.output_file, reference=list(work.reference),
                               system_nodes=system["nodes"], types=work.types)
        except OptionError as exc:
            return Problem(exc.sentence(), fatal=True)

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        """The three tables; stderr names each left-out trial. A problem with the run prints nothing
        before its error (the problems so far included)."""
        options: Options = plan.options
        walked = provenance.walk(plan, outcomes)
        if walked.error is not None:
            return Lines(error=walked.error)
        means = write_filtering_report(walked.records, stage.path)
        if options.plots:
            stage.draw("mfscore.reports.summary_plots:plot_bars", recall_figure(means), stage.path(RECALL_FIGURE))
        stderr = [f"mfscore: ERROR: {problem}; the trial is left out of the tables" for problem in walked.problems]
        if options.html_report:
            stderr.append("mfscore: note: -H accepted; no report.html is written (the CSV files hold the same tables)")
        if options.verbose:
            stderr.append(f"mfscore: scored {len(walked.records)} trial(s), left out {len(walked.problems)}, in "
                          f"{time.time() - plan.prepared.started:.2f} s")
        return Lines([f"reports in {OUTPUT_DIRECTORY}/"], stderr,
                     results=filtering_results(means, walked.records, len(walked.problems), stage.prefix))


def filtering_results(means: list[dict], records: list[FilteringRecord], left_out: int, prefix: str = "") -> Results:
    """A row per node type of ``scores.csv`` (``All``: the whole run's); primary recall@300, the MFC2019 plan's
    (docs/provenance.md §2.3), or the largest rank if 300 is not one."""
    specs = tuple(MetricSpec(f"NodeRecallAt{n}", HIGHER, f"share of each probe's reference nodes found among "
                                                         f"the system's {n} most confident nodes, averaged over "
                                                         f"the probes: 1 finds them all")
                  for n in RANKS)
    probes = Counter(counts.node_type for record in records for counts in record.counts)
    rows = tuple(Row(ALL if row["NodeType"] == ALL_TYPES else row["NodeType"],
                     {spec.name: number(row[spec.name]) for spec in specs},  # the means as scores.csv writes them
                     {"probes": probes[row["NodeType"]], "left_out": left_out})
                 for row in means)
    return Results("provenance-filtering", PRIMARY, specs, rows,
                   records=Records(f"{prefix}trial_scores.csv", ("ProvenanceProbeFileID", "NodeType")))


TASK = ProvenanceFiltering()
