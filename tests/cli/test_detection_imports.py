"""A detection run imports what it uses when it uses it: without figures, no matplotlib or scipy
(about a second of start-up on every such run); with figures, matplotlib only in the figure worker,
which draws the same bytes as a process that draws its own figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mfscore.sample_data.detection import generate_detection_dataset

PROBE = """
import json, sys
from mfscore.cli.main import main
status = main(sys.argv[1:])
print(json.dumps([status, sorted(m for m in ("matplotlib", "scipy") if m in sys.modules)]))
"""
FIGURES = ("run_all_ROC.png", "run_all_ROC.pdf", "run_semafor_ROC.png", "run_semafor_ROC.pdf")


def _arguments(tmp_path, out: str, flags: list[str]) -> list[str]:
    data = generate_detection_dataset(tmp_path / "data", 200)
    return ["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system, "-o", str(tmp_path / out / "run"), *flags]


def _run(arguments: list[str], preamble: str = "") -> list[str]:
    done = subprocess.run([sys.executable, "-c", preamble + PROBE, *arguments], capture_output=True, text=True,
                          check=True)
    status, imported = json.loads(done.stdout.splitlines()[-1])
    assert status == 0, done.stderr
    return imported


@pytest.mark.parametrize("flags, heavy", [(["--noPlot"], []), (["--noPlot", "--ci", "--semafor"], ["scipy"]),
                                          ([], [])])
def test_modules_a_detection_run_imports(tmp_path, flags, heavy):
    assert _run(_arguments(tmp_path, "out", flags)) == heavy
    assert (tmp_path / "out" / "run_all_ROC.png").exists() == ("--noPlot" not in flags)


def test_the_figure_worker_starts_before_the_run_imports_pandas(tmp_path):
    """The worker imports matplotlib while the command imports pandas, not after it."""
    spy = ("from mfscore.run import figure_process\n"
           "start = figure_process.start\n"
           "def spied(formats):\n"
           "    print(json.dumps(['pandas' in sys.modules, list(formats)]))\n"
           "    start(formats)\n"
           "figure_process.start = spied\n")
    done = subprocess.run([sys.executable, "-c", "import json, sys\n" + spy + PROBE,
                           *_arguments(tmp_path, "out", [])], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[0]) == [False, ["pdf", "png"]]
    assert (tmp_path / "out" / "run_all_ROC.pdf").exists()


def test_the_figure_worker_draws_what_the_run_would_draw_itself(tmp_path):
    flags = ["--semafor"]
    assert "matplotlib" not in _run(_arguments(tmp_path, "worker", flags))
    assert "matplotlib" in _run(_arguments(tmp_path, "inline", flags), preamble="import matplotlib\n")
    for name in FIGURES:
        assert (tmp_path / "worker" / name).read_bytes() == (tmp_path / "inline" / name).read_bytes(), name
