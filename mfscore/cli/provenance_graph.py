"""``mfscore provenance-graph``: ProvenanceGraphBuildingScorer's command line (provenance.md §3).

Reads the tables and JSON files, turns each trial into a ``GraphRecord`` with the pure functions of
``mfscore.provenance.graph_*``, and writes the reports all-or-nothing. A journal with a cycle, or
a system graph with a cycle without ``-c``, stops the run (exit 1) as in MediScore; a system JSON
that cannot be scored is reported on one ``ERROR`` line and its trial is left out.

Both modes run ``prepare`` (tables and journals, one ``GraphJob`` with its reference graph per
trial), score each job with ``score_job`` and write the reports with ``write_outputs``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from mfscore.cli.provenance_arguments import (
    PlannedRun,
    TrialOutcome,
    add_input_arguments,
    load_system_json,
    quiet,
    read_arguments_inputs,
    scored,
    split,
)
from mfscore.errors import InputFileError, MfscoreError, OptionError
from mfscore.formats.provenance_json import GRAPH_BUILDING
from mfscore.formats.tables import write_table
from mfscore.provenance.graph_reference import (
    JournalError,
    ReferenceGraph,
    check_acyclic,
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
    check_trial_disparity,
    load_journal,
    trial_table,
)
from mfscore.reports.provenance_graph_report import (
    TABLES,
    figure_name,
    html_report,
    report_tables,
    write_figure,
)
from mfscore.reports.staged_outputs import StagedOutputs, staged_outputs

MODE = "graph"
RECORD = GraphRecord


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "provenance-graph", help="score provenance graphs (ProvenanceGraphBuildingScorer-compatible)",
        description="Score system provenance graphs against the journals' reference graphs: SimNLO, SimNO, SimLO "
                    "and node recall per probe, on the full graph or (-d) the probe's direct-path graph.")
    add_input_arguments(p)
    p.add_argument("-d", "--direct", action="store_true", help="score the direct-path graph of each probe")
    p.add_argument("-u", "--undirected-graph", action="store_true", help="links match in either direction")
    p.add_argument("-c", "--warn-on-system-cycle", action="store_true",
                   help="a cycle in a system graph is a warning (shown with -v) instead of an error")
    p.add_argument("-p", "--plot-scored", action="store_true",
                   help="draw figures/<ProvenanceProbeFileID>.png: green correct, red false alarm, gray missing")
    p.add_argument("-H", "--html-report", action="store_true", help="write report.html (implies -p)")
    p.add_argument("-T", "--thumbnail-cache-dir",
                   help="accepted and ignored: mfscore's figures are drawn without thumbnails")
    p.set_defaults(run=run)


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

    def to_dict(self) -> dict:
        return {"ordinal": self.ordinal, "journal_name": self.journal_name, "probe": self.probe,
                "output_file": self.output_file, "system_path": self.system_path,
                "reference_nodes": sorted(self.reference.nodes),
                "reference_links": [list(link) for link in sorted(self.reference.links)],
                "direct": self.direct, "undirected": self.undirected,
                "warn_on_system_cycle": self.warn_on_system_cycle, "max_json_bytes": self.max_json_bytes}

    @classmethod
    def from_dict(cls, data: dict) -> GraphJob:
        reference = ReferenceGraph(nodes=frozenset(data["reference_nodes"]),
                                   links=frozenset((a, b) for a, b in data["reference_links"]))
        return cls(ordinal=data["ordinal"], journal_name=data["journal_name"], probe=data["probe"],
                   output_file=data["output_file"], system_path=data["system_path"], reference=reference,
                   direct=data["direct"], undirected=data["undirected"],
                   warn_on_system_cycle=data["warn_on_system_cycle"], max_json_bytes=data["max_json_bytes"])


JOB = GraphJob


def _probe_node_ids(inputs: ProvenanceInputs) -> tuple[dict[str, set], dict[str, set]]:
    """Per probe: the JournalNodeIDs of its world nodes (node file ⋈ world on WorldFileID, §3.2 step 4)
    and of its own node (the node-file row whose WorldFileID is the probe's)."""
    nodes = inputs.nodes
    world = nodes.merge(inputs.world[["WorldFileID"]].drop_duplicates(), on="WorldFileID")
    own = nodes[nodes["WorldFileID"] == nodes[PROBE]]
    return (world.groupby(PROBE)["JournalNodeID"].agg(set).to_dict(),
            own.groupby(PROBE)["JournalNodeID"].agg(set).to_dict())


def _journal(inputs: ProvenanceInputs, name: str) -> tuple[list[str], set]:
    """A journal's node ids and links, cleared of anti-forensic donor links and checked for cycles."""
    try:
        ids, links = journal_links(load_journal(inputs, name))
        edges = {(a, b) for a, b, _ in remove_anti_forensic_donors(links)}
        check_acyclic(edges)
    except JournalError as exc:
        raise InputFileError(str(exc), path=os.path.join(inputs.reference_dir, name)) from None
    return ids, edges


def _said(args, sink):
    return sink if args.verbose else quiet


def prepare(args, say=quiet, warn=quiet) -> PlannedRun:
    """Read the tables and journals and plan a job per trial; no system JSON is read (both modes start here).

    ``say`` takes the stdout lines (``-v``) and ``warn`` the stderr lines said before scoring.
    """
    if args.max_json_bytes < 1:
        raise OptionError(f"--max-json-bytes {args.max_json_bytes}: the limit must be at least 1 byte")
    say = _said(args, say)
    if args.thumbnail_cache_dir is not None:
        warn("mfscore: note: -T is accepted and ignored; figures are drawn without thumbnails")
    inputs = read_arguments_inputs(args)
    check_trial_disparity(inputs, skip=args.skip_trial_disparity_check, one_to_one=True)
    for warning in inputs.warnings:
        say(f"Warning, {warning}")
    trials = trial_table(inputs)
    say(f"Scoring {len(trials)} trials ..")
    keys = node_keys(zip(inputs.nodes["JournalNodeID"], inputs.nodes["WorldFileName"]))
    world_ids, probe_ids = _probe_node_ids(inputs)
    journals: dict[str, tuple[list[str], set] | MfscoreError] = {}
    jobs, errors = [], {}
    for ordinal, trial in enumerate(trials.to_dict("records")):
        probe, output, name = trial[PROBE], trial[OUTPUT], trial["JournalFileName"]
        if name not in journals:
            try:
                journals[name] = _journal(inputs, name)
            except InputFileError as exc:
                journals[name] = exc
        reference = ReferenceGraph(frozenset(), frozenset())
        if isinstance(journals[name], MfscoreError):
            errors[ordinal] = journals[name]
        else:
            ids, edges = journals[name]
            reference = reference_graph(ids, edges, world_ids=world_ids.get(probe, set()),
                                        probe_ids=probe_ids.get(probe, set()),
                                        probe_name=trial["ProvenanceProbeFileName"], keys=keys, direct=args.direct)
        jobs.append(GraphJob(ordinal, trial["JournalName"], probe, output, os.path.join(inputs.system_dir, output),
                             reference, args.direct, args.undirected_graph, args.warn_on_system_cycle,
                             args.max_json_bytes))
    return PlannedRun(args, jobs, errors, tuple(journals))


def score_job(job: GraphJob, read_from: str | None = None) -> TrialOutcome:
    """Score one trial's system JSON (at ``read_from``, else ``job.system_path``); an unusable JSON leaves
    the trial out. A cycle in the system graph raises ``InputFileError`` unless ``-c``."""
    try:
        document = load_system_json(read_from or job.system_path, job.system_path, GRAPH_BUILDING,
                                    job.max_json_bytes)
    except TrialInputError as exc:
        return TrialOutcome(job.ordinal, problem=f"probe {job.probe}: {exc.sentence()}")
    system = system_graph(document)
    said = ()
    if has_cycle(system.links):
        if not job.warn_on_system_cycle:
            raise InputFileError("the system graph has a cycle (-c scores it anyway)", path=job.system_path)
        said = (f"Warning, detected cycle(s) for system output file '{job.system_path}'",)
    record = graph_record(job.ordinal, journal_name=job.journal_name, probe=job.probe, output_file=job.output_file,
                          direct=job.direct, reference=job.reference, system=system, undirected=job.undirected)
    return TrialOutcome(job.ordinal, record=record, said=said)


def _announce(job: GraphJob) -> str:
    return f"Working on ProvenanceProbeFileID: '{job.probe}' in JournalName: '{job.journal_name}'"


def outcomes(run: PlannedRun, outcome_of, say=quiet):
    """Each trial's outcome in order (``outcome_of(job)``), stopping at the first problem with the run."""
    return scored(run.jobs, run.errors, outcome_of, _said(run.args, say), _announce)


def problem_lines(problems: list[str]) -> list[str]:
    return [f"mfscore: ERROR: {problem}; the trial is left out" for problem in problems]


def write_outputs(run: PlannedRun, records: list[GraphRecord], problems: list[str], stage: StagedOutputs,
                  say=quiet) -> list[str]:
    """Write the four tables (and figures, report.html); returns the stderr lines (each left-out trial)."""
    args, say = run.args, _said(run.args, say)
    tables = report_tables(records, args.direct)
    for name, label in TABLES:
        say(f"Writing {label} to '{os.path.join(args.output_dir, name)}'")
        write_table(tables[name], stage.path(name))
    figures = []
    if args.plot_scored or args.html_report:
        for record in records:
            figures.append(figure_name(record.probe))
            write_figure(record, stage.path(figures[-1], subdir="figures"))
    if args.html_report:
        stage.path("report.html").write_text(html_report(tables, dict.fromkeys(figures)), encoding="utf-8")
    return problem_lines(problems)


def closing_lines(directory) -> list[str]:
    """What the command prints on stdout last, once the reports are in ``directory``: nothing."""
    return []


def run(args) -> int:
    prepared = prepare(args, say=print, warn=lambda line: print(line, file=sys.stderr))
    problems: list[str] = []
    try:
        records = split(outcomes(prepared, score_job, print), problems)
    except MfscoreError:
        for line in problem_lines(problems):
            print(line, file=sys.stderr)
        raise
    with staged_outputs(os.path.join(args.output_dir, "")) as stage:
        lines = write_outputs(prepared, records, problems, stage, print)
    for line in lines:
        print(line, file=sys.stderr)
    for line in closing_lines(stage.directory):
        print(line)
    return 0
