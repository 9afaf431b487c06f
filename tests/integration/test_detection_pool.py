"""Detection on the detection scorer pool: a cluster whose threshold (``MFSCORE_POOL_MIN_TRIALS``) is 0 sends every
detection run's jobs to its two ``detection-scorer`` processes, which fetch each subset's trial file the aggregator
stored with the run's inputs; the reports are the embedded command's, byte for byte.

The runs with ``--ci`` have each subset's 500 bootstrap replicates sliced into jobs, so slices of one subset are
scored by both processes, each advancing its generator past the draws of the slices it did not score
(``mfscore.detection.bootstrap``). The large run (``slow``, 'make test-slow') is large enough (over 100,000 trials in
each ``-qm`` subset) to be sliced by its work alone (``detection.SLICE_WORK``); 'make test' runs a small one, sliced
because a record holds at most ``detection.MAX_RECORD_VALUES`` replicate values (the ROC band's among them).
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from integration.equivalence import assert_same_outputs, run_both
from mfscore.cli.main import build_parser
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.tasks import detection

pytestmark = pytest.mark.integration

TRIALS = 160_000  # the smallest -qm subset has over 100,000 (two slices of 250 replicates)
SMALL_TRIALS = 10_000  # a few thousand a subset
QUERIES = ["-qm", "Purpose==['add']", "Purpose==['remove','clone']", "Operation==['Blur']"]


@pytest.fixture(scope="module")
def pool_cluster(tmp_path_factory):
    """A local cluster scoring every detection run on its pool (threshold 0), with two detection scorers."""
    path = tmp_path_factory.mktemp("pool-cluster") / "cluster.json"
    config = commands.up(path, detection_scorers=2, environment={"MFSCORE_POOL_MIN_TRIALS": "0"})
    try:
        yield path, config
    finally:
        commands.down(path)


@pytest.fixture(scope="module")
def large_detection(tmp_path_factory):
    data = generate_detection_dataset(tmp_path_factory.mktemp("detection"), TRIALS, seed=7)
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system]


def scored(config, service: str) -> dict[str, int]:
    """How many jobs each process of ``service`` settled as done, from its Prometheus counter."""
    done = {}
    for p in config.processes:
        if p.get("service") == service:
            text = urllib.request.urlopen(f"http://127.0.0.1:{p['metrics_port']}/metrics", timeout=5).read().decode()
            done[p["name"]] = sum(int(float(value)) for value in re.findall(
                r'^mfscore_jobs_total\{[^}]*outcome="done"[^}]*\} (\S+)$', text, re.M))
    return done


def queried_run_on_the_pool(pool_cluster, arguments: list[str], tmp_path: Path, capsys) -> tuple[Path, dict[str, int]]:
    """The run embedded and on the pool, their files the same and its reports the three queries' and SemaFor's;
    the embedded run's directory, and the jobs each detection scorer settled for it."""
    cluster_file, config = pool_cluster
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    before = scored(config, "detection-scorer")
    runs = run_both(capsys, cluster_file, "detection", arguments, "-o", str(a / "x"), str(b / "x"))
    files = assert_same_outputs(a, b, *runs)
    assert sorted(name for name in files if name.endswith("_report.csv")) == \
        [f"x_qm_query_{i}_report.csv" for i in range(3)] + ["x_semafor_report.csv"]
    after = scored(config, "detection-scorer")
    return a, {name: after[name] - before.get(name, 0) for name in after}


@pytest.mark.slow  # 160,000 trials scored twice, embedded and on the cluster: 20-45 s
def test_a_run_with_intervals_and_queries_scored_by_the_pool_writes_the_embedded_files(
        pool_cluster, large_detection, tmp_path, capsys):
    a, jobs = queried_run_on_the_pool(pool_cluster, large_detection + ["--ci", "--semafor", *QUERIES], tmp_path, capsys)
    slices = [detection.slices(n, True) for n in subset_sizes(a / "x_semafor_report.csv")]
    assert all(len(s) >= 2 for s in slices)  # every subset's replicates were sliced
    assert sum(jobs.values()) == sum(len(s) for s in slices) and all(jobs.values()), jobs  # both scorers scored


def subset_sizes(semafor_report: Path) -> list[int]:
    """Each subset's trials, from the SemaFor report's counts."""
    header, *rows = [line.split("|") for line in semafor_report.read_text().splitlines()]
    column = {name: i for i, name in enumerate(header)}
    return [int(row[column["N_TARGET"]]) + int(row[column["N_NONTARGET"]]) for row in rows]


def test_a_small_run_with_intervals_and_queries_sliced_by_the_pool_writes_the_embedded_files(
        pool_cluster, tmp_path, capsys):
    data = generate_detection_dataset(tmp_path / "data", SMALL_TRIALS, seed=7)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--ci", "--semafor", *QUERIES]
    _, jobs = queried_run_on_the_pool(pool_cluster, arguments, tmp_path, capsys)
    parsed = build_parser().parse_args(["detection", *arguments, "-o", str(tmp_path / "planned" / "x")])
    plan = detection.TASK.plan(parsed.task_options(parsed).options)
    per_subset = Counter(job.key.query for job in plan.jobs)
    assert sorted(per_subset) == [0, 1, 2] and all(n >= 2 for n in per_subset.values())  # every subset was sliced
    assert sum(jobs.values()) == len(plan.jobs) and all(jobs.values()), jobs  # both scorers scored


def test_a_small_run_on_the_pool_and_without_intervals_writes_the_embedded_files(pool_cluster, tmp_path, capsys):
    data = generate_detection_dataset(tmp_path / "data", 300)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "-q", "ProbeWidth > 1000", "Purpose=='add'"]
    a, b = tmp_path / "embedded", tmp_path / "cluster"
    runs = run_both(capsys, pool_cluster[0], "detection", arguments, "-o", str(a / "x"), str(b / "x"))
    assert_same_outputs(a, b, *runs)
