"""The results model each localization and provenance task's report returns (mfscore.results), against the
averaged report table written by the same run.

For each run: the primary metric is declared and higher-is-better; every row has a value (a finite float, or
None) for every declared metric; there is a row per row of the averaged table(s), in the order written, and
each row's primary value is the table's to its printed precision (the whole run's row included, where the run
has one); the records file exists and has the key columns; the names are those the task declares
(``Task.primary_metric``, ``Task.metric_names``); and the results round-trip through JSON.

The runs are generated sample data (``mfscore.sample_data``) and one MediScore splice case.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.results import ALL, HIGHER, Results
from mfscore.run.local import report_into
from mfscore.sample_data.examples import example
from mfscore.sample_data.masks import generate_mask_dataset

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "data"
ROUNDED = {"mask": "significant", "video-spatial": "significant", "video-temporal": "decimals",
           "provenance-filtering": "exact", "provenance-graph": "decimals"}


def _run(name: str, arguments: list[str], out_root: Path | str) -> Results:
    """Plan, score and report ``mfscore <name> ARGUMENTS`` into ``out_root`` (``DIR/PREFIX``, or ``DIR/``) as the
    local runner does."""
    args = build_parser([name]).parse_args([name, *arguments])
    task = tasks.get(name)
    options = args.task_options(args).options
    plan = task.plan(options)
    outcomes = {job.key: task.score(job.work) for job in plan.jobs}
    lines = report_into(task, plan, outcomes, str(out_root))
    assert lines.error is None and lines.results is not None
    return lines.results


def _table(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def _matches(value: float | None, cell: str, rounding: str, digits: int) -> bool:
    """Whether ``cell`` is ``value`` as the report prints it (empty for None)."""
    if value is None or cell == "":
        return value is None and cell == ""
    written = float(cell)
    if rounding == "exact":
        return written == value
    if rounding == "decimals":
        return abs(written - value) <= 0.5 * 10.0 ** -digits
    return math.isclose(written, value, rel_tol=10.0 ** (1 - digits), abs_tol=1e-300)


def _check(results: Results, task: str, tables: list[Path], column: str, digits: int = 12,
           out_dir: Path | None = None) -> list[dict]:
    """The invariants of the module docstring; returns the averaged tables' rows."""
    assert results.task == task
    assert results.spec(results.primary).better == HIGHER
    names = [m.name for m in results.metrics]
    declared = tasks.get(task)  # the names the task declares to its published schema
    assert re.fullmatch(declared.primary_metric, results.primary)
    assert all(re.fullmatch(declared.metric_names, name) for name in names), names
    assert len(set(names)) == len(names) and all(m.description for m in results.metrics)
    for row in results.rows:
        assert set(row.values) == set(names), row
        assert all(v is None or (isinstance(v, float) and math.isfinite(v)) for v in row.values.values()), row
        assert all(isinstance(n, int) and n >= 0 for n in row.counts.values()), row
    written = [row for path in tables for row in _table(path)]
    assert len(results.rows) == len(written) > 0
    for row, cells in zip(results.rows, written):
        assert _matches(row.values[results.primary], cells[column], ROUNDED[task], digits), (row, cells[column])
    if results.records is not None and out_dir is not None:
        header = _table(out_dir / results.records.file)[0]
        assert set(results.records.key) <= set(header)
    assert Results.from_json(results.to_json()) == results
    return written


# ----------------------------------------------------------------------------------- masks

@pytest.fixture(scope="module")
def mask_data(tmp_path_factory):
    data = generate_mask_dataset(tmp_path_factory.mktemp("mask-data"), 12, width=96, height=72)
    return ["-t", "manipulation", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "-s", str(data.directory / data.system), "--precision", "6"]


def test_mask_whole_run(mask_data, tmp_path):
    results = _run("mask", [*mask_data, "-oR", str(tmp_path / "run")], tmp_path / "run")
    assert results.primary == "OptimumMCC"
    assert {m.name: m.better for m in results.metrics} == {
        "OptimumMCC": "higher", "OptimumNMM": "higher", "OptimumBWL1": "lower", "GWL1": "lower", "AUC": "higher",
        "EER": "lower"}
    written = _check(results, "mask", [tmp_path / "run_mask_score.csv"], "OptimumMCC", 6, tmp_path)
    assert results.primary_value(ALL) is not None and written[0]["Query"] == "Full"
    counts = results.row(ALL).counts
    assert counts["trials"] == int(written[0]["totalTrials"])
    assert counts["scoreable"] == int(written[0]["ScoreableTrials"])
    assert results.records.file == "run_mask_scores_perimage.csv" and results.records.key == ("ProbeFileID",)


def test_mask_averaging_queries(mask_data, tmp_path):
    queries = ["Collection==['Nimble-SCI']", "Collection==['Nimble-WEB']", "Collection==['no such collection']"]
    results = _run("mask", [*mask_data, "-q", *queries, "-oR", str(tmp_path / "run")], tmp_path / "run")
    tables = sorted(tmp_path.glob("run_mask_scores_[0-9].csv"))
    written = _check(results, "mask", tables, "OptimumMCC", 6, tmp_path)
    assert [row.query for row in results.rows] == [cells["Query"] for cells in written] == queries[:2]


def test_mask_partitions(mask_data, tmp_path):
    results = _run("mask", [*mask_data, "-qp", "Collection==['Nimble-SCI','Nimble-WEB']", "-oR", str(tmp_path / "run")],
                   tmp_path / "run")
    written = _check(results, "mask", [tmp_path / "run_mask_score.csv"], "OptimumMCC", 6, tmp_path)
    assert [row.query for row in results.rows] == [f"Collection=={cells['Collection']}" for cells in written]


def test_mask_manipulation_queries(tmp_path):
    arguments, _ = example("mask")(tmp_path / "data")  # two -qm queries: index_0/, index_1/
    results = _run("mask", [*arguments, "-oR", str(tmp_path / "out" / "run")], tmp_path / "out" / "run")
    tables = sorted((tmp_path / "out").glob("index_*/run_mask_score.csv"))
    written = _check(results, "mask", tables, "OptimumMCC", 6, tmp_path / "out")
    assert [row.query for row in results.rows] == [cells["Query"] for cells in written]
    assert results.records.file == "index_0/run_mask_scores_perimage.csv"


def test_mask_splice_ranks_by_the_probe_mask(tmp_path, monkeypatch):
    """MediScore's splice case: probe (p) and donor (d) metrics, primary the probe's Optimum MCC."""
    stem = "B_NC2017_Unittest_Splice_ImgOnly_p-me_1"
    monkeypatch.chdir(CONFORMANCE)
    results = _run("mask", ["-t", "splice", "--refDir", "maskScorerTests", "-r",
                            "reference/splice/NC2017-splice-ref.csv", "-x", "indexes/NC2017-splice-index.csv",
                            "-s", f"maskScorerTests/{stem}/{stem}.csv", "--precision", "12",
                            "-oR", str(tmp_path / "P")], tmp_path / "P")
    assert results.primary == "pOptimumMCC" and "probe" in results.spec("pOptimumMCC").description
    assert {"pOptimumMCC", "dOptimumMCC", "pGWL1", "dGWL1"} <= {m.name for m in results.metrics}
    written = _check(results, "mask", [tmp_path / "P_mask_score.csv"], "pOptimumMCC", 12, tmp_path)
    assert _matches(results.row(ALL).values["dOptimumMCC"], written[0]["dOptimumMCC"], "significant", 12)
    assert results.records.key == ("ProbeFileID", "DonorFileID")


# ----------------------------------------------------------------------------------- video

def test_video_spatial(tmp_path):
    arguments, _ = example("video-spatial")(tmp_path / "data")
    results = _run("video-spatial", [*arguments, "-oR", str(tmp_path / "out" / "run")], tmp_path / "out" / "run")
    assert results.primary == "SpatialTemporalOptimumMCC"
    written = _check(results, "video-spatial", [tmp_path / "out" / "run_mask_score.csv"], results.primary, 6,
                     tmp_path / "out")
    assert results.primary_value(ALL) is not None and written[0]["Query"] == "Full"
    assert _matches(results.row(ALL).values["TemporalMCC"], written[0]["TemporalMCC"], "significant", 6)


@pytest.mark.parametrize("queries", [["-q", "ConfidenceScore > 0.7", "ConfidenceScore > 2"],
                                     ["-qp", "Operation==['PasteSampled','PasteSplice']"]], ids=["-q", "-qp"])
def test_video_spatial_queries(tmp_path, queries):
    arguments, _ = example("video-spatial")(tmp_path / "data")
    results = _run("video-spatial", [*arguments, *queries, "-oR", str(tmp_path / "out" / "run")],
                   tmp_path / "out" / "run")
    written = _check(results, "video-spatial", [tmp_path / "out" / "run_mask_score.csv"], results.primary, 6,
                     tmp_path / "out")
    if queries[0] == "-q":  # a query selecting no video has no row
        assert [row.query for row in results.rows] == [cells["Query"] for cells in written] == queries[1:2]
    else:
        assert [row.query for row in results.rows] == [cells["Query"] for cells in written] == [
            "Operation=='PasteSampled'", "Operation=='PasteSplice'"]


def test_video_spatial_temporal_only_ranks_by_temporal_mcc(tmp_path):
    arguments, _ = example("video-spatial")(tmp_path / "data")
    results = _run("video-spatial", [*arguments, "--temporal_scoring_only", "-oR", str(tmp_path / "out" / "run")],
                   tmp_path / "out" / "run")
    assert results.primary == "TemporalMCC" and results.primary_value(ALL) is not None
    _check(results, "video-spatial", [tmp_path / "out" / "run_mask_score.csv"], "TemporalMCC", 6, tmp_path / "out")


def test_video_temporal(tmp_path):
    arguments, _ = example("video-temporal")(tmp_path / "data")  # -q "*" "Operation == 'PasteSampled'"
    results = _run("video-temporal", [*arguments, "-o", str(tmp_path / "out") + "/"], str(tmp_path / "out") + "/")
    assert results.primary == "MCC"
    written = _check(results, "video-temporal", [tmp_path / "out" / "scores.csv"], "MCC", 12, tmp_path / "out")
    queries = {cells["id"]: cells["query"] for cells in _table(tmp_path / "out" / "query_table_join.csv")}
    assert [row.query or "*" for row in results.rows] == [queries[cells["query"]] for cells in written]
    assert results.primary_value(ALL) is not None
    probes = _table(tmp_path / "out" / "scores_probes.csv")
    assert results.row(ALL).counts["probes"] == sum(cells["query"] == "0" for cells in probes)


# ----------------------------------------------------------------------------------- provenance

def test_provenance_filtering(tmp_path):
    arguments, _ = example("provenance-filtering")(tmp_path / "data")  # --nodetype all
    results = _run("provenance-filtering", [*arguments, "-o", str(tmp_path / "out") + "/"], str(tmp_path / "out") + "/")
    assert results.primary == "NodeRecallAt300"
    assert [m.name for m in results.metrics] == [f"NodeRecallAt{n}" for n in (50, 100, 200, 300)]
    written = _check(results, "provenance-filtering", [tmp_path / "out" / "scores.csv"], "NodeRecallAt300",
                     out_dir=tmp_path / "out")
    assert [row.query or "All" for row in results.rows] == [cells["NodeType"] for cells in written]
    trials = _table(tmp_path / "out" / "trial_scores.csv")
    assert results.row(ALL).counts["probes"] == sum(cells["NodeType"] == "All" for cells in trials)


def test_provenance_graph(tmp_path):
    arguments, _ = example("provenance-graph")(tmp_path / "data")
    results = _run("provenance-graph", [*arguments, "-o", str(tmp_path / "out") + "/"], str(tmp_path / "out") + "/")
    assert results.primary == "MeanSimNLO"
    assert [m.name for m in results.metrics] == ["MeanSimNLO", "MeanSimNO", "MeanSimLO", "MeanNodeRecall"]
    written = _check(results, "provenance-graph", [tmp_path / "out" / "scores.csv"], "MeanSimNLO",
                     out_dir=tmp_path / "out")
    assert results.rows[0].query == ALL
    for name in ("MeanSimNO", "MeanSimLO", "MeanNodeRecall"):
        assert _matches(results.row(ALL).values[name], written[0][name], "decimals", 12)
    assert results.row(ALL).counts["probes"] == len(_table(tmp_path / "out" / "trial_scores.csv"))
