"""figure_process: jobs drawn in a worker process, a failure raised in the parent, an abandoned worker stopped."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mfscore.run import figure_process


@pytest.fixture
def started(monkeypatch):
    """``start`` for figures in the given formats, even though the test process has matplotlib; the worker
    imports this folder's ``figure_jobs``."""
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))

    def start(formats=figure_process.ALL_FORMATS):
        figure_process.start(formats)
        assert figure_process._worker is not None
        return figure_process._worker

    yield start
    figure_process.abandon()


@pytest.fixture
def worker(started):
    return started()


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


def test_sending_a_large_figure_does_not_wait_for_a_busy_worker(worker, tmp_path):
    """A figure of 500 KB (a pipe holds 64 KB unless widened) is sent while the worker is still busy: the command
    goes on to its tables instead of waiting for the worker to read."""
    go = tmp_path / "go"
    figure_process.draw("figure_jobs:wait_for", str(go))
    sender = threading.Thread(target=figure_process.draw,
                              args=("figure_jobs:append_line", str(tmp_path / "big.txt"), "x" * 500_000))
    sender.start()
    sender.join(timeout=10)
    sent = not sender.is_alive()
    go.touch()
    sender.join()
    figure_process.finish()
    assert sent
    assert (tmp_path / "big.txt").read_text() == "x" * 500_000 + "\n"


def test_abandon_stops_the_worker(worker):
    figure_process.abandon()
    assert worker.returncode is not None and figure_process._worker is None


def test_without_a_worker_jobs_run_here(tmp_path):
    assert figure_process._worker is None
    figure_process.draw("figure_jobs:append_line", str(tmp_path / "here.txt"), "z")
    assert (tmp_path / "here.txt").read_text() == "z\n"
    figure_process.finish()


@pytest.mark.parametrize("formats, writers", [
    (("png",), ["matplotlib.backends.backend_agg"]),
    (("pdf", "png"), ["matplotlib.backends.backend_agg", "matplotlib.backends.backend_pdf"]),
])
def test_a_worker_imports_the_writers_of_its_formats_only(started, tmp_path, formats, writers):
    started(formats)
    figure_process.draw("figure_jobs:write_writers_loaded", str(tmp_path / "loaded.txt"))
    figure_process.finish()
    assert (tmp_path / "loaded.txt").read_text().splitlines() == writers


def test_an_unknown_format_is_refused(started):
    with pytest.raises(ValueError, match="'svg'"):
        started(("svg",))
    assert figure_process._worker is None


def test_a_format_not_declared_is_written_the_same(started, tmp_path):
    """A PDF and a PNG drawn by a worker warmed for PNG alone are the same bytes as those drawn by one warmed for
    both (the writers imported before the first figure, as every worker did before formats were declared)."""
    from mfscore.reports.figure_data import Curve, CurveFigure

    figure = CurveFigure([Curve("", np.array([0.0, 0.2, 0.5, 1.0]), np.array([0.0, 0.6, 0.9, 1.0]), 0.8, 0.3, 4, 5)])
    for formats in (("png",), ("pdf", "png")):
        started(formats)
        figure_process.draw("mfscore.reports.plots:plot_curve_figure", figure, str(tmp_path / "-".join(formats)))
        figure_process.finish()
    for suffix, magic in ((".pdf", b"%PDF"), (".png", b"\x89PNG")):
        drawn = (tmp_path / f"png{suffix}").read_bytes()
        assert drawn.startswith(magic) and drawn == (tmp_path / f"pdf-png{suffix}").read_bytes()


def test_a_worker_skips_property_docs_and_draws_the_same_bytes(worker, monkeypatch, tmp_path):
    """The worker imports matplotlib without the artists' property docstrings (kwdoc is restored after), and
    the figures it draws are the bytes drawn in this process, which imported matplotlib as usual."""
    from mfscore.reports.figure_data import Curve, CurveFigure

    figure = CurveFigure([Curve("", np.array([0.0, 0.2, 0.5, 1.0]), np.array([0.0, 0.6, 0.9, 1.0]), 0.8, 0.3, 4, 5)],
                         title="kwdoc")
    figure_process.draw("figure_jobs:write_property_docs", str(tmp_path / "docs.txt"))
    figure_process.draw("mfscore.reports.plots:plot_curve_figure", figure, str(tmp_path / "worker"))
    figure_process.finish()
    assert (tmp_path / "docs.txt").read_text() == "False True\n"

    monkeypatch.undo()  # this process's matplotlib again, imported with its docstrings
    import matplotlib.lines

    assert "markeredgecolor" in matplotlib.lines.Line2D.set.__doc__
    figure_process.draw("mfscore.reports.plots:plot_curve_figure", figure, str(tmp_path / "here"))
    for suffix, magic in ((".pdf", b"%PDF"), (".png", b"\x89PNG")):
        drawn = (tmp_path / f"worker{suffix}").read_bytes()
        assert drawn.startswith(magic) and drawn == (tmp_path / f"here{suffix}").read_bytes()


FORKED_RUN = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import figure_jobs
from mfscore.run import figure_process
figure_jobs.MARK = "the parent's"
figure_process.start(("png", "pdf"))
worker = figure_process._worker
figure_process.draw("figure_jobs:write_process", sys.argv[2])
figure_process.draw("figure_jobs:write_property_docs", sys.argv[3])
figure_process.finish()
failed = None
figure_process.start(("png",))
figure_process.draw("figure_jobs:fail", "no room on the canvas")
try:
    figure_process.finish()
except ValueError as exc:
    failed = str(exc)
figure_process.start(("png",))
abandoned = figure_process._worker
figure_process.abandon()
print(json.dumps([os.getpid(), type(worker).__name__, worker.returncode, failed, abandoned.returncode,
                  "matplotlib" in sys.modules]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the worker is forked on Linux only")
def test_a_command_forks_its_worker_which_draws_fails_and_stops_as_a_new_one_does(tmp_path):
    """A fresh process (one thread, no matplotlib) forks its worker: the job runs in a child that sees the
    parent's modules as they were (``MARK``), imports matplotlib without property docs, sends a failure back,
    and is stopped by ``abandon``; the parent never imports matplotlib."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-c", FORKED_RUN, str(Path(__file__).parent), str(tmp_path / "process.txt"),
                           str(tmp_path / "docs.txt")], capture_output=True, text=True, check=True)
    parent, kind, status, failed, abandoned, parent_has_matplotlib = json.loads(done.stdout.splitlines()[-1])
    pid, ppid, mark = (tmp_path / "process.txt").read_text().split(" ", 2)
    assert kind == "_Forked" and int(ppid) == parent and int(pid) != parent and mark == "the parent's\n"
    assert (tmp_path / "docs.txt").read_text() == "False True\n"
    assert status == 0 and failed == "no room on the canvas" and abandoned == -9
    assert not parent_has_matplotlib
