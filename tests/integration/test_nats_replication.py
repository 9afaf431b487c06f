"""Replicated JetStream on a 3-node NATS cluster on loopback (``servers.start_nats_cluster``).

The fast tests check that ``MFSCORE_STREAM_*`` reach NATS: the streams and the run bucket get the replicas,
storage and limits asked for, ``ensure_streams`` is idempotent and brings an existing R1 stream to R3 with its
messages, NATS's refusals come back as one sentence, and the scorers' durable consumers exist once the aggregator
has run it; a server that dials a node's route port without the cluster's route password is refused. The slow
one (``faults``) kills a NATS node with SIGKILL in the middle of a run and asks for the embedded command's files
all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from integration.equivalence import tree, without_created
from integration.nats_reset import delete_streams
from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.common.nats_connection import connect, nats_servers, nats_tls, public_url
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import STREAMS, StreamRefused, ensure_streams, runs_bucket
from mfscore.services.common.subjects import (
    JOBS_STREAM,
    RESULTS_STREAM,
    RUNS_BUCKET,
    RUNS_STREAM,
    job_filter,
    job_kinds,
    result_subject,
)
from mfscore.services.local.servers import find_executable, free_port, free_ports, start_nats_cluster
from mfscore.services.wire import runs_pb2

pytestmark = pytest.mark.integration
NODES = 3


@pytest.fixture(scope="module")
def nats_cluster(tmp_path_factory, nats_users):
    cluster = start_nats_cluster(tmp_path_factory.mktemp("nats-cluster"), NODES, users=nats_users)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def as_role(nats_cluster, nats_users):
    """``async with as_role(role, **settings) as js``: a connection to every node's URL as ``role``, after the
    streams and the bucket of an earlier test are deleted."""

    @contextlib.asynccontextmanager
    async def session(role: str, **fields):
        settings = Settings(nats_url=nats_cluster.url, nats_user=role, nats_password=nats_users[role], **fields)
        nc, js = await connect(settings, name=f"replication-test-{role}")
        try:
            yield js
        finally:
            await nc.close()

    async def reset():
        async with session("admin") as js:
            await delete_streams(js, [config.name for config in STREAMS], RUNS_BUCKET)

    asyncio.run(reset())
    return session


async def replicated(js, stream: str, timeout: float = 10.0):
    """The stream's information once its leader sees every other replica current."""
    deadline = time.monotonic() + timeout
    while True:
        info = await js.stream_info(stream)
        peers = info.cluster.replicas or []
        if info.cluster.leader and len(peers) == info.config.num_replicas - 1 and all(p.current for p in peers):
            return info
        assert time.monotonic() < deadline, f"{stream} has {len(peers) + 1} of {info.config.num_replicas} replicas"
        await asyncio.sleep(0.1)


async def consumer_replicated(js, consumer: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while len((info := await js.consumer_info(JOBS_STREAM, consumer)).cluster.replicas or []) != NODES - 1:
        assert time.monotonic() < deadline, f"{consumer} has {len(info.cluster.replicas or []) + 1} replicas"
        await asyncio.sleep(0.2)
    return info


async def placed_at_once(js) -> None:
    """Every stream and the bucket has its leader and current replicas, asked once: ``ensure_streams`` and
    ``runs_bucket`` return only then (on a cluster NATS answers a stream's creation before the stream takes
    messages, and a put at once could find no stream: "no responders")."""
    for stream in (*(config.name for config in STREAMS), RUNS_STREAM):
        info = await js.stream_info(stream)
        peers = info.cluster.replicas or []
        assert info.cluster.leader and len(peers) == info.config.num_replicas - 1, stream
        assert all(p.current for p in peers), stream


def replicated_settings(**fields) -> dict:
    return {"stream_replicas": NODES, **fields}


def test_streams_and_bucket_take_replicas_storage_and_limits(as_role):
    async def scenario():
        limits = replicated_settings(stream_storage="memory", stream_max_age_seconds=60, stream_max_bytes=64 << 20)
        async with as_role("aggregator", **limits) as js:
            await ensure_streams(js, Settings(**limits))
            await runs_bucket(js, Settings(**limits))
        async with as_role("observer") as js:
            for config in STREAMS:
                info = await replicated(js, config.name)
                assert (info.config.num_replicas, info.config.storage) == (NODES, "memory")
                assert (info.config.max_age, info.config.max_bytes) == (60, 64 << 20)
                assert info.config.duplicate_window == 60  # at most the age limit, as NATS requires
                assert len({info.cluster.leader, *(p.name for p in info.cluster.replicas)}) == NODES
            bucket = await replicated(js, RUNS_STREAM)
            assert (bucket.config.num_replicas, bucket.config.storage) == (NODES, "memory")
            assert (bucket.config.max_age, bucket.config.max_bytes) in ((0, -1), (None, -1)), \
                "the run state has no age or size limit: retention removes it"

    asyncio.run(scenario())


def test_file_storage_without_limits_is_the_default(as_role):
    async def scenario():
        async with as_role("aggregator") as js:
            await ensure_streams(js, Settings())
            await runs_bucket(js, Settings())
        async with as_role("observer") as js:
            for stream in (*(config.name for config in STREAMS), RUNS_STREAM):
                info = await js.stream_info(stream)
                assert (info.config.num_replicas, info.config.storage) == (1, "file"), stream
                assert info.config.max_age in (0, None) and info.config.max_bytes == -1, stream

    asyncio.run(scenario())


def test_ensure_streams_is_idempotent_and_brings_r3_to_r1_with_its_messages(as_role):
    """The short one of the next test (NATS takes over ten seconds to bring a stream from R1 to R3; from R3 to R1, one
    or two): an existing stream's and the bucket's replicas change, their messages and values kept."""
    async def scenario():
        async with as_role("aggregator", **replicated_settings()) as js:
            await ensure_streams(js, Settings(**replicated_settings()))
            kv = await runs_bucket(js, Settings(**replicated_settings()))
            await placed_at_once(js)
            await kv.put("status.r1", b"scoring")
        async with as_role("scorer") as js:
            for i in range(5):
                await js.publish(result_subject("r1"), b"record %d" % i, headers={"Nats-Msg-Id": f"r1/{i}"})
        async with as_role("aggregator") as js:
            for _ in range(2):
                await ensure_streams(js, Settings())
                kv = await runs_bucket(js, Settings())
            assert (await kv.get("status.r1")).value == b"scoring"
        async with as_role("observer") as js:
            for stream in (*(config.name for config in STREAMS), RUNS_STREAM):
                assert (await js.stream_info(stream)).config.num_replicas == 1
            assert (await js.stream_info(RESULTS_STREAM)).state.messages == 5
            assert (await js.stream_info(RUNS_STREAM)).state.messages == 1

    asyncio.run(scenario())


def test_ensure_streams_from_several_aggregators_at_once(as_role):
    """Three processes set the R3 streams up at once, twice over (two aggregators starting, then restarting): each
    returns, and a stream already as asked is left alone (NATS's update of an R3 stream under way timed out)."""
    async def scenario():
        settings = Settings(**replicated_settings())
        async with as_role("aggregator", **replicated_settings()) as a, \
                as_role("aggregator", **replicated_settings()) as b, \
                as_role("aggregator", **replicated_settings()) as c:
            for _ in range(2):
                await asyncio.gather(*(ensure_streams(js, settings) for js in (a, b, c)))
                await asyncio.gather(*(runs_bucket(js, settings) for js in (a, b, c)))
            updates = []
            a.update_stream = lambda config: updates.append(config.name)
            await ensure_streams(a, settings)
            assert updates == []
        async with as_role("observer") as js:
            await placed_at_once(js)

    asyncio.run(scenario())


@pytest.mark.slow  # NATS takes over ten seconds to bring the streams from R1 to R3
def test_ensure_streams_is_idempotent_and_brings_r1_to_r3_with_its_messages(as_role):
    async def scenario():
        async with as_role("aggregator") as js:
            await ensure_streams(js, Settings())
            kv = await runs_bucket(js, Settings())
            await placed_at_once(js)
            await kv.put("status.r1", b"scoring")
        async with as_role("scorer") as js:
            for i in range(5):
                await js.publish(result_subject("r1"), b"record %d" % i, headers={"Nats-Msg-Id": f"r1/{i}"})
        async with as_role("aggregator", **replicated_settings()) as js:
            for _ in range(2):
                await ensure_streams(js, Settings(**replicated_settings()))
                kv = await runs_bucket(js, Settings(**replicated_settings()))
            assert (await kv.get("status.r1")).value == b"scoring"
        async with as_role("observer") as js:
            for stream in (*(config.name for config in STREAMS), RUNS_STREAM):
                assert (await replicated(js, stream)).config.num_replicas == NODES
            assert (await js.stream_info(RESULTS_STREAM)).state.messages == 5
            assert (await js.stream_info(RUNS_STREAM)).state.messages == 1
            for kind in job_kinds():  # the scorers' consumers follow their stream, a few seconds later
                await consumer_replicated(js, f"{kind}-scorers")
        async with as_role("aggregator", **replicated_settings()) as js:  # and back, as NATS allows
            await ensure_streams(js, Settings())
            await runs_bucket(js, Settings())
        async with as_role("observer") as js:
            for stream in (*(config.name for config in STREAMS), RUNS_STREAM):
                assert (await js.stream_info(stream)).config.num_replicas == 1
            assert (await js.stream_info(RESULTS_STREAM)).state.messages == 5

    asyncio.run(scenario())


def test_what_nats_refuses_is_said_in_one_sentence(as_role):
    async def scenario():
        async with as_role("aggregator") as js:
            await ensure_streams(js, Settings(**replicated_settings()))
            await runs_bucket(js, Settings(**replicated_settings()))
            memory = Settings(**replicated_settings(stream_storage="memory"))
            with pytest.raises(StreamRefused, match=r"^the stream MFSCORE_JOBS is kept in file storage and NATS "
                                                    r"cannot change a stream's storage: set "
                                                    r"MFSCORE_STREAM_STORAGE=file, or delete it"):
                await ensure_streams(js, memory)
            with pytest.raises(StreamRefused, match="the bucket mfscore_runs is kept in file storage"):
                await runs_bucket(js, memory)
            with pytest.raises(StreamRefused, match=r"NATS refused the stream MFSCORE_JOBS with 5 replicas "
                                                    r"\(MFSCORE_STREAM_REPLICAS\) in file storage: no suitable peers"):
                await ensure_streams(js, Settings(stream_replicas=5))
        async with as_role("observer") as js:
            info = await js.stream_info(JOBS_STREAM)
            assert (info.config.num_replicas, info.config.storage) == (NODES, "file")

    asyncio.run(scenario())


def test_the_aggregator_creates_the_scorers_consumers_replicated(as_role):
    """What KEDA's scaler reads exists before any scorer starts, with the scorers' own configuration."""
    async def scenario():
        settings = Settings(ack_wait_seconds=45, **replicated_settings())
        async with as_role("aggregator", **replicated_settings()) as js:
            await ensure_streams(js, settings)
        async with as_role("observer") as js:
            first = {}
            for kind in job_kinds():
                info = await js.consumer_info(JOBS_STREAM, f"{kind}-scorers")
                assert (info.config.durable_name, info.config.filter_subject) == (f"{kind}-scorers", job_filter(kind))
                assert (info.config.ack_wait, info.config.max_deliver) == (45, -1)
                assert len(info.cluster.replicas or []) == NODES - 1  # as many replicas as its stream
                first[kind] = info.created
        async with as_role("aggregator", **replicated_settings()) as js:
            await ensure_streams(js, settings)
        async with as_role("observer") as js:
            for kind in job_kinds():
                assert (await js.consumer_info(JOBS_STREAM, f"{kind}-scorers")).created == first[kind]

    asyncio.run(scenario())


def test_nats_url_may_list_several_servers(nats_cluster, nats_users):
    dead = f"nats://127.0.0.1:{free_port()}"
    urls = f" {dead}, {nats_cluster.url} ,"
    assert nats_servers(urls) == [dead, *nats_cluster.url.split(",")]
    assert public_url("nats://u:p@a:1,nats://v:q@b:2") == "nats://a:1,nats://b:2"
    assert nats_tls(Settings(nats_url="nats://a:1,tls://b:2")) is not None
    assert nats_tls(Settings(nats_url="nats://a:1,nats://b:2")) is None

    async def scenario():
        for _ in range(3):  # the client picks servers at random: the dead one is skipped whichever comes first
            nc, js = await connect(Settings(nats_url=urls, nats_user="observer", nats_password=nats_users["observer"]))
            try:
                assert nc.connected_url.port in {int(u.rsplit(":", 1)[1]) for u in nats_cluster.url.split(",")}
                await js.account_info()
            finally:
                await nc.close()

    asyncio.run(scenario())


def _routes(monitor_port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{monitor_port}/routez", timeout=5) as answer:
        return {route["remote_name"] for route in json.load(answer)["routes"]}


@pytest.mark.parametrize("credentials", ["", "route:wrong-password-0123456789@"], ids=["none", "wrong"])
def test_a_server_without_the_route_password_does_not_join(nats_cluster, tmp_path, credentials):
    """Routes carry every message of the cluster: a nats-server dialling a node's route port without the cluster's
    route password (or with another) is refused, and the nodes' routes stay among themselves."""
    assert _routes(nats_cluster.monitor_ports[0]), "the nodes route to each other"
    client, route, monitor = free_ports(3)
    config = tmp_path / "rogue.conf"
    config.write_text(json.dumps({"cluster": {"name": "rogue", "listen": f"127.0.0.1:{route}", "routes": [
        f"nats://{credentials}127.0.0.1:{port}" for port in nats_cluster.route_ports]}}))
    log = tmp_path / "rogue.log"
    with open(log, "wb") as out:
        rogue = subprocess.Popen([find_executable("nats-server"), "-c", str(config), "-a", "127.0.0.1", "-p",
                                  str(client), "-m", str(monitor), "-n", "rogue"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while "Authorization Violation" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "Authorization Violation" in log.read_text(), log.read_text()[-2000:]
        assert _routes(monitor) == set()
        for port in nats_cluster.monitor_ports:
            assert "rogue" not in _routes(port)
    finally:
        rogue.terminate()
        rogue.wait(10)


@pytest.fixture
def replicated_cluster(tmp_path):
    """A local cluster whose NATS is three nodes (``local-cluster up --nats-nodes 3``); always stopped."""
    from mfscore.services.commands import local_cluster as commands

    path = tmp_path / "cluster" / "cluster.json"
    config = commands.up(path, nats_nodes=NODES)
    try:
        yield path, config
    finally:
        commands.down(path)


def leader_of(config, stream: str) -> str:
    """The server name of the node leading ``stream`` (servers.start_nats_cluster names them ``<cluster>-<i>``)."""
    from mfscore.services.commands import local_cluster as commands

    async def ask():
        nc, js = await connect(commands.nats_settings(config, "observer"))
        try:
            return (await js.stream_info(stream)).cluster.leader
        finally:
            await nc.close()
    return asyncio.run(ask())


def submitted_run(path: Path, config, arguments: list[str], out_dir: Path, kill_leader_of: str | None = None):
    """``mfscore submit`` a run; with ``kill_leader_of``, SIGKILL the NATS node leading that stream once the run
    has records in but not all. Returns (stdout, stderr, seconds from the run planned to submit's exit, the run
    as seen at the kill or None, the node killed)."""
    from integration.test_outages import start_submit, the_run, wait_for

    submit, stdout, stderr = start_submit(path, arguments, out_dir)
    killed_at, killed = None, None
    try:
        planned = wait_for(lambda: the_run(config, runs_pb2.RUN_STATE_SCORING), "the run to be planned", 300, 0.05)
        started = time.monotonic()
        if kill_leader_of:
            killed_at = wait_for(lambda: next((r for r in [the_run(config, runs_pb2.RUN_STATE_SCORING)]
                                               if r and r.trials_received > 0), None), "the first records", 300, 0.05)
            killed = leader_of(config, kill_leader_of)
            nodes = [p for p in config.processes if p["name"] == "nats-server"]
            os.kill(nodes[int(killed.rsplit("-", 1)[1])]["pid"], signal.SIGKILL)
        assert submit.wait(timeout=600) == 0, stderr.read_text()
        seconds = time.monotonic() - started
    finally:
        if submit.poll() is None:
            submit.kill()
    assert planned.trials_planned > 0
    return stdout.read_text(), stderr.read_text(), seconds, killed_at, killed


@pytest.mark.faults
def test_a_run_survives_the_loss_of_a_nats_node(tmp_path, capsys, replicated_cluster):
    """R3 streams and run state on three NATS nodes, every service given all three URLs: one node killed with
    SIGKILL in the middle of a run, and the run ends with the embedded command's files and words."""
    from integration.test_outages import embedded, figures, get_run, mask_arguments

    path, config = replicated_cluster
    assert len(nats_servers(config.nats_url)) == NODES
    for stream in (JOBS_STREAM, RESULTS_STREAM, RUNS_STREAM):
        assert leader_of(config, stream)
    data = generate_mask_dataset(tmp_path / "data", 120)
    arguments = mask_arguments(data)
    out, err = embedded(tmp_path, arguments, capsys)
    runs_dirs = {"calm": tmp_path / "calm", "killed": tmp_path / "killed"}
    calm = submitted_run(path, config, arguments, runs_dirs["calm"])
    killed = submitted_run(path, config, arguments, runs_dirs["killed"], kill_leader_of=JOBS_STREAM)
    for (stdout, stderr, *_), out_dir in zip((calm, killed), runs_dirs.values()):
        assert tree(out_dir) == tree(tmp_path / "embedded") and tree(out_dir)
        assert stdout.replace(str(out_dir), str(tmp_path / "embedded")) == out
        assert without_created(stderr) == err
    at_kill = killed[3]
    assert 0 < at_kill.trials_received < at_kill.trials_planned, "the node was killed mid-run"
    assert get_run(config, at_kill.run_id).state == runs_pb2.RUN_STATE_DONE
    figures("a NATS node killed mid-run", trials_planned=at_kill.trials_planned,
            trials_received_at_kill=at_kill.trials_received, node_killed=killed[4],
            seconds_planned_to_exit_without_kill=calm[2], seconds_planned_to_exit_with_kill=killed[2])
