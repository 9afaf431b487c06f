"""``mfscore provenance-filtering``: ProvenanceFilteringScorer's command line (provenance.md §2).

A trial whose system JSON cannot be scored (too large, not JSON, failing the filtering schema, a
link end outside ``nodes``) is reported on stderr and left out of the tables; the run goes on and
exits 0. A problem with the run as a whole (a missing file or column, a JSON path leaving ``-S``,
an index probe missing from the system output, a requested node type absent from a reference)
exits 1 with one sentence and writes nothing.
"""

from __future__ import annotations

import os
import sys
import time

from mfscore.cli.provenance_arguments import add_input_arguments, read_arguments_inputs
from mfscore.errors import InputFileError
from mfscore.formats.provenance_json import DEFAULT_MAX_JSON_BYTES, FILTERING
from mfscore.provenance.filtering import (
    FilteringRecord,
    node_types,
    reference_nodes,
    score_trial,
    world_nodes,
)
from mfscore.provenance.trials import (
    ProvenanceInputs,
    TrialInputError,
    check_trial_disparity,
    load_journal,
    load_system_graph,
    trial_table,
)
from mfscore.reports.provenance_filtering_report import write_filtering_report
from mfscore.reports.staged_outputs import staged_outputs

NODE_TYPE_CHOICES = ("donor", "base", "final", "interim", "*", "all")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "provenance-filtering", help="score provenance filtering (ProvenanceFilteringScorer-compatible)",
        description="Node recall at ranks 50, 100, 200 and 300 of each probe's system node list against its "
                    "reference provenance graph. Accepts MediScore ProvenanceFilteringScorer's options.")
    add_input_arguments(p)
    p.add_argument("-H", "--html-report", action="store_true", help="accepted; mfscore writes no HTML report")
    p.add_argument("--nodetype", nargs="+", choices=NODE_TYPE_CHOICES, metavar="TYPE",
                   help="add per-node-type rows: donor, base, final, interim; * or all for the four")
    p.set_defaults(run=run)


def _journal_nodes(inputs: ProvenanceInputs, name: str) -> list[dict]:
    nodes = load_journal(inputs, name).get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(node, dict) for node in nodes):
        raise InputFileError("the journal has no list of node objects under 'nodes'",
                             path=os.path.join(inputs.reference_dir, name))
    return nodes


def score_trials(inputs: ProvenanceInputs, types: tuple[str, ...], *,
                 max_json_bytes: int = DEFAULT_MAX_JSON_BYTES) -> tuple[list[FilteringRecord], list[str]]:
    """A record per scorable trial, and one message per trial left out (its system JSON is unusable)."""
    trials = trial_table(inputs)
    by_probe = world_nodes(inputs.nodes.to_dict("records"),
                           list(zip(inputs.world["WorldFileID"], inputs.world["WorldFileName"])))
    journals: dict[str, list[dict]] = {}
    records, problems = [], []
    for ordinal, trial in enumerate(trials.to_dict("records")):
        probe, output = trial["ProvenanceProbeFileID"], trial["ProvenanceOutputFileName"]
        name = trial["JournalFileName"]
        if name not in journals:
            journals[name] = _journal_nodes(inputs, name)
        reference = reference_nodes(by_probe.get(probe, []), journals[name], trial["ProvenanceProbeFileName"])
        try:
            system = load_system_graph(inputs, output, FILTERING, max_bytes=max_json_bytes)
        except TrialInputError as exc:
            problems.append(f"probe {probe}: {exc.sentence()}")
            continue
        records.append(score_trial(ordinal=ordinal, journal_name=trial["JournalName"], probe_id=probe,
                                   output_file=output, reference=reference, system_nodes=system["nodes"],
                                   types=types))
    return records, problems


def run(args) -> int:
    started = time.perf_counter()
    inputs = read_arguments_inputs(args)
    check_trial_disparity(inputs, skip=args.skip_trial_disparity_check, one_to_one=False)
    if args.verbose:
        for warning in inputs.warnings:
            print(f"mfscore: warning: {warning}", file=sys.stderr)
    records, problems = score_trials(inputs, node_types(args.nodetype), max_json_bytes=args.max_json_bytes)
    for problem in problems:
        print(f"mfscore: ERROR: {problem}; the trial is left out of the tables", file=sys.stderr)
    with staged_outputs(os.path.join(args.output_dir, "")) as stage:
        write_filtering_report(records, stage.path)
    if args.html_report:
        print("mfscore: note: -H accepted; no report.html is written (the CSV files hold the same tables)",
              file=sys.stderr)
    if args.verbose:
        print(f"mfscore: scored {len(records)} trial(s), left out {len(problems)}, in "
              f"{time.perf_counter() - started:.2f} s", file=sys.stderr)
    print(f"reports in {stage.directory}/")
    return 0
