"""The browser tests' driver: Debian's chromium, driven by playwright-core from npm (check_page.js)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("check_page.js")
CHROMIUM = os.environ.get("MFSCORE_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    """``check(page, shot, table="", column="")``: what the page did in the browser (check_page.js's JSON). Fails
    (never skips) without the browser or its driver, saying what to install."""
    if not os.path.isfile(CHROMIUM):
        pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM}: apt-get install chromium")
    if shutil.which("node") is None or not (ROOT / "node_modules" / "playwright-core").is_dir():
        pytest.fail("the browser tests need Node.js and playwright-core from npm: run 'npm ci' in the repository")

    def check(page: Path, shot: Path, table: str = "", column: str = "") -> dict:
        done = subprocess.run(["node", str(SCRIPT), str(page), str(shot), *([table, column] if table else [])],
                              capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return check
