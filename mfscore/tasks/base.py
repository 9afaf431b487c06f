"""The task protocol (docs/development.md "Tasks"): what every scorer declares, and the values its steps exchange.

A task is four pure steps over typed values::

    plan(options)                 -> Plan: jobs keyed (query, role, ordinal), and what the report needs
    score(work)                   -> a record, or a Problem (one sentence naming the file)
    fold(outcomes)                -> one outcome per key (``mfscore.records.fold``, the same for every task)
    report(plan, outcomes, stage) -> Lines: the files (written into ``stage``), the results model
                                     (``mfscore.results``), stdout, stderr, exit status

The embedded CLI (``mfscore.run.local``) and the cluster (``services/``) are two runners of these
steps; neither knows anything about a particular task. Where a job is scored is the task's declaration
(``Task.resource``, ``Task.portable``) and the runner's choice (``scored_where_planned``).
"""

from __future__ import annotations

import dataclasses
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mfscore.errors import MfscoreError, OptionError
from mfscore.records import JobKey, Problem  # noqa: F401  (the protocol's values, re-exported)
from mfscore.results import Results

OUTPUT_DIRECTORY = "\x00output-directory\x00"  # in a report's lines: the directory the runner wrote the files into
PLANNER = "planner"                             # a task whose jobs are scored where they are planned (see Task.resource)
PLANNED = "planned"                             # the first part of a plan-made file's key (Plan.generated)
PATH = {"path": True}                           # field metadata: an input path (mfscore.options.option(path=True))
SYSTEM_OUTPUT = "system output"                 # a package field: its <SubID>.csv (Task.package_fields)
PACKAGE_DIRECTORY = "package directory"         # a package field: the package directory itself


@dataclass(frozen=True)
class Job:
    """One unit of scoring: its key and the task's work value (everything ``score`` needs)."""

    key: JobKey
    work: Any


@dataclass
class Plan:
    """A planned run: its jobs in report order, what planning prepared for the report (``prepared``, the task's own
    ``Prepared``: the tables it read, the subsets or queries it selected), what planning said, and the files
    planning read beyond ``Inputs.tables`` (the journals its trials name, say).

    ``generated`` are files planning made for the jobs to read, by key (``planned/...``, '/'-separated): a job
    names one by its key among its blobs (``Task.blobs``) and its runner puts it where the job reads it
    (``with_generated``; a cluster stores it with the run's inputs).
    """

    options: Any
    jobs: list[Job]
    prepared: Any = None
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    tables: tuple[str, ...] = ()
    generated: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Lines:
    """What a report says besides its files; ``error`` stops the run after the lines are printed (nothing is written).

    ``results`` is the results model (``mfscore.results``) the task's report returns; the runner writes it beside
    the reports and adds the run's provenance as ``record`` (``mfscore.run_record.RunRecord``).
    """

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    status: int = 0
    error: MfscoreError | None = None
    results: Results | None = None
    record: Any = None


@dataclass(frozen=True)
class Submission:
    """What the validator checks before a run is scored: the system output table against the index."""

    system: str
    index: str
    options: Any  # mfscore.validation.options.ValidatorOptions


@dataclass(frozen=True)
class Inputs:
    """Where a run's input files are: every file it reads lies under one of ``roots`` (name -> directory);
    ``tables`` are the files planning reads (the jobs' own files are ``Task.blobs``)."""

    roots: dict[str, str]
    tables: tuple[str, ...]


class Task(ABC):
    """A scorer, as both runners see it. Subclasses set the class attributes and the five methods.

    ``resource`` names the resource class that scores the jobs on a cluster, one a scorer pool pulls
    (``mask``: image masks, ``video``: HDF5 video masks, ``json``: provenance JSON, ``detection``: a
    detection subset's metrics and bootstrap slices; the cluster's job kinds are these), or ``PLANNER``
    when per-trial work is microseconds and the jobs are scored where they are planned (shipping them
    would cost more). A ``portable`` task's jobs read nothing but the tables and the plan's own files
    (``Plan.generated``), so they can be scored where they are planned too: the embedded runner scores
    them in its own process, one after another, and a cluster does for plans of fewer trials than its
    threshold (``scored_where_planned``). ``options_type`` checks its own values
    (``mfscore.options``); ``mfscore.tasks.decode_options`` makes them from the wire.
    ``threads`` says ``score`` spends its time where the GIL is released (OpenCV decode, zlib, numpy),
    so the local runner scores its jobs on threads of one process by default. ``primary_metric`` and
    ``metric_names`` are regular expressions of the names its results (``mfscore.results``) may give its primary
    metric and its metrics: the published schema of its results reads them (``mfscore.results_schema``).
    ``package_fields`` are the option fields a submission package fills in (field -> ``SYSTEM_OUTPUT`` or
    ``PACKAGE_DIRECTORY``): every other input path is on the reference side (docs/release.md).
    ``aggregate_reports`` and ``aggregate_results`` say what a submitter receives at the aggregate tier
    (``mfscore.release``, docs/release.md).
    """

    name: ClassVar[str]
    options_type: ClassVar[type]
    work_type: ClassVar[type]
    record_type: ClassVar[type]
    resource: ClassVar[str]
    portable: ClassVar[bool] = False
    threads: ClassVar[bool] = False
    primary_metric: ClassVar[str]
    metric_names: ClassVar[str]
    aggregate_reports: ClassVar[tuple[str, ...]]
    """``fnmatch.fnmatchcase`` patterns of the report files that are aggregates (a row per query or partition: no
    per-trial row, no figure, no provenance), '/'-separated and relative to the output directory; a leading ``*``
    covers the output prefix and a query's directory (``*_mask_score.csv``: ``index_0/run_mask_score.csv``)."""
    aggregate_results: ClassVar[tuple[str, ...]] = ("rows",)
    """The parts of the results (``rows``, ``curves``, ``records``) the aggregate tier keeps; ``task``, ``primary`` and
    ``metrics`` always are. Not ``curves``: an ROC curve's steps count the targets."""
    package_fields: ClassVar[dict[str, str]] = {"system": SYSTEM_OUTPUT}

    @abstractmethod
    def inputs(self, options) -> Inputs:
        ...

    @abstractmethod
    def plan(self, options) -> Plan:
        ...

    def blobs(self, work) -> dict[str, str]:
        """The files one job reads besides the tables (masks, HDF5, JSON): name -> path, '' for none."""
        return {}

    def trials(self, work) -> int:
        """How many trials one job's work holds, for the progress a run reports and the size of a portable task's
        plan (``scored_where_planned``): one, unless a job scores many (detection: its share of a subset's)."""
        return 1

    def report_blobs(self, plan: Plan, outcomes: dict[JobKey, Any]) -> list[JobKey]:
        """The jobs whose blobs the report reads again (a mask run's per-probe visuals): none by default. A local
        runner's are on disk already; a cluster fetches them to where the plan names them first (``report_files``)."""
        return []

    def with_blobs(self, work, paths: dict[str, str]):
        """``work`` reading its blobs from ``paths`` instead (a worker's fetched copies)."""
        return work

    def blobs_in_memory(self, work) -> int | None:
        """None: a worker fetches the job's blobs into files (``with_blobs`` gets their paths). A number: the job
        reads its blobs from memory, each at most that many bytes (``with_blobs`` gets ``ImageBytes``)."""
        return None

    def validation(self, options) -> Submission | None:
        """The submission the validator checks first; None: planning's own checks are the validation."""
        return None

    @abstractmethod
    def score(self, work):
        ...

    def read_ahead(self, work) -> None:
        """Told, before a job is scored, which job this thread scores next (None: no other), by a runner that scores
        them one after another: a task may start reading that job's files meanwhile. By default nothing."""

    @abstractmethod
    def report(self, plan: Plan, outcomes: dict[JobKey, Any], stage) -> Lines:
        ...


def scored_where_planned(task: Task, plan: Plan, pool_min_trials: int | None = None) -> bool:
    """Whether ``plan``'s jobs are scored in the process that planned them rather than by the task's pool: a
    ``PLANNER`` task's always; a portable task's by a runner without pools (``pool_min_trials`` None, the embedded
    one) and when its jobs hold fewer than ``pool_min_trials`` trials (``Task.trials``); any other task's never."""
    if task.resource == PLANNER:
        return True
    if not task.portable:
        return False
    return pool_min_trials is None or sum(task.trials(job.work) for job in plan.jobs) < pool_min_trials


def with_generated(task: Task, work, generated: dict[str, bytes], directory: str):
    """``work`` reading the plan-made files it names (keys of ``generated``) from ``directory``, where its runner
    wrote them (``mfscore.run.local.written``); other work unchanged."""
    blobs = task.blobs(work)
    moved = {name: os.path.join(directory, *key.split("/")) for name, key in blobs.items() if key in generated}
    return task.with_blobs(work, {**blobs, **moved}) if moved else work


def run_files(task: Task, options, plan: Plan, exists: Callable[[str], bool] = os.path.isfile
              ) -> tuple[list[tuple[str, str]], list[str]]:
    """((path, key) of every file the planned run reads, the keys of its tables): the tables planning read, then each
    job's files that ``exists`` (not the plan's own, ``Plan.generated``), each once."""
    inputs = task.inputs(options)
    tables = [(path, key_of(path, inputs.roots, what=f"the table {path}")) for path in inputs.tables + plan.tables]
    blobs = [(path, key_of(path, inputs.roots, what=f"the file {path}"))
             for job in plan.jobs for path in task.blobs(job.work).values()
             if path and path not in plan.generated and exists(path)]
    return list(dict.fromkeys(tables + blobs)), list(dict.fromkeys(key for _, key in tables))


def report_files(task: Task, plan: Plan, outcomes: dict[JobKey, Any]) -> list[str]:
    """The paths, as planned, of the files ``task``'s report reads again (``Task.report_blobs``), each once."""
    works = {job.key: job.work for job in plan.jobs}
    paths = (path for key in task.report_blobs(plan, outcomes) for path in task.blobs(works[key]).values())
    return list(dict.fromkeys(path for path in paths if path))


def path_fields(options) -> list[str]:
    """The options' input-path fields (declared with ``metadata=PATH``)."""
    return [f.name for f in dataclasses.fields(options) if f.metadata.get("path")]


def relocated(options, inputs: Inputs, roots: dict[str, str]):
    """The options with every input path moved from ``inputs.roots[name]`` to ``roots[name]``.

    A path under no root cannot be moved (a cluster receives only files under the roots).
    """
    changes = {}
    for name in path_fields(options):
        value = getattr(options, name)
        if value is None:
            continue
        changes[name] = moved(str(value), inputs.roots, roots, what=f"the input {value}")
    return dataclasses.replace(options, **changes)


def moved(path: str, old: dict[str, str], new: dict[str, str], *, what: str) -> str:
    """``path`` (under one of the ``old`` roots) under the same-named ``new`` root."""
    key = key_of(path, old, what=what)
    root, _, relative = key.partition("/")
    return os.path.join(new[root], *relative.split("/")) if relative else new[root]


def key_of(path: str, roots: dict[str, str], *, what: str) -> str:
    """The '/'-separated key ``<root name>/<path relative to it>`` of a path under one of ``roots`` (the deepest)."""
    normal = os.path.normpath(path)
    best = None
    for name, root in roots.items():
        relative = os.path.relpath(normal, os.path.normpath(root))
        if relative.split(os.sep)[0] == os.pardir or os.path.isabs(relative):
            continue
        if best is None or len(relative) < len(best[1]):
            best = (name, relative)
    if best is None:
        raise OptionError(f"{what} is outside the run's input directories ({', '.join(roots.values())})")
    name, relative = best
    return name if relative == os.curdir else f"{name}/{relative.replace(os.sep, '/')}"
