"""Sphinx configuration of the API reference: ``mfscore.api`` from its docstrings (``make docs``).

Offline by construction: autodoc and napoleon (Google or NumPy docstring sections), viewcode for the
source, the builtin alabaster theme; no intersphinx, nothing fetched. ``make docs`` builds with ``-W
--keep-going -E``: every warning (a module that does not import, a docstring that is not valid
reStructuredText) fails the build, and a fresh environment each time, as autodoc cannot tell when a
docstring changed.

The reference documents whatever ``mfscore.api`` holds: ``index.rst`` names the package, and its
modules are found here, from the files under ``mfscore/api/``, and put where ``index.rst`` says
``.. mfscore-api-modules``, one section each. A new module needs no edit here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

project = "mfscore"
author = "mfscore developers"
copyright = "mfscore developers"  # noqa: A001 (Sphinx's name)

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]

html_theme = "alabaster"
html_title = "mfscore API reference"
html_static_path: list[str] = []
html_show_sourcelink = False
exclude_patterns = ["_build"]

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"  # types beside each parameter, signatures short
autoclass_content = "class"
napoleon_google_docstring = True
napoleon_numpy_docstring = True

PACKAGE = "mfscore.api"
MARKER = ".. mfscore-api-modules"


def api_modules() -> list[str]:
    """Every module under ``mfscore/api/`` (the package itself excepted), by name, sorted; found from its files."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return []  # index.rst's automodule of the package then fails the build, naming it
    names = set()
    for root in spec.submodule_search_locations:
        for path in Path(root).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "__pycache__" in parts or any(part.startswith("_") and part != "__init__" for part in parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts:
                names.add(".".join((PACKAGE, *parts)))
    return sorted(names)


def module_sections() -> str:
    """One section per module: its title and an automodule with its members."""
    out = []
    for name in api_modules():
        out += [f"``{name}``", "-" * (len(name) + 4), "", f".. automodule:: {name}", ""]
    return "\n".join(out)


def _insert_modules(app, docname: str, source: list[str]) -> None:
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, module_sections())


def setup(app):
    app.connect("source-read", _insert_modules)
    return {"parallel_read_safe": True}
