"""Jobs for test_figure_process: importable by the figure worker, which runs in the repository."""

from __future__ import annotations

import os


def append_line(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")


def fail(message: str) -> None:
    raise ValueError(message)


def write_writers_loaded(path: str) -> None:
    """Which figure writers the process has imported, one module a line."""
    import sys

    loaded = [m for m in ("matplotlib.backends.backend_agg", "matplotlib.backends.backend_pdf") if m in sys.modules]
    with open(path, "w", encoding="utf-8") as file:
        file.write("".join(m + "\n" for m in loaded))


def write_property_docs(path: str) -> None:
    """Whether Line2D.set's docstring lists the properties, and whether matplotlib.artist.kwdoc works again."""
    from matplotlib.artist import kwdoc
    from matplotlib.lines import Line2D

    with open(path, "w", encoding="utf-8") as file:
        file.write(f"{'markeredgecolor' in (Line2D.set.__doc__ or '')} {'markeredgecolor' in kwdoc(Line2D)}\n")


MARK = "a new interpreter"  # the parent of a forked worker sets it before starting the worker


def write_process(path: str) -> None:
    """The drawing process's id, its parent's, and ``MARK`` as the drawing process sees it."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(f"{os.getpid()} {os.getppid()} {MARK}\n")


def wait_for(path: str) -> None:
    """Return once ``path`` exists: a worker busy for as long as the test wants."""
    import time

    while not os.path.exists(path):
        time.sleep(0.01)
