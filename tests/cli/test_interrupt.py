"""Ctrl-C during an embedded command: exit status 130 and one line, no traceback from the command or from
any process it started (the figure worker, a process pool), no process left behind, nothing written.

The signal is real: SIGINT to the command's process group, as a terminal sends it, while every scoring job
is held (``tests/interrupting.py``), so the figure worker and the workers are alive when it arrives.
"""

from __future__ import annotations

import sys
import time

import pytest
from interrupting import alive, interrupt
from output_files import everything_under

from mfscore.sample_data.examples import example_arguments

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; sends SIGINT to a group")

ONE_LINE = "mfscore: interrupted; no report was written\n"


@pytest.mark.parametrize("task, extra", [
    ("mask", ["--plots"]),             # a thread per CPU, and the figure worker (--plots: the average ROCs)
    ("mask", ["-p", "2", "--plots"]),  # two worker processes (forkserver), and the figure worker
    ("detection", []),                 # scored in the command's own process, and the figure worker
    ("video-spatial", ["-procs", "2"]),
])
def test_ctrl_c_is_one_line(task, extra, tmp_path):
    argv = [task, *example_arguments(task, tmp_path / "data", tmp_path / "out"), *extra]
    result = interrupt(argv, "jobs", tmp_path / "interrupt", hold=3.0)
    assert result.stderr == ONE_LINE, result.stderr
    assert result.status == 130 and result.stdout == ""
    deadline = time.monotonic() + 10
    while any(alive(process) for process in result.descendants) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [process for process in result.descendants if alive(process)]
    assert not left, f"processes of the command outlived it: {left}"
    assert not (tmp_path / "out").exists() or everything_under(tmp_path / "out") == []


def test_the_figure_worker_was_there(tmp_path):
    """The mask run above has a figure worker to interrupt (else the test would prove nothing about it)."""
    argv = ["mask", *example_arguments("mask", tmp_path / "data", tmp_path / "out"), "--plots"]
    result = interrupt(argv, "jobs", tmp_path / "interrupt", hold=3.0)
    assert result.status == 130
    assert len(result.descendants) >= 1  # the figure worker, in a process group of its own
