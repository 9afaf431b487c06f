"""The garbage collector is set for a run only when the command is its process's own (``run.collector``): a
caller's ``main([...])`` (a test, the demo, a notebook) keeps its own setting; either way the reports are the
same bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mfscore.run.collector import YOUNG_COLLECTION_EVERY
from mfscore.sample_data.provenance import generate_provenance_dataset

PROBE = """
import gc, json, sys
from mfscore.cli.main import main
own = sys.argv[1] == "own"
sys.argv = ["mfscore", *sys.argv[2:]]
before = gc.get_threshold()
status = main() if own else main(sys.argv[1:])
print(json.dumps([status, before, gc.get_threshold(), gc.get_freeze_count()]))
"""


def _run(how: str, arguments: list[str]) -> tuple[int, list[int], list[int], int]:
    done = subprocess.run([sys.executable, "-c", PROBE, how, *arguments], capture_output=True, text=True, check=True)
    return tuple(json.loads(done.stdout.splitlines()[-1]))


def _reports(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if not p.name.endswith("run.json")}


def test_a_command_of_its_own_process_sets_the_collector_and_a_caller_s_list_does_not(tmp_path):
    options = generate_provenance_dataset(tmp_path / "data", 12).options("system.csv")
    status, before, after, frozen = _run("own", ["provenance-filtering", *options, "-o", f"{tmp_path}/own/"])
    assert status == 0
    assert after == [YOUNG_COLLECTION_EVERY, *before[1:]] and frozen > 10_000  # the imported modules' objects
    status, before, after, frozen = _run("caller", ["provenance-filtering", *options, "-o", f"{tmp_path}/caller/"])
    assert status == 0 and after == before and after[0] != YOUNG_COLLECTION_EVERY and frozen == 0
    assert _reports(tmp_path / "own") == _reports(tmp_path / "caller") != {}
