"""Figures drawn by a second process that imports matplotlib while this one reads and scores.

Importing matplotlib costs a command about 0.3 s of one core before its first line is drawn. A command that will
draw calls ``start`` first thing, before it imports its task's libraries, with the formats its figures are written
in (its options' ``draws()``): a worker process imports the plotting modules and those formats' writers on the other
core while the command imports pandas, reads its tables and scores, then draws what ``draw`` sends it, while the
command writes its tables. A format not declared is still written, its writer imported when the first such figure is
saved; a writer declared and not used (PDF's, 0.1 s) is only a waste, so a run declares only what it writes.
``finish`` waits for the figures (the staged outputs commit after it). Without a worker (a process that has
matplotlib already, the cluster's aggregator, a test) ``draw`` calls the drawing function in this process, and so
does ``finish`` for every figure sent to a worker that died: the worker saves time, it is never needed.

Jobs are ``"module:function"`` names and picklable arguments, sent by this process to its own child. On Linux, from
a process with one thread and no matplotlib, the worker is forked: it starts with the command's modules already
loaded, CPU a new interpreter would spend importing them again; elsewhere it is a new ``python -m
mfscore.run.figure_process``. The worker runs in a process group of its own, so a Ctrl-C at the terminal interrupts
the command alone, which stops the worker (``abandon``): an interrupted run prints one line, not the worker's
traceback.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import subprocess

WARM_MODULES = ("mfscore.reports.plots", "matplotlib.backends.backend_agg")  # every figure's canvas is Agg's
FORMAT_MODULES = {"png": (), "pdf": ("matplotlib.backends.backend_pdf", "fontTools.subset")}  # what saving imports
ALL_FORMATS = tuple(FORMAT_MODULES)
PIPE_BYTES = 1 << 20  # Linux's default limit for a process without privileges

_worker: subprocess.Popen | _Forked | None = None
_sent: list[tuple[str, tuple, dict]] = []


def start(formats: tuple[str, ...] = ALL_FORMATS) -> None:
    """Start the worker, warmed for figures written in ``formats`` ("png", "pdf"), unless one runs or this
    process has imported matplotlib already."""
    global _worker
    if _worker is None and "matplotlib" not in sys.modules:
        formats = _known(formats)
        _worker = _forked(formats) or _spawned(formats)
        _widen(_worker.stdin.fileno())


def _widen(pipe: int) -> None:
    """Let the jobs' pipe hold ``PIPE_BYTES``, so that sending a figure (a curve of 10⁵ trials: 150 KB) does not wait
    for a worker still importing: the command goes on writing its tables. Linux only; elsewhere the pipe is as it is."""
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or above the system's limit (fs.pipe-max-size)
        pass


def _spawned(formats: tuple[str, ...]) -> subprocess.Popen:
    import subprocess

    group = {"process_group": 0} if os.name == "posix" else {}  # out of reach of the terminal's Ctrl-C
    return subprocess.Popen([sys.executable, "-m", "mfscore.run.figure_process", *formats],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, **group)


class _Forked:
    """A forked worker, with what this module uses of ``subprocess.Popen``."""

    def __init__(self, pid: int, stdin: BinaryIO, stdout: BinaryIO):
        self.pid, self.stdin, self.stdout, self.returncode = pid, stdin, stdout, None

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _forked(formats: tuple[str, ...]) -> _Forked | None:
    """The worker forked from this process, or None where forking is not safe: not Linux, a second thread (it
    could hold a lock the child would wait on for ever), or any matplotlib module loaded (the worker imports its
    own, without property docs)."""
    import threading

    if (not sys.platform.startswith("linux") or threading.active_count() > 1
            or any(name.partition(".")[0] == "matplotlib" for name in sys.modules)):
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    jobs_read, jobs_write = os.pipe()
    answer_read, answer_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setpgid(0, 0)  # out of reach of the terminal's Ctrl-C
            os.close(jobs_write)
            os.close(answer_read)
            os.dup2(2, 1)  # what a drawing library prints goes to stderr (the descriptors: sys.stdout may be a wrapper)
            with os.fdopen(jobs_read, "rb") as jobs, os.fdopen(answer_write, "wb") as answer:
                serve(jobs, answer, formats)
            status = 0
        finally:
            os._exit(status)  # never back into the command's code, its buffers or its exit handlers
    try:
        os.setpgid(pid, pid)
    except OSError:  # the child has set it, or has already exited
        pass
    os.close(jobs_read)
    os.close(answer_write)
    return _Forked(pid, os.fdopen(jobs_write, "wb"), os.fdopen(answer_read, "rb"))


def draw(target: str, *args, **kwargs) -> None:
    """Call ``target`` (``"module:function"``) with the arguments: in the worker if one runs, else here."""
    if _worker is None:
        _call(target, args, kwargs)
        return
    _sent.append((target, args, kwargs))
    try:
        pickle.dump((target, args, kwargs), _worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        _worker.stdin.flush()
    except OSError:  # the worker died; finish draws its figures here
        pass


def finish() -> None:
    """Wait for every figure sent; a figure that failed raises its exception here."""
    global _worker
    worker, _worker = _worker, None
    if worker is None:
        return
    sent = _sent[:]
    _sent.clear()
    try:
        worker.stdin.close()
    except OSError:
        pass
    try:
        answered = bool(worker.stdout.peek(1))
        failure = pickle.load(worker.stdout) if answered else None
    except BaseException:  # interrupted while the worker draws: stop it, as abandon does
        _stop(worker)
        raise
    worker.stdout.close()
    worker.wait()
    if failure is not None:
        raise failure
    if not answered:
        for target, args, kwargs in sent:
            _call(target, args, kwargs)


def abandon() -> None:
    """Stop the worker without waiting for its figures (the run failed; its outputs are discarded)."""
    global _worker
    worker, _worker = _worker, None
    _sent.clear()
    if worker is not None:
        _stop(worker)


def _stop(worker: subprocess.Popen | _Forked) -> None:
    worker.kill()
    worker.wait()
    for pipe in (worker.stdin, worker.stdout):
        try:
            pipe.close()
        except OSError:
            pass


def import_drawing(formats: tuple[str, ...] = ALL_FORMATS) -> None:
    """Import the plotting modules and the writers of ``formats`` now: the worker does at its start, and so
    does the cluster's aggregator with every format (it draws its runs' figures itself, and no run should pay
    for the imports)."""
    with _without_property_docs():
        for module in WARM_MODULES + tuple(m for f in _known(formats) for m in FORMAT_MODULES[f]):
            importlib.import_module(module)


@contextmanager
def _without_property_docs() -> Iterator[None]:
    """Import matplotlib without writing its artists' property lists into docstrings.

    As each Artist subclass is created, matplotlib documents every settable property in its ``set``
    docstring (``matplotlib.artist.kwdoc``): about a quarter of its import's CPU. A process that only
    draws never reads those docstrings, and what is drawn does not depend on them (tests compare bytes).
    """
    if "matplotlib" in sys.modules:
        yield
        return
    import matplotlib.artist

    kwdoc = matplotlib.artist.kwdoc
    matplotlib.artist.kwdoc = lambda artist: ""
    try:
        yield
    finally:
        matplotlib.artist.kwdoc = kwdoc


def _known(formats: tuple[str, ...]) -> tuple[str, ...]:
    unknown = sorted(set(formats) - set(FORMAT_MODULES))
    if unknown:
        raise ValueError(f"no writer known for figure format {unknown[0]!r} (known: {', '.join(ALL_FORMATS)})")
    return tuple(formats)


def _call(target: str, args, kwargs) -> None:
    module, function = target.split(":")
    getattr(importlib.import_module(module), function)(*args, **kwargs)


def serve(jobs: BinaryIO, answer: BinaryIO, formats: tuple[str, ...] = ALL_FORMATS) -> None:
    """The worker: import the plotting modules for ``formats``, draw every job until the parent closes the
    pipe, then answer None or the first failure (later jobs are skipped)."""
    import_drawing(formats)
    failure = None
    while True:
        try:
            target, args, kwargs = pickle.load(jobs)
        except EOFError:
            break
        if failure is None:
            try:
                _call(target, args, kwargs)
            except Exception as exc:  # noqa: BLE001  (reported to the parent, which raises it)
                failure = exc
    try:
        pickle.dumps(failure)
    except Exception:  # noqa: BLE001  (an exception that cannot travel is sent as its text)
        failure = RuntimeError(f"drawing a figure failed: {failure}")
    try:
        pickle.dump(failure, answer)
        answer.flush()
    except BrokenPipeError:  # the command is gone (killed): nobody waits for the answer
        pass


def _main() -> None:
    """Answer on the stdout the parent reads; anything a drawing library prints goes to stderr."""
    answer = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, answer, tuple(sys.argv[1:]))


if __name__ == "__main__":
    _main()
