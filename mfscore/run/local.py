"""The local runner (the embedded CLI): plan, score in a process pool with progress, fold, report into staged outputs,
with the results model and the run's provenance beside the reports."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import TextIO

from mfscore import tasks
from mfscore.records import complete, fold
from mfscore.run import figure_process
from mfscore.run.staged_outputs import StagedOutputs
from mfscore.run.allocator import keep_freed_memory
from mfscore.run.pool import FORKED, PROCESSES, THREADS, pool_map
from mfscore.run_record import RunRecord, run_record
from mfscore.tasks.base import OUTPUT_DIRECTORY, Lines, Plan, Task, scored_where_planned, with_generated


def score_work(task_name: str, work):
    """One job's outcome (a module-level function, so a process pool can run it)."""
    return tasks.get(task_name).score(work)


def score_plan(task: Task, plan: Plan, processes: int | None = None, *, interactive: bool = False) -> dict:
    """Every job of ``plan`` scored and folded; a ``PLANNER`` or ``portable`` task's jobs are scored in this process,
    in plan order, reading the plan's own files (``Plan.generated``) from a scratch directory.

    ``processes`` None (the default) scores on one worker per CPU: threads for a ``threads`` task,
    processes forked from this one for any other; a number asks for that many fresh processes.
    """
    if scored_where_planned(task, plan):
        count, workers = 1, PROCESSES
    elif processes is None:
        count, workers = os.cpu_count() or 1, THREADS if task.threads else FORKED
    else:
        count, workers = processes, PROCESSES
    with written(plan.generated) as directory:
        works = [with_generated(task, job.work, plan.generated, directory) for job in plan.jobs]
        outcomes = pool_map(partial(score_work, task.name), works, count,
                            interactive=interactive, workers=workers, label=f"scoring ({task.name})",
                            read_ahead=task.read_ahead)
    return fold(zip((job.key for job in plan.jobs), outcomes))


@contextlib.contextmanager
def written(generated: dict[str, bytes]) -> Iterator[str]:
    """A scratch directory holding a plan's own files under their keys (none without any), removed afterwards."""
    if not generated:
        yield ""
        return
    directory = tempfile.mkdtemp(prefix="mfscore-planned-")
    try:
        write_generated(generated, directory)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def write_generated(generated: dict[str, bytes], directory: str | os.PathLike) -> None:
    """A plan's own files (``Plan.generated``) under ``directory``, each at its key."""
    for key, data in generated.items():
        path = os.path.join(directory, *key.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


RESULTS_FILE = "results.json"  # <prefix>_results.json: the results model, the same bytes on every runner
RUN_FILE = "run.json"          # <prefix>_run.json: the run's provenance (its times differ from run to run)


def beside_reports(file: str, prefix: str) -> str:
    """The suffix that names ``file`` beside reports of ``prefix`` (``_results.json``; ``results.json`` when the
    reports have no prefix, as the provenance and video-temporal scorers' directories)."""
    return f"_{file}" if prefix else file


def is_provenance(name: str) -> bool:
    """Whether ``name`` (relative to the output directory) is a run's provenance file, which records times and so
    differs from run to run: comparisons of two runs' files leave it out."""
    return "/" not in name and (name == RUN_FILE or name.endswith("_" + RUN_FILE))


def report_into(task: Task, plan: Plan, outcomes: dict, out_root: str, *,
                record: Callable[[], RunRecord] | None = None) -> Lines:
    """Write the report under ``out_root`` all or nothing; the files land only when the report has no error.

    Beside the task's files go its results (``RESULTS_FILE``) and, given ``record``, the run's provenance
    (``RUN_FILE``, also returned as ``Lines.record``).
    """
    stage = StagedOutputs(out_root)
    try:
        lines = task.report(plan, complete(outcomes, (job.key for job in plan.jobs)), stage)
        if lines.error is None and lines.results is not None:
            stage.path(beside_reports(RESULTS_FILE, stage.prefix)).write_bytes(lines.results.to_json())
        if lines.error is None and record is not None:  # hashing the inputs while the figures are drawn
            lines.record = record()
            stage.path(beside_reports(RUN_FILE, stage.prefix)).write_bytes(lines.record.to_json())
        figure_process.finish()
    except BaseException:
        stage.abort()
        raise
    if lines.error is None:
        stage.commit()
    else:
        stage.abort()
    return lines


def placed(lines: list[str], out_root: str) -> list[str]:
    """Report lines with the output directory named as the user named it (DIR of DIR/PREFIX)."""
    directory = os.path.dirname(out_root) or "."
    return [line.replace(OUTPUT_DIRECTORY, directory) for line in lines]


def emit(stdout: list[str], stderr: list[str], out: TextIO | None = None) -> None:
    """Print a step's lines: ``stderr`` to standard error, ``stdout`` to ``out`` (standard output by default)."""
    for line in stderr:
        print(line, file=sys.stderr)
    for line in stdout:
        print(line, file=out or sys.stdout)


def run_local(task: Task | str, options, out_root: str, *, processes: int | None = None, out: TextIO | None = None,
              progress: bool = True) -> Lines:
    """Run ``task`` on local files; its report's lines, with the exit status, the results and the run's provenance
    (a fatal problem raises after its lines are printed). What the steps print for standard output goes to ``out``;
    ``progress`` False shows no progress bar.

    The figure worker starts first, with the formats the options draw (their ``draws()``); a task given by its
    registered name is imported after that, so the worker imports the plotting modules while this process imports
    the task's libraries (pandas: a quarter of a detection command of 10⁵ trials)."""
    started = time.time()
    keep_freed_memory()
    formats = options.draws()
    if formats:
        figure_process.start(formats)
    try:
        task = tasks.get(task) if isinstance(task, str) else task
        plan = task.plan(options)
        emit(plan.stdout, plan.stderr, out)
        outcomes = score_plan(task, plan, processes, interactive=progress and sys.stderr.isatty())
        inputs = task.inputs(options)
        lines = report_into(task, plan, outcomes, out_root, record=lambda: run_record(
            task, plan, inputs, runner="embedded", started=started, finished=time.time()))
    except BaseException:
        figure_process.abandon()
        raise
    emit(placed(lines.stdout, out_root), lines.stderr, out)
    if lines.error is not None:
        raise lines.error
    return lines
