"""``mfscore provenance-graph``: ProvenanceGraphBuildingScorer's command line (provenance.md §3).

Reads the tables and JSON files, turns each trial into a ``GraphRecord`` with the pure functions of
``mfscore.provenance.graph_*``, and writes the reports all-or-nothing. A journal with a cycle, or
a system graph with a cycle without ``-c``, stops the run (exit 1) as in MediScore; a system JSON
that cannot be scored is reported on one ``ERROR`` line and its trial is left out.
"""

from __future__ import annotations

import os
import sys

from mfscore.cli.provenance_arguments import add_input_arguments, read_arguments_inputs
from mfscore.errors import InputFileError, OptionError
from mfscore.formats.provenance_json import GRAPH_BUILDING
from mfscore.formats.tables import write_table
from mfscore.provenance.graph_reference import (
    JournalError,
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
    load_system_graph,
    trial_table,
)
from mfscore.reports.provenance_graph_report import (
    TABLES,
    figure_name,
    html_report,
    report_tables,
    write_figure,
)
from mfscore.reports.staged_outputs import staged_outputs


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


def _quiet(*_args) -> None:
    pass


def _probe_node_ids(inputs: ProvenanceInputs) -> tuple[dict[str, set], dict[str, set]]:
    """Per probe: the JournalNodeIDs of its world nodes (node file ⋈ world on WorldFileID, §3.2 step 4)
    and of its own node (the node-file row whose WorldFileID is the probe's)."""
    nodes = inputs.nodes
    world = nodes.merge(inputs.world[["WorldFileID"]].drop_duplicates(), on="WorldFileID")
    own = nodes[nodes["WorldFileID"] == nodes[PROBE]]
    return (world.groupby(PROBE)["JournalNodeID"].agg(set).to_dict(),
            own.groupby(PROBE)["JournalNodeID"].agg(set).to_dict())


class _Journals:
    """Each journal read, cleared of anti-forensic donor links and checked for cycles once."""

    def __init__(self, inputs: ProvenanceInputs):
        self.inputs = inputs
        self.graphs: dict[str, tuple[list[str], set]] = {}

    def get(self, name: str) -> tuple[list[str], set]:
        if name not in self.graphs:
            path = os.path.join(self.inputs.reference_dir, name)
            try:
                ids, links = journal_links(load_journal(self.inputs, name))
                edges = {(a, b) for a, b, _ in remove_anti_forensic_donors(links)}
                check_acyclic(edges)
            except JournalError as exc:
                raise InputFileError(str(exc), path=path) from None
            self.graphs[name] = (ids, edges)
        return self.graphs[name]


def score_trials(inputs: ProvenanceInputs, trials, args, say=_quiet) -> list[GraphRecord]:
    """One record per scoreable trial, in trial order; unscoreable system JSONs reported on stderr."""
    keys = node_keys(zip(inputs.nodes["JournalNodeID"], inputs.nodes["WorldFileName"]))
    world_ids, probe_ids = _probe_node_ids(inputs)
    journals = _Journals(inputs)
    records = []
    for ordinal, trial in enumerate(trials.to_dict("records")):
        probe, name = trial[PROBE], trial[OUTPUT]
        say(f"Working on ProvenanceProbeFileID: '{probe}' in JournalName: '{trial['JournalName']}'")
        ids, edges = journals.get(trial["JournalFileName"])
        reference = reference_graph(ids, edges, world_ids=world_ids.get(probe, set()),
                                    probe_ids=probe_ids.get(probe, set()),
                                    probe_name=trial["ProvenanceProbeFileName"], keys=keys, direct=args.direct)
        try:
            system = system_graph(load_system_graph(inputs, name, GRAPH_BUILDING, max_bytes=args.max_json_bytes))
        except TrialInputError as exc:
            print(f"mfscore: ERROR: probe {probe}: {exc.sentence()}; the trial is left out", file=sys.stderr)
            continue
        if has_cycle(system.links):
            path = os.path.join(inputs.system_dir, name)
            if not args.warn_on_system_cycle:
                raise InputFileError("the system graph has a cycle (-c scores it anyway)", path=path)
            say(f"Warning, detected cycle(s) for system output file '{path}'")
        records.append(graph_record(ordinal, journal_name=trial["JournalName"], probe=probe, output_file=name,
                                    direct=args.direct, reference=reference, system=system,
                                    undirected=args.undirected_graph))
    return records


def run(args) -> int:
    if args.max_json_bytes < 1:
        raise OptionError(f"--max-json-bytes {args.max_json_bytes}: the limit must be at least 1 byte")
    say = print if args.verbose else _quiet
    if args.thumbnail_cache_dir is not None:
        print("mfscore: note: -T is accepted and ignored; figures are drawn without thumbnails", file=sys.stderr)
    inputs = read_arguments_inputs(args)
    check_trial_disparity(inputs, skip=args.skip_trial_disparity_check, one_to_one=True)
    for warning in inputs.warnings:
        say(f"Warning, {warning}")
    trials = trial_table(inputs)
    say(f"Scoring {len(trials)} trials ..")
    records = score_trials(inputs, trials, args, say)
    tables = report_tables(records, args.direct)
    with staged_outputs(os.path.join(args.output_dir, "")) as stage:
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
    return 0

