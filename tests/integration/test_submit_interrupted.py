"""Ctrl-C during ``mfscore submit``: exit status 130 and one line saying where the run is, by its full id (which
``submit`` printed first), and how to reach it; no traceback.

The signal is real (SIGINT to the command's process group, as a terminal sends it), at a step held by
``tests/interrupting.py``: while the run is watched (submitted: it goes on on the cluster, and the command
the line gives fetches its files once it is done), and while its inputs are uploaded (created, never
submitted: the cluster deletes it after a day).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import time

import pytest
from interrupting import interrupt
from output_files import tree

from mfscore.cli.main import main
from mfscore.sample_data.examples import example_arguments

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sends SIGINT to a process group")]

RUN = re.compile(r"\brun (?P<id>[0-9a-f]{32})\b")


def listed_state(cluster_file, run_id: str) -> str | None:
    """The run's state as ``mfscore report --list`` shows it, or None when it is not listed."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["report", "--list", "--cluster", str(cluster_file)]) == 0
    rows = [line.split() for line in out.getvalue().splitlines()[1:]]
    return next((row[2] for row in rows if row and row[0] == run_id), None)


def said_once(stderr: str) -> str:
    """The one line an interrupted ``submit`` says, after the one naming the run it created (the same id)."""
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 2, stderr
    created, line = stderr.splitlines()
    assert created == f"mfscore: run {RUN.search(line).group('id')} created", stderr
    return line


def quoted_commands(line: str) -> list[list[str]]:
    return [shlex.split(command) for command in re.findall(r"'(mfscore [^']*)'", line)]


def test_interrupted_while_watching_the_run_goes_on(local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    arguments = example_arguments("mask", tmp_path / "data", tmp_path / "out")
    result = interrupt(["submit", "--cluster", str(cluster_file), "mask", *arguments], "watch", tmp_path / "interrupt")
    assert result.status == 130 and result.stdout == "", result.stderr
    line = said_once(result.stderr)
    run_id = RUN.search(line).group("id")
    assert line.startswith(f"mfscore: interrupted; run {run_id} goes on on the cluster"), line
    listing, fetching, cancelling = quoted_commands(line)
    assert listing == ["mfscore", "report", "--list", "--cluster", str(cluster_file)]
    assert fetching == ["mfscore", "report", run_id, "-o", str(tmp_path / "out"), "--cluster", str(cluster_file)]
    assert cancelling == ["mfscore", "cancel", run_id, "--cluster", str(cluster_file)]

    deadline = time.monotonic() + 120
    while listed_state(cluster_file, run_id) != "done":
        assert time.monotonic() < deadline, f"run {run_id} did not finish on the cluster"
        time.sleep(0.5)
    assert main(fetching[1:]) == 0  # the files land where submit would have written them
    assert main(["mask", *arguments[:-1], str(tmp_path / "embedded" / "run")]) == 0
    capsys.readouterr()
    assert tree(tmp_path / "out") == tree(tmp_path / "embedded")  # the provenance, whose times differ, left out


def test_interrupted_while_uploading_the_run_is_created_not_submitted(local_cluster, tmp_path):
    cluster_file, _ = local_cluster
    arguments = example_arguments("mask", tmp_path / "data", tmp_path / "out")
    result = interrupt(["submit", "--cluster", str(cluster_file), "mask", *arguments], "upload", tmp_path / "interrupt")
    assert result.status == 130 and result.stdout == "", result.stderr
    assert result.seconds < 20, "the upload streams were waited for instead of cancelled"
    line = said_once(result.stderr)
    run_id = RUN.search(line).group("id")
    assert line.startswith(f"mfscore: interrupted; run {run_id} was created but not submitted, so nothing will be "
                           "scored; the cluster deletes it and the inputs sent so far after a day"), line
    assert quoted_commands(line) == [["mfscore", "report", "--list", "--cluster", str(cluster_file)]]
    assert listed_state(cluster_file, run_id) == "created"
    assert not (tmp_path / "out").exists()
