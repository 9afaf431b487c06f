"""What both provenance scorers share (provenance.md §2.1): their options, reading their inputs, and what
scoring one planned trial gives, in both modes (embedded, or a provenance-scorer worker)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace

from mfscore.errors import InputFileError, MfscoreError, OptionError
from mfscore.formats.provenance_json import DEFAULT_MAX_JSON_BYTES
from mfscore.provenance.trials import (
    ProvenanceInputs,
    TrialInputError,
    load_system_graph,
    read_inputs,
)

# The errors a trial may stop the run with; they cross the wire by name.
RUN_ERRORS = {cls.__name__: cls for cls in (MfscoreError, InputFileError, OptionError)}


def add_input_arguments(p) -> None:
    p.add_argument("-o", "--output-dir", required=True, help="output directory (created if missing)")
    p.add_argument("-x", "--index-file", required=True, help="provenance index CSV")
    p.add_argument("-r", "--reference-file", required=True, help="provenance reference CSV")
    p.add_argument("-n", "--node-file", required=True, help="provenance node CSV (reference nodes per probe)")
    p.add_argument("-w", "--world-file", required=True, help="world index CSV")
    p.add_argument("-R", "--reference-dir", required=True, help="directory the JournalFileName paths are relative to")
    p.add_argument("-s", "--system-output-file", required=True, help="system output CSV")
    p.add_argument("-S", "--system-dir", required=True,
                   help="directory the ProvenanceOutputFileName paths are relative to (they may not leave it)")
    p.add_argument("-t", "--skip-trial-disparity-check", action="store_true",
                   help="system probes that are not in the index (or repeated, for graphs) only give a warning")
    p.add_argument("-v", "--verbose", action="store_true", help="progress and warning messages on stdout")
    p.add_argument("--max-json-bytes", type=int, default=DEFAULT_MAX_JSON_BYTES,
                   help=f"refuse system JSON files larger than this (default {DEFAULT_MAX_JSON_BYTES:,})")


def read_arguments_inputs(args) -> ProvenanceInputs:
    return read_inputs(index=args.index_file, reference=args.reference_file, nodes=args.node_file,
                       world=args.world_file, system=args.system_output_file, reference_dir=args.reference_dir,
                       system_dir=args.system_dir)


def quiet(_line: str) -> None:
    pass


def load_system_json(path: str, named: str, task: str, max_bytes: int) -> dict:
    """``trials.load_system_graph`` of the file at ``path``; a problem names the file ``named`` instead
    (the path the command was given: a worker reads a fetched copy)."""
    try:
        return load_system_graph(SimpleNamespace(system_dir=os.path.dirname(path)), os.path.basename(path), task,
                                 max_bytes=max_bytes)
    except TrialInputError as exc:
        raise TrialInputError(exc.message, path=named) from None


@dataclass
class PlannedRun:
    """A planned provenance run: a job per trial, in MediScore's order; ``errors`` stop the run when their trial comes."""

    args: argparse.Namespace
    jobs: list
    errors: dict[int, MfscoreError] = field(default_factory=dict)
    journal_files: tuple[str, ...] = ()  # the JournalFileName of every journal read, relative to -R
    started: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class TrialOutcome:
    """One scored trial: its record, or the problem that leaves it out; and its ``-v`` stdout lines.

    ``error`` is a problem with the run as a whole (it stops the run), as a worker reports it.
    """

    ordinal: int
    record: object | None = None
    problem: str | None = None
    said: tuple[str, ...] = ()
    error: MfscoreError | None = None

    def to_dict(self) -> dict:
        error = None
        if self.error is not None:
            kind = type(self.error).__name__
            error = {"kind": kind if kind in RUN_ERRORS else "MfscoreError", "message": self.error.message,
                     "path": self.error.path, "line": self.error.line}
        return {"ordinal": self.ordinal, "record": self.record.to_dict() if self.record is not None else None,
                "problem": self.problem, "said": list(self.said), "error": error}

    @classmethod
    def from_dict(cls, data: dict, record_type) -> TrialOutcome:
        error = data.get("error")
        if error is not None:
            error = RUN_ERRORS.get(error["kind"], MfscoreError)(error["message"], path=error["path"],
                                                                 line=error["line"])
        record = data.get("record")
        return cls(ordinal=data["ordinal"], record=record_type.from_dict(record) if record is not None else None,
                   problem=data.get("problem"), said=tuple(data.get("said", ())), error=error)


def scored(jobs: Iterable, errors: dict[int, MfscoreError], outcome_of: Callable[[object], TrialOutcome],
           say: Callable[[str], None], announce: Callable[[object], str | None] = lambda job: None):
    """The outcome of each job in trial order, as both modes walk them: ``announce`` the trial, stop at a
    planning error or a run error, pass the trial's ``said`` lines to ``say``."""
    for job in jobs:
        line = announce(job)
        if line is not None:
            say(line)
        if job.ordinal in errors:
            raise errors[job.ordinal]
        outcome = outcome_of(job)
        if outcome.error is not None:
            raise outcome.error
        for line in outcome.said:
            say(line)
        yield outcome


def split(outcomes: Iterable[TrialOutcome], problems: list[str]) -> list:
    """The records of ``outcomes``; each problem is appended to ``problems`` as it comes."""
    records = []
    for outcome in outcomes:
        if outcome.problem is not None:
            problems.append(outcome.problem)
        else:
            records.append(outcome.record)
    return records
