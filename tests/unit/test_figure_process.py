"""figure_process: jobs drawn in a worker process, a failure raised in the parent, an abandoned worker stopped."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mfscore.run import figure_process


@pytest.fixture
def worker(monkeypatch):
    """A worker even though the test process has matplotlib; it imports this folder's ``figure_jobs``."""
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    figure_process.start()
    assert figure_process._worker is not None
    yield figure_process._worker
    figure_process.abandon()


def test_jobs_run_in_the_worker_in_order(worker, tmp_path):
    target = tmp_path / "drawn.txt"
    for line in ("a", "b"):
        figure_process.draw("figure_jobs:append_line", str(target), line)
    assert not target.exists() or target.read_text() in ("", "a\n", "a\nb\n")
    figure_process.finish()
    assert target.read_text() == "a\nb\n"
    assert worker.returncode == 0


def test_a_failed_figure_raises_in_the_parent(worker, tmp_path):
    figure_process.draw("figure_jobs:fail", "no room on the canvas")
    figure_process.draw("figure_jobs:append_line", str(tmp_path / "later.txt"), "x")
    with pytest.raises(ValueError, match="no room on the canvas"):
        figure_process.finish()
    assert not (tmp_path / "later.txt").exists()


def test_figures_sent_to_a_worker_that_died_are_drawn_here(worker, tmp_path):
    target = tmp_path / "drawn.txt"
    figure_process.draw("figure_jobs:append_line", str(target), "before")
    worker.kill()
    worker.wait()
    figure_process.draw("figure_jobs:append_line", str(target), "after")
    figure_process.finish()
    assert target.read_text() in ("before\nafter\n", "before\nbefore\nafter\n")


def test_abandon_stops_the_worker(worker):
    figure_process.abandon()
    assert worker.returncode is not None and figure_process._worker is None


def test_without_a_worker_jobs_run_here(tmp_path):
    assert figure_process._worker is None
    figure_process.draw("figure_jobs:append_line", str(tmp_path / "here.txt"), "z")
    assert (tmp_path / "here.txt").read_text() == "z\n"
    figure_process.finish()
