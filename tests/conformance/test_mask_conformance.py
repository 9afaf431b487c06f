"""MediScore MaskScorer test cases run through ``mfscore mask``."""

from __future__ import annotations

import re

import pytest

from conformance.compare import byte_identical, differences
from conformance.conftest import SCOREBOARD
from conformance.mask_cases import CASES, CHECKFILES, HTML_COLUMNS, MT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_mask_case(case, conformance_root, tmp_path, monkeypatch):
    board = SCOREBOARD["mask"]
    checkfiles = conformance_root / CHECKFILES
    available = [(written, name) for written, name in case.files if (checkfiles / name).exists()]
    if not available or not all((conformance_root / f).exists() for f in case.inputs):
        board["not_available"] += 1
        return
    monkeypatch.chdir(conformance_root)
    out = tmp_path / case.name
    status = main(["mask", *case.args, "-oR", str(out / case.prefix)])
    assert status == 0, f"mfscore exited with {status}"

    problems = {}
    for written, name in available:
        board["compared"] += 1
        found = differences(checkfiles / name, out / written, ignore=HTML_COLUMNS)
        if found:
            problems[written] = found
        else:
            board["matched"] += 1
            board["identical"] += byte_identical(checkfiles / name, out / written)
    written_files = {str(p.relative_to(out)) for p in out.rglob("*.csv") if "_mask_extra" not in p.name}
    always = {str(p.relative_to(out)) for p in out.rglob("P_journalResults.csv")}  # written, not always compared
    extra = written_files - {w for w, _ in case.files} - always
    assert not extra, f"files MediScore does not write: {sorted(extra)}"
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())


def test_unreadable_system_mask_is_reported_and_scoring_continues(conformance_root, tmp_path, monkeypatch, capsys):
    """Case 0.err: one system mask is missing; the run reports it and finishes (docs/compatibility.md "Mask cases")."""
    monkeypatch.chdir(conformance_root)
    stem = "Error_NC2017_Unittest_Manipulation_ImgOnly_c-me_1"
    status = main(["mask", "-t", "manipulation", "--refDir", f"{MT}/", "-r", "reference/manipulation/NC2017-manipulation-ref.csv",
                   "-x", "indexes/NC2017-manipulation-index.csv", "-s", f"{MT}/{stem}/{stem}.csv",
                   "-oR", str(tmp_path / stem), "-v", "1", "--debug_off"])
    output = capsys.readouterr()
    text = output.out + output.err
    assert status == 0
    assert re.search(r"ERROR.*unreadable", text), text
    assert "Ending" in text
    perimage = (tmp_path / f"{stem}_mask_scores_perimage.csv").read_text().splitlines()
    scored = [line.split("|")[14] for line in perimage[1:]]
    assert scored.count("N") == 1 and scored.count("Y") == 3
