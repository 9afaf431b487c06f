"""Scoring jobs in a process pool or on threads, with a progress bar on an interactive terminal.

Jobs stream through ``imap`` in order, so memory holds a few inputs per worker and the small
records, whatever the number of jobs. Threads serve work that releases the GIL (OpenCV decode,
zlib, numpy) without the start-up of processes; forked processes serve Python-bound work (JSON)
without importing everything again.

A Ctrl-C interrupts the command, not its workers: worker processes ignore SIGINT (they are born with it
blocked, then ignore it), and the command stops them; threads still scoring a job when it is interrupted
finish it, the jobs not started are dropped. So an interrupted run prints one line, no worker's traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
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


def _ignore_interrupts() -> None:
    """A worker process's first step: a Ctrl-C is the command's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _interrupts_held():
    """SIGINT blocked while workers are started, so that none is born able to take it; one that arrives
    meanwhile is delivered to this process once they are."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _thread_map(function: Callable[[J], R], jobs: list[J], count: int, interactive: bool, label: str) -> list[R]:
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(count)
    try:
        results = list(_progress(pool.map(function, jobs), len(jobs), interactive, label))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # interrupted: drop the jobs not started, wait for none
        raise
    pool.shutdown()
    return results


def _one_by_one(function: Callable[[J], R], jobs: list[J], read_ahead: Callable[[J | None], None]) -> Iterator[R]:
    """``function`` over ``jobs`` on this thread, ``read_ahead`` told each job's successor before the job is scored."""
    try:
        for job, following in zip(jobs, [*jobs[1:], None]):
            read_ahead(following)
            yield function(job)
    finally:
        read_ahead(None)


def pool_map(function: Callable[[J], R], jobs: list[J], processes: int, *, interactive: bool,
             workers: str = PROCESSES, label: str = "scoring",
             read_ahead: Callable[[J | None], None] | None = None) -> list[R]:
    """``function`` over ``jobs`` in ``processes`` workers (capped by CPUs and jobs), in job order.

    ``workers``: ``PROCESSES`` (fresh processes), ``THREADS`` (threads of this process, for work that
    releases the GIL), ``FORKED`` (processes forked from this one, which start with its modules loaded;
    fresh processes where fork is not safe). Scoring on this thread alone, ``read_ahead`` is told the job
    that follows each one before it is scored (``Task.read_ahead``).
    """
    count = max(1, min(processes, len(jobs), os.cpu_count() or 1))
    if workers == FORKED and len(jobs) < MIN_FORKED_JOBS:
        count = 1
    if count == 1:
        scored = _one_by_one(function, jobs, read_ahead) if read_ahead else map(function, jobs)
        return list(_progress(scored, len(jobs), interactive, label))
    if workers == THREADS:
        return _thread_map(function, jobs, count, interactive, label)
    fork = workers == FORKED and sys.platform.startswith("linux")
    import multiprocessing

    context = multiprocessing.get_context("fork" if fork else "spawn" if os.name == "nt" else "forkserver")
    chunk = max(1, len(jobs) // (count * 8)) if fork else 1
    with _interrupts_held():
        pool = context.Pool(count, initializer=_ignore_interrupts)
    with pool:  # leaving it terminates the workers
        return list(_progress(pool.imap(function, jobs, chunksize=chunk), len(jobs), interactive, label))
