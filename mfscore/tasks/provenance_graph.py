"""Provenance graph building as a task (docs/provenance.md §3): each trial's system graph against its
journal's reference graph, one ``GraphRecord`` per trial.

A journal with a cycle, or a system graph with a cycle without ``-c``, stops the run (exit 1) when
its trial comes, as in MediScore; a system JSON that cannot be scored is reported on one ``ERROR``
line and its trial is left out. With ``-v`` the run says on stdout what MediScore's does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from mfscore.errors import InputFileError
from mfscore.formats.provenance_json import GRAPH_BUILDING
from mfscore.provenance.graph_reference import (
    JournalError,
    ReferenceGraph,
    check_acyclic,
    grouped_merge_order,
    journal_links,
    node_keys,
    reference_graph,
    remove_anti_forensic_donors,
)
from mfscore.provenance.graph_similarity import GraphRecord, graph_record
from mfscore.provenance.graph_system import has_cycle, system_graph
from mfscore.provenance.trials import (
    OUTPUT,
    PROBE,
    ProvenanceInputs,
    TrialInputError,
    Columns,
    check_trial_disparity,
    load_journal,
    records,
    trial_table,
)
from mfscore.reports.provenance_graph_report import (
    TABLES,
    figure_name,
    html_report,
    mean_scores,
    write_report_tables,
)
from mfscore.results import ALL, HIGHER, MetricSpec, Records, Results, Row, number
from mfscore.tasks import provenance
from mfscore.tasks.base import OUTPUT_DIRECTORY, Lines, Plan, Problem
from mfscore.tasks.provenance_options import GraphOptions as Options


@dataclass(frozen=True)
class GraphJob:
    """One trial, planned: its reference graph and everything scoring its system JSON needs."""

    ordinal: int
    journal_name: str
    probe: str
    output_file: str
    system_path: str                    # the system JSON as the command names it (-S joined with output_file)
    reference: ReferenceGraph
    direct: bool
    undirected: bool
    warn_on_system_cycle: bool
    max_json_bytes: int
    read_from: str | None = None        # a fetched copy of system_path to read instead

    def to_dict(self) -> dict:
        return {"ordinal": self.ordinal, "journal_name": self.journal_name, "probe": self.probe,
                "output_file": self.output_file, "system_path": self.system_path,
                "reference_nodes": sorted(self.reference.nodes),
                "reference_links": [list(link) for link in sorted(self.reference.links)],
                "direct": self.direct, "undirected": self.undirected,
                "warn_on_system_cycle": self.warn_on_system_cycle, "max_json_bytes": self.max_json_bytes,
                "read_from": self.read_from}

    @classmethod
    def from_dict(cls, data: dict) -> GraphJob:
        reference = ReferenceGraph(nodes=frozenset(data["reference_nodes"]),
                                   links=frozenset((a, b) for a, b in data["reference_links"]))
        return cls(ordinal=data["ordinal"], journal_name=data["journal_name"], probe=data["probe"],
                   output_file=data["output_file"], system_path=data["system_path"], reference=reference,
                   direct=data["direct"], undirected=data["undirected"],
                   warn_on_system_cycle=data["warn_on_system_cycle"], max_json_bytes=data["max_json_bytes"],
                   read_from=data.get("read_from"))


@dataclass(frozen=True)
class GraphTrial:
    """A scored trial: its record and what it says on stdout with ``-v`` (a system cycle warned of with ``-c``)."""

    record: GraphRecord
    said: tuple[str, ...] = ()


def world_nodes(nodes: list[dict], world: Columns) -> list[dict]:
    """docs/provenance.md §3.2 step 4: node file ⋈ world on WorldFileID only, in node-file order (the node rows
    whose WorldFileID the world index has)."""
    in_world = set(world["WorldFileID"])
    return [row for row in nodes if row["WorldFileID"] in in_world]


def _probe_node_ids(nodes: list[dict], world: list[dict]) -> tuple[dict[str, set], dict[str, set]]:
    """Per probe: the JournalNodeIDs of its world nodes (``world``, docs/provenance.md §3.2 step 4) and of its own node
    (the node-file row whose WorldFileID is the probe's; ``nodes``: the node file)."""
    world_ids: dict[str, set] = {}
    for row in world:
        world_ids.setdefault(row[PROBE], set()).add(row["JournalNodeID"])
    own: dict[str, set] = {}
    for row in nodes:
        if row["WorldFileID"] == row[PROBE]:
            own.setdefault(row[PROBE], set()).add(row["JournalNodeID"])
    return world_ids, own


def node_keys_by_probe(world: list[dict], *, mediscore_compat: bool) -> Callable[[str], dict[str, str]]:
    """Per probe, JournalNodeID → WorldFileName for naming its reference nodes (docs/provenance.md §3.2 step 6).

    By default a probe's nodes are named by its own world rows, the last in node-file order: journals
    reuse node ids, and one table for all probes names a probe's node after another journal's image.
    ``mediscore_compat`` restores MediScore's one table: every probe's ``world`` rows in the order
    pandas before 2.2 returned that merge (grouped by WorldFileID), the last row winning.
    """
    if mediscore_compat:
        grouped = (world[position] for position in grouped_merge_order([row["WorldFileID"] for row in world]))
        shared = node_keys((row["JournalNodeID"], row["WorldFileName"]) for row in grouped)
        return lambda probe: shared
    rows_of: dict[str, list[dict]] = {}
    for row in world:
        rows_of.setdefault(row[PROBE], []).append(row)
    per_probe = {probe: node_keys((row["JournalNodeID"], row["WorldFileName"]) for row in rows)
                 for probe, rows in rows_of.items()}
    return lambda probe: per_probe.get(probe, {})


def _journal(inputs: ProvenanceInputs, name: str) -> tuple[list[str], set]:
    """A journal's node ids and links, cleared of anti-forensic donor links and checked for cycles."""
    try:
        ids, links = journal_links(load_journal(inputs, name))
        edges = {(a, b) for a, b, _ in remove_anti_forensic_donors(links)}
        check_acyclic(edges)
    except JournalError as exc:
        raise InputFileError(str(exc), path=os.path.join(inputs.reference_dir, name)) from None
    return ids, edges


def _announce(work: GraphJob) -> str:
    return f"Working on ProvenanceProbeFileID: '{work.probe}' in JournalName: '{work.journal_name}'"


GRAPH_METRICS = (  # docs/provenance.md "What is scored": N, L the reference's nodes and links, N', L' the system's
    ("MeanSimNLO", "node and link overlap 2(|N∩N'| + |L∩L'|)/(|N| + |N'| + |L| + |L'|) of each probe's graph with "
                   "its reference, averaged over the probes: 1 is the reference graph"),
    ("MeanSimNO", "node overlap 2|N∩N'|/(|N| + |N'|) of each probe's graph with its reference, averaged: 1 has "
                  "exactly the reference's nodes"),
    ("MeanSimLO", "link overlap 2|L∩L'|/(|L| + |L'|) of each probe's graph with its reference, averaged: 1 has "
                  "exactly the reference's links"),
    ("MeanNodeRecall", "share |N∩N'|/|N| of each probe's reference nodes in its graph, averaged: 1 finds them all"),
)


class ProvenanceGraph(provenance.ProvenanceTask):
    name = "provenance-graph"
    options_type = Options
    work_type = GraphJob
    record_type = GraphTrial
    primary_metric = "MeanSimNLO"
    metric_names = "|".join(name for name, _ in GRAPH_METRICS)
    aggregate_reports = ("scores.csv",)  # the mean similarities and recall

    def plan(self, options: Options) -> Plan:
        """Read the tables and journals and plan a job per trial with its reference graph; no system JSON
        is read. With ``-v`` the table warnings and the trial count go to stdout."""
        started = time.time()
        stderr = (["mfscore: note: -T is accepted and ignored; figures are drawn without thumbnails"]
                  if options.thumbnail_note else [])
        inputs = provenance.read_tables(options)
        check_trial_disparity(inputs, skip=options.skip_trial_disparity_check, one_to_one=True)
        trials = trial_table(inputs)
        stdout = [f"Warning, {warning}" for warning in inputs.warnings] + [f"Scoring {len(trials)} trials .."]
        nodes = records(inputs.nodes)
        world = world_nodes(nodes, inputs.world)
        keys = node_keys_by_probe(world, mediscore_compat=options.mediscore_compat)
        world_ids, probe_ids = _probe_node_ids(nodes, world)

        def work_of(ordinal: int, trial: dict, journal: tuple[list[str], set] | None) -> GraphJob:
            probe, output = trial[PROBE], trial[OUTPUT]
            reference = ReferenceGraph(frozenset(), frozenset())
            if journal is not None:
                ids, edges = journal
                reference = reference_graph(ids, edges, world_ids=world_ids.get(probe, set()),
                                            probe_ids=probe_ids.get(probe, set()),
                                            probe_name=trial["ProvenanceProbeFileName"], keys=keys(probe),
                                            direct=options.direct)
            return GraphJob(ordinal, trial["JournalName"], probe, output, os.path.join(inputs.system_dir, output),
                            reference, options.direct, options.undirected, options.warn_on_system_cycle,
                            options.max_json_bytes)

        jobs, prepared = provenance.planned_trials(trials, lambda name: _journal(inputs, name), work_of, started)
        return Plan(options, jobs, prepared, stdout=stdout if options.verbose else [], stderr=stderr,
                    tables=provenance.journal_tables(options, prepared))

    def score(self, work: GraphJob):
        """The trial's record; an unusable JSON leaves the trial out, a cycle in the system graph stops the
        run unless ``-c``."""
        try:
            document = provenance.load_system_json(work.read_from or work.system_path, work.system_path,
                                                   GRAPH_BUILDING, work.max_json_bytes)
        except TrialInputError as exc:
            return Problem(f"probe {work.probe}: {exc.sentence()}")
        system = system_graph(document)
        said = ()
        if has_cycle(system.links):
            if not work.warn_on_system_cycle:
                return Problem(f"{work.system_path}: the system graph has a cycle (-c scores it anyway)", fatal=True)
            said = (f"Warning, detected cycle(s) for system output file '{work.system_path}'",)
        record = graph_record(work.ordinal, journal_name=work.journal_name, probe=work.probe,
                              output_file=work.output_file, direct=work.direct, reference=work.reference,
                              system=system, undirected=work.undirected)
        return GraphTrial(record, said)

    def report(self, plan: Plan, outcomes: dict, stage) -> Lines:
        """The four tables (and figures, report.html); stderr names each left-out trial. A problem with
        the run prints the trials' lines up to its own and the problems before it, then stops."""
        options: Options = plan.options
        verbose = options.verbose
        walked = provenance.walk(plan, outcomes, announce=_announce if verbose else None,
                                 said=lambda trial: trial.said if verbose else (), record=lambda trial: trial.record)
        stderr = [f"mfscore: ERROR: {problem}; the trial is left out" for problem in walked.problems]
        if walked.error is not None:
            return Lines(walked.stdout, stderr, error=walked.error)
        stdout = walked.stdout
        figures = []
        if options.plot_scored or options.html_report:  # first: a figure worker draws while the tables are written
            for record in walked.records:
                figures.append(figure_name(record.probe))
                stage.draw("mfscore.reports.provenance_graph_report:write_figure", record,
                           stage.path(figures[-1], subdir="figures"))
        if verbose:
            stdout += [f"Writing {label} to '{OUTPUT_DIRECTORY}/{name}'" for name, label in TABLES]
        tables = write_report_tables(walked.records, options.direct, stage.path)
        if options.html_report:
            stage.path("report.html").write_text(html_report(tables, dict.fromkeys(figures)), encoding="utf-8")
        return Lines(stdout, stderr, results=graph_results(walked.records, len(walked.problems), stage.prefix))


def graph_results(records: list[GraphRecord], left_out: int, prefix: str = "") -> Results:
    """The one row of ``scores.csv`` (unrounded); primary the mean SimNLO (MFC2019 plan §7)."""
    specs = tuple(MetricSpec(name, HIGHER, text) for name, text in GRAPH_METRICS)
    means = mean_scores(records)
    row = Row(ALL, {spec.name: number(means[spec.name]) for spec in specs},
              {"probes": len(records), "left_out": left_out})
    return Results("provenance-graph", "MeanSimNLO", specs, (row,),
                   records=Records(f"{prefix}trial_scores.csv", ("ProvenanceProbeFileID",)))


TASK = ProvenanceGraph()
