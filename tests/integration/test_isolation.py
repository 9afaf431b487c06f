"""One client cannot touch another's runs: tried on a local cluster by a second and a third client, as an attacker
would, with the cluster files ``local-cluster token --out`` gives them (no object-store or NATS credential).

Stored reports are tampered with the services' own S3 key, as only someone holding it could: the aggregator must
still refuse to serve them (DATA_LOSS), and the client must write nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import re
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from integration.raw_s3 import put_raw
from integration.uploads import mask_options, upload
from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.aggregator import state
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.common.messages import key_message
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import input_prefix, manifest_key, namespace, objects_prefix, reports_prefix
from mfscore.services.common.subjects import MSG_ID_HEADER, RUNS_BUCKET, job_id, result_subject
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc, records_pb2, results_pb2, runs_pb2, services_pb2_grpc

State = runs_pb2.RunState


@dataclasses.dataclass
class Client:
    name: str
    file: Path
    config: ClusterConfig

    def stub(self, channel) -> services_pb2_grpc.AggregatorServiceStub:
        return services_pb2_grpc.AggregatorServiceStub(channel)


@pytest.fixture(scope="module")
def clients(local_cluster, tmp_path_factory) -> dict[str, Client]:
    """alice, bob and carol: three clients of the shared local cluster, each with its own cluster file."""
    _, config = local_cluster
    made = {}
    for name in ("alice", "bob", "carol"):
        path = tmp_path_factory.mktemp(name) / "cluster.json"
        commands.add_caller(config, f"{name}-isolation", "client", out=path)
        made[name] = Client(name, path, ClusterConfig.read(path))
    time.sleep(1.5)  # the services read the tokens file again within a second
    return made


@pytest.fixture(scope="module")
def mask_data(tmp_path_factory):
    data = generate_mask_dataset(tmp_path_factory.mktemp("isolation-data"), 5)
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
            "-s", data.system, "--sbin", "120"]


@pytest.fixture(scope="module")
def alice_done(clients, mask_data, tmp_path_factory) -> tuple[str, Path]:
    """A finished run of alice's, submitted with her cluster file: (run id, where its reports landed)."""
    out = tmp_path_factory.mktemp("alice-out")
    assert main(["submit", "--cluster", str(clients["alice"].file), "mask", *mask_data, "-oR", str(out / "x")]) == 0
    with clients["alice"].config.channel() as channel:
        runs = clients["alice"].stub(channel).ListRuns(runs_pb2.ListRunsRequest(state=State.RUN_STATE_DONE)).runs
    return runs[-1].run_id, out


def service_store(config: ClusterConfig) -> ObjectStore:
    """The object store with the services' key: what an attacker would need, and no client holds."""
    return ObjectStore(commands.service_s3_settings(config))


def fetch(client: Client, run_id: str, out: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["report", run_id, "--cluster", str(client.file), "-o", str(out)])
    return status, capsys.readouterr().err


def files_in(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def upload_messages(run_id: str, name: str, content: bytes, *, size: int | None = None, sha256: str | None = None):
    declared = runs_pb2.DeclaredFile(name=name, size=len(content) if size is None else size,
                                     sha256=sha256 or hashlib.sha256(content).hexdigest())
    return iter([runs_pb2.UploadInputsRequest(run_id=run_id, file=declared), runs_pb2.UploadInputsRequest(chunk=content)])


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value


def test_no_client_file_holds_a_credential_for_the_object_store_or_nats(local_cluster, clients):
    path, config = local_cluster
    for client in clients.values():
        written = json.loads(client.file.read_text())
        assert written["nats_url"] == "" and not {"s3_access_key", "s3_secret_key", "nats_password"} & set(written)
        assert oct(client.file.stat().st_mode & 0o777) == "0o600"
    operator = json.loads(path.read_text())
    assert not {"s3_access_key", "s3_secret_key"} & set(operator)  # the operator's file: its token, no S3 key


def test_another_clients_run_is_unknown_to_every_call(clients, alice_done, tmp_path, capsys):
    run_id, _ = alice_done
    tried = refusals = 0
    for name in ("bob", "carol"):
        with clients[name].config.channel() as channel:
            stub = clients[name].stub(channel)
            calls = [lambda: stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run,
                     lambda: list(stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=5)),
                     lambda: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id), timeout=5)),
                     lambda: stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=runs_pb2.RunSpec(
                         task="mask", run_id=run_id, input_prefix=input_prefix(run_id))), timeout=5),
                     lambda: stub.UploadInputs(upload_messages(run_id, "reports/x_mask_score.csv", b"AUC 0.9999"),
                                               timeout=5),
                     lambda: stub.DeclareInputs(runs_pb2.DeclareInputsRequest(run_id=run_id, files=[
                         runs_pb2.DeclaredFile(name="ref/x.csv", size=1, sha256="0" * 64)]), timeout=5),
                     lambda: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=5),
                     lambda: stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=5),
                     lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=5)]
            for call in calls:
                tried += 1
                refusals += refused(call).code() == grpc.StatusCode.NOT_FOUND
            assert run_id not in {r.run_id for r in stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=5).runs}
        status, err = fetch(clients[name], run_id, tmp_path / name, capsys)
        assert status == 1 and f"there is no run '{run_id}'" in err and not files_in(tmp_path / name)
        for command in ("cancel", "delete"):
            capsys.readouterr()
            assert main([command, run_id, "--cluster", str(clients[name].file)]) == 1
            assert f"there is no run '{run_id}'" in capsys.readouterr().err
    assert refusals == tried == 18
    with clients["alice"].config.channel() as channel:  # nothing of it changed
        status = clients["alice"].stub(channel).GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run
    assert status.state == State.RUN_STATE_DONE


def test_a_client_writes_only_inside_its_own_created_run(clients, alice_done, local_cluster):
    _, config = local_cluster
    store = service_store(config)
    before = {key: store.get_bytes(key, max_bytes=1 << 20) for key in store.list_keys(reports_prefix(alice_done[0]))}
    with clients["bob"].config.channel() as channel:
        stub = clients["bob"].stub(channel)
        run_id = stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=5).run_id
        names = ["a\nb.csv", "a\rb.csv", "a\0b.csv", "../x.csv", "ref/../../x.csv", f"../../{alice_done[0]}/reports/x",
                 "ref\\x.csv", "/abs.csv", "", "ref//x.csv", "ref/./x.csv", "x" * 256, "ref/\x7f.csv"]
        for name in names:
            error = refused(lambda: stub.UploadInputs(upload_messages(run_id, name, b"a|b\n"), timeout=5))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, name
            assert "is not a relative path of plain names" in error.details()
        content = b"TaskID|ProbeFileID\n"
        wrong = [({"size": len(content) + 1}, "was declared as 20 bytes but 19 arrived"),
                 ({"size": 3}, "more bytes of ref/t.csv arrived than the 3 declared"),
                 ({"sha256": "0" * 64}, "do not match the SHA-256 declared"),
                 ({"sha256": "NOT-HEX"}, "is not 64 lowercase hexadecimal digits"),
                 ({"size": -1}, "is declared as -1 bytes")]
        for fields, said in wrong:
            error = refused(lambda: stub.UploadInputs(upload_messages(run_id, "ref/t.csv", content, **fields),
                                                      timeout=5))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and said in error.details(), error.details()
        object_of_bobs = objects_prefix(namespace("client", "bob-isolation")) + hashlib.sha256(content).hexdigest()
        assert not store.exists(object_of_bobs) and store.list_keys(input_prefix(run_id)) == []  # nothing stored
        stored = stub.UploadInputs(upload_messages(run_id, "ref/t.csv", content), timeout=5)
        assert [f.name for f in stored.files] == ["ref/t.csv"]
        assert store.get_bytes(object_of_bobs, max_bytes=100) == content  # bob's, by its content
        spec = runs_pb2.RunSpec(task="mask", run_id=run_id, input_prefix=input_prefix(run_id), output_name="x",
                                options=mask_options())
        for bad, said in ((dict(output_name="x\ny"), "is not a file name"), (dict(output_name="x\0"), "not a file name"),
                          (dict(tables=["ref/t\r.csv"]), "not a relative path")):
            wrong_spec = runs_pb2.RunSpec()
            wrong_spec.CopyFrom(spec)
            for field, value in bad.items():
                if field == "tables":
                    wrong_spec.tables.extend(value)
                else:
                    setattr(wrong_spec, field, value)
            error = refused(lambda: stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=wrong_spec), timeout=5))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and said in error.details()
        stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=5)
        error = refused(lambda: stub.UploadInputs(upload_messages(run_id, "ref/late.csv", content), timeout=5))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION  # a submitted run's inputs do not change
    after = {key: store.get_bytes(key, max_bytes=1 << 20) for key in store.list_keys(reports_prefix(alice_done[0]))}
    assert after == before


@pytest.mark.parametrize("run_id", ["abc\n", "abc\r", "ab\0c", "../abc", "a.b", "a" * 65, ""])
def test_a_run_id_that_is_not_one_token_is_refused_by_every_call(clients, run_id):
    with clients["carol"].config.channel() as channel:
        stub = clients["carol"].stub(channel)
        calls = [lambda: stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run,
                 lambda: list(stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=5)),
                 lambda: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id), timeout=5)),
                 lambda: stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=runs_pb2.RunSpec(
                     task="mask", run_id=run_id, output_name="x")), timeout=5),
                 lambda: stub.UploadInputs(upload_messages(run_id, "ref/t.csv", b"x"), timeout=5),
                 lambda: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=5),
                 lambda: stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=5),
                 lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=5)]
        for call in calls:
            error = refused(call)
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "is not 1-64 letters" in error.details()


def test_calls_with_an_empty_token_are_anonymous_and_refused(local_cluster):
    _, config = local_cluster
    for metadata in ((), (("authorization", "Bearer "),), (("authorization", "Bearer"),)):
        with grpc.insecure_channel(config.aggregator_address) as channel:
            stub = services_pb2_grpc.AggregatorServiceStub(channel)
            error = refused(lambda: stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=5, metadata=metadata))
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_client_token_under_the_operators_name_is_refused(local_cluster, capsys):
    path, _ = local_cluster
    capsys.readouterr()
    assert main(["local-cluster", "token", "--cluster", str(path), "--name", "operator", "--role", "client"]) == 1
    assert "a name belongs to one role" in capsys.readouterr().err


def metric(config: ClusterConfig, name: str) -> float:
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == "aggregator")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_a_tampered_report_is_refused_with_data_loss_and_nothing_is_written(local_cluster, clients, alice_done,
                                                                             tmp_path, capsys):
    _, config = local_cluster
    run_id, submitted = alice_done
    store = service_store(config)
    status, _ = fetch(clients["alice"], run_id, tmp_path / "first", capsys)
    assert status == 0 and files_in(tmp_path / "first") == files_in(submitted)
    # a '..' key by the reports: SeaweedFS refuses to hold it (AWS S3 would; the report's names come from its
    # manifest, never from a listing), and a stray object among the reports is not the report's either
    status, _ = put_raw(commands.service_s3_settings(config), reports_prefix(run_id) + "../stray.csv", b"planted")
    assert status == 400
    store.put_bytes(reports_prefix(run_id) + "stray.csv", b"planted")
    status, _ = fetch(clients["alice"], run_id, tmp_path / "again", capsys)
    assert status == 0 and files_in(tmp_path / "again") == files_in(submitted)

    key = reports_prefix(run_id) + "x_mask_score.csv"
    original = store.get_bytes(key, max_bytes=1 << 20)
    tampered_before = metric(config, "mfscore_reports_tampered_total")
    log = Path(next(p["log"] for p in config.processes if p.get("service") == "aggregator"))
    errors_before = log.read_text().count("ERROR")
    try:
        store.put_bytes(key, original.replace(b"|", b"|9", 1))
        status, err = fetch(clients["alice"], run_id, tmp_path / "tampered", capsys)
        assert status == 1 and "does not match the digest recorded when it was written" in err
        assert not (tmp_path / "tampered").exists() or not files_in(tmp_path / "tampered")
        assert metric(config, "mfscore_reports_tampered_total") == tampered_before + 1
        lines = [line for line in log.read_text().splitlines() if "ERROR" in line][errors_before:]
        assert len(lines) == 1 and "x_mask_score.csv" in lines[0]
        with clients["alice"].config.channel() as channel:
            error = refused(lambda: list(clients["alice"].stub(channel).FetchReport(
                runs_pb2.FetchReportRequest(run_id=run_id), timeout=30)))
        assert error.code() == grpc.StatusCode.DATA_LOSS
        store.put_bytes(key, original)
        manifest = store.get_bytes(manifest_key(run_id), max_bytes=1 << 20)
        store.put_bytes(manifest_key(run_id), manifest + b"\n")  # the manifest itself changed
        status, err = fetch(clients["alice"], run_id, tmp_path / "manifest", capsys)
        assert status == 1 and "manifest" in err and "does not match" in err
        store.put_bytes(manifest_key(run_id), manifest)
    finally:
        store.put_bytes(key, original)
    status, _ = fetch(clients["alice"], run_id, tmp_path / "restored", capsys)
    assert status == 0 and files_in(tmp_path / "restored") == files_in(submitted)


def test_an_undecodable_record_fails_the_run_within_seconds(local_cluster, clients, mask_data):
    """A record whose outcome is not JSON, published ahead of the scorer's (which is then dropped as a duplicate)."""
    _, config = local_cluster
    run = upload(clients["carol"].config, "mask", [*mask_data, "-oR", "unused/x"])
    first = run.plan.jobs[0]
    forged = records_pb2.TrialRecord(run_id=run.run_id, task="mask", key=key_message(first.key),
                                     outcome=b"{not json", scorer="forger")

    async def publish():
        nc, js = await connect(commands.nats_settings(config, "scorer"))
        try:
            await js.publish(result_subject(run.run_id), forged.SerializeToString(),
                             headers={MSG_ID_HEADER: job_id(forged)})
        finally:
            await nc.close()

    asyncio.run(publish())
    with clients["carol"].config.channel() as channel:
        stub = clients["carol"].stub(channel)
        started = time.monotonic()
        stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=run.spec(run_id=run.run_id)), timeout=10)
        final = next(s for s in (r.run for r in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run.run_id), timeout=60))
                     if s.state in (State.RUN_STATE_DONE, State.RUN_STATE_FAILED))
    assert time.monotonic() - started < 10
    assert final.state == State.RUN_STATE_FAILED
    assert final.message.startswith(f"the record of the job {first.key} could not be decoded")


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE).group(1)) / 1024


@pytest.mark.parametrize("size_mib", [pytest.param(256, marks=pytest.mark.faults), 32])
def test_fetching_two_large_report_files_keeps_the_aggregators_memory_bounded(local_cluster, clients, alice_done,
                                                                             tmp_path, size_mib):
    """Two files of ``size_mib`` planted under a finished run's reports with the services' key, their digests
    recorded through the state module; the aggregator streams them with its peak memory barely moving."""
    _, config = local_cluster
    run_id, _ = alice_done
    store = service_store(config)
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()
    for _ in range(size_mib):
        digest.update(block)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        for _ in range(size_mib):
            f.write(block)
    manifest_bytes = store.get_bytes(manifest_key(run_id), max_bytes=1 << 20)
    manifest = runs_pb2.ReportManifest.FromString(manifest_bytes)
    for name in ("big-1.bin", "big-2.bin"):
        store.put_file(reports_prefix(run_id) + name, big)
        manifest.files.append(runs_pb2.DeclaredFile(name=name, size=size_mib << 20, sha256=digest.hexdigest()))
    planted = manifest.SerializeToString()

    async def seal(content: bytes):
        nc, js = await connect(commands.nats_settings(config, "aggregator"))
        try:
            await state.seal_report(await js.key_value(RUNS_BUCKET), run_id, hashlib.sha256(content).hexdigest())
        finally:
            await nc.close()

    pid = next(p["pid"] for p in config.processes if p.get("service") == "aggregator")
    store.put_bytes(manifest_key(run_id), planted)
    asyncio.run(seal(planted))
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak resident size starts again from now
        before = peak_rss_mib(pid)
        received = 0
        started = time.monotonic()
        with clients["alice"].config.channel() as channel:
            for reply in clients["alice"].stub(channel).FetchReport(runs_pb2.FetchReportRequest(run_id=run_id),
                                                                    timeout=600):
                received += len(reply.chunk)
        seconds = time.monotonic() - started
        peak = peak_rss_mib(pid)
    finally:
        store.put_bytes(manifest_key(run_id), manifest_bytes)
        asyncio.run(seal(manifest_bytes))
    assert received >= 2 * (size_mib << 20)
    print(f"FetchReport of 2 x {size_mib} MiB: aggregator peak RSS {before:.0f} -> {peak:.0f} MiB, {seconds:.1f} s")
    assert peak - before < 64, f"the aggregator's peak resident size grew by {peak - before:.0f} MiB"


# ----------------------------------------------------------------------------------------- datasets


@pytest.fixture(scope="module")
def alices_dataset(clients, tmp_path_factory) -> tuple[str, Path]:
    """A private dataset of alice's, registered with her cluster file: (name@version, its directory)."""
    data = generate_mask_dataset(tmp_path_factory.mktemp("alice-dataset"), 3, seed=7)
    assert main(["dataset", "register", "alice-isolation/private@1", str(data.directory), "--cluster",
                 str(clients["alice"].file)]) == 0
    return "alice-isolation/private@1", data.directory


def test_another_clients_private_dataset_is_unknown_to_every_call(clients, alices_dataset, tmp_path, capsys):
    name, directory = alices_dataset
    dataset, version = name.split("@")
    tried = refusals = 0
    for who in ("bob", "carol"):
        with clients[who].config.channel() as channel:
            datasets = datasets_pb2_grpc.DatasetServiceStub(channel)
            runs = clients[who].stub(channel)
            own = runs.CreateRun(runs_pb2.CreateRunRequest(), timeout=5).run_id
            calls = [lambda: datasets.GetDataset(datasets_pb2.GetDatasetRequest(name=dataset, version=version),
                                                 timeout=5),
                     lambda: datasets.ListDatasetFiles(datasets_pb2.ListDatasetFilesRequest(name=dataset,
                                                                                            version=version), timeout=5),
                     lambda: datasets.DeleteDataset(datasets_pb2.DeleteDatasetRequest(name=dataset, version=version),
                                                    timeout=5),
                     lambda: runs.CreateRun(runs_pb2.CreateRunRequest(dataset=name), timeout=5),
                     lambda: runs.SubmitRun(runs_pb2.SubmitRunRequest(spec=runs_pb2.RunSpec(
                         task="mask", run_id=own, input_prefix=input_prefix(own), output_name="x",
                         options=mask_options(), dataset=name)), timeout=5)]
            for call in calls:
                tried += 1
                error = refused(call)
                refusals += error.code() == grpc.StatusCode.NOT_FOUND and f"there is no dataset {name!r}" in \
                    error.details()
            listed = datasets.ListDatasets(datasets_pb2.ListDatasetsRequest(), timeout=5).datasets
            assert name not in {f"{d.name}@{d.version}" for d in listed}
            runs.CancelRun(runs_pb2.CancelRunRequest(run_id=own), timeout=5)
        capsys.readouterr()
        assert main(["submit", "--cluster", str(clients[who].file), "--dataset", name, "mask", "--refDir",
                     str(directory), "-r", "reference/manipulation/MFC-manipulation-ref.csv", "-x",
                     "indexes/MFC-manipulation-index.csv", "--sysDir", str(directory), "-s",
                     "system/mfscore-demo-mask-system.csv", "-oR", str(tmp_path / who / "x")]) == 1
        assert f"there is no dataset {name!r}" in capsys.readouterr().err
    assert refusals == tried == 10
    with clients["alice"].config.channel() as channel:  # nothing of it changed
        kept = datasets_pb2_grpc.DatasetServiceStub(channel).GetDataset(
            datasets_pb2.GetDatasetRequest(name=dataset, version=version), timeout=5).dataset
    assert kept.owner == "alice-isolation" and not kept.shared


def test_a_dataset_is_made_only_of_the_callers_own_objects(clients, alices_dataset):
    """bob declares alice's files: every one is missing to him; a dataset naming them is refused until he uploads
    them himself; her names are not his to take, whether she holds them or not (so a name tells him nothing); the
    same bytes stay two objects."""
    name, directory = alices_dataset
    files = [(str(p), p.relative_to(directory).as_posix()) for p in sorted(directory.rglob("*")) if p.is_file()]
    declared = [runs_pb2.DeclaredFile(name=key, size=os.path.getsize(path),
                                      sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest()) for path, key in files]
    with clients["bob"].config.channel() as channel:
        stub = datasets_pb2_grpc.DatasetServiceStub(channel)
        missing = stub.DeclareDatasetFiles(datasets_pb2.DeclareDatasetFilesRequest(
            name="bob-isolation/bobs", version="1", files=declared), timeout=10).missing
        assert sorted(missing) == sorted(d.name for d in declared)
        make = lambda dataset: stub.CreateDataset(iter([datasets_pb2.CreateDatasetRequest(  # noqa: E731
            name=dataset, version="1", files=declared)]), timeout=10)
        error = refused(lambda: make("bob-isolation/bobs"))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "are not objects of yours" in error.details()
        for hers in ("alice-isolation/private", "alice-isolation/never-registered"):
            error = refused(lambda hers=hers: make(hers))
            assert error.code() == grpc.StatusCode.PERMISSION_DENIED and "is not yours" in error.details()
        listed = stub.ListDatasets(datasets_pb2.ListDatasetsRequest(), timeout=5).datasets
        assert "bob-isolation/bobs" not in {d.name for d in listed}
        error = refused(lambda: stub.DeclareDatasetFiles(datasets_pb2.DeclareDatasetFilesRequest(
            name="bob-isolation/bobs", version="1", shared=True, files=declared), timeout=10))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED


def test_a_shared_dataset_is_read_by_every_client_and_deleted_by_its_owner_alone(local_cluster, clients, mask_data,
                                                                               tmp_path, capsys):
    path, _ = local_cluster
    directory = mask_data[1]
    assert main(["dataset", "register", "shared-isolation@1", directory, "--shared", "--cluster", str(path)]) == 0
    with clients["carol"].config.channel() as channel:
        stub = datasets_pb2_grpc.DatasetServiceStub(channel)
        found = stub.GetDataset(datasets_pb2.GetDatasetRequest(name="shared-isolation", version="1"), timeout=5)
        assert found.dataset.shared and found.dataset.owner_role == "operator"
        error = refused(lambda: stub.DeleteDataset(datasets_pb2.DeleteDatasetRequest(
            name="shared-isolation", version="1"), timeout=5))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    capsys.readouterr()
    assert main(["dataset", "delete", "shared-isolation@1", "--cluster", str(path)]) == 0
