"""Each running service of a local cluster (its own process) over gRPC: a scorer pool answers one job
synchronously with the outcome the core's task computes, every service serves health, reflection and
/metrics, the validator accepts and rejects, and the aggregator answers for unknown and bad runs."""

from __future__ import annotations

import dataclasses
import os
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from integration.uploads import mask_options, same_outcome, upload
from mfscore.cli.main import main
from mfscore.codec import encode
from mfscore.masks.mask_record import UNREADABLE
from mfscore.records import Problem, encode_outcome
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.video import sample_video_dataset
from mfscore.services.commands.local_cluster import add_caller
from mfscore.services.commands.report import list_runs
from mfscore.services.commands.submit import localize
from mfscore.services.common.messages import job_key, outcome
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2, services_pb2_grpc
from mfscore.tasks.base import key_of

pytestmark = pytest.mark.integration

SERVICE_NAMES = {"validator": "ValidatorService", "aggregator": "AggregatorService", "mask-scorer": "ScorerService",
                 "provenance-scorer": "ScorerService", "detection-scorer": "ScorerService"}


def address(config, service: str) -> str:
    port = next(p["grpc_port"] for p in config.processes if p.get("service") == service)
    return f"127.0.0.1:{port}"


def test_the_cluster_runs_exactly_these_services(local_cluster):
    _, config = local_cluster
    assert sorted({p["service"] for p in config.processes if p.get("service")}) == sorted(SERVICE_NAMES)


@pytest.mark.parametrize("service", sorted(SERVICE_NAMES))
def test_every_service_serves_health_reflection_and_metrics(service, local_cluster):
    _, config = local_cluster
    full_name = services_pb2.DESCRIPTOR.services_by_name[SERVICE_NAMES[service]].full_name
    assert full_name == f"mfscore.v1.{SERVICE_NAMES[service]}"
    with config.channel(address(config, service)) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", full_name):
            assert health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING
        database = ProtoReflectionDescriptorDatabase(channel)
        assert full_name in database.get_services()
        assert DescriptorPool(database).FindServiceByName(full_name).methods
    metrics_port = next(p["metrics_port"] for p in config.processes if p.get("service") == service)
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    own = {"validator": "mfscore_validations_total", "aggregator": "mfscore_runs"}.get(service, "mfscore_jobs_total")
    for name in ("mfscore_build_info", "grpc_server_handled_total", "mfscore_s3_request_duration_seconds", own):
        assert f"# TYPE {name}" in text


@pytest.fixture(scope="module")
def mask_data(tmp_path_factory):
    return generate_mask_dataset(tmp_path_factory.mktemp("masks"), 4)


def mask_arguments(data, *extra: str) -> list[str]:
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "-s", str(data.directory / data.system), "-oR", "unused/x", *extra]


@pytest.fixture(scope="module")
def uploaded_masks(mask_data, local_cluster):
    """The mask run with default and with other no-score zones (``--rbin 0 --eks 5 --dks 3 --ntdks 1 -k disc``)."""
    _, config = local_cluster
    return [upload(config, "mask", mask_arguments(mask_data, *extra))
            for extra in ([], ["--rbin", "0", "--eks", "5", "--dks", "3", "--ntdks", "1", "-k", "disc"])]


def test_mask_scorer_scores_one_job_as_the_core_does(uploaded_masks, local_cluster):
    _, config = local_cluster
    with config.channel(address(config, "mask-scorer")) as channel:
        stub = services_pb2_grpc.ScorerServiceStub(channel)
        for run in uploaded_masks:
            task = run.task
            scored = [job for job in run.plan.jobs if all(task.blobs(job.work).values())]
            assert len(scored) >= 2
            for planned in (scored[0], scored[-1]):
                message = run.wire(planned)
                assert message.work != encode(planned.work)  # the keys, not the local paths
                reply = stub.Score(services_pb2.ScoreRequest(job=message), timeout=30).record
                expected = task.score(planned.work)
                assert (reply.run_id, reply.task, job_key(reply.key), reply.scorer, reply.error) == (
                    run.run_id, "mask", planned.key, "mask-scorer", "")
                got = outcome(task, reply)
                assert encode_outcome(got) == encode_outcome(expected)
                assert got.status == "scored" and got.positive.sum() > 0


def test_a_missing_object_is_the_cores_does_not_exist_problem(uploaded_masks, local_cluster):
    _, config = local_cluster
    run = uploaded_masks[0]
    task = run.task
    planned = next(job for job in run.plan.jobs if all(task.blobs(job.work).values()))
    absent = os.path.join(run.roots["sys"], "mask", "absent.png")
    with config.channel(address(config, "mask-scorer")) as channel:
        reply = services_pb2_grpc.ScorerServiceStub(channel).Score(
            services_pb2.ScoreRequest(job=run.wire(planned, system="sys/mask/absent.png")), timeout=30).record
    got = outcome(task, reply)
    expected = task.score(dataclasses.replace(planned.work, system_path=absent))
    assert isinstance(got, Problem) and isinstance(expected, Problem) and not reply.error
    assert "sys/mask/absent.png" in got.message and "does not exist" in got.message
    assert got.message.startswith("the system mask file sys/mask/absent.png")  # no worker directory in it
    assert got.counts_as.status == UNREADABLE
    assert same_outcome(got, expected, run.roots)
    assert localize(got.message, run.roots) == expected.message and absent in expected.message


def test_a_job_naming_no_task_is_refused(uploaded_masks, local_cluster):
    _, config = local_cluster
    message = uploaded_masks[0].wire(uploaded_masks[0].plan.jobs[0])
    message.task = "no-such-task"
    with config.channel(address(config, "mask-scorer")) as channel:
        with pytest.raises(grpc.RpcError) as error:
            services_pb2_grpc.ScorerServiceStub(channel).Score(services_pb2.ScoreRequest(job=message), timeout=30)
    assert "no-such-task" in (error.value.details() or "")


def test_the_mask_scorer_pool_scores_a_video_spatial_job_as_the_core_does(tmp_path_factory, local_cluster):
    _, config = local_cluster
    data = sample_video_dataset(tmp_path_factory.mktemp("video"), compression="gzip")
    run = upload(config, "video-spatial", [*data.cli_args(), "--eks", "3", "--dks", "3", "-oR", "unused/x"])
    task = run.task
    assert task.resource == "video"
    said = {"scored": 0, "problem": 0}
    with config.channel(address(config, "mask-scorer")) as channel:
        stub = services_pb2_grpc.ScorerServiceStub(channel)
        for planned in run.plan.jobs:
            reply = stub.Score(services_pb2.ScoreRequest(job=run.wire(planned)), timeout=60).record
            assert (reply.task, job_key(reply.key), reply.error) == ("video-spatial", planned.key, "")
            got, expected = outcome(task, reply), task.score(planned.work)
            assert same_outcome(got, expected, run.roots), planned.work.probe_id
            said["problem" if isinstance(got, Problem) else "scored"] += 1
    assert said["scored"] >= 2


def test_validator_accepts_and_rejects(uploaded_masks, local_cluster):
    _, config = local_cluster
    run = uploaded_masks[0]
    with config.channel(config.validator_address) as channel:
        validator = services_pb2_grpc.ValidatorServiceStub(channel)
        report = validator.Validate(services_pb2.ValidateRequest(run=run.spec()), timeout=30).report
        assert report.valid, [f.message for f in report.findings]
        absent = os.path.join(run.roots["sys"], "absent.csv")
        report = validator.Validate(services_pb2.ValidateRequest(
            run=run.spec(dataclasses.replace(run.options, system=absent))), timeout=30).report
        assert not report.valid and any("absent.csv" in f.message for f in report.findings)
        assert [f.file for f in report.findings if "absent.csv" in f.message] == ["sys/absent.csv"]
        unfetched = run.spec(tables=[])  # no table fetched: each missing one named by its key in the upload
        report = validator.Validate(services_pb2.ValidateRequest(run=unfetched), timeout=30).report
        assert not report.valid
        assert [(f.code, f.file) for f in report.findings] == [
            ("files.missing_system", key_of(run.options.system, run.roots, what="")),
            ("files.missing_index", key_of(os.path.join(run.options.ref_dir, run.options.index), run.roots, what=""))]


def test_aggregator_answers_unknown_and_bad_runs(local_cluster):
    _, config = local_cluster
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for call in (lambda: stub.GetRun(runs_pb2.GetRunRequest(run_id="no-such-run"), timeout=5).run,
                     lambda: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id="no-such-run"), timeout=5)),
                     lambda: stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=runs_pb2.RunSpec(
                         task="mask", run_id="no-such-run")), timeout=5)):
            with pytest.raises(grpc.RpcError) as error:
                call()
            assert error.value.code() == grpc.StatusCode.NOT_FOUND
        created = [stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=5) for _ in range(5)]
        own = [runs_pb2.RunSpec(task="mask", run_id=c.run_id, input_prefix=c.input_prefix, output_name="x",
                                options=mask_options()) for c in created]
        own[0].output_name = "../x"
        own[1].task = "nonesuch"
        own[2].options = b"{" + b" " * (600 << 10) + b"}"
        own[3].input_prefix = "runs/other/inputs/"
        own[4].tables.append("ref/../../other/inputs/x.csv")
        bad_options = [runs_pb2.RunSpec(), runs_pb2.RunSpec(), runs_pb2.RunSpec()]
        for spec, options in zip(bad_options, (b"not json", mask_options().replace(b'"ref_dir":"ref"', b'"ref_dir":5'),
                                               mask_options().replace(b'"precision":', b'"precision":-'))):
            spec.CopyFrom(own[0])
            spec.output_name, spec.options = "x", options
        for spec, said in zip([*own, *bad_options], (
                "is not a file name", "is not a task", "more than the limit", "its own prefix",
                "not a relative path of plain names", "the run's options: ", "(option ref_dir)", "(option precision)")):
            with pytest.raises(grpc.RpcError) as error:
                stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=10)
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and said in error.value.details()
        huge = runs_pb2.RunSpec(task="mask", run_id=created[0].run_id, options=b"{" + b" " * (2 << 20) + b"}")
        with pytest.raises(grpc.RpcError) as error:
            stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=huge), timeout=10)
        assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # gRPC's own limit, before the servicer
        for c in created:  # nothing recorded: each run is still only created
            status = stub.GetRun(runs_pb2.GetRunRequest(run_id=c.run_id), timeout=5).run
            assert status.state == runs_pb2.RUN_STATE_CREATED


def test_a_caller_sees_only_its_own_runs_and_an_operator_sees_all(local_cluster, monkeypatch, capsys):
    path, config = local_cluster
    alice = dataclasses.replace(config, token=add_caller(config, "alice", "client"))
    bob = dataclasses.replace(config, token=add_caller(config, "bob", "client"))
    time.sleep(1.5)  # the services read the tokens file again within a second
    with alice.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        run_id = stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=10).run_id
        spec = runs_pb2.RunSpec(task="mask", run_id=run_id, output_name="x", input_prefix=f"runs/{run_id}/inputs/",
                                submitted_by="mallory", options=mask_options())
        status = stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=10).run
        assert (status.owner, status.owner_role) == ("alice", "client")
        ref = runs_pb2.GetRunRequest(run_id=run_id)
        assert stub.GetRun(ref, timeout=5).run.run_id == run_id
    with bob.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for call in (stub.GetRun,
                     lambda r, timeout: list(stub.WatchRun(runs_pb2.WatchRunRequest(run_id=r.run_id), timeout=timeout)),
                     lambda r, timeout: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id=r.run_id),
                                                              timeout=timeout)),
                     lambda r, timeout: stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=spec), timeout=timeout),
                     lambda r, timeout: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=r.run_id), timeout=timeout),
                     lambda r, timeout: stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=r.run_id), timeout=timeout),
                     lambda r, timeout: stub.GetResults(results_pb2.GetResultsRequest(run_id=r.run_id), timeout=timeout),
                     lambda r, timeout: stub.UploadInputs(iter([runs_pb2.UploadInputsRequest(run_id=r.run_id)]),
                                                          timeout=timeout)):
            with pytest.raises(grpc.RpcError) as error:
                call(ref, timeout=5)
            assert error.value.code() == grpc.StatusCode.NOT_FOUND
        assert run_id not in {s.run_id for s in list_runs(stub)}
        with pytest.raises(grpc.RpcError) as error:
            services_pb2_grpc.ValidatorServiceStub(bob.channel(config.validator_address)).Validate(
                services_pb2.ValidateRequest(run=spec), timeout=5)
        assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with config.channel() as channel:  # the cluster file's token is its operator's
        listed = {s.run_id: s for s in list_runs(services_pb2_grpc.AggregatorServiceStub(channel))}
        assert listed[run_id].owner == "alice"
    for who, sees in ((alice, True), (bob, False)):  # 'mfscore report --list' with the caller's MFSCORE_TOKEN
        monkeypatch.setenv("MFSCORE_TOKEN", who.token)
        capsys.readouterr()
        assert main(["report", "--list", "--cluster", str(path)]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split()[:3] == ["RUN", "TASK", "STATE"]
        assert any(line.split()[0] == run_id and "alice" in line.split() for line in lines[1:]) == sees
    with grpc.insecure_channel(config.aggregator_address) as channel:
        with pytest.raises(grpc.RpcError) as error:
            services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED


def listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket listens on ``port`` with, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found


def test_every_service_listens_on_loopback_only(local_cluster):
    _, config = local_cluster
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, and as an IPv4-mapped IPv6 address
    for process in config.processes:
        for name in ("grpc_port", "metrics_port"):
            if name in process:
                assert listening_addresses(process[name]) and listening_addresses(process[name]) <= loopback, \
                    (process["name"], name)


def test_no_secret_reaches_a_log(local_cluster):
    path, config = local_cluster
    state = Path(config.state_dir)
    secrets = {config.token, *(p.read_text().split()[-1] for p in (state / "secrets").iterdir())}
    secrets = {s for s in secrets if len(s) >= 16}
    assert config.token in secrets
    for log in (state / "logs").iterdir():
        text = log.read_text(errors="replace")
        assert not [s for s in secrets if s in text], log.name
