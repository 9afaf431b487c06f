"""Conformance against MediScore's expected outputs: the data (``data/``, beside this file); the tests count into the
scoreboard (``scoreboard.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.scoreboard import SCOREBOARD  # noqa: F401  (the tests import it from here)

# MediScore's test-suite inputs and expected outputs, as much of them as the cases read (data/README.md)
CONFORMANCE = Path(__file__).resolve().parent / "data"
collect_ignore = ["data"]  # data, not tests: pytest does not look inside


@pytest.fixture(scope="session")
def conformance_root() -> Path:
    return CONFORMANCE
