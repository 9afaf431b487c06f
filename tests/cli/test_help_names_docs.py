"""A ``--help`` that points at a documentation page names a file that exists on this machine.

The pages of ``docs/`` ship with the package (``mfscore/docs`` in a wheel; the repository's ``docs/`` in a
checkout or an editable install), and a help text names the page by its path there, printed whole on
one line however narrow the terminal (no public URL exists yet).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mfscore.cli.main import command_names, main
from mfscore.documentation import doc_path, docs_directory

PAGE = re.compile(r"[^\s()'\"]*\.md\b")
REPO_DOCS = Path(__file__).resolve().parents[2] / "docs"
# The commands whose help points at a page, and the page (the cluster's only with the cluster extra).
CITING = {"detection": "compatibility.md", "mask": "compatibility.md", "video-spatial": "compatibility.md",
          "provenance-graph": "compatibility.md", "serve": "distributed.md"}


def _help(command: str, capsys, monkeypatch, columns: int = 80) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_the_pages_are_where_the_package_says():
    assert docs_directory().is_dir()
    assert {p.name for p in REPO_DOCS.glob("*.md")} <= {p.name for p in docs_directory().glob("*.md")}
    assert doc_path("compatibility.md").is_file()


@pytest.mark.parametrize("command", command_names())
def test_every_page_a_help_names_exists(command, capsys, monkeypatch):
    text = _help(command, capsys, monkeypatch)
    for page in PAGE.findall(text):
        assert Path(page).is_absolute() and Path(page).is_file(), f"mfscore {command} --help names {page}"
    if command in CITING:
        assert str(doc_path(CITING[command])) in PAGE.findall(text), text


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_a_page_is_printed_whole_however_narrow_the_terminal(columns, capsys, monkeypatch):
    assert str(doc_path("compatibility.md")) in PAGE.findall(_help("mask", capsys, monkeypatch, columns))


def test_the_installed_command_names_the_page(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mfscore.cli.main", "mask", "--help"], capture_output=True,
                          text=True, check=True, cwd=tmp_path, env={"COLUMNS": "80", "PATH": ""})
    pages = PAGE.findall(done.stdout)
    assert pages and all(Path(page).is_file() for page in pages), done.stdout
