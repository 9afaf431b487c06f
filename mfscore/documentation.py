"""Where mfscore's documentation is: the pages of the repository's ``docs/``.

A wheel carries them as the data directory ``mfscore/docs`` (``pyproject.toml`` maps ``docs/`` there);
in a checkout or an editable install they are the repository's ``docs/``, beside the package. Plain
path arithmetic, so asking costs nothing at start-up.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def docs_directory() -> Path:
    """The directory of the documentation pages: installed with the package, else the checkout's ``docs/``."""
    installed = PACKAGE / "docs"
    return installed if installed.is_dir() else PACKAGE.parent / "docs"


def doc_path(name: str) -> Path:
    """The page ``name`` (e.g. ``"compatibility.md"``) as a path on this machine."""
    return docs_directory() / name
