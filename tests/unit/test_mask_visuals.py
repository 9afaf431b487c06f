"""Per-probe mask visuals (``mfscore mask --visuals N``, docs/masks.md "Per-probe visuals").

* **The overlay is the scorer's confusion.** On a generated run with distractors (a ``-qm`` query leaves the other
  manipulations unselected), boundary zones and system opt-out pixels (``--nspx 255``), the pixels of each colour
  in every overlay, decoded from its PNG, are exactly the per-image table's OptimumPixelTP/FP/FN/TN, PixelSNS
  (distractor) and PixelBNS (boundary) of that probe; the system PNG is the system mask at its OptimumThreshold.
* **The choice**: the N best and N worst scored probes by the table's OptimumMCC, ties to the smaller ProbeFileID,
  none twice; fewer scored probes than 2N give each once.
* **Only those masks are read again**: with every other mask file deleted, the report writes the same bytes.
* **Deterministic bytes**: two runs (on threads and on two processes) write the same files.
* ``-html`` is ``--visuals 10``; ``--visuals`` wins; a negative N is a usage error.
* ``pixel_classes`` on literal 5x5 maps: a zone's colour wins over the confusion, distractor before boundary
  before opt-out pixel.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from mfscore.cli import mask as mask_cli
from mfscore.masks.mask_scoring import MaskMaps
from mfscore.masks.noscore_zones import NoScoreZones
from mfscore.records import complete
from mfscore.reports.mask_visuals import (
    BOUNDARY,
    CLASSES,
    DISTRACTOR,
    FN,
    FP,
    OPT_OUT,
    TN,
    TP,
    class_colours,
    pixel_classes,
)
from mfscore.run.local import report_into, run_local, score_plan
from mfscore.run.staged_outputs import files_under
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.tasks.base import report_files
from mfscore.tasks.mask import TASK

N = 3
COUNT_COLUMNS = {"TP": "OptimumPixelTP", "FP": "OptimumPixelFP", "FN": "OptimumPixelFN", "TN": "OptimumPixelTN",
                 "distractor": "PixelSNS", "boundary": "PixelBNS"}


def parsed(*flags: str):
    parser = argparse.ArgumentParser()
    mask_cli.add_arguments(parser)
    return mask_cli.options(parser.parse_args(list(flags)))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("visuals") / "data"
    generate_mask_dataset(directory, 24, width=160, height=120)
    return directory


def flags(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--refDir", str(data), "-r", "reference/manipulation/MFC-manipulation-ref.csv",
            "-x", "indexes/MFC-manipulation-index.csv", "-s", str(data / "system/mfscore-demo-mask-system.csv"),
            "-oR", str(out / "run"), "--eks", "5", "--dks", "5", "--nspx", "255", *extra]


def run(data: Path, out: Path, *extra: str, processes: int | None = None) -> dict[str, bytes]:
    task_run = parsed(*flags(data, out, *extra))
    run_local(TASK, task_run.options, task_run.out_root, processes=processes, progress=False)
    return files_under(out)


@pytest.fixture(scope="module")
def query_run(data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("query")
    run(data, out, "--visuals", str(N), "-qm", "Purpose==['add']", "Purpose==['remove','clone','heal']")
    return out


def perimage(directory: Path) -> pd.DataFrame:
    return pd.read_csv(directory / "run_mask_scores_perimage.csv", sep="|", dtype={"ProbeFileID": str})


def index(directory: Path) -> dict:
    return json.loads((directory / "run_visuals" / "index.json").read_text())


def decoded_classes(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """The class of each pixel of an overlay's mask area, from its colour (every pixel must be a class's)."""
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)[:shape[0], :shape[1]]
    rgb = image[..., ::-1].reshape(-1, 3)
    classes = np.full(len(rgb), 255, np.uint8)
    for code, colour in enumerate(class_colours()):
        classes[(rgb == [int(colour[i:i + 2], 16) for i in (1, 3, 5)]).all(axis=1)] = code
    assert (classes != 255).all(), "an overlay pixel has no class's colour"
    return classes.reshape(shape)


@pytest.mark.parametrize("query", [0, 1])
def test_each_overlay_counts_the_confusion_the_table_reports(query_run, query):
    directory = query_run / f"index_{query}"
    table = perimage(directory).set_index("ProbeFileID")
    listed = index(directory)["masks"]
    assert len(listed) == 2 * N
    seen = {name: 0 for name in ("distractor", "boundary", "opt_out_pixel")}
    for entry in listed:
        row = table.loc[entry["ProbeFileID"]]
        shape = cv2.imread(str(directory / "run_visuals" / entry["files"]["reference"]), cv2.IMREAD_GRAYSCALE).shape
        classes = decoded_classes(directory / "run_visuals" / entry["files"]["overlay"], shape)
        counts = {name: int((classes == code).sum()) for code, name, _, _ in CLASSES}
        assert {name: counts[name] for name in COUNT_COLUMNS} == {name: int(row[column])
                                                                  for name, column in COUNT_COLUMNS.items()}
        assert counts == entry["pixels"]
        assert entry["OptimumThreshold"] == int(row["OptimumThreshold"])
        assert entry["OptimumMCC"] == pytest.approx(row["OptimumMCC"], rel=1e-15, abs=1e-15)
        system = cv2.imread(str(directory / "run_visuals" / entry["files"]["system"]), cv2.IMREAD_GRAYSCALE)
        marked = (classes == TP) | (classes == FP)
        assert ((system == 0) & (classes != DISTRACTOR) & (classes != BOUNDARY) & (classes != OPT_OUT)
                == marked).all()
        reference = cv2.imread(str(directory / "run_visuals" / entry["files"]["reference"]), cv2.IMREAD_GRAYSCALE)
        scored = np.isin(classes, [TP, FP, FN, TN])
        assert ((reference == 0) == ((classes == TP) | (classes == FN)))[scored].all()
        seen = {name: seen[name] + counts[name] for name in seen}
    assert all(seen.values()), f"the run should reach every no-score kind: {seen}"


@pytest.mark.parametrize("query", [0, 1])
def test_the_best_and_worst_by_optimum_mcc_ties_to_the_smaller_probe_id(query_run, query):
    directory = query_run / f"index_{query}"
    scored = perimage(directory)
    scored = scored[scored["Scored"] == "Y"].dropna(subset=["OptimumMCC"])
    best = scored.sort_values(["OptimumMCC", "ProbeFileID"], ascending=[False, True])["ProbeFileID"].tolist()[:N]
    worst = [p for p in scored.sort_values(["OptimumMCC", "ProbeFileID"])["ProbeFileID"] if p not in best][:N]
    listed = index(directory)["masks"]
    assert [(e["kind"], e["rank"], e["ProbeFileID"]) for e in listed] == (
        [("best", r, p) for r, p in enumerate(best, 1)] + [("worst", r, p) for r, p in enumerate(worst, 1)])
    assert scored["OptimumMCC"].nunique() < len(scored), "the data should hold a tie"


def test_fewer_scored_probes_than_two_n_are_each_drawn_once(data, tmp_path):
    run(data, tmp_path, "--visuals", "50")
    listed = index(tmp_path)["masks"]
    scored = perimage(tmp_path)
    ids = scored.loc[scored["Scored"] == "Y", "ProbeFileID"]
    assert 0 < len(ids) < 50 and sorted(e["ProbeFileID"] for e in listed) == sorted(ids)


def test_the_report_reads_only_the_masks_it_draws(data, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    task_run = parsed(*flags(copy, tmp_path / "first", "--visuals", "2"))
    plan = TASK.plan(task_run.options)
    outcomes = score_plan(TASK, plan, processes=1)
    report_into(TASK, plan, outcomes, task_run.out_root)
    drawn = set(report_files(TASK, plan, complete(outcomes, (job.key for job in plan.jobs))))
    masks = {Path(path) for job in plan.jobs for path in TASK.blobs(job.work).values() if path}
    assert 0 < len(drawn) <= 2 * 2 * 2 and {Path(p) for p in drawn} < masks
    for path in masks - {Path(p) for p in drawn}:
        path.unlink()
    report_into(TASK, plan, outcomes, str(tmp_path / "second" / "run"))
    assert files_under(tmp_path / "second" / "run_visuals") == files_under(tmp_path / "first" / "run_visuals")
    assert len(files_under(tmp_path / "first" / "run_visuals")) == 4 * 3 + 1


def test_the_same_run_writes_the_same_bytes(data, tmp_path):
    threads = run(data, tmp_path / "threads", "--visuals", "2")
    processes = run(data, tmp_path / "processes", "--visuals", "2", processes=2)
    visuals = {name: data for name, data in threads.items() if name.startswith("run_visuals/")}
    assert len(visuals) == 4 * 3 + 1
    assert visuals == {name: data for name, data in processes.items() if name.startswith("run_visuals/")}
    assert all(data.startswith(b"\x89PNG") for name, data in visuals.items() if name.endswith(".png"))


def test_html_asks_for_ten_and_visuals_wins(tmp_path):
    base = ["--refDir", "r", "-r", "ref.csv", "-s", "sys.csv", "-oR", str(tmp_path / "run")]
    assert parsed(*base).options.visuals == 0
    assert parsed(*base, "-html").options.visuals == mask_cli.HTML_VISUALS == 10
    assert parsed(*base, "-html", "--visuals", "4").options.visuals == 4
    with pytest.raises(SystemExit) as refused:
        parsed(*base, "--visuals", "-1")
    assert refused.value.code == 2


def test_no_visuals_without_the_flag(data, tmp_path):
    files = run(data, tmp_path)
    assert files and not [name for name in files if "visuals" in name]


# Literal maps, top row first.          region     system<=t   bns(False: boundary) sns(False: distractor) pns
#   R R . . .   m . m . .   B . . . .   . . . . S   . . . . .
#   R R . . .   m . . . .   . . . . .   . . . . S   . . . . P
#   . . . . .   . . . . .   . . . . .   . . . . .   . . . . .
#   . . . . .   . . . . .   . . . . .   . . . . .   . . . P .
#   . . . . .   . . . . m   . . . . .   . . . . .   . . . . .
def test_pixel_classes_on_a_literal_mask():
    region = np.zeros((5, 5), bool)
    region[:2, :2] = True
    system = np.full((5, 5), 200, np.uint8)
    system[0, 0] = system[1, 0] = system[0, 2] = system[4, 4] = 10
    bns, sns, pns = (np.ones((5, 5), bool) for _ in range(3))
    bns[0, 0] = False
    sns[0, 4] = sns[1, 4] = False
    pns[1, 4] = pns[3, 3] = False
    classes = pixel_classes(MaskMaps(region, NoScoreZones(bns, sns, pns), system, ()), 100)
    expected = np.full((5, 5), TN, np.uint8)
    expected[0, 0] = BOUNDARY
    expected[1, 0] = TP
    expected[0, 1] = expected[1, 1] = FN
    expected[0, 2] = expected[4, 4] = FP
    expected[0, 4] = expected[1, 4] = DISTRACTOR
    expected[3, 3] = OPT_OUT
    assert (classes == expected).all()
