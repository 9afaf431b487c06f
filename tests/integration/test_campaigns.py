"""A scripted campaign (docs/campaigns.md) on a local cluster of this module's own (real nats-server, real S3 server,
every service a process): three teams, two competitions (detection and masks), two phases.

The aggregator's campaign clock is moved by restarting it with ``MFSCORE_CLOCK_OFFSET`` (which also shows that
campaigns and boards survive a restart): into the gap after the first phase (late submissions marked, the private
split released), into the second phase (a hidden board), past its end (late submissions refused). Every number on a
board is checked against the embedded command run on the same split (``-q "CampaignSplit=='public'"`` over the
reference with the split column: an independent computation).
"""

from __future__ import annotations

import datetime
import json
import shutil
import signal
import threading
from pathlib import Path

import grpc
import pytest

from integration.test_aggregator_restart import stop, wait_for
from mfscore import campaigns
from mfscore.cli.main import main
from mfscore.results import Results
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import campaigns_pb2, campaigns_pb2_grpc, results_pb2, runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

DATASET = "eval-campaign@1"
REFERENCE = "reference/manipulation/MFC-manipulation-ref.csv"
INDEX = "indexes/MFC-manipulation-index.csv"
SALT = "s3cret-salt-71"
MEMBERS = {"alice": "red", "dave": "red", "bob": "blue", "carol": "green"}
HOUR = 3600
DESCRIPTION = ("1. Submission Identifier(s)\n{name}\n\n2. System Description\nThe system of {name}.\n\n"
               "3. OptOut Criteria\nNone.\n\n4. System Hardware Description and Runtime Computation\nA laptop.\n\n"
               "5. Training Data and Knowledge Sources\nNone.\n\n6. References\nNone.\n")


def campaign_file(start: datetime.datetime) -> dict:
    def at(hours: float) -> str:
        return (start + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")

    split = {"by": "hash", "fraction": 0.5, "salt": SALT}
    common = {"ref_dir": ".", "reference": REFERENCE, "index": INDEX}
    return {
        "name": "rehearsal",
        "teams": [{"name": "red", "members": ["alice", "dave"]}, {"name": "blue", "members": ["bob"]},
                  {"name": "green", "members": ["carol"]}],
        "competitions": [
            {"name": "det", "task": "detection", "dataset": DATASET, "options": {**common, "kind": "manipulation"},
             "goal": {"metric": "AUC", "threshold": 0.7, "better": "higher"}},
            {"name": "masks", "task": "mask", "dataset": DATASET, "options": common}],
        "phases": [
            {"name": "dev", "start": at(-1), "end": at(1), "quota_per_day": 3, "quota_per_phase": 5, "late": "mark",
             "board": "public", "split": split, "release": "aggregate"},
            {"name": "eval", "start": at(2), "end": at(3), "quota_per_day": 2, "late": "refuse", "board": "hidden",
             "split": split, "release": "per-trial"}],
    }


def package(root: Path, name: str, generated, *, worse: bool = False) -> Path:
    """A package ``name``: the generated system output, its scores reversed when ``worse``."""
    made = root / name
    shutil.copytree(generated.directory / "system" / "mask", made / "mask")
    lines = (generated.directory / generated.system).read_text().splitlines()
    if worse:
        column = lines[0].split("|").index("ConfidenceScore")
        rows = [line.split("|") for line in lines[1:]]
        for row in rows:
            row[column] = f"{1 - float(row[column]):.4f}"
        lines = [lines[0], *("|".join(row) for row in rows)]
    (made / f"{name}.csv").write_text("\n".join(lines) + "\n")
    (made / f"{name}.txt").write_text(DESCRIPTION.format(name=name))
    return made


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The cluster (its file, config, the callers' files), the reference, the packages, the campaign's start."""
    root = tmp_path_factory.mktemp("campaign")
    generated = generate_mask_dataset(root / "generated", 24)
    ref = root / "ref"
    for part in ("reference", "indexes"):
        shutil.copytree(generated.directory / part, ref / part)
    packages = {name: package(root / "packages", name, generated, worse=name.startswith("p-blue"))
                for name in ("p-red_1", "p-blue_1", "c-green_1", "p-green_1", "p-blue_2", "p-red_2")}
    path = root / "cluster" / "cluster.json"
    config = commands.up(path)
    try:
        files = {"operator": path}
        for name in (*MEMBERS, "eve"):
            files[name] = root / f"{name}.json"
            commands.add_caller(config, name, "client", out=files[name])
        wait_for(lambda: main(["dataset", "list", "--cluster", str(files["eve"])]) == 0, "the tokens to be read")
        assert main(["dataset", "register", DATASET, str(ref), "--shared", "--cluster", str(path)]) == 0
        start = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        (root / "campaign.json").write_text(json.dumps(campaign_file(start)))
        yield {"path": path, "config": config, "files": files, "ref": ref, "packages": packages, "root": root,
               "start": start}
    finally:
        commands.down(path)


def restart_aggregator(world, offset_seconds: int) -> None:
    """Stop the aggregator and start it again with its campaign clock ``offset_seconds`` ahead."""
    path, config = world["path"], ClusterConfig.read(world["path"])
    old = next(p for p in config.processes if p.get("service") == "aggregator")
    stop(old, signal.SIGTERM)
    new = commands.start_service(config, path.parent / "cluster-state", f"aggregator-{offset_seconds}", "aggregator",
                                 old["grpc_port"], environment={"MFSCORE_CLOCK_OFFSET": str(offset_seconds)})
    config.processes = [p for p in config.processes if p is not old] + [new]
    config.write(path)
    commands.wait_healthy(new)

    def answering():
        try:
            with config.channel() as channel:
                services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=5)
            return True
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            return False
    wait_for(answering, "the restarted aggregator to lead")


def campaign_stub(world, who: str):
    channel = ClusterConfig.read(world["files"][who]).channel()
    return channel, campaigns_pb2_grpc.CampaignServiceStub(channel), services_pb2_grpc.AggregatorServiceStub(channel)


def get_board(world, who: str, competition: str = "det", **fields) -> campaigns.CampaignBoard:
    channel, stub, _ = campaign_stub(world, who)
    with channel:
        reply = stub.GetBoard(campaigns_pb2.GetBoardRequest(campaign="rehearsal", competition=competition, **fields),
                              timeout=60)
    return campaigns.board_from_json(reply.json)


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def refused(call) -> str:
    try:
        call()
    except grpc.RpcError as error:
        return error.code().name
    return "answered"


def submit(world, who: str, name: str, competition: str = "det", capsys=None) -> tuple[int, str]:
    """``mfscore submit --campaign``: (exit status, the run id)."""
    if capsys is not None:
        capsys.readouterr()
    status = main(["submit", "--cluster", str(world["files"][who]), "--campaign", "rehearsal", "--competition",
                   competition, "--package", str(world["packages"][name]), "--out",
                   str(world["root"] / "out" / who / name / name)])
    err = capsys.readouterr().err if capsys is not None else ""
    run_id = err.split("run ", 1)[1].split(" ", 1)[0] if err.startswith("mfscore: run ") else ""
    return status, run_id


def split_auc(world, name: str, split: str, tmp_path: Path, task: str = "detection", metric: str = "AUC") -> float:
    """The embedded ``task``'s ``metric`` of package ``name`` on one split: the reference given the split column, and
    the split selected with -q (not the cluster's -qp)."""
    ref = tmp_path / "ref-split"
    if not ref.exists():
        shutil.copytree(world["ref"], ref)
        campaigns.add_split_column(str(ref / REFERENCE), campaigns.Split("hash", 0.5, SALT, "ProbeFileID", ()))
    out = tmp_path / f"{task}-{name}-{split}"
    assert main([task, "--refDir", str(ref), "-r", REFERENCE, "-x", INDEX, "-s",
                 str(world["packages"][name] / f"{name}.csv"), "-oR" if task == "mask" else "-o", str(out / "x"),
                 "-q", f"CampaignSplit=='{split}'"]) == 0
    results = Results.from_json((out / "x_results.json").read_bytes())
    return results.rows[0].values[metric]


def test_the_operator_creates_the_campaign_and_teams_see_theirs(world, capsys):
    files = world["files"]
    file = str(world["root"] / "campaign.json")
    assert main(["campaign", "create", file, "--cluster", str(files["operator"])]) == 0
    assert main(["campaign", "create", file, "--cluster", str(files["operator"])]) == 0
    assert "was created already from this file" in capsys.readouterr().err
    assert main(["campaign", "create", file, "--cluster", str(files["alice"])]) == 1
    assert "only an operator may create a campaign" in capsys.readouterr().err
    bad = campaign_file(world["start"])
    bad["phases"][0]["end"] = bad["phases"][0]["start"]
    (world["root"] / "bad.json").write_text(json.dumps(bad))
    assert main(["campaign", "create", str(world["root"] / "bad.json"), "--cluster", str(files["operator"])]) == 1
    assert "phases[0].end" in capsys.readouterr().err
    assert main(["campaign", "show", "rehearsal", "--cluster", str(files["alice"])]) == 0
    shown = capsys.readouterr().out
    assert "your team: red" in shown and "phase dev" in shown and SALT not in shown
    assert main(["campaign", "show", "rehearsal", "--json", "--cluster", str(files["bob"])]) == 0
    shown = capsys.readouterr().out
    assert SALT not in shown and "dave" not in shown and '"split": true' in shown
    assert main(["campaign", "show", "rehearsal", "--cluster", str(files["eve"])]) == 1  # no team: NOT_FOUND
    assert "there is no campaign 'rehearsal'" in capsys.readouterr().err


def test_racing_submissions_take_exactly_the_days_quota(world):
    """Six CreateRun at once from red's two members: the day's quota is three, so exactly three are taken."""
    outcomes, lock = [], threading.Lock()

    def create(who: str):
        channel, _, runs = campaign_stub(world, who)
        with channel:
            try:
                runs.CreateRun(runs_pb2.CreateRunRequest(campaign="rehearsal", competition="masks"), timeout=60)
                found = "OK"
            except grpc.RpcError as error:
                found = f"{error.code().name}: {error.details()}"
        with lock:
            outcomes.append(found)

    threads = [threading.Thread(target=create, args=(who,)) for who in ("alice", "dave") * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes)[:3] == ["OK"] * 3, outcomes
    assert all(o.startswith("RESOURCE_EXHAUSTED: team red has made the 3 submission(s) a day") for o in
               sorted(outcomes)[3:]), outcomes


def test_during_the_phase_a_team_sees_the_public_split_only(world, tmp_path, capsys):
    runs = {}
    for who, name in (("alice", "p-red_1"), ("bob", "p-blue_1"), ("carol", "c-green_1"), ("carol", "p-green_1")):
        status, runs[name] = submit(world, who, name, capsys=capsys)
        assert status == 0
        assert files_in(world["root"] / "out" / who / name) == []  # no report file during the phase
    public = {name: split_auc(world, name, "public", tmp_path) for name in runs}
    private = {name: split_auc(world, name, "private", tmp_path) for name in runs}
    assert public != private  # the check below can tell them apart
    board = get_board(world, "bob")
    assert board.split == "public" and board.metric == "AUC"
    ranked = [(line.team, line.system, line.value) for line in board.ranked]
    expected = sorted(((MEMBERS[w], n.split("_")[0], public[n]) for w, n in
                       (("alice", "p-red_1"), ("bob", "p-blue_1"), ("carol", "p-green_1"))),
                      key=lambda line: -line[2])
    assert [(t, s) for t, s, _ in ranked] == [(t, s) for t, s, _ in expected]
    assert [v for _, _, v in ranked] == pytest.approx([v for _, _, v in expected], abs=1e-12)
    assert [(line.system, line.mark) for line in board.listed] == [("c-green", "contrastive")]
    assert {line.team: line.goal_met for line in board.ranked} == {
        MEMBERS[w]: public[n] >= 0.7 for w, n in (("alice", "p-red_1"), ("bob", "p-blue_1"), ("carol", "p-green_1"))}
    # the private split: unreachable through every call and command
    channel, stub, aggregator = campaign_stub(world, "alice")
    with channel:
        tried = {
            "GetBoard private": refused(lambda: stub.GetBoard(campaigns_pb2.GetBoardRequest(
                campaign="rehearsal", competition="det", split="private"), timeout=60)),
            "GetBoard with descriptions": refused(lambda: stub.GetBoard(campaigns_pb2.GetBoardRequest(
                campaign="rehearsal", competition="det", descriptions=True), timeout=60)),
        }
        received = [aggregator.GetResults(results_pb2.GetResultsRequest(run_id=runs["p-red_1"]),
                                          timeout=60).SerializeToString(),
                    aggregator.GetRun(runs_pb2.GetRunRequest(run_id=runs["p-red_1"]), timeout=60).SerializeToString(),
                    aggregator.ListRuns(runs_pb2.ListRunsRequest(), timeout=60).SerializeToString()]
        received += [m.SerializeToString() for m in aggregator.WatchRun(
            runs_pb2.WatchRunRequest(run_id=runs["p-red_1"]), timeout=60)]
        received += [m.SerializeToString() for m in aggregator.FetchReport(
            runs_pb2.FetchReportRequest(run_id=runs["p-red_1"]), timeout=60)]
    capsys.readouterr()
    assert main(["leaderboard", "--campaign", "rehearsal", "--competition", "det", "--split", "private",
                 "--cluster", str(world["files"]["alice"])]) == 1
    assert main(["report", runs["p-red_1"], "-o", str(tmp_path / "fetched"),
                 "--cluster", str(world["files"]["alice"])]) == 0
    said = capsys.readouterr()
    received.append((said.out + said.err).encode())
    assert tried == {"GetBoard private": "PERMISSION_DENIED", "GetBoard with descriptions": "PERMISSION_DENIED"}
    assert "CampaignSplit=='private'".encode() not in b"".join(received)
    assert all(repr(private[name]).encode() not in b"".join(received) for name in runs)
    assert files_in(tmp_path / "fetched") == []
    world["runs"], world["public"], world["private"] = runs, public, private


def test_the_masks_competition_ranks_its_own_submissions(world, tmp_path, capsys):
    status, _ = submit(world, "carol", "p-green_1", "masks", capsys=capsys)
    assert status == 0
    board = get_board(world, "alice", "masks")
    assert board.task == "mask" and [(line.team, line.system) for line in board.ranked] == [("green", "p-green")]
    expected = split_auc(world, "p-green_1", "public", tmp_path, "mask", board.metric)
    assert board.ranked[0].value == pytest.approx(expected, abs=1e-12)


def test_what_a_team_may_not_do(world):
    """An outsider, a run naming a dataset, a task the competition does not score, a team deleting its run (which
    would give it its quota back): each refused."""
    tried = {}
    channel, _, runs = campaign_stub(world, "eve")
    with channel:
        tried["an outsider submits"] = refused(lambda: runs.CreateRun(runs_pb2.CreateRunRequest(
            campaign="rehearsal", competition="det"), timeout=60))
    channel, _, runs = campaign_stub(world, "alice")
    with channel:
        tried["a campaign run naming a dataset"] = refused(lambda: runs.CreateRun(runs_pb2.CreateRunRequest(
            campaign="rehearsal", competition="det", dataset=DATASET), timeout=60))
        tried["an unknown competition"] = refused(lambda: runs.CreateRun(runs_pb2.CreateRunRequest(
            campaign="rehearsal", competition="nope"), timeout=60))
        run_id = runs.CreateRun(runs_pb2.CreateRunRequest(campaign="rehearsal", competition="det"), timeout=60).run_id
        spec = runs_pb2.RunSpec(run_id=run_id, task="mask", input_prefix=f"runs/{run_id}/inputs/", output_name="x",
                                package="p-red_9")
        tried["another task than the competition's"] = refused(lambda: runs.SubmitRun(
            runs_pb2.SubmitRunRequest(spec=spec), timeout=60))
        runs.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=60)
        tried["a team deletes its run"] = refused(lambda: runs.DeleteRun(runs_pb2.DeleteRunRequest(
            run_id=world["runs"]["p-red_1"]), timeout=60))
    assert tried == {"an outsider submits": "NOT_FOUND", "a campaign run naming a dataset": "INVALID_ARGUMENT",
                     "an unknown competition": "NOT_FOUND", "another task than the competition's": "INVALID_ARGUMENT",
                     "a team deletes its run": "FAILED_PRECONDITION"}


def test_after_the_phase_a_restarted_aggregator_shows_the_private_split_and_marks_late_entries(world, capsys):
    restart_aggregator(world, int(1.5 * HOUR))  # between dev's end and eval's start
    public = get_board(world, "bob")
    assert public.phase == "dev" and [line.value for line in public.ranked] == pytest.approx(
        sorted((world["public"][n] for n in ("p-red_1", "p-blue_1", "p-green_1")), reverse=True), abs=1e-12)
    private = get_board(world, "bob", split="private")
    assert [line.value for line in private.ranked] == pytest.approx(
        sorted((world["private"][n] for n in ("p-red_1", "p-blue_1", "p-green_1")), reverse=True), abs=1e-12)
    status, late = submit(world, "bob", "p-blue_2", capsys=capsys)
    assert status == 0
    board = get_board(world, "bob")
    assert ("p-blue", 2, "late") in [(line.system, line.version, line.mark) for line in board.listed]
    assert main(["report", world["runs"]["p-red_1"], "-o", str(world["root"] / "after"),
                 "--cluster", str(world["files"]["alice"])]) == 0
    assert files_in(world["root"] / "after") == ["p-red_1_qp_query_report.csv"]  # the phase's release: aggregates


def test_the_second_phase_hides_its_board_and_then_refuses_late_entries(world, capsys):
    restart_aggregator(world, int(2.5 * HOUR))
    status, _ = submit(world, "alice", "p-red_2", capsys=capsys)
    assert status == 0
    channel, stub, _ = campaign_stub(world, "bob")
    with channel:
        assert refused(lambda: stub.GetBoard(campaigns_pb2.GetBoardRequest(
            campaign="rehearsal", competition="det"), timeout=60)) == "PERMISSION_DENIED"
    assert [line.team for line in get_board(world, "operator").ranked] == ["red"]
    restart_aggregator(world, int(3.5 * HOUR))
    capsys.readouterr()
    status = main(["submit", "--cluster", str(world["files"]["bob"]), "--campaign", "rehearsal", "--competition",
                   "det", "--package", str(world["packages"]["p-blue_2"])])
    assert status == 1 and "phase eval of rehearsal ended at" in capsys.readouterr().err
    assert [line.team for line in get_board(world, "bob", phase="eval").ranked] == ["red"]
    export = world["root"] / "final.csv"
    assert main(["leaderboard", "--campaign", "rehearsal", "--competition", "det", "--phase", "dev",
                 "--export", str(export), "--cluster", str(world["files"]["operator"])]) == 0
    text = export.read_text()
    assert "The system of p-red_1." in text and "The system of c-green_1." in text
