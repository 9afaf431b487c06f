"""NATS users and permissions against a real nats-server: the attack of issue 17 (anyone reaching NATS publishes a
record for each unscored trial under the id the scorer will use, so JetStream drops the real records as
duplicates) and its relatives (a made-up job, a deleted stream) fail; each role can still do its own work."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import time
import uuid
from pathlib import Path

import grpc
import nats.errors
import pytest
import trustme
from nats.js import api
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError
from integration.nats_reset import delete_streams
from output_files import tree

from mfscore.cli.main import main
from mfscore.masks.mask_scoring import MaskJob
from mfscore.records import JobKey
from mfscore.sample_data.examples import example_arguments
from mfscore.services.aggregator.dead_letters_api import purge_up_to
from mfscore.services.commands import local_cluster as commands
from mfscore.services.common.job_worker import JobWorker
from mfscore.services.common.messages import job_message
from mfscore.services.common.nats_connection import NatsRefused, connect
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.scorer_pool import JobRefused, JobScorer, check_inputs
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import STREAMS, ensure_streams, publish_job, runs_bucket, wait_for_streams
from mfscore.services.common.subjects import (
    DEAD_STREAM,
    ERROR_HEADER,
    JOBS_STREAM,
    MSG_ID_HEADER,
    RESULTS_STREAM,
    RUNS_BUCKET,
    job_filter,
    job_id,
    job_subject,
    result_subject,
)
from mfscore.services.local.servers import start_nats_server
from mfscore.services.wire import jobs_pb2, records_pb2, services_pb2, services_pb2_grpc
from mfscore.tasks import get as get_task
from mfscore.tasks.base import Job

pytestmark = pytest.mark.integration
DENIED_WAIT = 1.0  # a denied JetStream request gets no reply: it times out after this
VIOLATION = "permissions violation for publish to"


def settings_for(nats_server, nats_users, role: str, **fields) -> Settings:
    return Settings(**{"nats_url": nats_server.url, "nats_user": role, "nats_password": nats_users[role], **fields})


@contextlib.asynccontextmanager
async def as_role(nats_server, nats_users, role: str):
    """(nc, js) connected as ``role``; a denied request times out after ``DENIED_WAIT``."""
    nc, _ = await connect(settings_for(nats_server, nats_users, role), name=f"test-{role}")
    try:
        yield nc, nc.jetstream(timeout=DENIED_WAIT)
    finally:
        await nc.close()


async def violation(caplog, subject: str, timeout: float = 5.0) -> bool:
    """Whether the server told a connection it may not publish on ``subject`` (its -ERR reaches the error callback)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(f'{VIOLATION} "{subject.lower()}"' in r.getMessage().lower() for r in caplog.records):
            return True
        await asyncio.sleep(0.05)
    return False


def violations(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if VIOLATION in r.getMessage().lower()]


def mask_job(run_id: str, ordinal: int, task: str = "mask") -> jobs_pb2.Job:
    work = MaskJob(reference_path=f"ref/{ordinal}.png", system_path=None)
    message = job_message(run_id, get_task("mask"), Job(JobKey(0, "probe", ordinal), work), f"runs/{run_id}/inputs/")
    message.task = task
    return message


def record_of(message: jobs_pb2.Job, text: bytes) -> records_pb2.TrialRecord:
    return records_pb2.TrialRecord(run_id=message.run_id, task=message.task, key=message.key, outcome=text,
                                   scorer="mask-scorer")


async def count(js, stream: str) -> int:
    return (await js.stream_info(stream)).state.messages


def test_nobody_connects_without_a_user_or_with_a_wrong_password(nats_server, nats_users):
    async def scenario():
        with pytest.raises(NatsRefused, match="refused a connection without a user .*: Authorization Violation$"):
            await connect(Settings(nats_url=nats_server.url))
        wrong = "w" * 32
        with pytest.raises(NatsRefused, match="refused the user 'scorer': Authorization Violation$") as refused:
            await connect(Settings(nats_url=nats_server.url, nats_user="scorer", nats_password=wrong))
        assert wrong not in str(refused.value) and not any(p in str(refused.value) for p in nats_users.values())
        with pytest.raises(NatsRefused, match="refused the user 'client'"):
            await connect(Settings(nats_url=nats_server.url, nats_user="client", nats_password=nats_users["scorer"]))
        async with as_role(nats_server, nats_users, "scorer") as (nc, _):
            assert nc.is_connected

    started = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - started < 5  # refused at once, not retried for ever


@pytest.mark.parametrize("forger", ["observer", "aggregator"])
def test_a_forged_record_is_refused_and_the_scorers_record_is_kept(forger, jetstream, nats_server, nats_users, caplog):
    caplog.set_level(logging.WARNING, "mfscore.nats")
    run_id = f"run{uuid.uuid4().hex[:8]}"
    message = mask_job(run_id, 1)
    forged, real = record_of(message, b'{"forged":1}'), record_of(message, b'{"real":1}')

    async def scenario():
        async with jetstream() as (_, admin):
            async with as_role(nats_server, nats_users, forger) as (nc, js):
                await nc.publish(result_subject(run_id), forged.SerializeToString(),
                                 headers={MSG_ID_HEADER: job_id(forged)})
                await nc.flush()
                assert await violation(caplog, result_subject(run_id))
                with pytest.raises(nats.errors.TimeoutError):
                    await js.publish(result_subject(run_id), forged.SerializeToString(),
                                     headers={MSG_ID_HEADER: job_id(forged)})
            async with as_role(nats_server, nats_users, "scorer") as (_, js):
                ack = await js.publish(result_subject(run_id), real.SerializeToString(),
                                       headers={MSG_ID_HEADER: job_id(real)})
            assert not ack.duplicate
            assert await count(admin, RESULTS_STREAM) == 1
            kept = await admin.get_msg(RESULTS_STREAM, ack.seq)
            assert records_pb2.TrialRecord.FromString(kept.data).outcome == b'{"real":1}'

    asyncio.run(scenario())


@pytest.mark.parametrize("intruder", ["observer", "scorer"])
def test_only_the_aggregator_publishes_jobs(intruder, jetstream, nats_server, nats_users, caplog):
    caplog.set_level(logging.WARNING, "mfscore.nats")
    made_up = mask_job("victim", 1)
    made_up.input_prefix = "runs/someone-else/inputs/"

    async def scenario():
        async with jetstream() as (_, admin):
            async with as_role(nats_server, nats_users, intruder) as (nc, js):
                await nc.publish(job_subject("mask", "victim"), made_up.SerializeToString())
                await nc.flush()
                assert await violation(caplog, job_subject("mask", "victim"))
                with pytest.raises(nats.errors.TimeoutError):
                    await publish_job(js, "mask", made_up)
            assert await count(admin, JOBS_STREAM) == 0
            async with as_role(nats_server, nats_users, "aggregator") as (_, js):
                ack = await publish_job(js, "mask", mask_job("victim", 2))
            assert not ack.duplicate and await count(admin, JOBS_STREAM) == 1

    asyncio.run(scenario())


@pytest.mark.parametrize("role", ["scorer", "observer"])
def test_only_the_aggregator_changes_the_streams_and_the_run_state(role, jetstream, nats_server, nats_users, caplog):
    caplog.set_level(logging.WARNING, "mfscore.nats")

    async def scenario():
        async with jetstream() as (_, admin):
            bucket = await runs_bucket(admin, Settings())
            await bucket.put("status.r1", b"true state")
            async with as_role(nats_server, nats_users, role) as (nc, js):
                attempts = {
                    "create a stream": lambda: js.add_stream(api.StreamConfig(name="MFSCORE_SHADOW",
                                                                              subjects=["mfscore.x.>"])),
                    "widen the jobs stream": lambda: js.update_stream(api.StreamConfig(name=JOBS_STREAM,
                                                                                        subjects=[">"])),
                    "delete the results stream": lambda: js.delete_stream(RESULTS_STREAM),
                    "purge the results stream": lambda: js.purge_stream(RESULTS_STREAM),
                    "purge the dead letters": lambda: js.purge_stream(DEAD_STREAM),
                    "read a dead letter": lambda: js.get_msg(DEAD_STREAM, seq=1),
                    "delete the runs bucket": lambda: js.delete_key_value(RUNS_BUCKET),
                    "create a bucket": lambda: js.create_key_value(bucket="mfscore_shadow"),
                }
                for what, attempt in attempts.items():
                    with pytest.raises(nats.errors.TimeoutError):
                        await attempt()
                        pytest.fail(f"a {role} could {what}")
                await nc.publish(f"$KV.{RUNS_BUCKET}.status.r1", b"forged state")
                await nc.flush()
                assert await violation(caplog, f"$KV.{RUNS_BUCKET}.status.r1")
            names = {info.config.name for info in await admin.streams_info()}
            assert {JOBS_STREAM, RESULTS_STREAM, f"KV_{RUNS_BUCKET}"} <= names
            assert not {"MFSCORE_SHADOW", "KV_mfscore_shadow"} & names
            assert (await admin.stream_info(JOBS_STREAM)).config.subjects == ["mfscore.jobs.>"]
            assert (await bucket.get("status.r1")).value == b"true state"

    asyncio.run(scenario())


def test_each_role_does_its_own_work_without_a_violation(jetstream, nats_server, nats_users, caplog):
    """The aggregator creates the streams and the bucket, publishes jobs, replays records (enough to need flow
    control) and purges them, reads and purges the dead letters; a scorer waits for the streams, pulls, publishes a
    record and a dead letter, acks; the observer reads stream and consumer information."""
    caplog.set_level(logging.WARNING, "mfscore.nats")
    run_id = f"run{uuid.uuid4().hex[:8]}"
    bulk = 64  # 64 records of 256 KiB: a replay the server paces with flow control

    async def scenario():
        async with jetstream() as (_, admin):
            await delete_streams(admin, [config.name for config in STREAMS], RUNS_BUCKET)
            async with as_role(nats_server, nats_users, "aggregator") as (agg_nc, agg), \
                    as_role(nats_server, nats_users, "scorer") as (_, scorer), \
                    as_role(nats_server, nats_users, "observer") as (_, observer):
                stop = asyncio.Event()
                waiting = asyncio.create_task(wait_for_streams(scorer, stop, poll_seconds=0.1))
                await asyncio.sleep(0.3)
                assert not waiting.done()
                await ensure_streams(agg, Settings())
                assert await asyncio.wait_for(waiting, 5)
                bucket = await runs_bucket(agg, Settings())
                await bucket.put(f"status.{run_id}", b"scoring")
                assert (await bucket.get(f"status.{run_id}")).value == b"scoring"
                assert f"status.{run_id}" in await bucket.keys()
                good, unknown = mask_job(run_id, 1), mask_job(run_id, 2, task="no-such-task")
                for message in (good, unknown):
                    await publish_job(agg, "mask", message)

                async def handle(message):
                    return record_of(message, b'{"scored":1}')

                worker = JobWorker(scorer, kind="mask", service="mask-permissions-test", handle=handle, ack_wait=5,
                                   max_deliver=2, shutdown_grace_seconds=5, fetch_timeout_seconds=0.2)
                running = asyncio.create_task(worker.run(stop))
                deadline = time.monotonic() + 15
                while (await count(admin, RESULTS_STREAM) < 2 or await count(admin, DEAD_STREAM) < 1) \
                        and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                stop.set()
                await asyncio.wait_for(running, 10)
                consumer = await observer.consumer_info(JOBS_STREAM, "mask-scorers")
                assert (consumer.num_pending, consumer.num_ack_pending) == (0, 0)
                assert await count(observer, DEAD_STREAM) == 1
                last = (await agg.stream_info(DEAD_STREAM)).state.last_seq
                letter = await agg.get_msg(DEAD_STREAM, seq=last)  # an operator's ListDeadLetters
                assert jobs_pb2.Job.FromString(letter.data).task == "no-such-task" and letter.headers[ERROR_HEADER]
                assert await purge_up_to(agg_nc, last) == 1        # and PurgeDeadLetters
                assert await count(observer, DEAD_STREAM) == 0
                for _ in range(bulk):
                    await scorer.publish(result_subject(run_id), b"x" * (256 << 10))

                seen = []
                done = asyncio.Event()

                async def on_record(msg):
                    seen.append(msg)
                    if len(seen) == 2 + bulk:
                        done.set()

                sub = await agg.subscribe("mfscore.results.>", stream=RESULTS_STREAM, ordered_consumer=True,
                                          deliver_policy=DeliverPolicy.ALL, cb=on_record)
                await asyncio.wait_for(done.wait(), 30)
                await sub.unsubscribe()
                records = [records_pb2.TrialRecord.FromString(m.data) for m in seen[:2]]
                assert sorted((r.key.ordinal, r.outcome, bool(r.error)) for r in records) == [
                    (1, b'{"scored":1}', False), (2, b"", True)]
                await agg.purge_stream(RESULTS_STREAM, subject=result_subject(run_id))
                assert await count(observer, RESULTS_STREAM) == 0
        assert violations(caplog) == []

    asyncio.run(scenario())


def test_a_scorer_refuses_a_job_reading_outside_its_runs_upload(jetstream, cluster_settings, caplog):
    check_inputs(mask_job("run-a", 1))
    for run_id, prefix in [("run-a", "runs/run-b/inputs/"), ("run-a", ""), ("run-a", "runs/run-a/"),
                           ("run-a", "runs/run-a/inputs/../../run-b/inputs/"), ("a/b", "runs/a/b/inputs/")]:
        message = mask_job("run-a", 1)
        message.run_id, message.input_prefix = run_id, prefix
        with pytest.raises(JobRefused):
            check_inputs(message)
    os.makedirs(cluster_settings.work_dir, exist_ok=True)
    stolen = mask_job("attacker", 1)
    stolen.input_prefix = "runs/victim/inputs/"

    async def scenario():
        async with jetstream() as (_, js):
            await publish_job(js, "mask", stolen)
            scorer = JobScorer(ObjectStore(cluster_settings), cluster_settings.work_dir, "mask-scorer")
            worker = JobWorker(js, kind="mask", service="mask-refusal-test", handle=scorer, ack_wait=5,
                               max_deliver=1, shutdown_grace_seconds=5, fetch_timeout_seconds=0.2)
            stop = asyncio.Event()
            running = asyncio.create_task(worker.run(stop))
            deadline = time.monotonic() + 10
            while await count(js, DEAD_STREAM) < 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.wait_for(running, 10)
            [result] = [await js.get_msg(RESULTS_STREAM, 1)]
            return records_pb2.TrialRecord.FromString(result.data)

    record = asyncio.run(scenario())
    assert record.error == ("failed on attempt 1 of 1: the job's input prefix 'runs/victim/inputs/' is not its "
                            "run's upload (runs/attacker/inputs/)")
    assert cluster_settings.s3_secret_key not in record.error


def test_nats_over_tls_admits_only_a_client_trusting_its_ca(tmp_path, nats_users):
    ca = trustme.CA()
    certificate = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "ca.pem"
    certificate.cert_chain_pems[0].write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))

    async def scenario(server):
        for url in (server.url, server.url.replace("tls://", "nats://")):
            nc, js = await connect(settings_for(server, nats_users, "aggregator", nats_url=url, tls_ca=str(ca_file)))
            try:
                await ensure_streams(js, Settings())
                assert nc.is_connected
            finally:
                await nc.close()
        with pytest.raises(NatsRefused, match="refused the user 'aggregator': .*CERTIFICATE_VERIFY_FAILED"):
            await connect(settings_for(server, nats_users, "aggregator"))
        other = tmp_path / "other-ca.pem"
        trustme.CA().cert_pem.write_to_path(str(other))
        with pytest.raises(NatsRefused, match="CERTIFICATE_VERIFY_FAILED"):
            await connect(settings_for(server, nats_users, "aggregator", tls_ca=str(other)))

    with start_nats_server(tmp_path / "nats", users=nats_users, tls_cert=cert, tls_key=key) as server:
        assert server.url.startswith("tls://")
        asyncio.run(scenario(server))
        with socket.create_connection(("127.0.0.1", server.port), timeout=1) as plain:
            plain.sendall(b"CONNECT {}\r\nPING\r\n")
            with contextlib.suppress(TimeoutError, OSError):
                said = plain.recv(4096)
                assert b"INFO" not in said and b"PONG" not in said


def test_a_local_cluster_gives_each_service_its_own_nats_user_and_clients_none(local_cluster, tmp_path, capsys,
                                                                                 caplog):
    caplog.set_level(logging.WARNING, "mfscore.nats")
    path, config = local_cluster
    state = Path(config.state_dir)
    files = {role: state / "secrets" / f"nats-{role}.password" for role in ("aggregator", "scorer", "observer")}
    users = {role: file.read_text() for role, file in files.items()}
    assert len(set(users.values())) == 3 and all(len(password) >= 32 for password in users.values())
    assert not any(password in path.read_text() for password in users.values())
    for secret in (*files.values(), state / "jetstream" / "nats-server.conf"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    for process in config.processes:
        if "service" in process:
            environ = dict(line.split("=", 1) for line in
                           Path(f"/proc/{process['pid']}/environ").read_text().split("\0") if "=" in line)
            role = commands.NATS_ROLES.get(process["service"], "")
            assert environ.get("MFSCORE_NATS_USER", "") == role
            assert environ.get("MFSCORE_NATS_PASSWORD", "") == (users[role] if role else "")

    async def observe():
        nc, js = await connect(commands.nats_settings(config))
        try:
            deadline = time.monotonic() + 20  # a scorer binds its consumer once the aggregator made the streams
            while True:
                try:
                    consumer = await js.consumer_info(JOBS_STREAM, "mask-scorers")
                    break
                except NotFoundError:
                    assert time.monotonic() < deadline, "the mask scorer never created its consumer"
                    await asyncio.sleep(0.1)
            assert consumer.config.filter_subject == job_filter("mask")
            await nc.publish(result_subject("any"), b"forged")
            await nc.flush()
            assert await violation(caplog, result_subject("any"))
        finally:
            await nc.close()

    asyncio.run(observe())
    scorer = next(p["grpc_port"] for p in config.processes if p.get("service") == "mask-scorer")
    stolen = mask_job("attacker", 1)
    stolen.input_prefix = "runs/victim/inputs/"
    with config.channel(f"127.0.0.1:{scorer}") as channel:
        with pytest.raises(grpc.RpcError) as refused:
            services_pb2_grpc.ScorerServiceStub(channel).Score(services_pb2.ScoreRequest(job=stolen), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == ("the job's input prefix 'runs/victim/inputs/' is not its run's upload "
                                       "(runs/attacker/inputs/)")
    arguments = example_arguments("mask", tmp_path / "data", tmp_path / "out")
    capsys.readouterr()
    assert main(["mask", *arguments]) == 0
    embedded = tree(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "embedded")
    status = main(["submit", "--cluster", str(path), "mask", *arguments])
    assert status == 0, capsys.readouterr().err
    assert tree(tmp_path / "out") == embedded and embedded
    nats_log = next(Path(p["log"]) for p in config.processes if p["name"] == "nats-server").read_text()
    refused = [line for line in nats_log.splitlines() if "Violation" in line]
    assert refused and all('"$G/user:observer"' in line for line in refused)  # no service was refused anything
