"""Provenance on a local cluster (real nats-server, real S3 server, every service a process):
``mfscore submit provenance-filtering|provenance-graph ARGS`` leaves the same files, byte for byte, and
prints the same lines as the embedded command, trials with a missing or unusable system JSON included;
and the provenance scorer, called over gRPC, gives the record the core computes for a trial."""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import replace

import grpc
import pytest

from integration.equivalence import assert_same_outputs, run_both, tree, without_created
from integration.uploads import same_outcome, upload
from mfscore.cli.main import main
from mfscore.records import Problem
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.services.commands.submit import localize
from mfscore.services.commands.upload import upload_files
from mfscore.services.common.messages import job_key, outcome
from mfscore.services.wire import services_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

MISSING, NOT_JSON, NO_NODES = "P00011", "P00022", "P00030"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """24 probes whose system graphs have cycles (the graph variants pass -c); one system JSON is missing, one is
    not JSON, one fails the schema."""
    data = generate_provenance_dataset(tmp_path_factory.mktemp("provenance") / "data", 24, cycles=True)
    json_dir = data.root / "system" / "json"
    (json_dir / f"{MISSING}.json").unlink()
    (json_dir / f"{NOT_JSON}.json").write_text('{"nodes": [')
    (json_dir / f"{NO_NODES}.json").write_text(json.dumps({"directed": True, "links": []}))
    return data


def options(data) -> list[str]:
    return data.options("system.csv")


def left_out(stderr: str) -> list[str]:
    return [re.match(r"mfscore: ERROR: probe (\w+):", line).group(1) for line in stderr.splitlines()
            if line.startswith("mfscore: ERROR:")]


FILTERING_VARIANTS = {
    "plain": [],
    "node-types-html": ["--nodetype", "donor", "base", "-H"],
    "all-node-types": ["--nodetype", "all"],
    "json-size-limit": ["--max-json-bytes", "56000"],
}


@pytest.mark.parametrize("variant", sorted(FILTERING_VARIANTS))
def test_filtering_reports_are_identical(variant, dataset, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    runs = run_both(capsys, cluster_file, "provenance-filtering", options(dataset) + FILTERING_VARIANTS[variant],
                    "-o", str(a), str(b))
    files = assert_same_outputs(a, b, *runs)
    assert sorted(files) == ["node_mapping.csv", "results.json", "scores.csv", "trial_scores.csv"]
    _, out, err = runs[1]
    assert out.startswith(f"reports in {b}/\nprovenance-filtering: primary metric NodeRecallAt300")
    assert {MISSING, NOT_JSON, NO_NODES} <= set(left_out(err))
    assert f"{dataset.root}/system/json/{MISSING}.json: the JSON file does not exist" in err
    if variant == "json-size-limit":
        assert "more than the limit of 56000" in err and len(left_out(err)) > 3


def test_filtering_verbose_differs_only_in_its_timing(dataset, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    (status_a, out_a, err_a), (status_b, out_b, err_b) = run_both(
        capsys, cluster_file, "provenance-filtering", options(dataset) + ["-v"], "-o", str(a), str(b))
    assert status_a == status_b == 0
    assert tree(a) == tree(b)
    assert out_b.replace(str(b), str(a)) == out_a

    def timeless(text: str) -> str:
        return re.sub(r", in \d+\.\d\d s$", ", in T s", text, flags=re.MULTILINE)

    assert timeless(err_b) == timeless(err_a)
    assert "mfscore: scored 21 trial(s), left out 3, in T s" in timeless(err_b)


GRAPH_VARIANTS = {
    "cycles-warned": ["-c"],
    "direct-undirected-verbose": ["-c", "-d", "-u", "-v"],
    "direct-thumbnail-note": ["-c", "-d", "-T", "thumbnails"],
}


@pytest.mark.parametrize("variant", sorted(GRAPH_VARIANTS))
def test_graph_reports_are_identical(variant, dataset, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    runs = run_both(capsys, cluster_file, "provenance-graph", options(dataset) + GRAPH_VARIANTS[variant],
                    "-o", str(a), str(b))
    files = assert_same_outputs(a, b, *runs)
    tables = ["link_mapping.csv", "node_mapping.csv", "scores.csv", "trial_scores.csv"]
    assert sorted(set(files) - {"results.json"})[-4:] == tables
    _, out, err = runs[1]
    assert sorted(left_out(err)) == sorted([MISSING, NOT_JSON, NO_NODES])
    scored = files["trial_scores.csv"].decode().splitlines()[1:]
    assert len(scored) == 21 and not any(p in row for row in scored for p in (MISSING, NOT_JSON, NO_NODES))
    if "-v" in GRAPH_VARIANTS[variant]:
        lines = out.splitlines()
        lines = lines[:lines.index("provenance-graph: primary metric MeanSimNLO (higher is better)")]
        assert lines[0] == "Scoring 24 trials .." and lines[-1] == f"Writing Link Mapping to '{b / 'link_mapping.csv'}'"
        assert f"Warning, detected cycle(s) for system output file '{dataset.root}/system/json/P00000.json'" in lines
    if "-T" in GRAPH_VARIANTS[variant]:
        assert err.startswith("mfscore: note: -T is accepted and ignored")


FIGURE_PROBES = 4  # one journal (the fewest probes a dataset has): a figure of a 300-node graph takes seconds to draw


@pytest.fixture(scope="module")
def figure_runs(local_cluster, tmp_path_factory):
    """``-c -H``: (embedded files, cluster files, embedded stdout+stderr, cluster stdout+stderr)."""
    cluster_file, _ = local_cluster
    root = tmp_path_factory.mktemp("figures")
    dataset = generate_provenance_dataset(root / "data", FIGURE_PROBES)
    said = []
    for command in (["provenance-graph"], ["submit", "--cluster", str(cluster_file), "provenance-graph"]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main([*command, *options(dataset), "-c", "-H", "-o", str(root / command[0])]) == 0, err.getvalue()
        said.append((out.getvalue(), err.getvalue()))
    said[1] = (said[1][0], without_created(said[1][1]))
    return tree(root / "provenance-graph"), tree(root / "submit"), *said


def test_graph_figures_and_html_report_are_written_as_embedded(figure_runs):
    embedded, cluster, said_embedded, said_cluster = figure_runs
    assert sorted(cluster) == sorted(embedded) and said_cluster == said_embedded
    figures = [name for name in embedded if name.startswith("figures/")]
    assert len(figures) == FIGURE_PROBES and all(cluster[name].startswith(b"\x89PNG\r\n\x1a\n") for name in figures)
    assert {n: c for n, c in cluster.items() if n not in figures} == {n: c for n, c in embedded.items() if n not in figures}
    assert b"figures/P00000.png" in cluster["report.html"]


def test_graph_figures_are_byte_identical(figure_runs):
    embedded, cluster, _, _ = figure_runs
    assert [name for name in embedded if name.startswith("figures/") and embedded[name] != cluster[name]] == []


def test_a_system_cycle_without_c_fails_the_run_with_the_embedded_sentence(dataset, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    (status_a, _, err_a), (status_b, _, err_b) = run_both(capsys, cluster_file, "provenance-graph",
                                                          options(dataset), "-o", str(a), str(b))
    assert status_a == status_b == 1
    sentence = err_a.strip().removeprefix("mfscore: error: ")
    assert "P00000.json: the system graph has a cycle" in sentence
    assert re.fullmatch(r"mfscore: error: run \w+ failed: (.*)", err_b.strip()).group(1) == sentence
    assert tree(a) == tree(b) == {}


def test_bad_input_fails_before_upload_as_embedded(dataset, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    arguments = options(dataset) + ["-x", str(dataset.root / "absent.csv")]
    (status_a, out_a, err_a), (status_b, out_b, err_b) = run_both(
        capsys, cluster_file, "provenance-filtering", arguments, "-o", str(tmp_path / "a"), str(tmp_path / "b"))
    assert status_a == status_b == 1 and (out_b, err_b) == (out_a, err_a)
    assert "absent.csv" in err_b and not (tmp_path / "b").exists()


def test_the_validator_runs_the_embedded_checks_and_names_the_files_by_key(dataset, local_cluster, tmp_path):
    _, config = local_cluster
    run = upload(config, "provenance-graph", [*options(dataset), "-o", str(tmp_path / "out")])
    files = {key for _, key in run.files}
    assert "sys/system.csv" in run.tables and "sys/system.csv" in files
    assert f"sys/json/{MISSING}.json" not in files  # a missing JSON is not uploaded: its trial's problem
    assert {"ref/journals/J0000.json", f"sys/json/{NOT_JSON}.json"} <= files
    assert "ref/journals/J0000.json" in run.tables and f"sys/json/{NOT_JSON}.json" not in run.tables
    spec = run.spec()
    with config.channel(config.validator_address) as channel:
        validator = services_pb2_grpc.ValidatorServiceStub(channel)
        report = validator.Validate(services_pb2.ValidateRequest(run=spec), timeout=60).report
        assert report.valid and not report.findings
        rows = (dataset.root / "system" / "system.csv").read_text().splitlines()
        fewer = tmp_path / "fewer.csv"
        fewer.write_text("\n".join(r for r in rows if "P00012" not in r) + "\n")
        upload_files(config, run.run_id, [(str(fewer), "sys/system.csv")])  # the run is not submitted: replaced
        report = validator.Validate(services_pb2.ValidateRequest(run=spec), timeout=60).report
        assert not report.valid and [f.code for f in report.findings] == ["run.inputs"]
        sentence = "sys/system.csv: the system output lacks the index probe(s) P00012"
        assert report.findings[0].message == sentence
        assert localize(sentence, run.roots) == (f"{dataset.root / 'system' / 'system.csv'}: the system output lacks "
                                                 "the index probe(s) P00012")


def scorer_address(config) -> str:
    port = next(p["grpc_port"] for p in config.processes if p.get("service") == "provenance-scorer")
    return f"127.0.0.1:{port}"


SCORER_OPTIONS = {"provenance-filtering": ["--nodetype", "donor"], "provenance-graph": ["-c", "-u"]}


@pytest.mark.parametrize("task_name", sorted(SCORER_OPTIONS))
def test_provenance_scorer_scores_one_trial_as_the_core_does(task_name, dataset, local_cluster):
    _, config = local_cluster
    run = upload(config, task_name, [*options(dataset), "-o", "unused", *SCORER_OPTIONS[task_name]])
    task = run.task
    assert task.resource == "json"
    jobs = {job.work.output_file: job for job in run.plan.jobs}
    p2 = jobs["json/P00002.json"]
    cases = [(jobs["json/P00000.json"], "record"), (jobs["json/P00001.json"], "record"),
             (jobs[f"json/{MISSING}.json"], "does not exist"), (jobs[f"json/{NOT_JSON}.json"], "not valid JSON"),
             (replace(p2, work=replace(p2.work, max_json_bytes=1000)), "more than the limit of 1000")]
    with config.channel(scorer_address(config)) as channel:
        stub = services_pb2_grpc.ScorerServiceStub(channel)

        def score(job, **blobs):
            wire = run.wire(job, **blobs)
            reply = stub.Score(services_pb2.ScoreRequest(job=wire), timeout=30).record
            assert (reply.run_id, reply.task, job_key(reply.key), reply.scorer, reply.error) == (
                run.run_id, task_name, job.key, "provenance-scorer", "")
            return outcome(task, reply)

        for job, expected_kind in cases:
            got, expected = score(job), task.score(job.work)
            assert same_outcome(got, expected, run.roots), (got, expected)
            if expected_kind == "record":
                assert not isinstance(got, Problem)
                record = got.record if task_name == "provenance-graph" else got
                assert record.ordinal == job.work.ordinal == job.key.ordinal
            else:
                assert isinstance(got, Problem) and not got.fatal
                assert expected_kind in got.message and job.work.system_path in localize(got.message, run.roots)
        first = cases[0][0]
        absent = replace(first, work=replace(first.work, output_file="json/absent.json",
                                             system_path=str(dataset.root / "system" / "json" / "absent.json")))
        got = score(absent)
        assert same_outcome(got, task.score(absent.work), run.roots)
        assert localize(got.message, run.roots).endswith("absent.json: the JSON file does not exist")
        if task_name == "provenance-graph":
            strict = replace(first, work=replace(first.work, warn_on_system_cycle=False))
            got, expected = score(strict), task.score(strict.work)
            assert isinstance(expected, Problem) and expected.fatal and "the system graph has a cycle" in expected.message
            assert same_outcome(got, expected, run.roots)
        bad = run.wire(first)
        bad.work = b"{}"  # not the task's work
        with pytest.raises(grpc.RpcError):
            stub.Score(services_pb2.ScoreRequest(job=bad), timeout=30)
