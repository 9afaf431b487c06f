"""The conformance scoreboard: what the conformance tests counted, printed at the end of the run.

A plugin of the whole run (``pytest_plugins`` in ``tests/conftest.py``), so that under pytest-xdist the controller,
which runs no test, adds up what each worker counted (sent in its ``workeroutput``) and prints the board.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

# tool -> counters: files matched, compared, byte-identical, not available
SCOREBOARD: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
WORKER_OUTPUT = "conformance_scoreboard"


def pytest_sessionfinish(session):
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # a pytest-xdist worker: its counts go to the controller
        output[WORKER_OUTPUT] = {tool: dict(counts) for tool, counts in SCOREBOARD.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A pytest-xdist worker finished: add its counts to the board."""
    for tool, counts in getattr(node, "workeroutput", {}).get(WORKER_OUTPUT, {}).items():
        for name, count in counts.items():
            SCOREBOARD[tool][name] += count


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
