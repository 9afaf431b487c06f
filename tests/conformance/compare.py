"""Column-by-column comparison of a produced table with MediScore's expected one.

Numbers match within ``TOLERANCE`` (absolute), everything else exactly; a header, row count or
formatting difference (``0`` vs ``0.0``) is reported so a reader sees what differs.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

TOLERANCE = 1e-9


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter="|"))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if text.strip() == text and text.lower() not in ("nan", "inf", "-inf", "infinity") else None


def cells_match(expected: str, actual: str) -> bool:
    if expected == actual:
        return True
    a, b = _number(expected), _number(actual)
    return a is not None and b is not None and math.isclose(a, b, rel_tol=0.0, abs_tol=TOLERANCE)


def differences(expected_path: Path, actual_path: Path, limit: int = 5, ignore: frozenset[str] = frozenset()) -> list[str]:
    """Human-readable differences; empty when the tables match (``ignore`` names unchecked columns)."""
    if not actual_path.exists():
        return [f"{actual_path.name} was not written"]
    expected, actual = _rows(expected_path), _rows(actual_path)
    if not expected or not actual:
        return [] if expected == actual else ["one of the files is empty"]
    if expected[0] != actual[0]:
        return [f"header differs: expected {expected[0]}, got {actual[0]}"]
    if len(expected) != len(actual):
        return [f"expected {len(expected) - 1} rows, got {len(actual) - 1}"]
    found = []
    header = expected[0]
    for line, (erow, arow) in enumerate(zip(expected[1:], actual[1:]), start=2):
        if len(erow) != len(arow):
            found.append(f"line {line}: expected {len(erow)} fields, got {len(arow)}")
            continue
        for column, e, a in zip(header, erow, arow):
            if column not in ignore and not cells_match(e, a):
                found.append(f"line {line}, column {column}: expected {e!r}, got {a!r}")
        if len(found) >= limit:
            break
    return found[:limit]


def byte_identical(expected_path: Path, actual_path: Path) -> bool:
    return actual_path.exists() and expected_path.read_bytes() == actual_path.read_bytes()


def compare_outputs(board, checkfiles: Path, out: Path, names: list[str], compare=differences) -> dict[str, list[str]]:
    """Compare each expected file with mfscore's, counting on the scoreboard; returns the problems by file."""
    problems = {}
    for name in names:
        board["compared"] += 1
        found = compare(checkfiles / name, out / name)
        if found:
            problems[name] = found
        else:
            board["matched"] += 1
            board["identical"] += byte_identical(checkfiles / name, out / name)
    return problems
