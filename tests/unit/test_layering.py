"""The layering contracts (pyproject.toml ``[tool.importlinter]``) hold, imports inside functions included.

import-linter reads packages from the file system, and ``services/`` installs as ``mfscore.services``
(``package-dir``): the check runs on a copy laid out as the wheel lays it out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def installed_layout(target: Path) -> Path:
    """``mfscore/`` with ``services/`` as ``mfscore/services/``, and the contracts."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "mfscore", target / "mfscore", ignore=ignore)
    shutil.copytree(ROOT / "services", target / "mfscore" / "services", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def test_layering_contracts_are_kept(tmp_path):
    root = installed_layout(tmp_path)
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=root, env={"PYTHONPATH": str(root)},
                            capture_output=True, text=True, timeout=300)
    print(result.stdout)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout


def test_every_package_is_installed():
    """A package folder missing from pyproject's explicit package list would be left out of the wheel; so would
    a data directory (``docs/`` as ``mfscore.docs``: no Python, its pages as package data)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mfscore").rglob("__init__.py")}
    found |= {".".join(("mfscore",) + p.parent.relative_to(ROOT).parts)
              for p in (ROOT / "services").rglob("__init__.py")}
    data = {name for name, folder in setuptools["package-dir"].items() if not (ROOT / folder / "__init__.py").exists()}
    assert data == {"mfscore.docs"} and setuptools["package-data"]["mfscore.docs"] == ["*.md"]
    assert found | data == listed
