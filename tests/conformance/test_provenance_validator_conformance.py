"""MediScore's provenanceValidatorTests cases run through ``mfscore validate-provenance`` (docs/validation.md §8)."""

from __future__ import annotations

import pytest

from conformance.conftest import SCOREBOARD
from conformance.provenance_validator_cases import CASES, INDEX, PVT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_provenance_validator_case(case, conformance_root, monkeypatch, capsys):
    monkeypatch.chdir(conformance_root / PVT)
    status = main(["validate-provenance", "-x", INDEX, "-s", case.system, *case.args])
    captured = capsys.readouterr()
    problems = []
    if status != case.status:
        problems.append(f"exit status {status}, expected {case.status}")
    problems += [f"missing phrase {p!r}" for p in case.present if p not in captured.out]
    if "Traceback" in captured.out + captured.err:
        problems.append("a traceback was printed")
    board = SCOREBOARD["provenance validator"]
    board["cases"] += 1
    board["passed"] += not problems
    assert not problems, f"{case.id}: {'; '.join(problems)}\n--- output ---\n{captured.out}{captured.err}"
