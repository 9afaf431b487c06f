"""Conformance against MediScore's expected outputs: locating the data, and the scoreboard."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(os.environ.get("MFSCORE_CONFORMANCE", REPO.parent / "shared" / "conformance")) / "mediscore"

# tool -> counters: files matched, compared, byte-identical, not available
SCOREBOARD: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))


@pytest.fixture(scope="session")
def conformance_root() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"MediScore conformance data not found at {CONFORMANCE}: put shared/conformance beside the "
                    f"checkout (or set MFSCORE_CONFORMANCE); conformance cannot pass without it", pytrace=False)
    return CONFORMANCE


def pytest_terminal_summary(terminalreporter):
    for tool, counts in sorted(SCOREBOARD.items()):
        if "cases" in counts:  # validators: a case is an exit status and message phrases, not files
            terminalreporter.write_line(f"{tool} conformance: {counts['passed']}/{counts['cases']} cases match")
            continue
        line = (f"{tool} conformance: {counts['matched']}/{counts['compared']} expected files match "
                f"({counts['identical']} byte-identical)")
        if counts["not_available"]:
            line += f"; {counts['not_available']} case(s) not available (expected files or input masks absent)"
        terminalreporter.write_line(line)
