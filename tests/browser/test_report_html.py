"""The HTML pages in a real browser (Debian's chromium, driven by playwright-core from npm: check_page.js): a
detection run with --ci, a mask run and a comparison of two detection runs, each opened from file:// with no
network. Every image decodes and is not blank, nothing is fetched, nothing errs, the headline cells hold the
results' values, and a click on a header sorts its table. ``make test-browser`` runs it (not ``make test``)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from mfscore.cli.main import main
from mfscore.results import Results
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset

pytestmark = pytest.mark.browser



def _detection(data, system: str, out: Path) -> None:
    assert main(["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", system, "-o", str(out / "run"), "--ci", "--outMeta",
                 "--quiet", "--html"]) == 0


def _healthy(found: dict, shot: Path, images: int) -> None:
    assert found["console_errors"] == [] and found["page_errors"] == []
    assert found["requests"] == []
    assert len(found["images"]) >= images
    for image in found["images"]:
        assert image["width"] > 0 and image["variance"] > 0, image["alt"]
    screenshot = cv2.imread(str(shot), cv2.IMREAD_GRAYSCALE)
    assert screenshot is not None and screenshot.shape[1] == 1280 and float(np.var(screenshot)) > 0


def _headline_is_the_results(found: dict, results_file: Path) -> None:
    results = Results.from_json(results_file.read_bytes())
    assert found["headline"]
    for cell in found["headline"]:
        value = results.row(cell["query"]).values[cell["metric"]]
        assert (None if cell["value"] == "" else float(cell["value"])) == value
        assert cell["text"].startswith("-" if value is None else f"{value:.4f}")


def _sorted(found: dict) -> None:
    before = [float(v) for v in found["column_before"]]
    assert before != sorted(before)  # the click has something to do
    assert [float(v) for v in found["column_ascending"]] == sorted(before)
    assert [float(v) for v in found["column_descending"]] == sorted(before, reverse=True)


def _better_system(data) -> str:
    """System B: every score of A moved halfway to its truth (1 for a target, 0 for a non-target)."""
    from mfscore.formats.tables import read_table, write_table

    reference = read_table(data.directory / data.reference)
    targets = set(reference.loc[reference["IsTarget"] == "Y", "ProbeFileID"].astype(str))
    system = read_table(data.directory / data.system)
    truth = system["ProbeFileID"].astype(str).isin(targets).astype(float)
    system["ConfidenceScore"] = ((system["ConfidenceScore"].astype(float) + truth) / 2).round(4)
    write_table(system, data.directory / "system" / "better.csv")
    return "system/better.csv"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    data = generate_detection_dataset(root / "data", 800)
    _detection(data, data.system, root / "A")
    _detection(data, _better_system(data), root / "B")
    masks = generate_mask_dataset(root / "masks", 12)
    assert main(["mask", "--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
                 "-s", str(masks.directory / masks.system), "-oR", str(root / "M" / "run"), "--precision", "6",
                 "--quiet", "--html"]) == 0
    assert main(["compare", str(root / "A"), str(root / "B"), "--out", str(root / "compare")]) == 0
    return root


def test_the_detection_page(browser, runs, tmp_path):
    shot = tmp_path / "detection.png"
    found = browser(runs / "A" / "run_mfscore_report.html", shot, '[data-file="run_meta_scored.csv"]',
                    "ConfidenceScore")
    _healthy(found, shot, images=1)
    _headline_is_the_results(found, runs / "A" / "run_results.json")
    assert any("[" in cell["text"] for cell in found["headline"])  # --ci: the intervals are shown
    _sorted(found)


def test_the_mask_page(browser, runs, tmp_path):
    shot = tmp_path / "mask.png"
    found = browser(runs / "M" / "run_mfscore_report.html", shot, '[data-file="run_mask_scores_perimage.csv"]',
                    "OptimumThreshold")
    _healthy(found, shot, images=len(list((runs / "M").rglob("*.png"))))
    _headline_is_the_results(found, runs / "M" / "run_results.json")
    _sorted(found)


def test_the_comparison_page(browser, runs, tmp_path):
    shot = tmp_path / "compare.png"
    found = browser(runs / "compare" / "compare.html", shot)
    _healthy(found, shot, images=2)  # the ROC and the DET
    ranked = [row[2] for row in found["leaderboard"]]  # Query|Rank|System|...
    assert ranked == ["B", "A"]
    assert [image["alt"] for image in found["images"]] == ["roc.png", "det.png"]
