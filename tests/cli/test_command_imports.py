"""Table-driven commands import what they use: provenance filtering reads, scores and writes without pandas, OpenCV,
networkx, scipy, matplotlib (half a second of start-up on every run), numpy or jsonschema (which says why a file
fails its schema), graph building without them (networkx for -d only), video temporal with none of them when its
tables are plain and its queries compare text, and a mask run without matplotlib."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import generate_temporal_dataset

HEAVY = ("pandas", "cv2", "networkx", "scipy", "matplotlib")
LIGHT = HEAVY + ("numpy", "jsonschema")  # what the provenance commands import neither
PROBE = """
import json, sys
from mfscore.cli.main import main
from mfscore.run import figure_process
workers, start = [], figure_process.start
figure_process.start = lambda *formats: (workers.append(formats), start(*formats))[1]
status = main(sys.argv[1:])
print(json.dumps([status, sorted(m for m in %r if m in sys.modules), len(workers)]))
""" % (LIGHT,)


def _run(arguments: list[str], watched: tuple[str, ...] = HEAVY) -> tuple[list[str], int]:
    """The ``watched`` libraries the command imported, and the figure workers it started."""
    done = subprocess.run([sys.executable, "-c", PROBE, *arguments], capture_output=True, text=True, check=True)
    status, imported, workers = json.loads(done.stdout.splitlines()[-1])
    assert status == 0, done.stderr
    return [m for m in imported if m in watched], workers


def _imported(arguments: list[str], watched: tuple[str, ...] = HEAVY) -> list[str]:
    return _run(arguments, watched)[0]


def test_provenance_filtering_imports_no_heavy_library(tmp_path):
    options = generate_provenance_dataset(tmp_path / "data", 12).options("system.csv")
    assert _imported(["provenance-filtering", *options, "-o", f"{tmp_path}/out/"], LIGHT) == []
    scores = (tmp_path / "out" / "scores.csv").read_text().splitlines()
    assert scores[0].startswith("NodeType|NodeRecallAt50") and scores[1].startswith("All|")


def test_provenance_graph_imports_networkx_for_the_direct_path_alone(tmp_path):
    """networkx (0.09 s) is imported to cut a graph to the probe's ancestors and descendants (-d), to name a
    journal's cycle and to draw figures; a run with none of them checks the journals for cycles without it."""
    options = generate_provenance_dataset(tmp_path / "data", 12, cycles=True).options("system.csv")
    assert _imported(["provenance-graph", *options, "-c", "-o", f"{tmp_path}/out/"], LIGHT) == []
    assert (tmp_path / "out" / "scores.csv").read_text().splitlines()[0].startswith("Direct|MeanSimNLO")
    assert _imported(["provenance-graph", *options, "-c", "-d", "-o", f"{tmp_path}/direct/"]) == ["networkx"]
    assert (tmp_path / "direct" / "scores.csv").read_text().splitlines()[1].startswith("True|")


def test_path_checks_need_no_opencv():
    code = "import sys, mfscore.formats.images; print('cv2' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_video_temporal_imports_no_heavy_library(tmp_path):
    arguments = ["video-temporal", *generate_temporal_dataset(tmp_path / "data", 6).cli_args(), "-c", "5",
                 "-q", "*", "Operation == 'PasteSampled'", "-o", f"{tmp_path}/out/"]
    assert _imported(arguments, HEAVY + ("numpy",)) == []
    scores = (tmp_path / "out" / "scores.csv").read_text().splitlines()
    assert scores[0] == "query|MCC" and [line.split("|")[0] for line in scores[1:]] == ["0", "1"]


def test_video_temporal_ordering_query_reads_with_pandas(tmp_path):
    """A comparison the text path does not decide (an ordering on numbers) is evaluated by pandas."""
    arguments = ["video-temporal", *generate_temporal_dataset(tmp_path / "data", 6).cli_args(),
                 "-q", "FrameCount > 0", "-o", f"{tmp_path}/out/"]
    assert _imported(arguments) == ["pandas"]


def test_a_mask_run_draws_its_heat_map_without_matplotlib(tmp_path):
    """The heat map every mask run writes is drawn with OpenCV in the command: no figure worker (matplotlib's import
    cost a 120-probe run a fifth of its CPU); --plots, which adds the average ROCs, starts one."""
    data = generate_mask_dataset(tmp_path / "data", 6, width=64, height=48)
    arguments = ["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "-s", str(data.directory / data.system), "-p", "1"]
    assert _run([*arguments, "-oR", f"{tmp_path}/out/run"]) == (["cv2", "pandas"], 0)
    assert (tmp_path / "out" / "run_mask_extra_mcc_by_size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _run([*arguments, "--plots", "-oR", f"{tmp_path}/plots/run"]) == (["cv2", "pandas"], 1)
    assert (tmp_path / "plots" / "run_mask_roc.png").exists()


def test_the_command_runs_numpy_on_one_blas_thread_unless_told():
    """OpenBLAS starts a thread per core as numpy is imported, which costs CPU and speeds nothing mfscore does."""
    code = ("import os, sys; from mfscore.cli.main import main; sys.argv = ['mfscore']; main(); "
            "import numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = [sys.executable, "-c", code]
    assert subprocess.run(run, capture_output=True, text=True, env=environment).stdout.split()[-1] == "1"
    told = subprocess.run(run, capture_output=True, text=True, env={**environment, "OPENBLAS_NUM_THREADS": "2"})
    assert told.stdout.split()[-1] == "2"
