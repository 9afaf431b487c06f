"""Datasets registered once and per-owner content-addressed inputs (docs/datasets.md), on a local cluster of this
module's own (real nats-server, real S3 server, every service a process): the two-team scenario.

An operator registers a shared reference set once (its bytes uploaded; registering it again uploads nothing);
alice and bob submit three runs between them with ``--dataset``, each uploading only its system output (the
reference bytes never travel); alice's resubmission of the same system output uploads nothing; bob, declaring
alice's digests, finds them missing and scores her output only once he has uploaded it himself; each sees only its
own runs; every report is byte-identical to the embedded command's. Deleting runs and datasets removes the objects
nothing names any more and keeps those still named. Bytes uploaded are the aggregator's
``mfscore_uploaded_bytes_total`` (every checked byte it received), read before and after each command.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import urllib.request
from pathlib import Path

import cv2
import grpc
import numpy as np
import pytest

from integration.equivalence import assert_same_outputs, without_created
from mfscore import tasks
from mfscore.cli.main import build_parser, main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.commands.submit import run_inputs
from mfscore.services.commands.upload import create_run, declare_inputs, declarations
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import namespace, objects_prefix
from mfscore.services.wire import runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

DATASET = "mfc-ref@1"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """The reference set (``ref``: its tables and masks) and four system outputs: alice's, alice's with one mask
    changed, bob's (every mask his own), and a copy of alice's."""
    root = tmp_path_factory.mktemp("datasets-data")
    generated = generate_mask_dataset(root / "generated", 12)
    made = {"ref": root / "ref"}
    for part in ("reference", "indexes"):
        shutil.copytree(generated.directory / part, made["ref"] / part)
    for name in ("alice", "alice-2", "bob", "alice-copy"):
        made[name] = root / name
        shutil.copytree(generated.directory / "system", made[name] / "system")
    masks = sorted((made["bob"] / "system").rglob("*.png"))
    for mask in masks:  # bob's system finds other things
        cv2.imwrite(str(mask), np.clip(cv2.imread(str(mask), cv2.IMREAD_GRAYSCALE).astype(int) - 9, 0, 255)
                    .astype(np.uint8))
    changed = Path(system_files(made, "alice-2")[-1][0])  # a mask the run reads
    assert changed.suffix == ".png"
    cv2.imwrite(str(changed), 255 - cv2.imread(str(changed), cv2.IMREAD_GRAYSCALE))
    made["changed"] = changed
    return made


def arguments(data: dict[str, Path], system: str) -> list[str]:
    return ["--refDir", str(data["ref"]), "-r", "reference/manipulation/MFC-manipulation-ref.csv",
            "-x", "indexes/MFC-manipulation-index.csv", "--sysDir", str(data[system]),
            "-s", "system/mfscore-demo-mask-system.csv", "--sbin", "120"]


def uploaded_bytes(config: ClusterConfig) -> float:
    """Every checked byte the aggregator has received (UploadInputs and UploadObjects)."""
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == "aggregator")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(r"^mfscore_uploaded_bytes_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def bytes_under(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def system_files(data, system: str) -> list[tuple[str, str]]:
    """(local path, name in the run) of the system output's files the run reads (``submit`` planning it)."""
    args = build_parser().parse_args(["mask", *arguments(data, system), "-oR", "x"])
    files, _ = run_inputs(tasks.get("mask"), args.task_options(args).options)
    return [(path, key) for path, key in files if key.startswith("sys/")]


def system_bytes(data, system: str) -> int:
    return sum(os.path.getsize(path) for path, _ in system_files(data, system))


def counted(config: ClusterConfig, command: list[str]) -> tuple[int, int]:
    """(exit status, bytes uploaded) of ``mfscore COMMAND``."""
    before = uploaded_bytes(config)
    status = main(command)
    return status, int(uploaded_bytes(config) - before)


def embedded_and_cluster(capsys, teams, data, who: str, system: str, out: Path) -> int:
    """``mfscore mask`` and ``mfscore submit --dataset`` by ``who`` on ``system``: the same files and lines; the
    bytes the submission uploaded."""
    _, config, files = teams
    capsys.readouterr()
    embedded_status = main(["mask", *arguments(data, system), "-oR", str(out / "embedded" / "x")])
    embedded = (embedded_status, *capsys.readouterr())
    status, sent = counted(config, ["submit", "--cluster", str(files[who]), "--dataset", DATASET, "mask",
                                    *arguments(data, system), "-oR", str(out / "cluster" / "x")])
    said = capsys.readouterr()
    cluster = (status, said.out, without_created(said.err))
    assert_same_outputs(out / "embedded", out / "cluster", embedded, cluster)
    return sent


def own_runs(files, who: str) -> list[runs_pb2.RunStatus]:
    config = ClusterConfig.read(files[who])
    with config.channel() as channel:
        return list(services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(),
                                                                              timeout=10).runs)


def objects_of(config: ClusterConfig, who: str, role: str = "client") -> set[str]:
    store = ObjectStore(commands.service_s3_settings(config))
    prefix = objects_prefix(namespace(role, who))
    return {key[len(prefix):] for key in store.list_keys(prefix)}


def digests_under(directory: Path) -> set[str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def registered(teams, data, tmp_path_factory):
    """The operator registers the shared reference set, twice: (bytes uploaded the first time, the second time,
    what the second command printed)."""
    _, config, files = teams
    first, sent_first = counted(config, ["dataset", "register", DATASET, str(data["ref"]), "--shared",
                                         "--release", "open", "--cluster", str(files["operator"])])
    second, sent_second = counted(config, ["dataset", "register", DATASET, str(data["ref"]), "--shared",
                                           "--release", "open", "--cluster", str(files["operator"])])
    assert first == second == 0
    return sent_first, sent_second


def test_an_operator_registers_a_shared_dataset_once(teams, data, registered, capsys):
    _, config, files = teams
    sent_first, sent_second = registered
    assert sent_first == bytes_under(data["ref"]) > 0 and sent_second == 0
    capsys.readouterr()
    assert main(["dataset", "register", DATASET, str(data["ref"]), "--shared", "--release", "open",
                 "--cluster", str(files["operator"])]) == 0
    out = capsys.readouterr().out
    assert f"{DATASET} was registered already with these files; nothing changed" in out
    assert "uploaded 0 file(s), 0 bytes" in out
    assert objects_of(config, "operator", "operator") == digests_under(data["ref"])
    for who in ("alice", "bob"):  # every client sees the shared dataset and its files
        assert main(["dataset", "list", "--cluster", str(files[who])]) == 0
        assert DATASET in capsys.readouterr().out
        assert main(["dataset", "show", DATASET, "--cluster", str(files[who])]) == 0
        shown = capsys.readouterr().out
        files_listed = [line.split() for line in shown.splitlines()[5:]]
        assert sorted(sha for sha, _, _ in files_listed) == sorted(digests_under(data["ref"]))
        manifest = hashlib.sha256("".join(f"{sha}  {name}\n" for sha, _, name in sorted(
            files_listed, key=lambda row: row[2])).encode()).hexdigest()
        assert f"manifest  {manifest}" in shown


def test_two_teams_upload_only_their_system_output(teams, data, registered, tmp_path, capsys):
    _, config, files = teams
    alice_first = embedded_and_cluster(capsys, teams, data, "alice", "alice", tmp_path / "alice-1")
    assert alice_first == system_bytes(data, "alice")  # the reference bytes never travel
    bob = embedded_and_cluster(capsys, teams, data, "bob", "bob", tmp_path / "bob-1")
    assert bob == system_bytes(data, "bob")  # his system table is alice's byte for byte: stored again, as his
    alice_second = embedded_and_cluster(capsys, teams, data, "alice", "alice-2", tmp_path / "alice-2")
    assert alice_second == data["changed"].stat().st_size  # only the mask that changed
    again = embedded_and_cluster(capsys, teams, data, "alice", "alice-copy", tmp_path / "alice-3")
    assert again == 0  # a resubmission of the same system output
    print(f"dataset {bytes_under(data['ref'])} bytes registered once; alice's runs uploaded {alice_first}, "
          f"{alice_second} and {again} bytes, bob's {bob}")

    mine = {who: own_runs(files, who) for who in ("alice", "bob")}
    assert len(mine["alice"]) == 3 and len(mine["bob"]) == 1
    assert {r.owner for r in mine["alice"]} == {"alice"} and {r.owner for r in mine["bob"]} == {"bob"}
    assert all(r.state == runs_pb2.RUN_STATE_DONE for runs in mine.values() for r in runs)


def test_bob_finds_alices_digests_missing_and_scores_her_output_only_once_he_uploads_it(teams, data, registered,
                                                                                        tmp_path, capsys):
    _, config, files = teams
    bob = ClusterConfig.read(files["bob"])
    theirs = system_files(data, "alice-2")
    run_id = create_run(bob, DATASET)
    declared = [d for _, d in declarations(theirs)]
    missing = set(declare_inputs(bob, run_id, declared))
    masks = {d.name for d in declared if d.name.endswith(".png")}
    assert missing == masks  # alice's masks are not his, whoever holds them; the system table he uploaded himself
    with bob.channel() as channel:
        services_pb2_grpc.AggregatorServiceStub(channel).CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=10)
    sent = embedded_and_cluster(capsys, teams, data, "bob", "alice-2", tmp_path / "bob-2")
    assert sent == sum(d.size for d in declared if d.name in masks)


def test_with_a_dataset_the_reference_tables_alone_are_needed_here(teams, data, registered, tmp_path, capsys):
    """A copy of the reference without its masks plans the run; the cluster reads the masks from the dataset: the
    embedded command's files, given the whole reference."""
    _, config, files = teams
    tables = tmp_path / "ref-tables"
    shutil.copytree(data["ref"], tables, ignore=shutil.ignore_patterns("*.png"))
    assert not list(tables.rglob("*.png"))
    capsys.readouterr()
    embedded = (main(["mask", *arguments(data, "alice"), "-oR", str(tmp_path / "embedded" / "x")]),
                *capsys.readouterr())
    status, sent = counted(config, ["submit", "--cluster", str(files["alice"]), "--dataset", DATASET, "mask",
                                    *arguments({**data, "ref": tables}, "alice"), "-oR", str(tmp_path / "cluster" / "x")])
    said = capsys.readouterr()
    assert_same_outputs(tmp_path / "embedded", tmp_path / "cluster", embedded, (status, said.out,
                                                                                 without_created(said.err)))
    assert sent == 0  # alice's output is hers already, the reference the dataset's
    run = own_runs(files, "alice")[-1]
    with ClusterConfig.read(files["alice"]).channel() as channel:
        services_pb2_grpc.AggregatorServiceStub(channel).DeleteRun(runs_pb2.DeleteRunRequest(run_id=run.run_id),
                                                                   timeout=30)


def test_a_client_cannot_register_a_shared_dataset_and_uploads_nothing_trying(teams, data, capsys):
    _, config, files = teams
    capsys.readouterr()
    status, sent = counted(config, ["dataset", "register", "alice/shared@1", str(data["ref"]), "--shared",
                                    "--cluster", str(files["alice"])])
    assert status == 1 and sent == 0
    assert "only an operator registers a shared dataset" in capsys.readouterr().err


def test_deleting_runs_and_datasets_removes_the_objects_nothing_names(teams, data, registered, tmp_path, capsys):
    _, config, files = teams
    assert len(own_runs(files, "alice")) == 3  # test_two_teams_... ran first
    alice = ClusterConfig.read(files["alice"])
    changed = hashlib.sha256(data["changed"].read_bytes()).hexdigest()
    read = {hashlib.sha256(Path(path).read_bytes()).hexdigest() for path, _ in system_files(data, "alice")}
    hers = objects_of(config, "alice")
    assert changed in hers and read <= hers

    second = next(r for r in own_runs(files, "alice") if _names(config, r, changed))
    assert main(["delete", second.run_id, "--cluster", str(files["alice"])]) == 0
    left = objects_of(config, "alice")
    assert changed not in left and read <= left  # the others are still named
    for run in own_runs(files, "alice"):
        assert main(["delete", run.run_id, "--cluster", str(files["alice"])]) == 0
    assert objects_of(config, "alice") == set()

    blocking = create_run(alice, DATASET)  # created, not ended: it names the dataset
    capsys.readouterr()
    assert main(["dataset", "delete", DATASET, "--cluster", str(files["operator"])]) == 1
    assert "run(s) that have not ended name the dataset" in capsys.readouterr().err
    with alice.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        stub.CancelRun(runs_pb2.CancelRunRequest(run_id=blocking), timeout=10)
        stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=blocking), timeout=30)
    assert main(["dataset", "delete", DATASET, "--cluster", str(files["operator"])]) == 0
    reference = digests_under(data["ref"])
    kept = objects_of(config, "operator", "operator")
    assert kept and kept <= reference  # bob's runs still name what they read of it
    for run in own_runs(files, "bob"):
        assert main(["delete", run.run_id, "--cluster", str(files["bob"])]) == 0
    assert objects_of(config, "operator", "operator") == set() and objects_of(config, "bob") == set()
    with ClusterConfig.read(files["bob"]).channel() as channel:
        error = _refused(lambda: services_pb2_grpc.AggregatorServiceStub(channel).CreateRun(
            runs_pb2.CreateRunRequest(dataset=DATASET), timeout=10))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def _names(config, run, digest: str) -> bool:
    from mfscore.services.common import input_manifest

    inputs = input_manifest.read(ObjectStore(commands.service_s3_settings(config)), run.run_id)
    return digest in input_manifest.digests(inputs).values()


def _refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value
