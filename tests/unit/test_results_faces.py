"""Every registered task's results, through every face: ``--json`` on stdout (valid against the task's published
schema), the results file beside the reports, the run's provenance, the summary table and ``--quiet``
(docs/results.md). Parametrized by the registry, so a new task is held to them by its registry line alone."""

from __future__ import annotations

import hashlib
import json
import os

import jsonschema
import pytest

from mfscore import __version__, results_schema, tasks
from mfscore.cli.main import build_parser, main
from mfscore.results import Results
from mfscore.run_record import ABSENT
from mfscore.sample_data.examples import example_arguments
from mfscore.tasks.base import path_fields

NAMES = tasks.names()
HEX64 = set("0123456789abcdef")


@pytest.mark.parametrize("name", NAMES)
def test_the_published_schema_is_the_generated_one(name):
    path = results_schema.path(name)
    assert path.is_file(), f"{path} is missing: python -m mfscore.results_schema writes it"
    assert path.read_text() == results_schema.text(name), f"{path} is stale: python -m mfscore.results_schema"
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def _run(name, tmp_path, capsys, *extra):
    """(status, stdout, stderr, the output directory, the task's options) of the example run with ``extra``."""
    if not (tmp_path / "arguments.json").exists():  # the data is generated once per test
        (tmp_path / "arguments.json").write_text(json.dumps(example_arguments(name, tmp_path / "data",
                                                                              tmp_path / "out")))
    arguments = json.loads((tmp_path / "arguments.json").read_text())
    capsys.readouterr()
    status = main([name, *arguments, *extra])
    said = capsys.readouterr()
    args = build_parser([name]).parse_args([name, *arguments])
    return status, said.out, said.err, tmp_path / "out", args.task_options(args).options


@pytest.mark.parametrize("name", NAMES)
def test_json_is_the_results_with_the_run_and_matches_the_schema(name, tmp_path, capsys):
    status, out, err, directory, options = _run(name, tmp_path, capsys, "--json")
    assert status == 0, err
    document = json.loads(out)  # stdout holds the JSON alone: every other line went to stderr
    validator = jsonschema.Draft202012Validator(json.loads(results_schema.path(name).read_text()),
                                                format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert [e.message for e in validator.iter_errors(document)] == []

    results_files = [p for p in directory.rglob("*results.json")]
    run_files = [p for p in directory.rglob("*run.json")]
    assert len(results_files) == len(run_files) == 1
    run = document.pop("run")
    assert json.loads(results_files[0].read_text()) == document
    assert json.loads(run_files[0].read_text()) == run
    results = Results.from_json(results_files[0].read_bytes())
    assert results.task == name and results.rows
    assert results.to_json() == results_files[0].read_bytes()  # canonical: read and written again, the same bytes
    assert results.spec(results.primary).better == "higher"  # every plan's primary metric is higher-is-better

    assert (run["mfscore"], run["task"], run["runner"], run["cpus"]) == (__version__, name, "embedded", os.cpu_count())
    assert run["started"] <= run["finished"]
    for key, digest in run["tables"].items():
        assert key.split("/")[0] in tasks.get(name).inputs(options).roots
        assert set(digest) <= HEX64 and len(digest) == 64
    for field in path_fields(options):  # input paths are recorded as keys
        assert run["options"][field] is None or not os.path.isabs(run["options"][field])

    _, quiet_out, *_ = _run(name, tmp_path, capsys, "--quiet")
    assert [line for line in quiet_out.splitlines() if line not in err.splitlines()] == []


@pytest.mark.parametrize("name", NAMES)
def test_the_file_manifest_digest_is_the_sha256_of_the_listed_files(name, tmp_path, capsys):
    """Recomputed independently: the job files the plan names, hashed here, listed ``<sha256>  <key>``."""
    status, out, err, _, options = _run(name, tmp_path, capsys, "--json")
    assert status == 0, err
    run = json.loads(out)["run"]
    task = tasks.get(name)
    inputs = task.inputs(options)
    listed: dict[str, dict[str, str]] = {}
    plan = task.plan(options)
    for job in plan.jobs:
        for path in task.blobs(job.work).values():
            if path and path not in plan.generated:  # the plan's own files are not the run's inputs
                root = max((r for r, d in inputs.roots.items()
                            if os.path.commonpath([os.path.abspath(d), os.path.abspath(path)]) == os.path.abspath(d)),
                           key=lambda r: len(os.path.abspath(inputs.roots[r])))
                key = f"{root}/{os.path.relpath(path, inputs.roots[root])}"
                digest = hashlib.sha256(open(path, "rb").read()).hexdigest() if os.path.isfile(path) else ABSENT
                listed.setdefault(root, {})[key] = digest
    expected = {root: {"count": len(files),
                       "sha256": hashlib.sha256("".join(f"{files[k]}  {k}\n" for k in sorted(files)).encode()).hexdigest()}
                for root, files in listed.items()}
    assert run["files"] == expected


@pytest.mark.parametrize("name", NAMES)
def test_the_summary_table_ends_the_output_and_quiet_drops_it(name, tmp_path, capsys):
    status, out, err, *_ = _run(name, tmp_path, capsys)
    assert status == 0, err
    results = Results.from_json(next((tmp_path / "out").rglob("*results.json")).read_bytes())
    lines = out.splitlines()
    title = lines.index(f"{name}: primary metric {results.primary} (higher is better)")
    table = lines[title + 1:]
    assert len(table) == 1 + len(results.rows)
    assert table[0].split()[0] == "query" and results.primary + "↑" in table[0]
    for row, line in zip(results.rows, table[1:]):
        value = row.values.get(results.primary)
        assert ("-" if value is None else f"{value:.4f}") in line

    status, quiet_out, quiet_err, *_ = _run(name, tmp_path, capsys, "--quiet")
    assert status == 0, quiet_err
    assert quiet_out.splitlines() == lines[:title]
