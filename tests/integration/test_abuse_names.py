"""Issue 41, items 3 and 4, on a local cluster of this module's own (an operator, alice and bob): dataset names,
labels and leaderboards that one caller could turn against another (docs/datasets.md "Names", docs/results.md
"Leaderboards").

- A dataset deleted and registered again under its name is another dataset: the first one's runs never rank on
  the second's board (bob saw alice's run id, label and AUC on a board of a dataset registered after hers).
- One spelling per dataset: ``EVAL@1``, ``eval@1.0`` and ``eval@01`` are refused with a sentence; a client names
  its datasets after itself (``alice/…``) and takes no operator's name (``eval@2``) nor another client's.
- A label is its owner's: bob labelling his run as alice's system shows as ``bob/…``.
- A ``--semafor`` run (ranked by pD@FAR) is a board of its own, not an error on everyone's AUC board naming their
  runs.
- ``/metrics`` of every service holds no run id, dataset name, label or caller name.
"""

from __future__ import annotations

import shutil
import urllib.request

import grpc
import pytest

from mfscore import leaderboard as lb
from mfscore.cli.main import main
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc, results_pb2, runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

EVAL, REUSED = "abuse-eval@1", "abuse-reused@1"
LABEL = "alice_secret_system"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    """A small detection reference (every table but the system output) and its system output."""
    root = tmp_path_factory.mktemp("abuse-names-data")
    generated = generate_detection_dataset(root / "generated", 120, seed=11)
    ref = root / "ref"
    shutil.copytree(generated.directory, ref, ignore=shutil.ignore_patterns("system"))
    return {"ref": ref, "sys": generated.directory, "generated": generated}


def run_ids(files, who: str) -> set[str]:
    with ClusterConfig.read(files[who]).channel() as channel:
        listed = services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=30)
    return {run.run_id for run in listed.runs}


def submit(data, files, who: str, dataset: str, out, label: str, *extra: str) -> str:
    """``mfscore submit`` of the detection run by ``who`` on ``dataset`` as ``label``: its run id."""
    generated = data["generated"]
    before = run_ids(files, who)
    assert main(["submit", "--cluster", str(files[who]), "--dataset", dataset, "detection", "--refDir",
                 str(data["ref"]), "-r", generated.reference, "-x", generated.index, "--sysDir", str(data["sys"]),
                 "-s", generated.system, *extra, "-o", str(out / who / label)]) == 0
    (run_id,) = run_ids(files, who) - before
    return run_id


def register(files, who: str, dataset: str, directory, *extra: str) -> int:
    return main(["dataset", "register", dataset, str(directory), *extra, "--cluster", str(files[who])])


def board(files, who: str, dataset: str, metric: str = "") -> results_pb2.GetLeaderboardResponse:
    with ClusterConfig.read(files[who]).channel() as channel:
        return services_pb2_grpc.AggregatorServiceStub(channel).GetLeaderboard(
            results_pb2.GetLeaderboardRequest(dataset=dataset, task="detection", metric=metric), timeout=60)


def dataset_names(files, who: str) -> list[str]:
    with ClusterConfig.read(files[who]).channel() as channel:
        listed = datasets_pb2_grpc.DatasetServiceStub(channel).ListDatasets(datasets_pb2.ListDatasetsRequest(),
                                                                            timeout=30)
    return [f"{dataset.name}@{dataset.version}" for dataset in listed.datasets]


@pytest.fixture(scope="module")
def runs(teams, data, tmp_path_factory) -> dict[str, str]:
    """On the shared EVAL: alice's run as LABEL, bob's run as LABEL too, and bob's ``--semafor`` run. On the shared
    REUSED: alice's run as LABEL, then REUSED deleted and registered again by the operator. Their run ids."""
    _, _, files = teams
    out = tmp_path_factory.mktemp("abuse-names-out")
    assert register(files, "operator", EVAL, data["ref"], "--shared", "--release", "open") == 0
    assert register(files, "operator", REUSED, data["ref"], "--shared", "--release", "open") == 0
    made = {"alice": submit(data, files, "alice", EVAL, out, LABEL),
            "bob": submit(data, files, "bob", EVAL, out, LABEL),
            "semafor": submit(data, files, "bob", EVAL, out, "bob_semafor", "--semafor"),
            "reused": submit(data, files, "alice", REUSED, out / "reused", LABEL)}
    assert [line.run_id for line in board(files, "bob", REUSED).leaderboard.rankings[0].lines] == [made["reused"]]
    assert main(["dataset", "delete", REUSED, "--cluster", str(files["operator"])]) == 0
    assert register(files, "operator", REUSED, data["ref"], "--shared", "--release", "open") == 0
    return made


# ----------------------------------------------------------------------------------------- item 3: names


def test_a_dataset_registered_again_under_a_deleted_ones_name_shows_none_of_its_runs(teams, runs):
    _, _, files = teams
    response = board(files, "bob", REUSED)
    assert response.leaderboard.rankings == [] and list(response.metrics) == []
    assert runs["reused"] not in response.json and LABEL not in response.json


def test_a_dataset_has_one_spelling_and_the_others_are_refused_with_a_sentence(teams, data, capsys):
    _, _, files = teams
    for name, said in (("ABUSE-EVAL@1", "(write 'abuse-eval')"),
                       ("abuse-eval@1.0", "the dataset version '1.0' is not a positive whole number"),
                       ("abuse-eval@01", "the dataset version '01' is not a positive whole number")):
        capsys.readouterr()
        assert register(files, "operator", name, data["ref"], "--shared") == 1
        assert said in capsys.readouterr().err
    with ClusterConfig.read(files["operator"]).channel() as channel:  # the server refuses them too
        with pytest.raises(grpc.RpcError) as refused:
            datasets_pb2_grpc.DatasetServiceStub(channel).GetDataset(
                datasets_pb2.GetDatasetRequest(name="ABUSE-EVAL", version="1"), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not {"ABUSE-EVAL@1", "abuse-eval@1.0", "abuse-eval@01"} & set(dataset_names(files, "operator"))


def test_a_client_names_datasets_after_itself_and_takes_no_one_elses_name(teams, data, capsys):
    _, _, files = teams
    for who, name, said in (("alice", "abuse-eval@2", "a client's datasets are named after it, alice/abuse-eval"),
                            ("bob", "alice/tmp@1", "a client's datasets are named after it, bob/tmp"),
                            ("operator", "alice/tmp@1", "an operator's dataset names have no owner part")):
        capsys.readouterr()
        assert register(files, who, name, data["ref"]) == 1
        assert said in capsys.readouterr().err
    assert register(files, "alice", "alice/tmp@1", data["ref"]) == 0
    assert main(["dataset", "delete", "alice/tmp@1", "--cluster", str(files["alice"])]) == 0
    capsys.readouterr()
    assert register(files, "bob", "alice/tmp@1", data["ref"]) == 1  # deleted, still alice's name
    assert "not yours" in capsys.readouterr().err
    assert "alice/tmp@1" not in dataset_names(files, "operator")


def test_a_label_is_shown_with_its_owner(teams, runs, capsys):
    _, _, files = teams
    capsys.readouterr()
    assert main(["leaderboard", EVAL, "--task", "detection", "--metric", "AUC", "--cluster", str(files["alice"])]) == 0
    said = capsys.readouterr()
    systems = sorted(row.split()[1] for row in said.out.splitlines() if LABEL in row)
    assert systems == [f"alice/{LABEL}", f"bob/{LABEL}"]
    lines = board(files, "bob", EVAL).leaderboard.rankings[0].lines
    assert {(line.owner, line.label) for line in lines} >= {("alice", LABEL), ("bob", LABEL)}


# ----------------------------------------------------------------------------------------- item 4: boards


def test_a_run_ranked_by_another_metric_is_a_board_of_its_own(teams, runs, capsys):
    _, _, files = teams
    for who in ("alice", "bob"):
        response = board(files, who, EVAL)
        assert response.leaderboard.metric == "AUC"
        assert {line.run_id for line in response.leaderboard.rankings[0].lines} >= {runs["alice"], runs["bob"]}
        (semafor,) = [metric for metric in response.metrics if metric != "AUC"]
        assert list(response.metrics) == ["AUC", semafor] and semafor.startswith("pD@FAR")
    own = board(files, "alice", EVAL, semafor)
    assert [line.run_id for line in own.leaderboard.rankings[0].lines] == [runs["semafor"]]
    capsys.readouterr()
    assert main(["leaderboard", EVAL, "--task", "detection", "--cluster", str(files["alice"])]) == 0
    assert f"runs ranked by {semafor} are on boards of their own" in capsys.readouterr().err


def test_no_refusal_of_a_board_names_another_callers_run(teams, runs):
    _, _, files = teams
    with pytest.raises(grpc.RpcError) as refused:
        board(files, "alice", EVAL, "TRR")  # a rate: no better direction
    said = refused.value.details()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no better direction" in said
    assert not any(run_id in said for run_id in runs.values())
    assert board(files, "alice", EVAL, "NoSuchMetric").leaderboard.rankings == []


# ----------------------------------------------------------------------------------------- /metrics


def test_metrics_name_no_run_dataset_label_or_caller(teams, runs):
    """Every service's /metrics after the runs: none of their ids, the datasets' names, the labels, the callers'."""
    _, config, _ = teams
    secret = [*runs.values(), "abuse-eval", "abuse-reused", LABEL, "bob_semafor", "alice", "bob"]
    ports = [process["metrics_port"] for process in config.processes
             if process.get("service") and process.get("metrics_port")]
    assert len(ports) >= 3
    for port in ports:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert "mfscore_build_info" in text
        assert [word for word in secret if word in text] == [], port
