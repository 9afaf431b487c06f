"""Scoring jobs one at a time in a child process held to a wall time and a memory limit.

A job that takes too long or too much memory must not hold a scorer for good nor kill it: the child scores
(``Task.score``) what the parent sends it, and the parent waits for the answer at most the wall limit, looking at
the child's resident memory every ``WATCH_SECONDS`` meanwhile and at its peak (``VmHWM``) after. A job whose
memory grew past the limit over what the child held before it, or that ran past the wall limit, raises
``LimitExceeded`` (its outcome, if any, is dropped); a child stopped mid-job is replaced for the next. A child that
dies while it scores (a crash in a C library, the kernel's OOM killer) raises ``ScoringStopped``.

Memory is watched rather than capped with ``RLIMIT_AS``: under a cap, an allocation that fails inside a library
comes out as that library's error, OpenCV's ``std::bad_alloc`` or, worse, a PNG "could not be decoded" that the
task reports as an unreadable mask, a wrong score rather than a refused job.

The child lives as long as it stays within the limits, so what a task keeps between jobs (decoded masks a
probe's other jobs read) stays with it. It is a new interpreter (``spawn``): the parent is a service with
threads, which a fork would copy mid-lock. It exits when the parent goes (its pipe closes).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from mfscore.errors import MfscoreError

START_SECONDS = 120  # a new interpreter importing every task, on a loaded machine
WATCH_SECONDS = 0.05  # how often the child's memory is looked at while it scores


class LimitExceeded(MfscoreError):
    """A job took more than the wall limit or more memory than the memory limit."""


class ScoringStopped(MfscoreError):
    """The child process stopped while it scored a job (killed, or a crash)."""


@dataclass(frozen=True)
class Limits:
    """A job's wall time in seconds and the memory it may take on top of an idle scoring process, in bytes
    (0: no limit)."""

    seconds: float = 0
    memory_bytes: int = 0


class LimitedScorer:
    """``score(task_name, work, what)``: the task's outcome, computed in the child within ``limits`` (blocking;
    one job at a time). ``what`` names the job in the errors (its files). ``close()`` stops the child."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._lock = threading.Lock()
        self._child: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def score(self, task_name: str, work: Any, what: str) -> Any:
        with self._lock:
            conn = self._started()
            base = _memory(self._child.pid, "VmRSS")
            conn.send((task_name, work))
            deadline = time.monotonic() + self.limits.seconds if self.limits.seconds else None
            while not conn.poll(WATCH_SECONDS):
                if deadline is not None and time.monotonic() > deadline:
                    self._stop()
                    raise LimitExceeded(f"{what}: exceeded the {self.limits.seconds:g} s wall limit "
                                        "(MFSCORE_JOB_SECONDS)")
                if self._over(_memory(self._child.pid, "VmRSS") - base):
                    self._stop()
                    raise self._memory_exceeded(what)
            try:
                kind, value, peak = conn.recv()
            except (EOFError, OSError):
                raise ScoringStopped(f"{what}: the scoring process stopped ({self._stopped()}) while it scored "
                                     "the job") from None
            if self._over(peak - base if peak else 0):
                self._stop()  # the child keeps what it freed (keep_freed_memory): the next job starts afresh
                raise self._memory_exceeded(what)
            if kind == "raised":
                is_ours, sentence = value
                raise (MfscoreError if is_ours else RuntimeError)(sentence)
            return value

    def start(self) -> None:
        """Start the child now, not on the first job: a pool starting up pays its imports (0.35–0.40 s of CPU) before
        any caller's job waits for them. ``ScoringStopped`` if it does not start; the first job tries again."""
        with self._lock:
            self._started()

    def _over(self, taken: int) -> bool:
        return bool(self.limits.memory_bytes) and taken > self.limits.memory_bytes

    def _memory_exceeded(self, what: str) -> LimitExceeded:
        return LimitExceeded(f"{what}: exceeded the {self.limits.memory_bytes} bytes memory limit "
                             "(MFSCORE_JOB_MEMORY_BYTES)")

    def close(self) -> None:
        """Stop the child, now: a job it is scoring ends in ``ScoringStopped``."""
        child = self._child
        if child is not None:
            child.kill()

    def _started(self) -> Connection:
        if self._child is None or not self._child.is_alive():
            self._stop()
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            self._child = context.Process(target=serve, args=(child,),
                                          name="mfscore-scoring", daemon=True)
            self._child.start()
            child.close()
            self._conn = parent
            try:  # its start is not the job's time
                ready = parent.poll(START_SECONDS) and parent.recv() == ("ready", None)
            except (EOFError, OSError):
                ready = False
            if not ready:
                self._stop()  # a late "ready" must not be read as a job's answer
                raise ScoringStopped(f"the scoring process did not start within {START_SECONDS} s")
        return self._conn

    def _stopped(self) -> str:
        """How the child ended: its signal or exit status."""
        self._child.join(5)
        code = self._child.exitcode
        self._stop()
        if code is None:
            return "still running"
        return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.join()
            self._child = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _memory(pid: int | str, field: str) -> int:
    """A process's ``field`` of /proc/<pid>/status (``VmRSS``: resident now, ``VmHWM``: its peak) in bytes; 0 where
    unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _peak_from_now() -> bool:
    """Start this process's resident peak (``VmHWM``) again from what it holds now; False where Linux cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def serve(conn: Connection) -> None:
    """The child: load the tasks, say it is ready, then score each ``(task name, work)`` received, answering
    ``(kind, value, peak)``: ``("ok", outcome, …)`` or ``("raised", (is an MfscoreError, sentence), …)``, with the
    resident peak of the job in bytes (0 where unknown)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle
    from mfscore import tasks
    from mfscore.run.allocator import keep_freed_memory
    from mfscore.run.collector import collect_less

    tasks.load_all()
    keep_freed_memory()
    collect_less()
    conn.send(("ready", None))
    while True:
        try:
            task_name, work = conn.recv()
        except (EOFError, OSError):
            return
        measured = _peak_from_now()
        try:
            answer = ("ok", tasks.get(task_name).score(work))
        except Exception as error:
            answer = ("raised", _said(error))
        peak = _memory("self", "VmHWM") if measured else 0
        try:
            conn.send((*answer, peak))
        except Exception as error:  # an outcome that does not pickle
            conn.send(("raised", _said(error), peak))


def _said(error: Exception) -> tuple[bool, str]:
    """An error as it crosses to the parent: whether it is an ``MfscoreError``, and its sentence."""
    if isinstance(error, MfscoreError):
        return True, error.sentence()
    return False, f"{type(error).__name__}: {error}"
