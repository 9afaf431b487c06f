"""Jobs for test_figure_process: importable by the figure worker, which runs in the repository."""

from __future__ import annotations


def append_line(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")


def fail(message: str) -> None:
    raise ValueError(message)
