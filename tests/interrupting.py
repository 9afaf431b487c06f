"""Ctrl-C as a terminal sends it: SIGINT to a command's whole process group, at a moment the test chooses.

``interrupt(argv, patch)`` runs ``python -m mfscore ARGV`` in a process group of its own with a
``sitecustomize`` (every Python process the command starts imports it: its workers too) that holds one
step of the command (``PATCHES``) and touches a marker file when the step begins; once the marker is
there it sends SIGINT to the group and waits for the command to end. Nothing else is changed: the
signal, the processes and their handling of it are real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

PATCHES = {
    # every scoring job (threads, forked or fresh processes, or this process) waits before it scores
    "jobs": """
        import functools
        import mfscore.run.local as _local
        _original = _local.score_work
        @functools.wraps(_original)
        def score_work(task_name, work):
            _reached()
            time.sleep(HOLD)
            return _original(task_name, work)
        _local.score_work = score_work
    """,
    # submit: the run is submitted and watched; the first status it shows holds
    "watch": """
        import contextlib
        import mfscore.services.commands.report as _report
        @contextlib.contextmanager
        def _progress(run_id, interactive):
            def show(status):
                _reached()
                time.sleep(HOLD)
            yield show
        _report._progress = _progress
    """,
    # submit: every upload stream holds once it has named the run and declared its first file; every file is sent,
    # as to a cluster that holds none of them yet
    "upload": """
        import mfscore.services.commands.upload as _upload
        _upload.declare_inputs = lambda config, run_id, declared: [file.name for file in declared]
        _original = _upload._requests
        def _requests(run_id, files, sent):
            for i, request in enumerate(_original(run_id, files, sent)):
                if i == 2:
                    _reached()
                    time.sleep(HOLD)
                yield request
        _upload._requests = _requests
    """,
}

PRELUDE = """
import os, sys, time
FIGURE_WORKER = "mfscore.run.figure_process" in sys.orig_argv  # holds nothing: left as it is
HOLD = float(os.environ["MFSCORE_TEST_HOLD"])
def _reached():
    open(os.environ["MFSCORE_TEST_MARKER"], "a").close()
"""


@dataclass
class Interrupted:
    status: int
    stdout: str
    stderr: str
    descendants: list[tuple[int, str]]  # the command's processes when it was interrupted: (pid, start time)
    seconds: float           # from the signal to its end


def interrupt(argv: list[str], patch: str, tmp_path: Path, *, hold: float = 60.0, timeout: float = 120.0,
              cwd: Path | None = None) -> Interrupted:
    site = tmp_path / "site"
    site.mkdir(parents=True, exist_ok=True)
    patch_code = textwrap.indent(textwrap.dedent(PATCHES[patch]), "    ")
    (site / "sitecustomize.py").write_text(f"{PRELUDE}\nif not FIGURE_WORKER:\n{patch_code}")
    marker = tmp_path / "reached"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "MFSCORE_TEST_MARKER": str(marker), "MFSCORE_TEST_HOLD": str(hold)}
    process = subprocess.Popen([sys.executable, "-m", "mfscore", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, process_group=0,
                               preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + timeout
        while not marker.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                out, err = process.communicate()
                raise AssertionError(f"the command ended (status {process.returncode}) or timed out before the "
                                     f"step it was to be interrupted in:\n{out}\n{err}")
            time.sleep(0.05)
        time.sleep(0.3)  # the other workers reach the step too
        descendants = _descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        out, err = process.communicate(timeout=timeout)
        return Interrupted(process.returncode, out, err, descendants, time.monotonic() - sent)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _as_from_a_terminal() -> None:
    """SIGINT's default disposition, as a shell gives a command it starts in the foreground: a suite started in the
    background (``make test &``) has SIGINT ignored, which its children would inherit, and Python then never raises
    KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below ``pid`` (Linux: /proc/<pid>/task/<tid>/children), with its start time."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += [(child, _stat(child)[1]) for child in children]
            queue += children
    return found


def _stat(pid: int) -> tuple[str, str]:
    """(state, start time) of ``pid``, or ("", "") when there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return "", ""
    return fields[0], fields[19]


def alive(process: tuple[int, str]) -> bool:
    """Whether the process (pid, start time) still runs: not gone, not a zombie, its pid not reused since."""
    state, started = _stat(process[0])
    return state not in ("", "Z") and started == process[1]
