"""MediScore ProvenanceGraphBuildingScorer test cases run through ``mfscore provenance-graph``."""

from __future__ import annotations

import pytest
from output_files import beside_reports

from conformance.compare import compare_outputs, differences
from conformance.conftest import SCOREBOARD
from conformance.provenance_graph_cases import CASES, MEDISCORE_PT, PT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


def mediscore_log(text: str, out: str, case: str) -> str:
    """Our ``-v`` output with the paths MediScore's harness had (data root, then rewritten output dir)."""
    return (text.replace(f"'{out}/", f"'{MEDISCORE_PT}checkfiles/{case}/")
                .replace(f"'{PT}/", f"'{MEDISCORE_PT}"))


def _differences(expected_path, actual_path) -> list[str]:
    """The log is compared as text; the tables cell by cell."""
    if expected_path.name != "log.txt":
        return differences(expected_path, actual_path)
    expected, actual = expected_path.read_text(), actual_path.read_text()
    return [] if expected == actual else [f"expected {expected!r}, got {actual!r}"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_provenance_graph_case(case, conformance_root, tmp_path, monkeypatch, capsys):
    board = SCOREBOARD["provenance-graph"]
    checkfiles = conformance_root / PT / "checkfiles" / case.name
    available = [name for name in case.expected if (checkfiles / name).exists()]
    if not available:
        board["not_available"] += 1
        return
    monkeypatch.chdir(conformance_root)
    out = tmp_path / case.name
    # --quiet: no summary table after MediScore's -v lines, which the case's log.txt holds (docs/results.md)
    status = main(["provenance-graph", *case.args, "-o", str(out), *(["--quiet"] if case.log else [])])
    captured = capsys.readouterr()
    assert status == 0, f"mfscore exited with {status}: {captured.err}"
    if case.log:
        (out / "log.txt").write_text(mediscore_log(captured.out + captured.err, str(out), case.name))

    problems = compare_outputs(board, checkfiles, out, available, compare=_differences)
    written = {p.name for p in out.iterdir()}
    extra = written - set(case.expected) - set(beside_reports(""))  # mfscore's results beside MediScore's files
    assert not extra, f"files MediScore does not write: {sorted(extra)}"
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())
