"""Who gets past a gRPC server: a known bearer token of a role the method allows, on every method but
health; TLS when a certificate is configured; no request over the size limit reaches a servicer."""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from mfscore.errors import OptionError
from mfscore.services.common import auth
from mfscore.services.common.auth import (
    Caller,
    Callers,
    aio_client_channel,
    digest,
    new_token,
    server_credentials,
    tokens_line,
)
from mfscore.services.common.grpc_server import MAX_REQUEST_BYTES, start_grpc_server, start_service_server
from mfscore.services.common.settings import Settings
from mfscore.services.wire import jobs_pb2, records_pb2, services_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

SCORER = services_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
SERVICE, CLIENT, STRANGER = new_token(), new_token(), new_token()
CALLERS = Callers.of_tokens({SERVICE: Caller("aggregator", "service"), CLIENT: Caller("alice", "client")})
JOB = services_pb2.ScoreRequest(job=jobs_pb2.Job(run_id="r1", task="mask", key=jobs_pb2.JobKey(query=0, role="probe",
                                                                                                 ordinal=1), work=b"{}"))


class CountingScorer(services_pb2_grpc.ScorerServiceServicer):
    """Answers every job, counting the calls that reached it and who made them."""

    def __init__(self):
        self.callers = []

    async def Score(self, request, context):
        self.callers.append(auth.caller())
        return services_pb2.ScoreResponse(record=records_pb2.TrialRecord(run_id=request.job.run_id, key=request.job.key,
                                                                          scorer="counting"))


async def serving(scorer, **options):
    return await start_grpc_server([(services_pb2_grpc.add_ScorerServiceServicer_to_server, scorer, SCORER)], port=0,
                                   host="127.0.0.1", callers=CALLERS, **options)


async def code_of(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call
    return error.value.code(), error.value.details() or ""


def test_every_method_but_health_needs_a_known_token_of_an_allowed_role():
    scorer = CountingScorer()

    async def scenario():
        server, port = await serving(scorer)
        address = f"127.0.0.1:{port}"
        try:
            async with aio_client_channel(address) as anonymous:
                reply = await health_pb2_grpc.HealthStub(anonymous).Check(health_pb2.HealthCheckRequest())
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                code, details = await code_of(services_pb2_grpc.ScorerServiceStub(anonymous).Score(JOB))
                assert code == grpc.StatusCode.UNAUTHENTICATED and "bearer token" in details
            for token, expected in ((STRANGER, grpc.StatusCode.UNAUTHENTICATED),
                                    (CLIENT, grpc.StatusCode.PERMISSION_DENIED)):
                async with aio_client_channel(address, token=token) as channel:
                    code, details = await code_of(services_pb2_grpc.ScorerServiceStub(channel).Score(JOB))
                    assert code == expected and token not in details
            async with aio_client_channel(address, token=SERVICE) as channel:
                reply = await services_pb2_grpc.ScorerServiceStub(channel).Score(JOB)
                assert reply.record.scorer == "counting"
        finally:
            await server.stop(None)

    asyncio.run(scenario())
    assert scorer.callers == [Caller("aggregator", "service")]


def test_reflection_is_closed_to_anonymous_callers():
    async def scenario():
        server, port = await serving(CountingScorer())
        try:
            return await asyncio.to_thread(reflect, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    def reflect(address):
        with grpc.insecure_channel(address) as channel:
            with pytest.raises(grpc.RpcError) as error:
                ProtoReflectionDescriptorDatabase(channel).get_services()
            return error.value.code()

    assert asyncio.run(scenario()) == grpc.StatusCode.UNAUTHENTICATED


def test_a_request_over_the_limit_never_reaches_the_servicer():
    scorer = CountingScorer()

    async def scenario():
        server, port = await serving(scorer)
        try:
            async with aio_client_channel(f"127.0.0.1:{port}", token=SERVICE) as channel:
                oversized = services_pb2.ScoreRequest(job=jobs_pb2.Job(run_id="r1", task="mask",
                                                                       work=b" " * MAX_REQUEST_BYTES))
                code, _ = await code_of(services_pb2_grpc.ScorerServiceStub(channel).Score(oversized))
                assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        finally:
            await server.stop(None)

    asyncio.run(scenario())
    assert scorer.callers == []


def test_tls_when_a_certificate_is_configured(tmp_path):
    ca = trustme.CA()
    certificate = ca.issue_cert("127.0.0.1", "localhost")
    certificate.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    certificate.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    other = trustme.CA()
    other.cert_pem.write_to_path(str(tmp_path / "other-ca.pem"))

    async def scenario():
        credentials = server_credentials(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
        server, port = await serving(CountingScorer(), credentials=credentials)
        address = f"127.0.0.1:{port}"
        try:
            async with aio_client_channel(address, token=SERVICE, tls_ca=str(tmp_path / "ca.pem")) as channel:
                assert (await services_pb2_grpc.ScorerServiceStub(channel).Score(JOB, timeout=10)).record.scorer == \
                    "counting"
            async with aio_client_channel(address, token=SERVICE) as plaintext:
                code, _ = await code_of(services_pb2_grpc.ScorerServiceStub(plaintext).Score(JOB, timeout=5))
                assert code == grpc.StatusCode.UNAVAILABLE
            async with aio_client_channel(address, token=SERVICE, tls_ca=str(tmp_path / "other-ca.pem")) as wrong:
                code, _ = await code_of(services_pb2_grpc.ScorerServiceStub(wrong).Score(JOB, timeout=5))
                assert code == grpc.StatusCode.UNAVAILABLE
        finally:
            await server.stop(None)

    asyncio.run(scenario())
    with pytest.raises(OptionError, match="both MFSCORE_TLS_CERT and MFSCORE_TLS_KEY"):
        server_credentials(str(tmp_path / "cert.pem"), "")


def test_the_tokens_file_is_checked_line_by_line_and_read_again_when_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "tokens"
    path.write_text(f"# callers\n{tokens_line('alice', 'client', CLIENT)}\nbob admin 1234\n")
    with pytest.raises(OptionError) as error:
        Callers.read(str(path))
    assert (error.value.path, error.value.line) == (str(path), 3)
    with pytest.raises(OptionError, match="no callers are configured"):
        Callers.read("")

    path.write_text(tokens_line("alice", "client", CLIENT) + "\n")
    monkeypatch.setattr(auth, "RELOAD_SECONDS", 0.0)
    callers = Callers.watching(str(path))
    assert callers.find(CLIENT) == Caller("alice", "client") and callers.find(SERVICE) is None
    path.write_text(path.read_text() + tokens_line("validator-caller", "service", SERVICE) + "\n")
    assert callers.find(SERVICE) == Caller("validator-caller", "service")
    path.write_text("not a line\n")  # a broken rotation keeps the callers read before
    assert callers.find(CLIENT) == Caller("alice", "client")
    assert callers.find("") is None


def test_a_service_without_callers_does_not_start(tmp_path):
    settings = Settings(grpc_port=0, tokens_file="")
    with pytest.raises(OptionError, match="accepts no anonymous calls"):
        asyncio.run(start_service_server([], settings))
    empty = tmp_path / "tokens"
    empty.write_text("# nobody yet\n")
    with pytest.raises(OptionError, match="accepts no anonymous calls"):
        asyncio.run(start_service_server([], dataclasses.replace(settings, tokens_file=str(empty))))


class AnyToken(Callers):
    """Callers that would take any token at all, the empty one included: what a careless file might say."""

    def __init__(self):
        self.looked_up = []

    def find(self, token):
        self.looked_up.append(token)
        return Caller("anyone", "service")


def test_a_call_without_a_token_or_with_an_empty_one_is_refused_before_any_lookup():
    scorer, callers = CountingScorer(), AnyToken()

    async def scenario():
        server, port = await start_grpc_server([(services_pb2_grpc.add_ScorerServiceServicer_to_server, scorer, SCORER)],
                                               port=0, host="127.0.0.1", callers=callers)
        try:
            async with aio_client_channel(f"127.0.0.1:{port}") as anonymous:
                stub = services_pb2_grpc.ScorerServiceStub(anonymous)
                for metadata in ((), (("authorization", "Bearer "),), (("authorization", "Basic x"),)):
                    code, details = await code_of(stub.Score(JOB, metadata=metadata))
                    assert code == grpc.StatusCode.UNAUTHENTICATED and "bearer token" in details
                assert (await stub.Score(JOB, metadata=(("authorization", f"Bearer {SERVICE}"),))).record.scorer
        finally:
            await server.stop(None)

    asyncio.run(scenario())
    assert callers.looked_up == [SERVICE] and len(scorer.callers) == 1


def test_no_tokens_file_can_admit_the_empty_token(tmp_path, monkeypatch):
    path = tmp_path / "tokens"
    path.write_text(f"{tokens_line('alice', 'client', CLIENT)}\n# anonymous, by mistake\nnobody client {digest('')}\n")
    with pytest.raises(OptionError, match="is the SHA-256 of the empty token") as error:
        Callers.read(str(path))
    assert (error.value.path, error.value.line) == (str(path), 3)
    with pytest.raises(OptionError, match="is the SHA-256 of the empty token"):  # a service refuses to start
        asyncio.run(start_service_server([], Settings(grpc_port=0, tokens_file=str(path))))
    with pytest.raises(OptionError, match="empty token"):
        Callers.of_tokens({"": Caller("nobody", "client"), CLIENT: Caller("alice", "client")})

    path.write_text(tokens_line("alice", "client", CLIENT) + "\n")
    monkeypatch.setattr(auth, "RELOAD_SECONDS", 0.0)
    callers = Callers.watching(str(path))
    path.write_text(f"nobody client {digest('')}\n")  # a reload to it keeps the callers read before
    assert callers.find("") is None and callers.find(CLIENT) == Caller("alice", "client")


def test_a_name_belongs_to_one_role(tmp_path):
    path = tmp_path / "tokens"
    second = new_token()
    path.write_text(f"{tokens_line('alice', 'client', CLIENT)}\n{tokens_line('alice', 'client', second)}\n")
    callers = Callers.read(str(path))  # two tokens for one principal
    assert callers.find(CLIENT) == callers.find(second) == Caller("alice", "client")
    path.write_text(path.read_text() + tokens_line("alice", "operator", STRANGER) + "\n")
    with pytest.raises(OptionError, match="'alice' has the role client on line 1, not operator") as error:
        Callers.read(str(path))
    assert (error.value.path, error.value.line) == (str(path), 3)
    with pytest.raises(OptionError, match="a name belongs to one role"):
        Callers.of_tokens({CLIENT: Caller("alice", "client"), STRANGER: Caller("alice", "operator")})
