"""Scoring jobs in a process pool or on threads, with a progress bar on an interactive terminal.

Jobs stream through ``imap`` in order, so memory holds a few inputs per worker and the small
records, whatever the number of jobs. Threads serve work that releases the GIL (OpenCV decode,
zlib, numpy) without the start-up of processes; forked processes serve Python-bound work (JSON)
without importing everything again.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

PROCESSES, THREADS, FORKED = "processes", "threads", "forked"
MIN_FORKED_JOBS = 64  # below this, forking costs about what it saves

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
             workers: str = PROCESSES, label: str = "scoring") -> list[R]:
    """``function`` over ``jobs`` in ``processes`` workers (capped by CPUs and jobs), in job order.

    ``workers``: ``PROCESSES`` (fresh processes), ``THREADS`` (threads of this process, for work that
    releases the GIL), ``FORKED`` (processes forked from this one, which start with its modules loaded;
    fresh processes where fork is not safe).
    """
    count = max(1, min(processes, len(jobs), os.cpu_count() or 1))
    if workers == FORKED and len(jobs) < MIN_FORKED_JOBS:
        count = 1
    if count == 1:
        return list(_progress(map(function, jobs), len(jobs), interactive, label))
    if workers == THREADS:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(count) as pool:
            return list(_progress(pool.map(function, jobs), len(jobs), interactive, label))
    fork = workers == FORKED and sys.platform.startswith("linux")
    context = multiprocessing.get_context("fork" if fork else "spawn" if os.name == "nt" else "forkserver")
    chunk = max(1, len(jobs) // (count * 8)) if fork else 1
    with context.Pool(count) as pool:
        return list(_progress(pool.imap(function, jobs, chunksize=chunk), len(jobs), interactive, label))
