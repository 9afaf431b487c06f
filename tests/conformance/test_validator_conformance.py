"""MediScore's validatorTests cases run through ``mfscore validate`` (docs/validation.md §7)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.conftest import SCOREBOARD
from conformance.validator_cases import CASES, VT, ValidatorCase
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


def _run(case: ValidatorCase, system: Path | str, index: Path | str, capsys, extra: tuple[str, ...] = ()) -> None:
    status = main(["validate", *case.args, *extra, "-s", str(system), "-x", str(index)])
    out = capsys.readouterr().out
    problems = []
    if case.status is not None and status != case.status:
        problems.append(f"exit status {status}, expected {case.status}")
    problems += [f"missing phrase {p!r}" for p in case.present if p not in out]
    problems += [f"unexpected phrase {p!r}" for p in case.absent if p in out]
    board = SCOREBOARD["validator"]
    board["cases"] += 1
    board["passed"] += not problems
    assert not problems, f"{case.id}: {'; '.join(problems)}\n--- output ---\n{out}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_validator_case(case, conformance_root, tmp_path, monkeypatch, capsys):
    root = conformance_root / VT
    if case.revised is None:
        monkeypatch.chdir(root)
        _run(case, case.system, case.index, capsys)
        return
    # The revised file is written beside the system CSV: work on a copy of its directory.
    directory = Path(case.system).parent
    shutil.copytree(root / directory, tmp_path / directory)
    _run(case, tmp_path / case.system, root / case.index, capsys, ("--output_revised_system", case.revised))
    revised = tmp_path / directory / case.revised
    assert revised.is_file(), f"{case.id}: {revised.name} was not written"
    assert "FailedValidation" in revised.read_text()
    _run(case.then, revised, root / case.then.index, capsys)
