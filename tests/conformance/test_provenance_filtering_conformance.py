"""MediScore ProvenanceFilteringScorer test cases run through ``mfscore provenance-filtering``."""

from __future__ import annotations

import pytest
from output_files import beside_reports

from conformance.compare import compare_outputs
from conformance.conftest import SCOREBOARD
from conformance.provenance_filtering_cases import CASES, PT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_provenance_filtering_case(case, conformance_root, tmp_path, monkeypatch):
    board = SCOREBOARD["provenance-filtering"]
    checkfiles = conformance_root / PT / "checkfiles" / case.name
    available = [name for name in case.expected if (checkfiles / name).exists()]
    if not available:
        board["not_available"] += 1
        return
    monkeypatch.chdir(conformance_root)
    out = tmp_path / case.name
    status = main(["provenance-filtering", *case.args, "-o", str(out)])
    assert status == 0, f"mfscore exited with {status}"

    problems = compare_outputs(board, checkfiles, out, available)
    written = {p.name for p in out.iterdir()}
    extra = written - set(case.expected) - set(beside_reports(""))  # mfscore's results beside MediScore's files
    assert not extra, f"files MediScore does not write: {sorted(extra)}"
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())
