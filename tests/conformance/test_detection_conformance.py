"""MediScore DetectionScorer test cases run through ``mfscore detection``."""

from __future__ import annotations

import pytest

from conformance.compare import compare_outputs
from conformance.conftest import SCOREBOARD
from conformance.detection_cases import CASES, DT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.out_prefix)
def test_detection_case(case, conformance_root, tmp_path, monkeypatch):
    board = SCOREBOARD["detection"]
    checkfiles = conformance_root / DT / "checkfiles" / case.name
    available = [name for name in case.expected if (checkfiles / name).exists()]
    if not available:
        board["not_available"] += 1
        return
    monkeypatch.chdir(conformance_root)
    out = tmp_path / case.name
    status = main(["detection", *case.args, "-o", str(out / case.out_prefix)])
    assert status == 0, f"mfscore exited with {status}"

    problems = compare_outputs(board, checkfiles, out, available)
    written = {p.name for p in out.glob("*.csv")}
    extra = written - set(case.expected)
    assert not extra, f"files MediScore does not write: {sorted(extra)}"
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())
