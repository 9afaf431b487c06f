"""``mfscore provenance-filtering``: ProvenanceFilteringScorer's command line (provenance.md §2).

A trial whose system JSON cannot be scored (too large, not JSON, failing the filtering schema, a
link end outside ``nodes``) is reported on stderr and left out of the tables; the run goes on and
exits 0. A problem with the run as a whole (a missing file or column, a JSON path leaving ``-S``,
an index probe missing from the system output, a requested node type absent from a reference)
exits 1 with one sentence and writes nothing.

Both modes run ``prepare`` (tables and journals, one ``FilteringJob`` per trial), score each job
with ``score_job`` and write the tables with ``write_outputs``.
"""

from __future__ import annotations

import os
import sys
import time
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
from mfscore.errors import InputFileError, MfscoreError
from mfscore.formats.provenance_json import FILTERING
from mfscore.provenance.filtering import (
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
    trial_table,
)
from mfscore.reports.provenance_filtering_report import write_filtering_report
from mfscore.reports.staged_outputs import StagedOutputs, staged_outputs

NODE_TYPE_CHOICES = ("donor", "base", "final", "interim", "*", "all")
MODE = "filtering"
RECORD = FilteringRecord


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

    def to_dict(self) -> dict:
        return {"ordinal": self.ordinal, "journal_name": self.journal_name, "probe_id": self.probe_id,
                "output_file": self.output_file, "system_path": self.system_path,
                "reference": [list(row) for row in self.reference], "types": list(self.types),
                "max_json_bytes": self.max_json_bytes}

    @classmethod
    def from_dict(cls, data: dict) -> FilteringJob:
        return cls(ordinal=data["ordinal"], journal_name=data["journal_name"], probe_id=data["probe_id"],
                   output_file=data["output_file"], system_path=data["system_path"],
                   reference=tuple((file, kind) for file, kind in data["reference"]), types=tuple(data["types"]),
                   max_json_bytes=data["max_json_bytes"])


JOB = FilteringJob


def _journal_nodes(inputs: ProvenanceInputs, name: str) -> list[dict]:
    nodes = load_journal(inputs, name).get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(node, dict) for node in nodes):
        raise InputFileError("the journal has no list of node objects under 'nodes'",
                             path=os.path.join(inputs.reference_dir, name))
    return nodes


def prepare(args, say=quiet, warn=quiet) -> PlannedRun:
    """Read the tables and journals and plan a job per trial; no system JSON is read (both modes start here).

    ``warn`` takes the stderr lines said before scoring; filtering says nothing on stdout (``say``) then.
    """
    started = time.perf_counter()
    inputs = read_arguments_inputs(args)
    check_trial_disparity(inputs, skip=args.skip_trial_disparity_check, one_to_one=False)
    if args.verbose:
        for warning in inputs.warnings:
            warn(f"mfscore: warning: {warning}")
    trials = trial_table(inputs)
    types = node_types(args.nodetype)
    by_probe = world_nodes(inputs.nodes.to_dict("records"),
                           list(zip(inputs.world["WorldFileID"], inputs.world["WorldFileName"])))
    journals: dict[str, list[dict] | MfscoreError] = {}
    jobs, errors = [], {}
    for ordinal, trial in enumerate(trials.to_dict("records")):
        probe, output, name = trial[PROBE], trial[OUTPUT], trial["JournalFileName"]
        if name not in journals:
            try:
                journals[name] = _journal_nodes(inputs, name)
            except InputFileError as exc:
                journals[name] = exc
        reference = ()
        if isinstance(journals[name], MfscoreError):
            errors[ordinal] = journals[name]
        else:
            reference = tuple(reference_nodes(by_probe.get(probe, []), journals[name],
                                              trial["ProvenanceProbeFileName"]))
        jobs.append(FilteringJob(ordinal, trial["JournalName"], probe, output, os.path.join(inputs.system_dir, output),
                                 reference, types, args.max_json_bytes))
    return PlannedRun(args, jobs, errors, tuple(journals), started)


def score_job(job: FilteringJob, read_from: str | None = None) -> TrialOutcome:
    """Score one trial's system JSON (at ``read_from``, else ``job.system_path``); an unusable JSON leaves
    the trial out. A requested node type absent from the reference raises ``OptionError``."""
    try:
        system = load_system_json(read_from or job.system_path, job.system_path, FILTERING, job.max_json_bytes)
    except TrialInputError as exc:
        return TrialOutcome(job.ordinal, problem=f"probe {job.probe_id}: {exc.sentence()}")
    record = score_trial(ordinal=job.ordinal, journal_name=job.journal_name, probe_id=job.probe_id,
                         output_file=job.output_file, reference=list(job.reference), system_nodes=system["nodes"],
                         types=job.types)
    return TrialOutcome(job.ordinal, record=record)


def outcomes(run: PlannedRun, outcome_of, say=quiet):
    """Each trial's outcome in order (``outcome_of(job)``), stopping at the first problem with the run."""
    return scored(run.jobs, run.errors, outcome_of, say)


def write_outputs(run: PlannedRun, records: list[FilteringRecord], problems: list[str], stage: StagedOutputs,
                  say=quiet) -> list[str]:
    """Write the three tables; returns the stderr lines (each left-out trial, the notes). Filtering says
    nothing on stdout (``say``) while writing."""
    write_filtering_report(records, stage.path)
    lines = [f"mfscore: ERROR: {problem}; the trial is left out of the tables" for problem in problems]
    if run.args.html_report:
        lines.append("mfscore: note: -H accepted; no report.html is written (the CSV files hold the same tables)")
    if run.args.verbose:
        lines.append(f"mfscore: scored {len(records)} trial(s), left out {len(problems)}, in "
                     f"{time.perf_counter() - run.started:.2f} s")
    return lines


def closing_lines(directory) -> list[str]:
    """What the command prints on stdout last, once the reports are in ``directory``."""
    return [f"reports in {directory}/"]


def run(args) -> int:
    prepared = prepare(args, warn=lambda line: print(line, file=sys.stderr))
    problems: list[str] = []
    records = split(outcomes(prepared, score_job), problems)
    with staged_outputs(os.path.join(args.output_dir, "")) as stage:
        lines = write_outputs(prepared, records, problems, stage)
    for line in lines:
        print(line, file=sys.stderr)
    for line in closing_lines(stage.directory):
        print(line)
    return 0
