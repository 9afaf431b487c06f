"""Leaderboards (``mfscore.leaderboard``, ``mfscore leaderboard``): ranking, intervals, the bootstraps against slow
loops, the records-file mapping, the writers, and the command on generated runs.

Boards are drawn as the lines they should give, best first::

    rank  run  value     submitted
       1  b    0.9       t1
       2  a    0.8       t0     <- tied with c: the earlier submission first
       2  c    0.8       t2
       4  e    0.7       t4
       5  d    None      t3     <- undefined: last
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfscore import leaderboard as lb
from mfscore.cli import leaderboard as command
from mfscore.cli.main import main
from mfscore.formats.tables import read_table, write_table
from mfscore.leaderboard import ALL, BOOTSTRAP, RUN, Entry, leaderboard
from mfscore.results import HIGHER, LOWER, NEITHER, MetricSpec, Records, Results, Row
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.examples import example_arguments

EXACT = 1e-12  # the fast and the slow bootstraps make the same draws: only the order of summation differs


def results(values: dict[str, float | None], *, task="mask", primary="OptimumMCC", better=HIGHER,
            intervals: dict[str, tuple] | None = None, records=None) -> Results:
    """Results with one row per query of ``values`` (the primary metric's value)."""
    intervals = intervals or {}
    specs = (MetricSpec(primary, better, "the ranked metric"), MetricSpec("Other", LOWER, "another metric"))
    rows = tuple(Row(q, {primary: v, "Other": 0.5}, {"trials": 10},
                     {primary: intervals[q]} if q in intervals else {}) for q, v in values.items())
    return Results(task, primary, specs, rows, records=records)


def entry(run: str, value, submitted: str, **options) -> Entry:
    trials = options.pop("trials", None)
    return Entry(run, f"team-{run}", submitted, f"system {run}", results({ALL: value}, **options), trials)


def order(board, query=ALL):
    return [(line.run, line.rank) for line in board.ranking(query).lines]


# ------------------------------------------------------------------------------------------------ ranking

def test_ties_share_a_rank_and_undefined_values_rank_last():
    entries = [entry("a", 0.8, "2026-01-01T00:00:00Z"), entry("b", 0.9, "2026-01-01T01:00:00Z"),
               entry("c", 0.8, "2026-01-01T02:00:00Z"), entry("d", None, "2026-01-01T03:00:00Z"),
               entry("e", 0.7, "2026-01-01T04:00:00Z"), entry("f", None, "2026-01-01T00:30:00Z")]
    board = leaderboard(entries, dataset="d1", task="mask")
    assert order(board) == [("b", 1), ("a", 2), ("c", 2), ("e", 4), ("f", 5), ("d", 5)]
    assert (board.metric, board.better, board.dataset, board.task) == ("OptimumMCC", HIGHER, "d1", "mask")


def test_the_tie_break_is_the_earlier_submission_then_the_run_id_in_any_time_zone():
    entries = [entry("z", 0.5, "2026-01-01T00:30:00Z"), entry("y", 0.5, "2026-01-01T01:00:00+01:00"),  # 00:00Z
               entry("x", 0.5, "2026-01-01T00:30:00+00:00"), entry("w", 0.5, "2026-01-01T00:30:00")]  # naive: UTC
    board = leaderboard(reversed(entries), dataset="d", task="mask")
    assert order(board) == [("y", 1), ("w", 1), ("x", 1), ("z", 1)]
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        leaderboard([entry("a", 0.5, "yesterday")], dataset="d", task="mask")


def test_a_lower_is_better_metric_ranks_ascending():
    entries = [entry(run, value, f"2026-01-0{i + 1}T00:00:00Z", primary="EER", better=LOWER)
               for i, (run, value) in enumerate([("a", 0.3), ("b", 0.1), ("c", None), ("d", 0.2)])]
    board = leaderboard(entries, dataset="d", task="mask")
    assert order(board) == [("b", 1), ("d", 2), ("a", 3), ("c", 4)]
    assert board.better == LOWER


def test_intervals_say_whether_a_line_is_separable_from_the_next():
    #   a  0.90  [0.85, 0.95]  overlaps b's
    #   b  0.88  [0.80, 0.91]  does not overlap c's
    #   c  0.70  [0.65, 0.75]  next has none: unknown
    #   d  0.60  none          last: unknown
    entries = [entry("a", 0.9, "2026-01-01T00:00:00Z", intervals={ALL: (0.85, 0.95)}),
               entry("b", 0.88, "2026-01-01T00:00:00Z", intervals={ALL: (0.80, 0.91)}),
               entry("c", 0.7, "2026-01-01T00:00:00Z", intervals={ALL: (0.65, 0.75)}),
               entry("d", 0.6, "2026-01-01T00:00:00Z")]
    lines = leaderboard(entries, dataset="d", task="mask").ranking().lines
    assert [line.overlaps_next for line in lines] == [True, False, None, None]
    assert [line.ci for line in lines] == [RUN, RUN, RUN, None]
    assert lines[0].interval == (0.85, 0.95)
    touching = [entry("a", 0.9, "2026-01-01T00:00:00Z", intervals={ALL: (0.8, 0.95)}),
                entry("b", 0.7, "2026-01-01T00:00:00Z", intervals={ALL: (0.6, 0.8)})]
    assert leaderboard(touching, dataset="d", task="mask").ranking().lines[0].overlaps_next is True  # closed


def test_a_run_without_an_interval_gets_a_bootstrap_one_from_its_trials():
    trials = np.random.default_rng(1).random(40)
    with_trials = entry("a", float(trials.mean()), "2026-01-01T00:00:00Z", trials={ALL: trials})
    with_own = entry("b", 0.1, "2026-01-01T00:00:00Z", intervals={ALL: (0.05, 0.2)}, trials={ALL: trials})
    lines = {line.run: line for line in leaderboard([with_trials, with_own], dataset="d", task="mask").ranking().lines}
    assert lines["a"].ci == BOOTSTRAP and lines["a"].interval == lb.bootstrap_interval(trials)
    assert lines["b"].ci == RUN and lines["b"].interval == (0.05, 0.2)  # the run's own interval wins


def test_every_query_is_ranked_the_whole_run_first():
    #   query  a     b     c
    #   q1     0.5   0.7   -     (c has no row for q1: last)
    #   all    0.6   0.4   0.5
    #   q2     -     0.1   0.2
    a = Entry("a", "", "2026-01-01T00:00:00Z", "A", results({"q1": 0.5, ALL: 0.6}))
    b = Entry("b", "", "2026-01-02T00:00:00Z", "B", results({"q1": 0.7, ALL: 0.4, "q2": 0.1}))
    c = Entry("c", "", "2026-01-03T00:00:00Z", "C", results({ALL: 0.5, "q2": 0.2}))
    board = leaderboard([c, b, a], dataset="d", task="mask")
    assert [r.query for r in board.rankings] == [ALL, "q1", "q2"]
    assert order(board) == [("a", 1), ("c", 2), ("b", 3)]
    assert order(board, "q1") == [("b", 1), ("a", 2), ("c", 3)]
    assert order(board, "q2") == [("c", 1), ("b", 2), ("a", 3)]
    assert board.ranking("q1").lines[-1].value is None and board.ranking("q1").lines[-1].counts == {}
    text = "\n".join(lb.to_text(board))
    assert "per query" in text and "0.7000 (1)" in text
    with pytest.raises(KeyError):
        board.ranking("q3")


def test_mixed_tasks_are_refused_naming_them():
    entries = [entry("a", 0.5, "2026-01-01T00:00:00Z"),
               entry("b", 0.5, "2026-01-01T00:00:00Z", task="provenance-graph", primary="MeanSimNLO")]
    with pytest.raises(ValueError, match=r"mask runs only; given provenance-graph \(b\)"):
        leaderboard(entries, dataset="d", task="mask")
    with pytest.raises(ValueError, match="given mask"):
        leaderboard(entries[:1], dataset="d", task="provenance-graph")


def test_runs_ranking_by_different_metrics_are_refused_unless_one_is_named():
    auc = Entry("a", "", "2026-01-01T00:00:00Z", "A", results({ALL: 0.9}, task="detection", primary="AUC"))
    specs = (MetricSpec("pD@FAR0.08", HIGHER, "pD"), MetricSpec("AUC", HIGHER, "AUC"))
    semafor = Entry("b", "", "2026-01-01T00:00:00Z", "B",
                    Results("detection", "pD@FAR0.08", specs, (Row(ALL, {"pD@FAR0.08": 0.4, "AUC": 0.95}),)))
    with pytest.raises(ValueError, match=r"different primary metrics: AUC \(a\); pD@FAR0.08 \(b\)"):
        leaderboard([auc, semafor], dataset="d", task="detection")
    board = leaderboard([auc, semafor], dataset="d", task="detection", metric="AUC")
    assert order(board) == [("b", 1), ("a", 2)]
    with pytest.raises(ValueError, match="does not report pD@FAR0.08"):
        leaderboard([auc, semafor], dataset="d", task="detection", metric="pD@FAR0.08")
    with pytest.raises(ValueError, match="no better direction"):
        leaderboard([entry("a", 1.0, "2026-01-01T00:00:00Z", primary="TRR", better=NEITHER)], dataset="d", task="mask")
    with pytest.raises(ValueError, match="more than once"):
        leaderboard([entry("a", 1.0, "2026-01-01T00:00:00Z")] * 2, dataset="d", task="mask")


def test_an_empty_board():
    board = leaderboard([], dataset="d", task="mask")
    assert board.rankings == () and "no run to rank" in "\n".join(lb.to_text(board))
    assert lb.from_json(lb.to_json(board)) == board


# ---------------------------------------------------------------------------------------------- bootstrap

def slow_replicates(columns, statistic, n_resamples, seed):
    """One resample at a time, as the textbook writes it."""
    rng = np.random.default_rng(seed)
    n = len(columns[0])
    out = [[] for _ in columns]
    for _ in range(n_resamples):
        positions = rng.integers(0, n, size=n)
        for column, replicates in zip(columns, out):
            replicates.append(statistic(column[positions]))
    return [np.array(r) for r in out]


def slow_interval(replicates, level):
    """Sorted replicates at the positions docs/detection.md §6.6 gives: level 0.9 → 5%, 95% of B."""
    ordered = sorted(replicates)
    low = round((1 - level) / 2, 3)
    return ordered[int(low * len(ordered))], ordered[min(int(round(1 - low, 3) * len(ordered)), len(ordered) - 1)]


@pytest.mark.parametrize("n", [1, 7, 250])
@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_the_bootstrap_interval_equals_a_slow_loop(n, statistic, monkeypatch):
    values = np.random.default_rng(n).normal(0.5, 0.2, n)
    expected = slow_interval(slow_replicates((values,), statistic, 1000, 77)[0], 0.9)
    assert lb.bootstrap_interval(values, statistic=statistic) == pytest.approx(expected, abs=EXACT)
    monkeypatch.setattr(lb, "CHUNK", 3 * n + 1)  # many chunks of 3 resamples: the same draws
    assert lb.bootstrap_interval(values, statistic=statistic) == pytest.approx(expected, abs=EXACT)
    expected = slow_interval(slow_replicates((values,), statistic, 333, 5)[0], 0.95)
    assert lb.bootstrap_interval(values, statistic=statistic, level=0.95, n_resamples=333, seed=5) == \
        pytest.approx(expected, abs=EXACT)


def test_the_bootstrap_interval_refuses_undefined_values():
    for bad in (np.array([0.1, np.nan]), np.array([]), np.ones((2, 2))):
        with pytest.raises(ValueError):
            lb.bootstrap_interval(bad)
    with pytest.raises(ValueError, match="level"):
        lb.bootstrap_interval(np.ones(3), level=1.5)
    with pytest.raises(ValueError, match="n_resamples"):
        lb.bootstrap_interval(np.ones(3), n_resamples=0)
    with pytest.raises(ValueError, match="level between 0 and 1"):  # checked even where no interval is drawn
        leaderboard([entry("a", 0.5, "2026-01-01T00:00:00Z")], dataset="d", task="mask", level=90)


def slow_paired(a, b, statistic, n_resamples, seed, level):
    first, second = slow_replicates((a, b), statistic, n_resamples, seed)
    observed = statistic(a) - statistic(b)
    differences = first - second
    extreme = sum(1 for d in differences if abs(d - observed) >= abs(observed))
    return observed, slow_interval(differences, level), (1 + extreme) / (n_resamples + 1)


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.2])
@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_the_paired_bootstrap_equals_a_slow_loop(shift, statistic, monkeypatch):
    rng = np.random.default_rng(3)
    b = rng.random(120)
    a = np.clip(b + shift + rng.normal(0, 0.05, 120), 0, 1)  # system a: b's trials, better by about ``shift``
    observed, interval, p = slow_paired(a, b, statistic, 1000, 77, 0.9)
    found = lb.paired_bootstrap(a, b, statistic=statistic)
    assert found.difference == pytest.approx(observed, abs=EXACT)
    assert found.interval == pytest.approx(interval, abs=EXACT)
    assert found.p_value == pytest.approx(p, abs=EXACT)
    assert (found.trials, found.resamples, found.seed, found.level) == (120, 1000, 77, 0.9)
    monkeypatch.setattr(lb, "CHUNK", 1000)
    assert lb.paired_bootstrap(a, b, statistic=statistic) == found
    if shift == 0.2:
        assert found.p_value == 1 / 1001 and found.interval[0] > 0  # clearly better: as small as B allows


def test_the_paired_bootstrap_of_a_system_against_itself():
    a = np.random.default_rng(4).random(50)
    same = lb.paired_bootstrap(a, a.copy())
    assert (same.difference, same.interval, same.p_value) == (0.0, (0.0, 0.0), 1.0)
    with pytest.raises(ValueError, match="same trials"):
        lb.paired_bootstrap(a, a[:-1])


def test_aligned_pairs_the_trials_both_systems_have():
    a = pd.Series([0.1, 0.2, 0.3], index=pd.Index(["p3", "p1", "p2"], name="ProbeFileID"))
    b = pd.Series([0.5, 0.6, 0.7], index=pd.Index(["p1", "p4", "p3"], name="ProbeFileID"))
    first, second = lb.aligned(a, b)
    assert first.tolist() == [0.2, 0.1] and second.tolist() == [0.5, 0.7]  # p1, p3


# ------------------------------------------------------------------------------------ per-trial records

def mask_results(values: dict[str, float], file="run_mask_scores_perimage.csv", primary="OptimumMCC"):
    key = ("ProbeFileID", "DonorFileID") if primary == "pOptimumMCC" else ("ProbeFileID",)
    return results(values, primary=primary, records=Records(file, key))


def test_mask_trials_are_the_scored_rows_of_the_per_image_table():
    #   probe  Scored  OptimumMCC
    #   p1     Y       0.5
    #   p2     N       0.9      (not scored: out)
    #   p3     Y       ""       (undefined: out, as the mean leaves it out)
    #   p4     Y       0.3
    table = pd.DataFrame({"ProbeFileID": ["p1", "p2", "p3", "p4"], "Scored": ["Y", "N", "Y", "Y"],
                          "OptimumMCC": [0.5, 0.9, np.nan, 0.3]})
    found = lb.trials_from_table(mask_results({ALL: 0.4}), table)
    assert list(found) == [ALL] and found[ALL].to_dict() == {"p1": 0.5, "p4": 0.3}
    assert lb.trials_from_table(mask_results({ALL: 0.41}), table) == {}  # not the row's trials: no values
    assert lb.trials_from_table(mask_results({"Purpose==['add']": 0.4}), table) == {}  # a -q row: unknown trials
    first_qm = lb.trials_from_table(mask_results({"q0": 0.4, "q1": 0.2}, file="index_0/run_perimage.csv"), table)
    assert list(first_qm) == ["q0"]  # -qm: the records file is the first query's


def test_splice_trials_are_the_probe_masks():
    table = pd.DataFrame({"ProbeFileID": ["p1", "p2"], "DonorFileID": ["d1", "d2"], "ProbeScored": ["Y", "Y"],
                          "DonorScored": ["N", "Y"], "pOptimumMCC": [0.2, 0.4], "dOptimumMCC": [0.0, 1.0]})
    found = lb.trials_from_table(mask_results({ALL: 0.3}, primary="pOptimumMCC"), table)
    assert found[ALL].to_dict() == {("p1", "d1"): 0.2, ("p2", "d2"): 0.4}


def test_video_temporal_trials_follow_the_query_positions():
    table = pd.DataFrame({"query": [0, 0, 1], "ProbeFileID": ["v1", "v2", "v1"], "MCC": [0.8, 0.4, 0.8]})
    found = lb.trials_from_table(results({ALL: 0.6, "Operation == 'Paste'": 0.8}, task="video-temporal",
                                         primary="MCC", records=Records("scores_probes.csv", ("query", "ProbeFileID"))),
                                 table)
    assert found[ALL].to_dict() == {"v1": 0.8, "v2": 0.4} and found["Operation == 'Paste'"].to_dict() == {"v1": 0.8}


def test_provenance_trials_per_node_type_and_per_probe():
    table = pd.DataFrame({"ProvenanceProbeFileID": ["P1", "P1", "P2", "P2"], "NodeType": ["All", "base"] * 2,
                          "NodeRecallAt300": [0.5, 1.0, 0.7, 0.0]})
    found = lb.trials_from_table(results({ALL: 0.6, "base": 0.5}, task="provenance-filtering",
                                         primary="NodeRecallAt300",
                                         records=Records("trial_scores.csv", ("ProvenanceProbeFileID", "NodeType"))),
                                 table)
    assert found[ALL].to_dict() == {"P1": 0.5, "P2": 0.7} and found["base"].to_dict() == {"P1": 1.0, "P2": 0.0}
    graph = pd.DataFrame({"ProvenanceProbeFileID": ["P1", "P2"], "SimNLO": [0.1, 0.3]})
    found = lb.trials_from_table(results({ALL: 0.2}, task="provenance-graph", primary="MeanSimNLO",
                                         records=Records("trial_scores.csv", ("ProvenanceProbeFileID",))), graph)
    assert found[ALL].to_numpy() == pytest.approx([0.1, 0.3])


def test_detection_has_no_per_trial_values(tmp_path):
    detection = results({ALL: 0.9}, task="detection", primary="AUC",
                        records=Records("sys/system.csv", ("ProbeFileID",), where="inputs"))
    assert lb.read_trials(tmp_path / "run_results.json", detection) == {}
    assert lb.read_trials(tmp_path / "run_results.json", mask_results({ALL: 0.4})) == {}  # no records file


# ------------------------------------------------------------------------------------------------ writers

def a_board():
    trials = np.array([0.2, 0.4, 0.9, 0.5])
    entries = [Entry("r1", "team a", "2026-01-01T00:00:00Z", "A|pipe", results({ALL: 0.5, "q": None},
                     intervals={ALL: (0.4, 0.6)})),
               Entry("r2", "team b", "2026-01-02T00:00:00Z", "B", results({ALL: 0.5, "q": 0.3}), {ALL: trials}),
               Entry("r3", "", "2026-01-03T00:00:00Z", "C", results({ALL: None, "q": 0.1}))]
    return leaderboard(entries, dataset="MFC19", task="mask")


def test_a_label_is_its_owners_no_team_shows_as_another():
    """Issue 41 (3): bob labelled his run alice's system; the board named both the same."""
    alices = Entry("r1", "alice", "2026-01-01T00:00:00Z", "secret_system", results({ALL: 0.9, "q": 0.5}))
    bobs = Entry("r2", "bob", "2026-01-02T00:00:00Z", "secret_system", results({ALL: 0.8, "q": 0.6}))
    board = leaderboard([alices, bobs], dataset="d", task="mask")
    assert [line.system for line in board.ranking().lines] == ["alice/secret_system", "bob/secret_system"]
    text = lb.to_text(board)
    assert text[2].split() == ["rank", "system", "run", "submitted", "OptimumMCC", "CI"]
    assert text[3].split()[:3] == ["1", "alice/secret_system", "r1"]
    assert text[4].split()[:3] == ["2", "bob/secret_system", "r2"]
    per_query = next(row for row in text if row.split()[:1] == ["query"])
    assert per_query.split() == ["query", "alice/secret_system", "bob/secret_system"]
    local = Entry("r", "", "2026-01-01T00:00:00Z", "A", results({ALL: 0.1}))  # a local run has no owner
    assert leaderboard([local], dataset="d", task="mask").ranking().lines[0].system == "A"


def test_runs_of_another_primary_metric_are_a_board_of_their_own():
    """Issue 41 (4): one --semafor run made every caller's board of the dataset fail, naming their runs."""
    auc = [Entry(run, "alice", f"2026-01-0{i + 1}T00:00:00Z", run, results({ALL: value}, task="detection",
                                                                            primary="AUC"))
           for i, (run, value) in enumerate([("a", 0.7), ("b", 0.9)])]
    semafor = Entry("s", "mallory", "2026-01-03T00:00:00Z", "s", results({ALL: 0.2}, task="detection",
                                                                         primary="pD@FAR0.1"))
    entries = [*auc, semafor]
    with pytest.raises(ValueError, match="different primary metrics"):  # the local command still refuses the mix
        leaderboard(entries, dataset="d", task="detection")
    assert lb.primaries(entries) == ["AUC", "pD@FAR0.1"] and lb.primaries([]) == []
    flood = [Entry(f"s{i}", "mallory", "2026-01-04T00:00:00Z", "s", semafor.results) for i in range(5)]
    assert lb.primaries([*entries, *flood]) == ["AUC", "pD@FAR0.1"]  # one caller's many runs: still one owner
    board = leaderboard(lb.reporting(entries, "AUC"), dataset="d", task="detection", metric="AUC")
    assert order(board) == [("b", 1), ("a", 2)]
    own = leaderboard(lb.reporting(entries, "pD@FAR0.1"), dataset="d", task="detection", metric="pD@FAR0.1")
    assert order(own) == [("s", 1)]
    assert lb.reporting(entries, "Other") == entries and lb.reporting(entries, "nothing") == []


def test_the_json_round_trip_is_exact_and_deterministic():
    board = a_board()
    data = lb.to_json(board)
    assert lb.from_json(data) == board and lb.to_json(lb.from_json(data)) == data
    assert data == lb.to_json(a_board()) and data.endswith(b"\n") and data.count(b"\n") == 1
    parsed = json.loads(data)
    assert list(parsed) == ["schema", "dataset", "task", "metric", "better", "bootstrap", "rankings"]
    assert parsed["bootstrap"] == {"level": 0.9, "resamples": 1000, "seed": 77}
    assert parsed["rankings"][0]["lines"][0] == {
        "rank": 1, "run": "r1", "owner": "team a", "label": "A|pipe", "submitted": "2026-01-01T00:00:00Z",
        "value": 0.5, "interval": [0.4, 0.6], "ci": "run", "overlaps_next": True, "counts": {"trials": 10}}
    with pytest.raises(ValueError, match="not an mfscore leaderboard"):
        lb.from_dict({**parsed, "schema": "mfscore.results/1"})


def test_the_csv_is_a_pipe_separated_report_table(tmp_path):
    path = tmp_path / "board.csv"
    path.write_text(lb.to_csv(a_board()))
    table = read_table(path)
    assert list(table.columns) == ["Query", "Rank", "System", "Owner", "Run", "Submitted", "OptimumMCC",
                                   "OptimumMCC_CI_LOWER", "OptimumMCC_CI_UPPER", "CISource", "OverlapsNext"]
    assert len(table) == 6 and table["System"].tolist()[:3] == ["A|pipe", "B", "C"]  # the pipe is quoted
    assert table["Rank"].tolist() == [1, 1, 3, 1, 2, 3]
    assert table["CISource"].tolist()[:3] == ["run", "bootstrap", np.nan]
    assert table["OverlapsNext"].tolist()[:3] == ["Y", np.nan, np.nan]
    assert path.read_text().splitlines()[1].startswith("|1|")  # the whole run's query is empty


# ----------------------------------------------------------------------------------- the local command

@pytest.fixture(scope="module")
def detection_runs(tmp_path_factory):
    """Three detection runs with --ci of one generated dataset: the generated system (a), a noisier copy (b),
    and the generated system again under another name (c: a's values exactly)."""
    root = tmp_path_factory.mktemp("board")
    data = generate_detection_dataset(root / "data", 600)
    system = read_table(data.directory / data.system)
    noisy = system.copy()
    noisy["ConfidenceScore"] = (noisy["ConfidenceScore"] + np.random.default_rng(9).normal(0, 0.5, len(noisy))).round(4)
    write_table(noisy, data.directory / "system" / "noisy.csv")
    write_table(system, data.directory / "system" / "copy.csv")
    runs = {}
    for name, file in (("a", data.system), ("b", "system/noisy.csv"), ("c", "system/copy.csv")):
        argv = ["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                "--sysDir", str(data.directory), "-s", file, "--ci", "-qm", "Purpose==['add']",
                "Purpose==['remove']", "-o", str(root / name / "run"), "--quiet", "--noPlot"]
        assert main(argv) == 0
        runs[name] = root / name
    return runs


def test_the_command_ranks_local_runs(detection_runs, capsys, tmp_path):
    paths = [str(detection_runs[name]) for name in "bca"]
    assert main(["leaderboard", *paths, "--json", "--csv", str(tmp_path / "board.csv"), "--dataset", "gen"]) == 0
    board = lb.from_json(capsys.readouterr().out)
    assert (board.task, board.metric, board.dataset) == ("detection", "AUC", "gen")
    assert [r.query for r in board.rankings] == ["Purpose==['add']", "Purpose==['remove']"]  # -qm: no whole run
    for ranking in board.rankings:
        lines = ranking.lines
        assert [line.label for line in lines] == ["a", "c", "b"]  # a and c tie; a finished first
        assert [line.rank for line in lines] == [1, 1, 3]
        assert all(line.ci == RUN and line.interval[0] <= line.value <= line.interval[1] for line in lines)
        assert lines[0].overlaps_next is True  # the same system twice is never separable
        assert lines[0].value > lines[2].value
        assert all(line.owner == "" and line.submitted.endswith("Z") for line in lines)
    assert lb.to_csv(board) == (tmp_path / "board.csv").read_text()


def test_the_command_prints_the_table(detection_runs, capsys):
    assert main(["leaderboard", *(str(detection_runs[name]) for name in "ab")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("detection leaderboard, dataset local: AUC ↑ (higher is better)")
    assert "per query: AUC (rank)" in out


def test_the_command_draws_a_bootstrap_interval_from_the_records(tmp_path, capsys):
    argv = example_arguments("provenance-graph", tmp_path / "data", tmp_path / "out")
    assert main(["provenance-graph", *argv, "--quiet"]) == 0
    assert main(["leaderboard", str(tmp_path / "out"), "--json", "--resamples", "200"]) == 0
    (line,) = lb.from_json(capsys.readouterr().out).ranking().lines
    trials = read_table(tmp_path / "out" / "trial_scores.csv")["SimNLO"].to_numpy(dtype=float)
    assert line.ci == BOOTSTRAP and line.interval == lb.bootstrap_interval(trials, n_resamples=200)
    assert line.value == pytest.approx(trials.mean(), abs=1e-9)


def test_the_command_refuses_runs_of_different_tasks(detection_runs, tmp_path, capsys):
    other = tmp_path / "graph"
    other.mkdir()
    (other / "results.json").write_bytes(results({ALL: 0.1}, task="provenance-graph", primary="MeanSimNLO").to_json())
    assert main(["leaderboard", str(detection_runs["a"]), str(other)]) == 1
    err = capsys.readouterr().err
    assert "different tasks" in err and "detection" in err and "provenance-graph" in err
    assert main(["leaderboard", str(tmp_path / "nowhere")]) == 1
    assert "no such run output directory" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path)]) == 1
    assert "no results file" in capsys.readouterr().err
    assert main(["leaderboard", str(detection_runs["a"]), "--resamples", "0"]) == 1
    assert "at least 1 resample" in capsys.readouterr().err


def test_the_command_states_the_cores_defaults():
    assert command.DEFAULTS == {"level": lb.LEVEL, "resamples": lb.N_RESAMPLES, "seed": lb.SEED}


def test_the_core_imports_neither_the_cli_nor_the_services():
    code = ("import sys, mfscore.leaderboard; "
            "print([m for m in sys.modules if m.startswith(('mfscore.cli', 'mfscore.services', 'grpc', 'nats'))])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"


def test_a_records_file_outside_the_run_is_refused(tmp_path):
    from mfscore.errors import InputFileError

    (tmp_path / "elsewhere.csv").write_text("ProbeFileID|Scored|OptimumMCC\np1|Y|0.5\n")
    (tmp_path / "run").mkdir()
    for name in ("../elsewhere.csv", str(tmp_path / "elsewhere.csv")):
        with pytest.raises(InputFileError, match="outside the run's directory"):
            lb.read_trials(tmp_path / "run" / "results.json", mask_results({ALL: 0.5}, file=name))
    (tmp_path / "run" / "link.csv").symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(InputFileError, match="outside"):
        lb.read_trials(tmp_path / "run" / "results.json", mask_results({ALL: 0.5}, file="link.csv"))
    (tmp_path / "run" / "inside.csv").write_text("ProbeFileID|Scored|OptimumMCC\np1|Y|0.5\n")
    assert lb.read_trials(tmp_path / "run" / "results.json", mask_results({ALL: 0.5}, file="inside.csv"))[ALL].tolist() \
        == [0.5]
