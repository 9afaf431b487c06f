"""A submission needs no reference (docs/release.md), on a local cluster of this module's own (real nats-server,
real S3 server, every service a process).

The operator registers a shared reference set (release policy by default: aggregate results only). Alice holds only
the index and her package ``p-alice_1/`` (``p-alice_1.csv``, ``p-alice_1.txt``, ``mask/``); she submits it with
``mfscore submit --dataset --package`` and receives the task's aggregate report files, byte-identical to the embedded
run's, and nothing per trial. Then each team tries every call and command for the reference, a per-trial row or a
digest, and every byte it receives is searched for them. Once the operator releases the dataset, alice's full report is
the embedded one.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import signal
from pathlib import Path

import grpc
import pytest

from integration.equivalence import tree, without_created
from mfscore import tasks
from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.commands.upload import create_run, declare_inputs
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc, results_pb2, runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

DATASET = "eval-masks@1"
REFERENCE = "reference/manipulation/MFC-manipulation-ref.csv"
INDEX = "indexes/MFC-manipulation-index.csv"
DESCRIPTION = """1. Submission Identifier(s)
p-alice_1

2. System Description
Noise residuals and a U-Net.

3. OptOut Criteria
None.

4. System Hardware Description and Runtime Computation
One GPU, 2 hours.

5. Training Data and Knowledge Sources
Public sets only.

6. References
None.
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """The reference set (``ref``), alice's package and a copy of her index alone (``here``: what she holds)."""
    root = tmp_path_factory.mktemp("package-data")
    generated = generate_mask_dataset(root / "generated", 12)
    made = {"ref": root / "ref", "here": root / "alice"}
    for part in ("reference", "indexes"):
        shutil.copytree(generated.directory / part, made["ref"] / part)
    package = made["here"] / "p-alice_1"
    shutil.copytree(generated.directory / "system" / "mask", package / "mask")
    shutil.copy(generated.directory / generated.system, package / "p-alice_1.csv")
    (package / "p-alice_1.txt").write_text(DESCRIPTION)
    shutil.copy(generated.directory / generated.index, made["here"] / "index.csv")
    made["package"] = package
    return made


@pytest.fixture(scope="module")
def registered(teams, data):
    _, _, files = teams
    assert main(["dataset", "register", DATASET, str(data["ref"]), "--shared", "--cluster",
                 str(files["operator"])]) == 0


def package_arguments(data, *extra: str) -> list[str]:
    return ["--dataset", DATASET, "--package", str(data["package"]), "mask", "--refDir", ".", "-r", REFERENCE,
            "-x", INDEX, *extra]


def embedded(data, out: Path, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["mask", "--refDir", str(data["ref"]), "-r", REFERENCE, "-x", INDEX, "-s",
                   str(data["package"] / "p-alice_1.csv"), "-oR", str(out / "x")])
    said = capsys.readouterr()
    return status, said.out, said.err


def submitted(files, who: str, arguments: list[str], out: Path, capsys) -> tuple[int, str, str, str]:
    """(exit status, stdout, stderr without the line naming the run, the run id) of ``mfscore submit``."""
    capsys.readouterr()
    status = main(["submit", "--cluster", str(files[who]), *arguments, "-oR", str(out / "x")])
    said = capsys.readouterr()
    run_id = said.err.split("run ", 1)[1].split(" ", 1)[0] if said.err.startswith("mfscore: run ") else ""
    return status, said.out, without_created(said.err) if run_id else said.err, run_id


def aggregate_names(names, task: str = "mask") -> list[str]:
    return [name for name in names if any(fnmatch.fnmatchcase(name, p) for p in tasks.get(task).aggregate_reports)]


def test_a_package_scores_against_a_sealed_dataset_and_returns_its_aggregates_only(teams, data, registered,
                                                                                 tmp_path, capsys):
    _, _, files = teams
    mine = embedded(data, tmp_path / "embedded", capsys)
    status, out, err, run_id = submitted(files, "alice", package_arguments(data), tmp_path / "cluster", capsys)
    assert status == mine[0] == 0, err
    everything, received = tree(tmp_path / "embedded"), tree(tmp_path / "cluster")
    assert sorted(received) == sorted(aggregate_names(everything)) != []
    assert all(received[name] == everything[name] for name in received)  # byte-identical aggregates
    assert not any("perimage" in name for name in received)
    assert sorted(p.name for p in (tmp_path / "cluster").iterdir()) == sorted(received)  # no provenance file either
    assert mine[1].startswith("reports in ") and out == mine[1].split("\n", 1)[1]  # the summary table; the
    assert "withheld until the dataset is released" in err or not mine[2]          # command's own lines withheld


def test_a_detection_package_too(teams, data, registered, tmp_path, capsys):
    _, _, files = teams
    capsys.readouterr()
    common = ["-r", REFERENCE, "-x", INDEX, "--ci"]
    assert main(["detection", "--refDir", str(data["ref"]), *common, "-s", str(data["package"] / "p-alice_1.csv"),
                 "-o", str(tmp_path / "embedded" / "x")]) == 0
    arguments = ["--dataset", DATASET, "--package", str(data["package"]), "detection", "--refDir", ".", *common]
    capsys.readouterr()
    status = main(["submit", "--cluster", str(files["alice"]), *arguments, "-o", str(tmp_path / "cluster" / "x")])
    assert status == 0, capsys.readouterr().err
    everything, received = tree(tmp_path / "embedded"), tree(tmp_path / "cluster")
    assert sorted(received) == sorted(aggregate_names(everything, "detection")) == ["x_all_report.csv"]
    assert received["x_all_report.csv"] == everything["x_all_report.csv"]


def test_a_per_trial_release_gives_every_report_file_but_the_provenance(teams, data, registered, tmp_path, capsys):
    _, _, files = teams
    assert main(["dataset", "register", "eval-per-trial@1", str(data["ref"]), "--shared", "--release", "per-trial",
                 "--cluster", str(files["operator"])]) == 0
    mine = embedded(data, tmp_path / "embedded", capsys)
    arguments = ["--dataset", "eval-per-trial@1", *package_arguments(data)[2:]]
    status, out, err, _ = submitted(files, "alice", arguments, tmp_path / "cluster", capsys)
    assert status == mine[0] == 0, err
    assert tree(tmp_path / "cluster") == tree(tmp_path / "embedded")  # the per-image table among them
    assert "x_run.json" not in files_named(tmp_path / "cluster") and "x_run.json" in files_named(tmp_path / "embedded")
    assert out.replace(str(tmp_path / "cluster"), str(tmp_path / "embedded")) == mine[1]  # its stdout too


def files_named(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_a_package_with_a_bad_name_or_description_is_refused_before_anything_is_sent(teams, data, registered,
                                                                                     tmp_path, capsys):
    _, _, files = teams
    bad = tmp_path / "alice_1"
    shutil.copytree(data["package"], bad)
    (bad / "p-alice_1.csv").rename(bad / "alice_1.csv")
    (bad / "p-alice_1.txt").rename(bad / "alice_1.txt")
    (bad / "alice_1.txt").write_text("1. Submission Identifier(s)\nalice_1\n")
    capsys.readouterr()
    status = main(["submit", "--cluster", str(files["alice"]), "--dataset", DATASET, "--package", str(bad), "mask",
                   "--refDir", ".", "-r", REFERENCE, "-x", INDEX, "-oR", str(tmp_path / "out" / "x")])
    err = capsys.readouterr().err
    assert status == 1
    assert "The system ID 'alice' must be 'p-'" in err and "no section 2 'System Description'" in err
    assert "nothing was sent" in err
    assert not (tmp_path / "out").exists()


def test_a_package_flag_given_twice_is_refused(teams, data, registered, tmp_path, capsys):
    _, _, files = teams
    status, _, err, _ = submitted(files, "alice", package_arguments(data, "-s", "other.csv"), tmp_path, capsys)
    assert status == 1 and "-s/--inSys is the package's system output" in err


def test_a_query_on_a_sealed_dataset_is_refused(teams, data, registered, tmp_path, capsys):
    _, _, files = teams
    status, _, err, _ = submitted(files, "bob", package_arguments(data, "-q", "ProbeFileID=='000007e2'"),
                                  tmp_path, capsys)
    assert status == 1
    assert "releases aggregate results only" in err and "-q/--query" in err


def reference_secrets(data) -> dict[str, list[bytes]]:
    """What no team may receive before release: the reference's digests, its rows past the header, its mask bytes."""
    ref = data["ref"]
    digests = [hashlib.sha256(p.read_bytes()).hexdigest().encode() for p in sorted(ref.rglob("*")) if p.is_file()]
    rows = [line.encode() for p in sorted(ref.rglob("*-ref*.csv")) for line in p.read_text().splitlines()[1:] if line]
    masks = [p.read_bytes()[-64:] for p in sorted(ref.rglob("*.png"))]
    return {"digest": digests, "row": rows, "mask": masks}


def probe_ids(data) -> list[bytes]:
    lines = (data["here"] / "index.csv").read_text().splitlines()
    column = lines[0].split("|").index("ProbeFileID")
    return [line.split("|")[column].encode() for line in lines[1:]]


class Received:
    """Every byte a team received, each with what it tried."""

    def __init__(self):
        self.parts: list[tuple[str, bytes]] = []

    def add(self, tried: str, data: bytes) -> None:
        self.parts.append((tried, data))

    def leaks(self, secrets: dict[str, list[bytes]], per_trial: list[bytes]) -> list[str]:
        found = []
        for tried, data in self.parts:
            for kind, values in {**secrets, "per-trial row": per_trial}.items():
                if any(value and value in data for value in values):
                    found.append(f"{tried}: {kind}")
        return found


def try_everything(files, who: str, run_id: str, data, tmp_path, capsys) -> tuple[Received, dict[str, str]]:
    """Every call and command a team may make about the dataset and the run, its bytes received, and what each
    attempt answered (a status code's name, or "answered")."""
    received, outcome = Received(), {}
    config = ClusterConfig.read(files[who])
    ref_files = [p for p in sorted(data["ref"].rglob("*")) if p.is_file()]

    def call(tried: str, make):
        try:
            reply = make()
            replies = reply if hasattr(reply, "__next__") else [reply]
            for message in replies:
                received.add(tried, message.SerializeToString())
            outcome[tried] = "answered"
        except grpc.RpcError as error:
            received.add(tried, (error.details() or "").encode())
            outcome[tried] = error.code().name

    name, version = DATASET.split("@")
    as_dataset = [runs_pb2.DeclaredFile(name=p.relative_to(data["ref"]).as_posix(), size=p.stat().st_size,
                                        sha256=hashlib.sha256(p.read_bytes()).hexdigest()) for p in ref_files]
    with config.channel() as channel:
        runs = services_pb2_grpc.AggregatorServiceStub(channel)
        sets = datasets_pb2_grpc.DatasetServiceStub(channel)
        call("GetDataset", lambda: sets.GetDataset(datasets_pb2.GetDatasetRequest(name=name, version=version)))
        call("ListDatasets", lambda: sets.ListDatasets(datasets_pb2.ListDatasetsRequest()))
        call("ListDatasetFiles", lambda: sets.ListDatasetFiles(
            datasets_pb2.ListDatasetFilesRequest(name=name, version=version)))
        call("ReleaseDataset", lambda: sets.ReleaseDataset(
            datasets_pb2.ReleaseDatasetRequest(name=name, version=version)))
        call("GetLeaderboard", lambda: runs.GetLeaderboard(results_pb2.GetLeaderboardRequest(
            dataset=DATASET, task="mask")))
        found = sets.DeclareDatasetFiles(datasets_pb2.DeclareDatasetFilesRequest(files=as_dataset)).missing
        outcome["DeclareDatasetFiles with the reference's digests"] = (
            "all missing" if sorted(found) == sorted(f.name for f in as_dataset) else "some found")
        call("CreateDataset naming the reference's digests", lambda: sets.CreateDataset(iter([
            datasets_pb2.CreateDatasetRequest(name=f"{who}/copy", version="1", files=as_dataset)])))
        if run_id:
            call("GetRun", lambda: runs.GetRun(runs_pb2.GetRunRequest(run_id=run_id)))
            call("WatchRun", lambda: runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id)))
            call("ListRuns", lambda: runs.ListRuns(runs_pb2.ListRunsRequest()))
            call("FetchReport", lambda: runs.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id)))
            call("GetResults", lambda: runs.GetResults(results_pb2.GetResultsRequest(run_id=run_id)))
    probe = create_run(config, DATASET)  # the reference's digests as inputs: found would say they are the dataset's
    declared = [runs_pb2.DeclaredFile(name=f"ref/{p.relative_to(data['ref']).as_posix()}", size=p.stat().st_size,
                                      sha256=hashlib.sha256(p.read_bytes()).hexdigest()) for p in ref_files]
    missing = declare_inputs(config, probe, declared)
    outcome["DeclareInputs with the reference's digests"] = (
        "all missing" if sorted(missing) == sorted(d.name for d in declared) else "some found")
    for command in (["dataset", "show", DATASET], ["dataset", "list"], ["report", "--list"],
                    ["leaderboard", DATASET, "--task", "mask"],
                    *([["report", run_id, "-o", str(tmp_path / who / "report")]] if run_id else [])):
        capsys.readouterr()
        status = main([*command, "--cluster", str(files[who])])
        said = capsys.readouterr()
        shown = " ".join(command[:2])
        received.add(f"mfscore {shown}", (said.out + said.err).encode())
        outcome[f"mfscore {shown}"] = f"exit {status}"
    for path in sorted((tmp_path / who).rglob("*")):
        if path.is_file():
            received.add(f"mfscore report: {path.name}", path.read_bytes())
    return received, outcome


def test_no_team_receives_the_reference_a_digest_or_a_per_trial_row_before_release(teams, data, registered,
                                                                                     tmp_path, capsys):
    _, _, files = teams
    status, _, err, run_id = submitted(files, "alice", package_arguments(data), tmp_path / "alice-run", capsys)
    assert status == 0, err
    secrets, ids = reference_secrets(data), probe_ids(data)
    table = {}
    for who, run in (("alice", run_id), ("bob", run_id)):  # bob tries alice's run too
        received, outcome = try_everything(files, who, run, data, tmp_path, capsys)
        assert received.leaks(secrets, ids) == [], who
        table[who] = outcome
        # the checks can fail: the reference's own bytes hold what is searched for
        assert Received().leaks(secrets, ids) == []
        probe = Received()
        probe.add("the reference itself", (data["ref"] / REFERENCE).read_bytes())
        assert probe.leaks(secrets, ids)
    assert table["alice"]["ListDatasetFiles"] == table["bob"]["ListDatasetFiles"] == "PERMISSION_DENIED"
    assert table["alice"]["ReleaseDataset"] == "PERMISSION_DENIED"
    for who in table:
        assert table[who]["DeclareInputs with the reference's digests"] == "all missing"
        assert table[who]["DeclareDatasetFiles with the reference's digests"] == "all missing"
        assert table[who]["CreateDataset naming the reference's digests"] == "FAILED_PRECONDITION"
    assert {table["bob"][call] for call in ("GetRun", "WatchRun", "FetchReport", "GetResults")} == {"NOT_FOUND"}
    table["bob"] |= hostile_options(files, data, secrets, ids, tmp_path, capsys)
    assert "the option --refDir '/' names no place" in table["bob"]["submit --refDir /"]
    assert "did not take the run: the dataset eval-masks@1 releases aggr" in table["bob"]["submit -qm a query"]
    print(json.dumps(table, indent=1))


HOSTILE = {  # options a team may try to read the reference through a run's answers
    "--refDir /": ["--refDir", "/", "-r", REFERENCE, "-x", INDEX],
    "--refDir ..": ["--refDir", "..", "-r", REFERENCE, "-x", INDEX],
    "-r a reference mask": ["--refDir", ".", "-r", "reference/manipulation/mask/000007e2.ccm.png", "-x", INDEX],
    "-r the journal table": ["--refDir", ".", "-r", "reference/manipulation/MFC-manipulation-ref-journalmask.csv",
                             "-x", INDEX],
    "-x the reference": ["--refDir", ".", "-r", REFERENCE, "-x", REFERENCE],
    "-qm a query": ["--refDir", ".", "-r", REFERENCE, "-x", INDEX, "-qm", "Purpose=='add'"],
}


def hostile_options(files, data, secrets, ids, tmp_path, capsys) -> dict[str, str]:
    """Bob's package runs with each of ``HOSTILE``'s options: what became of each (none may leak)."""
    found = {}
    for tried, options in HOSTILE.items():
        arguments = ["--dataset", DATASET, "--package", str(data["package"]), "mask", *options]
        status, out, err, _ = submitted(files, "bob", arguments, tmp_path / "hostile", capsys)
        received, said = Received(), out + err
        for option in sorted((o for o in options if len(o) > 2), key=len, reverse=True):  # bob's own words
            said = said.replace(option, "")
        received.add(tried, said.encode())
        for path in sorted((tmp_path / "hostile").rglob("*")):
            received.add(tried, path.read_bytes() if path.is_file() else b"")
        assert received.leaks(secrets, ids) == [], err
        last = (err.strip().splitlines() or ["scored: its aggregates"])[-1]
        found[f"submit {tried}"] = f"exit {status}: {last[:110]}"
        shutil.rmtree(tmp_path / "hostile", ignore_errors=True)
    return found


def test_once_released_the_owner_of_a_run_receives_its_whole_report_and_its_description(teams, data, registered,
                                                                                          tmp_path, capsys):
    _, _, files = teams
    status, _, err, run_id = submitted(files, "alice", package_arguments(data), tmp_path / "before", capsys)
    assert status == 0, err
    capsys.readouterr()
    assert main(["dataset", "release", DATASET, "--cluster", str(files["operator"])]) == 0
    mine = embedded(data, tmp_path / "embedded", capsys)
    assert main(["report", run_id, "-o", str(tmp_path / "after"), "--cluster", str(files["alice"])]) == mine[0] == 0
    shown = capsys.readouterr()
    everything, received = tree(tmp_path / "embedded"), tree(tmp_path / "after")
    assert sorted(received) == sorted(everything)
    assert [name for name in everything if everything[name] != received[name]] == []
    provenance = json.loads((tmp_path / "after" / "x_run.json").read_bytes())  # runner, times, the submission
    assert provenance["submission"]["name"] == "p-alice_1"
    assert provenance["submission"]["description"] == DESCRIPTION
    assert provenance["submission"]["description_sha256"] == hashlib.sha256(DESCRIPTION.encode()).hexdigest()
    assert "submission p-alice_1, system description" in shown.err and "Noise residuals and a U-Net." in shown.err


@pytest.mark.slow  # a cluster of its own, killed and restarted; make test runs the rest of this module
def test_a_restarted_aggregator_plans_a_package_run_again_to_the_same_report(data, tmp_path, capsys):
    from integration.test_aggregator_restart import restart_after_the_queue_drains, stop, wait_for, wait_for_the_end
    from mfscore.codec import encode
    from mfscore.services.commands import local_cluster as commands
    from mfscore.services.commands.submit import package_files
    from mfscore.services.commands.upload import upload_files
    from mfscore.services.common.run_layout import input_prefix

    assert embedded(data, tmp_path / "embedded", capsys)[0] == 0
    path = tmp_path / "cluster" / "cluster.json"
    config = commands.up(path)
    try:
        by_service = {p.get("service"): p for p in config.processes}
        scorer, aggregator = by_service["mask-scorer"], by_service["aggregator"]
        assert main(["dataset", "register", DATASET, str(data["ref"]), "--shared", "--cluster", str(path)]) == 0
        stop(scorer)  # jobs wait in the queue
        run_id = create_run(config, DATASET)
        upload_files(config, run_id, package_files(str(data["package"])), interactive=False)
        options = tasks.get("mask").options_type(ref_dir=".", reference=REFERENCE, index=INDEX,
                                                  system="package/p-alice_1.csv")
        spec = runs_pb2.RunSpec(task="mask", options=encode(options), input_prefix=input_prefix(run_id),
                                output_name="x", run_id=run_id, dataset=DATASET, package="p-alice_1")
        with config.channel() as channel:
            stub = services_pb2_grpc.AggregatorServiceStub(channel)
            stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=30)
            planned = wait_for(lambda: (s := stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run).state
                               == runs_pb2.RUN_STATE_SCORING and s, "the run to be planned")
        stop(aggregator, signal.SIGKILL)
        restart_after_the_queue_drains(config, path, scorer, aggregator)
        done = wait_for_the_end(config, run_id)
        assert done.state == runs_pb2.RUN_STATE_DONE, done.message
        assert done.trials_received == planned.trials_planned > 0
        assert main(["report", "--cluster", str(path), run_id, "-o", str(tmp_path / "fetched")]) == 0
        assert tree(tmp_path / "fetched") == tree(tmp_path / "embedded")  # the operator reads it whole
    finally:
        commands.down(path)
