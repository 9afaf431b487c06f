"""Hostile input refused before it exhausts the machine (issue: a service an evaluation can trust):
a provenance JSON of a million arrays, a schema-invalid JSON of many items, a table header of a
million columns, a table over the byte limit, and the staging directories a killed run leaves."""

# ruff: noqa: F811  (the tests take the detection bad-input suite's ``env`` fixture, imported below)
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tracemalloc

from output_files import everything_under
from test_detection_bad_input import SYSTEM, assert_failed_cleanly, env, run  # noqa: F401  (env is a fixture)

from mfscore.errors import InputFileError
from mfscore.formats.provenance_json import load_provenance_json, schema_problems
from mfscore.limits import (
    DEFAULT_MAX_TABLE_BYTES,
    MAX_HEADER_BYTES,
    MAX_JSON_CONTAINERS,
    MAX_SCHEMA_PROBLEMS,
    MAX_TABLE_COLUMNS,
)
from mfscore.run.staged_outputs import STAGE_PREFIX


def test_a_json_of_more_arrays_than_the_limit_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "many.json"
    path.write_bytes(b'{"nodes": [' + b"[]," * MAX_JSON_CONTAINERS + b"[]]}")
    tracemalloc.start()
    try:
        load_provenance_json(path)
        raise AssertionError("a JSON of over a million arrays was parsed")
    except InputFileError as error:
        assert f"more than the limit of {MAX_JSON_CONTAINERS}" in error.message
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 8 * path.stat().st_size  # the bytes read, not a parsed million lists


def test_a_schema_check_stops_at_the_first_problems(tmp_path):
    document = {"nodes": [[] for _ in range(200_000)], "links": []}
    problems = schema_problems(document, "provenance")
    assert len(problems) == MAX_SCHEMA_PROBLEMS
    assert all(problem.startswith("nodes[") for problem in problems)


def test_a_header_of_too_many_columns_is_refused(env, capsys):
    wide = "|".join(f"c{k}" for k in range(MAX_TABLE_COLUMNS + 1))
    (env["in"] / "sys.csv").write_text("\n".join([wide, *SYSTEM[1:]]) + "\n")
    status = run(env)
    assert_failed_cleanly(status, capsys, env, "sys.csv, line 1", f"{MAX_TABLE_COLUMNS + 1} columns",
                          f"limit of {MAX_TABLE_COLUMNS}")


def test_a_header_line_over_the_byte_limit_is_refused(env, capsys):
    (env["in"] / "sys.csv").write_text("a|" * (MAX_HEADER_BYTES // 2 + 1) + "\n")
    status = run(env)
    assert_failed_cleanly(status, capsys, env, "sys.csv, line 1", f"limit of {MAX_HEADER_BYTES} bytes")


def test_a_table_over_the_byte_limit_is_refused_embedded_as_on_the_cluster(env, capsys):
    with open(env["in"] / "ref.csv", "r+b") as table:
        table.truncate(DEFAULT_MAX_TABLE_BYTES + 1)  # sparse: nothing is written
    status = run(env)
    assert_failed_cleanly(status, capsys, env, "ref.csv", f"more than the limit of {DEFAULT_MAX_TABLE_BYTES}")


def test_a_killed_runs_staging_directory_is_removed_by_the_next_run(env, capsys):
    env["out"].mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = socket.gethostname()
    dead = env["out"] / f"{STAGE_PREFIX}{host}-{int(gone.stdout)}-abc"
    alive = env["out"] / f"{STAGE_PREFIX}{host}-{os.getpid()}-def"
    other_host = env["out"] / f"{STAGE_PREFIX}elsewhere-{int(gone.stdout)}-ghi"
    for stage in (dead, alive, other_host):
        (stage / "half").mkdir(parents=True)
    assert run(env, "--noPlot") == 0
    left = {p.name for p in env["out"].iterdir() if p.name.startswith(STAGE_PREFIX)}
    assert left == {alive.name, other_host.name}
    assert (env["out"] / "run_all_report.csv").exists()
    assert everything_under(env["cwd"]) == []
