"""Each running service of a local cluster (its own process) over gRPC: the scorers answer one job
synchronously with the record the core computes, every service serves health, reflection and
/metrics, and the aggregator answers for unknown and unfinished runs."""

from __future__ import annotations

import urllib.request
import uuid

import grpc
import numpy as np
import pandas as pd
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from mfscore.masks.mask_scoring import MaskJob, ZoneOptions, score_mask
from mfscore.sample_data.masks import generate_mask_dataset
from services.common.messages import mask_job_message, mask_record
from services.common.object_store import ObjectStore
from services.wire import jobs_pb2, runs_pb2, services_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

SERVICE_NAMES = {"validator": "Validator", "aggregator": "Aggregator", "mask-scorer": "MaskScorer",
                 "detection-scorer": "DetectionScorer", "provenance-scorer": "ProvenanceScorer"}


def address(config, service: str) -> str:
    port = next(p["grpc_port"] for p in config.processes if p.get("service") == service)
    return f"127.0.0.1:{port}"


@pytest.mark.parametrize("service", sorted(SERVICE_NAMES))
def test_every_service_serves_health_reflection_and_metrics(service, local_cluster):
    _, config = local_cluster
    full_name = services_pb2.DESCRIPTOR.services_by_name[SERVICE_NAMES[service]].full_name
    with grpc.insecure_channel(address(config, service)) as channel:
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
    for name in ("mfscore_jobs_total", "mfscore_s3_request_duration_seconds", "mfscore_runs"):
        assert f"# TYPE {name}" in text


@pytest.fixture(scope="module")
def uploaded_masks(tmp_path_factory, local_cluster):
    """A few probes' reference and system masks, uploaded under a fresh prefix."""
    _, config = local_cluster
    data = generate_mask_dataset(tmp_path_factory.mktemp("masks"), 4)
    store = ObjectStore(config.settings())
    store.ensure_bucket()
    prefix = f"test/{uuid.uuid4().hex}/"
    store.upload_tree(data.directory, prefix)
    return data, prefix


def test_mask_scorer_scores_one_job_as_the_core_does(uploaded_masks, local_cluster):
    _, config = local_cluster
    data, prefix = uploaded_masks
    reference = pd.read_csv(data.directory / data.reference, sep="|", dtype=str).fillna("")
    system = pd.read_csv(data.directory / data.system, sep="|", dtype=str).fillna("")
    pairs = reference.merge(system, on="ProbeFileID")
    pairs = pairs[pairs["ProbeMaskFileName"] != ""]
    names = list(zip(pairs["ProbeMaskFileName"], pairs["OutputProbeMaskFileName"]))
    assert names
    with grpc.insecure_channel(address(config, "mask-scorer")) as channel:
        stub = services_pb2_grpc.MaskScorerStub(channel)
        for (reference_key, system_name), zones in zip((names[0], names[-1]), (ZoneOptions(), ZoneOptions(5, 3, 0, "disc"))):
            system_key = f"system/{system_name}"
            local = MaskJob(str(data.directory / reference_key), str(data.directory / system_key),
                            every_marked_pixel=True, zones=zones)
            job = jobs_pb2.Job(run_id="grpc", trial_id="0/probe/0", role="probe", bucket=config.bucket,
                               input_prefix=prefix, mask=mask_job_message(local, reference_key, system_key))
            reply = stub.ScoreMask(job, timeout=30)
            expected = score_mask(local)
            assert reply.trial_id == "0/probe/0" and reply.mask.status == expected.status
            assert mask_record(reply.mask).to_dict() == expected.to_dict()
            assert np.asarray(reply.mask.positive).sum() > 0
        missing = jobs_pb2.Job(run_id="grpc", trial_id="0/probe/1", role="probe", input_prefix=prefix,
                               mask=mask_job_message(local, reference_key, "system/mask/absent.png"))
        reply = stub.ScoreMask(missing, timeout=30)
        assert reply.mask.status == "unreadable" and "sys" not in reply.mask.message.split()[0]
        assert "system/mask/absent.png" in reply.mask.message and "does not exist" in reply.mask.message


def test_detection_scorer_parses_each_trial(local_cluster):
    _, config = local_cluster
    trials = [jobs_pb2.DetectionTrial(ordinal=i, confidence_score=repr(s), is_target=t, status=st)
              for i, (s, t, st) in enumerate([(0.25, "Y", "Processed"), (-3.5e-7, "N", ""), (1e300, "Y", "OptOutAll")])]
    with grpc.insecure_channel(address(config, "detection-scorer")) as channel:
        stub = services_pb2_grpc.DetectionScorerStub(channel)
        reply = stub.ScoreDetection(jobs_pb2.Job(run_id="grpc", trial_id="0/trial/0", role="trial",
                                                 detection=jobs_pb2.DetectionJob(trials=trials)), timeout=10)
        assert [(r.ordinal, r.score, r.is_target, r.status) for r in reply.detection.records] == [
            (0, 0.25, True, "Processed"), (1, -3.5e-7, False, ""), (2, 1e300, True, "OptOutAll")]
        bad = jobs_pb2.DetectionJob(trials=[jobs_pb2.DetectionTrial(ordinal=0, confidence_score="high")])
        with pytest.raises(grpc.RpcError):
            stub.ScoreDetection(jobs_pb2.Job(run_id="grpc", trial_id="0/trial/0", detection=bad), timeout=10)


def test_validator_and_aggregator_answer_directly(uploaded_masks, local_cluster):
    _, config = local_cluster
    data, prefix = uploaded_masks
    spec = runs_pb2.RunSpec(task="mask", arguments=["--refDir", "x", "-r", data.reference, "-x", data.index,
                                                    "-s", "s.csv", "-oR", "o/x"],
                            inputs=runs_pb2.InputLocation(bucket=config.bucket, prefix=prefix, reference_dir="",
                                                          system_dir="system", system=data.system.split("/")[-1]))
    with grpc.insecure_channel(config.validator_address) as channel:
        report = services_pb2_grpc.ValidatorStub(channel).Validate(services_pb2.ValidateRequest(run=spec), timeout=30)
        assert report.valid, [f.message for f in report.findings]
        spec.inputs.system = "absent.csv"
        report = services_pb2_grpc.ValidatorStub(channel).Validate(services_pb2.ValidateRequest(run=spec), timeout=30)
        assert not report.valid and any("absent.csv" in f.message for f in report.findings)
    with grpc.insecure_channel(config.aggregator_address) as channel:
        stub = services_pb2_grpc.AggregatorStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            stub.GetRun(runs_pb2.RunRef(run_id="no-such-run"), timeout=5)
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as error:
            stub.SubmitRun(runs_pb2.RunSpec(task="mask", output_name="../x"), timeout=5)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert all(s.run_id for s in stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=5).runs)
