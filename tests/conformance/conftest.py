"""Conformance against MediScore's expected outputs: the data (``data/``, beside this file), and the scoreboard."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

# MediScore's test-suite inputs and expected outputs, as much of them as the cases read (data/README.md)
CONFORMANCE = Path(__file__).resolve().parent / "data"
collect_ignore = ["data"]  # data, not tests: pytest does not look inside

# tool -> counters: files matched, compared, byte-identical, not available
SCOREBOARD: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))


@pytest.fixture(scope="session")
def conformance_root() -> Path:
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
