"""What the two provenance tasks share (docs/provenance.md §1, §2.1): their options, reading their inputs,
planning a job per trial, reading a trial's system JSON, and walking the scored trials in order.

A job is one trial (``JobKey(0, "trial", ordinal)``), its work the trial's reference and where its
system JSON is; the JSON files are the jobs' blobs, so a ``json`` worker scores a fetched copy while
every message names the file as the command was given it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from mfscore.errors import InputFileError, MfscoreError
from mfscore.formats.file_names import confined_path
from mfscore.provenance.trials import (
    ProvenanceInputs,
    TrialInputError,
    load_system_graph,
    read_inputs,
)
from mfscore.tasks.base import PACKAGE_DIRECTORY, SYSTEM_OUTPUT, Inputs, Job, JobKey, Plan, Problem, Task
from mfscore.tasks.provenance_options import Options

ROLE = "trial"
TABLE_ROOTS = {"index-table": "index_file", "reference-table": "reference_file", "node-table": "node_file",
               "world-table": "world_file", "system-table": "system_output_file"}


@dataclass
class Prepared:
    """What a report needs from planning besides the jobs: the planning error stopping the run at each
    trial whose journal could not be read, the journals read (relative to ``-R``), and the wall-clock
    start (the report may run in another process than the plan)."""

    errors: dict[int, str]
    journal_files: tuple[str, ...]
    started: float


def read_tables(options: Options) -> ProvenanceInputs:
    return read_inputs(index=options.index_file, reference=options.reference_file, nodes=options.node_file,
                       world=options.world_file, system=options.system_output_file,
                       reference_dir=options.reference_dir, system_dir=options.system_dir)


def planned_trials(trials: list[dict], journal_of: Callable[[str], object],
                   work_of: Callable[[int, dict, object], object], started: float) -> tuple[list[Job], Prepared]:
    """A job per trial in order (``work_of(ordinal, trial, journal)``, journal None when unreadable);
    each journal is read once (``journal_of(JournalFileName)``), and one that cannot be read is the
    planning error of each of its trials."""
    journals: dict[str, object] = {}
    jobs, errors = [], {}
    for ordinal, trial in enumerate(trials):
        name = trial["JournalFileName"]
        if name not in journals:
            try:
                journals[name] = journal_of(name)
            except InputFileError as exc:
                journals[name] = exc
        journal = journals[name]
        if isinstance(journal, MfscoreError):
            errors[ordinal] = journal.sentence()
            journal = None
        jobs.append(Job(JobKey(0, ROLE, ordinal), work_of(ordinal, trial, journal)))
    return jobs, Prepared(errors, tuple(journals), started)


def journal_tables(options: Options, prepared: Prepared) -> tuple[str, ...]:
    """The journals the trials read that exist (a missing or refused one is its trials' planning error on any
    runner): a name leaving ``-R`` is never looked at."""
    paths = []
    for name in prepared.journal_files:
        try:
            paths.append(confined_path(options.reference_dir, name, what="journal"))
        except InputFileError:
            continue
    return tuple(path for path in paths if os.path.isfile(path))


def load_system_json(path: str, named: str, task: str, max_bytes: int) -> dict:
    """``trials.load_system_graph`` of the file at ``path``; a problem names the file ``named`` instead
    (the path the command was given: a worker reads a fetched copy)."""
    try:
        return load_system_graph(SimpleNamespace(system_dir=os.path.dirname(path)), os.path.basename(path), task,
                                 max_bytes=max_bytes)
    except TrialInputError as exc:
        raise TrialInputError(exc.message, path=named) from None


class ProvenanceTask(Task):
    """Inputs and blobs, the same for both scorers; the work types have ``system_path`` and ``read_from``."""

    resource = "json"
    package_fields = {"system_output_file": SYSTEM_OUTPUT, "system_dir": PACKAGE_DIRECTORY}

    def inputs(self, options: Options) -> Inputs:
        """The seven input directories as roots and the five tables (the journals are the plan's tables)."""
        roots = {"ref": options.reference_dir, "sys": options.system_dir}
        roots |= {root: os.path.dirname(getattr(options, name)) or "." for root, name in TABLE_ROOTS.items()}
        return Inputs(roots, tuple(getattr(options, name) for name in TABLE_ROOTS.values()))

    def blobs(self, work) -> dict[str, str]:
        return {"system": work.read_from or work.system_path}

    def with_blobs(self, work, paths: dict[str, str]):
        return dataclasses.replace(work, read_from=paths["system"])


@dataclass
class Walked:
    """The scored trials up to the end or the first problem with the run: records, left-out trials'
    problems, stdout lines, and that problem (``error``)."""

    records: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    error: MfscoreError | None = None


def walk(plan: Plan, outcomes: dict, *, announce: Callable[[object], str] | None = None,
         said: Callable[[object], tuple[str, ...]] = lambda outcome: (),
         record: Callable[[object], object] = lambda outcome: outcome) -> Walked:
    """Each trial in order as the embedded command reaches it: ``announce`` it, stop at its planning
    error or a fatal problem, else keep its problem, or its ``said`` lines and its ``record``."""
    walked = Walked()
    for job in plan.jobs:
        if announce is not None:
            walked.stdout.append(announce(job.work))
        outcome = outcomes[job.key]
        stop = plan.prepared.errors.get(job.key.ordinal)
        if stop is None and isinstance(outcome, Problem) and outcome.fatal:
            stop = outcome.message
        if stop is not None:
            walked.error = MfscoreError(stop)
            return walked
        if isinstance(outcome, Problem):
            walked.problems.append(outcome.message)
            continue
        walked.stdout.extend(said(outcome))
        walked.records.append(record(outcome))
    return walked
