"""The shared leaderboard on a cluster (AggregatorService.GetLeaderboard; docs/results.md "Leaderboards"), on a
local cluster of this module's own: an operator registers a shared detection dataset, alice and bob each submit a
run naming it (``--ci``), and both see the same board of both teams' runs, ranked by AUC with each run's own
interval, equal to the core's leaderboard of the embedded runs' results files. Another caller's private dataset is
NOT_FOUND; the board is unchanged after the aggregator restarts; a deleted run leaves it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import grpc
import numpy as np
import pandas as pd
import pytest

from integration.test_aggregator_restart import stop, wait_for
from mfscore import leaderboard as lb
from mfscore.cli.main import main
from mfscore.results import Results
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

DATASET = "detect-ref@1"
PRIVATE = "alice/own@1"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    """The reference (every table but the system output) and alice's and bob's system outputs (bob's scores are
    noisier)."""
    root = tmp_path_factory.mktemp("leaderboard-data")
    generated = generate_detection_dataset(root / "generated", 300, seed=5)
    ref = root / "ref"
    shutil.copytree(generated.directory, ref, ignore=shutil.ignore_patterns("system"))
    made = {"ref": ref, "generated": generated}
    for name, noise in (("alice", 0.0), ("bob", 1.5)):
        made[name] = root / name
        shutil.copytree(generated.directory / "system", made[name] / "system")
        table = made[name] / generated.system
        frame = pd.read_csv(table, sep="|", dtype=str, keep_default_na=False)
        scores = pd.to_numeric(frame["ConfidenceScore"])
        frame["ConfidenceScore"] = (scores + np.random.default_rng(3).normal(0, noise, len(frame))).map(repr)
        frame.to_csv(table, sep="|", index=False)
    return made


def arguments(data, who: str) -> list[str]:
    generated = data["generated"]
    return ["detection", "--refDir", str(data["ref"]), "-r", generated.reference, "-x", generated.index,
            "--sysDir", str(data[who]), "-s", generated.system, "--ci"]


@pytest.fixture(scope="module")
def submitted(teams, data, tmp_path_factory):
    """The shared dataset registered; alice's and bob's runs submitted with it and run embedded: their results."""
    path, config, files = teams
    out = tmp_path_factory.mktemp("leaderboard-out")
    assert main(["dataset", "register", DATASET, str(data["ref"]), "--shared", "--release", "open",
                 "--cluster", str(files["operator"])]) == 0
    results = {}
    for who in ("alice", "bob"):
        label = f"{who}-system"
        assert main(["submit", "--cluster", str(files[who]), "--dataset", DATASET, *arguments(data, who),
                     "-o", str(out / "cluster" / who / label)]) == 0
        assert main([*arguments(data, who), "-o", str(out / "embedded" / who / label)]) == 0
        results[label] = Results.from_json((out / "embedded" / who / f"{label}_results.json").read_bytes())
    return results


def board_of(capsys, files, who: str) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["leaderboard", DATASET, "--task", "detection", "--cluster", str(files[who]), "--json"])
    said = capsys.readouterr()
    board_of.err = said.err
    return status, said.out


def get_leaderboard(files, who: str, dataset: str = DATASET) -> results_pb2.GetLeaderboardResponse:
    with ClusterConfig.read(files[who]).channel() as channel:
        return services_pb2_grpc.AggregatorServiceStub(channel).GetLeaderboard(
            results_pb2.GetLeaderboardRequest(dataset=dataset, task="detection"), timeout=60)


def test_both_teams_see_the_same_board_of_both_runs(teams, submitted, capsys):
    _, _, files = teams
    boards = {}
    for who in ("alice", "bob"):
        status, out = board_of(capsys, files, who)
        assert status == 0
        boards[who] = out
    assert boards["alice"] == boards["bob"]
    board = lb.from_json(boards["alice"])
    lines = board.ranking().lines
    assert board.metric == "AUC" and [line.owner for line in lines] == ["alice", "bob"]  # alice's scores are cleaner
    assert [line.rank for line in lines] == [1, 2]
    assert all(line.interval is not None and line.ci == lb.RUN for line in lines)
    expected = lb.leaderboard([lb.Entry(line.run, line.owner, line.submitted, line.label, submitted[line.label])
                               for line in lines], dataset=DATASET, task="detection")
    assert board == expected

    typed = get_leaderboard(files, "bob")
    assert json.loads(typed.json) == json.loads(boards["alice"])
    first = typed.leaderboard.rankings[0]
    assert typed.leaderboard.metric == "AUC" and typed.leaderboard.better == results_pb2.BETTER_HIGHER
    assert [(l.owner, l.label, l.run_id, l.value, l.lower, l.upper) for l in first.lines] == [
        (line.owner, line.label, line.run, line.value, *line.interval) for line in lines]
    assert first.lines[0].HasField("overlaps_next") and not first.lines[1].HasField("overlaps_next")

    capsys.readouterr()
    assert main(["leaderboard", DATASET, "--task", "detection", "--cluster", str(files["bob"])]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith(f"detection leaderboard, dataset {DATASET}: AUC")
    assert "alice-system" in text and "bob-system" in text


def test_another_callers_private_dataset_is_not_found(teams, data, submitted, capsys):
    _, _, files = teams
    assert main(["dataset", "register", PRIVATE, str(data["ref"]), "--cluster", str(files["alice"])]) == 0
    assert get_leaderboard(files, "alice", PRIVATE).leaderboard.rankings == []  # no run names it
    with pytest.raises(grpc.RpcError) as refused:
        get_leaderboard(files, "bob", PRIVATE)
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    capsys.readouterr()
    assert main(["leaderboard", PRIVATE, "--task", "detection", "--cluster", str(files["bob"])]) == 1
    assert f"there is no dataset {PRIVATE!r}" in capsys.readouterr().err


def test_the_board_survives_a_restart_and_a_deleted_run_leaves_it(teams, submitted, capsys):
    path, config, files = teams
    _, before = board_of(capsys, files, "alice")
    aggregator = next(p for p in config.processes if p.get("service") == "aggregator")
    stop(aggregator)
    again = commands.start_service(config, path.parent / "cluster-state", "aggregator-again", "aggregator",
                                   aggregator["grpc_port"])
    config.processes = [p for p in config.processes if p is not aggregator] + [again]
    config.write(path)
    commands.wait_healthy(again)
    try:
        status, after = wait_for(lambda: (found := board_of(capsys, files, "bob"))[0] == 0 and found, "the board")
    except AssertionError:
        raise AssertionError(board_of.err) from None
    assert after == before

    alices = lb.from_json(before).ranking().lines[0]
    assert alices.owner == "alice"
    with pytest.raises(grpc.RpcError) as refused:  # bob cannot delete alice's run: it is not his to see
        with ClusterConfig.read(files["bob"]).channel() as channel:
            services_pb2_grpc.AggregatorServiceStub(channel).DeleteRun(runs_pb2.DeleteRunRequest(run_id=alices.run),
                                                                       timeout=30)
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    assert main(["delete", alices.run, "--cluster", str(files["alice"])]) == 0
    _, left = board_of(capsys, files, "bob")
    lines = lb.from_json(left).ranking().lines
    assert [(line.owner, line.rank) for line in lines] == [("bob", 1)]
