"""The local runner (the embedded CLI): plan, score in a process pool with progress, fold, report into staged outputs."""

from __future__ import annotations

import os
import sys
from functools import partial

from mfscore import tasks
from mfscore.records import complete, fold
from mfscore.run import figure_process
from mfscore.run.staged_outputs import StagedOutputs
from mfscore.run.allocator import keep_freed_memory
from mfscore.run.pool import FORKED, PROCESSES, THREADS, pool_map
from mfscore.tasks.base import OUTPUT_DIRECTORY, PLANNER, Lines, Plan, Task


def score_work(task_name: str, work):
    """One job's outcome (a module-level function, so a process pool can run it)."""
    return tasks.get(task_name).score(work)


def score_plan(task: Task, plan: Plan, processes: int | None = None, *, interactive: bool = False) -> dict:
    """Every job of ``plan`` scored and folded; a ``PLANNER`` task's jobs are scored in this process.

    ``processes`` None (the default) scores on one worker per CPU: threads for a ``threads`` task,
    processes forked from this one for any other; a number asks for that many fresh processes.
    """
    if task.resource == PLANNER:
        count, workers = 1, PROCESSES
    elif processes is None:
        count, workers = os.cpu_count() or 1, THREADS if task.threads else FORKED
    else:
        count, workers = processes, PROCESSES
    outcomes = pool_map(partial(score_work, task.name), [job.work for job in plan.jobs], count,
                        interactive=interactive, workers=workers, label=f"scoring ({task.name})")
    return fold(zip((job.key for job in plan.jobs), outcomes))


def report_into(task: Task, plan: Plan, outcomes: dict, out_root: str) -> Lines:
    """Write the report under ``out_root`` all or nothing; the files land only when the report has no error."""
    stage = StagedOutputs(out_root)
    try:
        lines = task.report(plan, complete(outcomes, (job.key for job in plan.jobs)), stage)
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


def emit(stdout: list[str], stderr: list[str]) -> None:
    for line in stderr:
        print(line, file=sys.stderr)
    for line in stdout:
        print(line)


def run_local(task: Task, options, out_root: str, *, processes: int | None = None) -> int:
    """Run ``task`` on local files; returns the exit status (a fatal problem raises after its lines are printed)."""
    keep_freed_memory()
    if task.draws(options):
        figure_process.start()
    try:
        plan = task.plan(options)
        emit(plan.stdout, plan.stderr)
        outcomes = score_plan(task, plan, processes, interactive=sys.stderr.isatty())
        lines = report_into(task, plan, outcomes, out_root)
    except BaseException:
        figure_process.abandon()
        raise
    emit(placed(lines.stdout, out_root), lines.stderr)
    if lines.error is not None:
        raise lines.error
    return lines.status
