"""What a run left on disk and said on stderr: for tests that compare runs and that a failed run fails cleanly."""

from __future__ import annotations

import os
from pathlib import Path

from mfscore.run.local import is_provenance


def beside_reports(prefix: str = "run") -> list[str]:
    """The files every task writes beside its reports: its results and the run's provenance (docs/results.md)."""
    return [f"{prefix}_results.json", f"{prefix}_run.json"] if prefix else ["results.json", "run.json"]


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative name -> bytes) but the run's provenance, whose times differ from
    run to run; staging leftovers would show up here too."""
    return {name: p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not is_provenance(name := p.relative_to(directory).as_posix())}


def everything_under(path: Path) -> list[str]:
    """All files and directories below ``path`` (hidden ones included), relative, sorted."""
    found = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            found.append(os.path.relpath(os.path.join(root, name), path))
    return sorted(found)


def assert_failed_cleanly(status, capsys, env, *needles) -> str:
    """Exit 1, one ``mfscore: error:`` line holding every needle, nothing in ``env["out"]`` or ``env["cwd"]``."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    assert status == 1, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("mfscore: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert everything_under(env["out"]) == []  # the directory may exist (no table, no staging directory in it)
    assert everything_under(env["cwd"]) == []
    assert captured.out == ""
    return lines[0]
