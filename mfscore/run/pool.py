"""Scoring jobs in a process pool, with a progress bar on an interactive terminal.

Jobs stream through ``imap`` in order, so memory holds a few inputs per worker and the small
records, whatever the number of jobs.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

J = TypeVar("J")
R = TypeVar("R")


def _progress(results: Iterator[R], total: int, interactive: bool, label: str) -> Iterable[R]:
    if not interactive or total < 2:
        yield from results
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task(label, total=total)
        for result in results:
            progress.advance(task)
            yield result


def pool_map(function: Callable[[J], R], jobs: list[J], processes: int, *, interactive: bool,
             label: str = "scoring") -> list[R]:
    """``function`` over ``jobs`` in ``processes`` workers (capped by CPUs and jobs), in job order."""
    workers = max(1, min(processes, len(jobs), os.cpu_count() or 1))
    if workers == 1:
        return list(_progress(map(function, jobs), len(jobs), interactive, label))
    context = multiprocessing.get_context("spawn" if os.name == "nt" else "forkserver")
    with context.Pool(workers) as pool:
        return list(_progress(pool.imap(function, jobs, chunksize=1), len(jobs), interactive, label))
