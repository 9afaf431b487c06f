"""A dataset's release policy on a local cluster of this module's own (docs/datasets.md "Release policy"): an operator
registers a shared dataset, sealed to clients by default (AGGREGATE): they read its description without digest, count
or size, its files are PERMISSION_DENIED, and ``dataset show`` prints none of its SHA-256s; an OPEN one is theirs to
read whole. ReleaseDataset is the operator's, sets ``released_at`` once, and a restarted aggregator reads it back.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path

import grpc
import pytest

from integration.test_aggregator_restart import stop, wait_for
from mfscore.cli.main import main
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc, runs_pb2

pytestmark = pytest.mark.integration

SEALED, PRACTICE = "release-eval@1", "release-practice@1"
AGGREGATE, OPEN = datasets_pb2.DATASET_RELEASE_AGGREGATE, datasets_pb2.DATASET_RELEASE_OPEN


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A small reference tree: two tables and three masks of random bytes."""
    root = tmp_path_factory.mktemp("release-ref")
    for name in ("reference/manipulation/eval-ref.csv", "indexes/eval-index.csv", "mask/a.png", "mask/b.png",
                 "mask/c.png"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(os.urandom(200 + len(name)))
    return root


def digests(directory: Path) -> dict[str, str]:
    """Each file's name under ``directory`` and SHA-256."""
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def manifest(directory: Path) -> str:
    return hashlib.sha256("".join(f"{sha}  {name}\n" for name, sha in sorted(digests(directory).items()))
                          .encode()).hexdigest()


def stub(files, who: str):
    """A DatasetService stub as ``who``, and its channel to close."""
    channel = ClusterConfig.read(files[who]).channel()
    return datasets_pb2_grpc.DatasetServiceStub(channel), channel


def calling(files, who: str, call):
    stub_, channel = stub(files, who)
    with channel:
        return call(stub_)


def refused(files, who: str, call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        calling(files, who, call)
    return error.value


def said(files, who: str, *command: str) -> tuple[int, str, str]:
    """``mfscore dataset COMMAND --cluster <who's file>``: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["dataset", *command, "--cluster", str(files[who])])
    return status, out.getvalue(), err.getvalue()


def get(files, who: str, reference_: str) -> datasets_pb2.Dataset:
    name, version = reference_.split("@")
    return calling(files, who, lambda s: s.GetDataset(datasets_pb2.GetDatasetRequest(name=name, version=version),
                                                      timeout=30).dataset)


@pytest.fixture(scope="module")
def registered(teams, reference):
    """The operator registers SEALED shared (the default release) and PRACTICE shared and open: what it printed."""
    _, _, files = teams
    first = said(files, "operator", "register", SEALED, str(reference), "--shared")
    practice = said(files, "operator", "register", PRACTICE, str(reference), "--shared", "--release", "open")
    assert first[0] == practice[0] == 0, first[2] + practice[2]
    return first[1], practice[1]


def test_a_shared_dataset_is_aggregate_by_default_and_its_reference_sealed_to_clients(teams, reference, registered):
    _, _, files = teams
    assert get(files, "operator", SEALED).release == AGGREGATE
    seen = get(files, "alice", SEALED)
    assert seen.shared and seen.release == AGGREGATE and seen.owner == "operator"
    assert (seen.manifest_sha256, seen.file_count, seen.total_bytes) == ("", 0, 0)
    assert not seen.HasField("released_at")

    error = refused(files, "alice", lambda s: s.ListDatasetFiles(datasets_pb2.ListDatasetFilesRequest(
        name="release-eval", version="1"), timeout=30))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error.details() == ("the reference of release-eval@1 is sealed: its owner releases aggregate results "
                               "only; submit a package (mfscore submit --dataset release-eval@1 --package DIR)")

    secrets = [*digests(reference).values(), manifest(reference)]
    for command in (["show", SEALED], ["show", SEALED, "--json"], ["list"]):
        status, out, err = said(files, "bob", *command)
        assert status == 0, err
        assert "sealed" in out and "aggregate" in out
        shown = out.encode()
        assert not [sha for sha in secrets if sha[:16].encode() in shown], command
    status, out, _ = said(files, "bob", "show", SEALED)
    assert "files     sealed: its owner releases aggregate results only" in out and "manifest" not in out


def test_the_operator_sees_the_whole_sealed_dataset(teams, reference, registered):
    _, _, files = teams
    whole = get(files, "operator", SEALED)
    assert whole.manifest_sha256 == manifest(reference) and whole.file_count == len(digests(reference))
    status, out, err = said(files, "operator", "show", SEALED)
    assert status == 0, err
    assert f"manifest  {manifest(reference)}" in out and "release aggregate" in out
    assert {line.split()[0] for line in out.splitlines()[5:]} == set(digests(reference).values())
    registered_line = registered[0].splitlines()[0]
    assert registered_line.startswith(f"{SEALED} registered") and ", shared, release aggregate;" in registered_line


def test_an_open_dataset_is_read_whole_by_clients(teams, reference, registered):
    _, _, files = teams
    listed = calling(files, "alice", lambda s: s.ListDatasets(datasets_pb2.ListDatasetsRequest(), timeout=30).datasets)
    practice = next(d for d in listed if f"{d.name}@{d.version}" == PRACTICE)
    sealed = next(d for d in listed if f"{d.name}@{d.version}" == SEALED)
    assert practice.release == OPEN and practice.manifest_sha256 == manifest(reference)
    assert practice.file_count == len(digests(reference)) and not sealed.manifest_sha256
    files_ = calling(files, "alice", lambda s: s.ListDatasetFiles(datasets_pb2.ListDatasetFilesRequest(
        name="release-practice", version="1"), timeout=30).files)
    assert {f.name: f.sha256 for f in files_} == digests(reference)
    status, out, err = said(files, "bob", "show", PRACTICE)
    assert status == 0, err
    assert "release open" in out and f"manifest  {manifest(reference)}" in out


def test_registering_it_again_with_another_release_already_exists(teams, reference, registered):
    _, _, files = teams
    status, out, err = said(files, "operator", "register", SEALED, str(reference), "--shared")
    assert status == 0 and "was registered already with these files; nothing changed" in out, err
    status, _, err = said(files, "operator", "register", SEALED, str(reference), "--shared", "--release",
                          "per-trial")
    assert status == 1 and "exists already, with other files, sharing, release or owner" in err
    known = [runs_pb2.DeclaredFile(name=name, size=(reference / name).stat().st_size, sha256=sha)
             for name, sha in digests(reference).items()]
    error = refused(files, "operator", lambda s: s.CreateDataset(iter([datasets_pb2.CreateDatasetRequest(
        name="release-eval", version="1", shared=True, release=OPEN, files=known)]), timeout=30))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert get(files, "operator", SEALED).release == AGGREGATE


def test_a_private_dataset_is_open_and_asking_otherwise_is_refused(teams, reference):
    _, _, files = teams
    status, _, err = said(files, "alice", "register", "alice/sealed@1", str(reference), "--release",
                          "aggregate")
    assert status == 1 and "is not shared, so its release is open" in err
    error = refused(files, "alice", lambda s: s.CreateDataset(iter([datasets_pb2.CreateDatasetRequest(
        name="alice/sealed", version="1", release=AGGREGATE)]), timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "is not shared" in error.details()


def test_release_dataset_is_the_operators_and_sets_released_at_once(teams, registered):
    _, _, files = teams
    request = datasets_pb2.ReleaseDatasetRequest(name="release-eval", version="1")
    error = refused(files, "alice", lambda s: s.ReleaseDataset(request, timeout=30))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED and "only its owner or an operator" in error.details()
    status, _, err = said(files, "bob", "release", SEALED)
    assert status == 1 and "only its owner or an operator releases it" in err
    assert not get(files, "operator", SEALED).HasField("released_at")

    status, out, err = said(files, "operator", "release", SEALED)
    assert status == 0, err
    released = get(files, "operator", SEALED)
    when = released.released_at.ToDatetime().strftime("%Y-%m-%d %H:%M:%S UTC")
    assert out == f"{SEALED} released {when}\n"
    again = calling(files, "operator", lambda s: s.ReleaseDataset(request, timeout=30).dataset)
    assert again.released_at == released.released_at and again.manifest_sha256 == released.manifest_sha256
    seen = get(files, "alice", SEALED)  # released, the reference stays sealed
    assert seen.released_at == released.released_at and not seen.manifest_sha256
    status, out, _ = said(files, "alice", "show", SEALED)
    assert f"released {when}" in out and "files     sealed" in out


def test_a_restarted_aggregator_reads_the_release_back(teams, registered):
    path, config, files = teams
    before = calling(files, "operator", lambda s: s.ReleaseDataset(datasets_pb2.ReleaseDatasetRequest(
        name="release-eval", version="1"), timeout=30).dataset)  # released already if the test above ran here
    assert before.HasField("released_at")
    aggregator = next(p for p in config.processes if p.get("service") == "aggregator")
    stop(aggregator)
    again = commands.start_service(config, Path(config.state_dir), "aggregator-again", "aggregator",
                                   aggregator["grpc_port"])
    config.processes = [p for p in config.processes if p is not aggregator] + [again]
    config.write(path)
    commands.wait_healthy(again)

    def read_back():
        try:
            return get(files, "operator", SEALED)
        except grpc.RpcError:
            return None

    after = wait_for(read_back, "the restarted aggregator to answer")
    assert after == before and after.release == AGGREGATE
    seen = get(files, "alice", SEALED)
    assert seen.released_at == before.released_at and not seen.manifest_sha256
