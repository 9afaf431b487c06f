"""Two aggregators over one real nats-server: one holds the lease, the other stands by, following the bucket; a
deposed leader's writes are refused by NATS itself (services/aggregator/lease.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import grpc
import pytest
from nats.js.errors import NoKeysError

from mfscore.services.aggregator.api import FOLLOWING
from mfscore.services.aggregator.lease import KEY, STANDBY, Deposed, Fenced, Lease
from mfscore.services.aggregator.run import Run, State, now
from mfscore.services.aggregator.service import Aggregator, track_leader_health
from mfscore.services.aggregator.state import RunBook, status_key
from mfscore.services.commands.local_cluster import health
from mfscore.services.common.auth import Callers, Caller, client_channel
from mfscore.services.common.grpc_server import start_grpc_server, stop_grpc_server
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.streams import bucket_keys
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc, runs_pb2, services_pb2_grpc
from mfscore.tasks.base import Plan

pytestmark = pytest.mark.integration
LEASE = 1.0  # seconds: short, so a takeover takes about a second
OPERATOR = Caller("op", "operator")
NAMES = ("", "mfscore.v1.AggregatorService", "mfscore.v1.DatasetService")


class Frozen:
    """A clock that stands still: a leader paused right after its lease check, its own time not moving."""

    def __init__(self):
        self.at = time.monotonic()

    def __call__(self) -> float:
        return self.at


@contextlib.asynccontextmanager
async def bucket(jetstream):
    """A key-value bucket of the test's own, with its JetStream context."""
    async with jetstream() as (nc, js):
        name = f"test_lease_{uuid.uuid4().hex[:12]}"
        kv = await js.create_key_value(bucket=name, history=1)
        try:
            yield nc, js, kv, name
        finally:
            await js.delete_key_value(name)


def aggregator(settings, js, kv, name, lease, nc) -> Aggregator:
    return Aggregator(settings, ObjectStore(settings), js, Fenced(kv, js, name, lease), None, nc=nc, lease=lease)


def new_run(run_id: str) -> tuple[Run, runs_pb2.RunSpec, runs_pb2.RunStatus]:
    spec = runs_pb2.RunSpec(run_id=run_id, input_prefix=f"runs/{run_id}/inputs/")
    status = runs_pb2.RunStatus(run_id=run_id, state=State.RUN_STATE_CREATED, submitted_at=now(), created_at=now(),
                                owner=OPERATOR.name, owner_role=OPERATOR.role)
    return Run(spec, status), spec, status


async def moved(book: RunBook, run: Run, *moves) -> None:
    """Make each of ``moves`` (a transition of ``Run``) and record it, as the runner does; a run planned holds a plan
    of no job, ready at once."""
    for move in moves:
        if move is Run.planned:
            run.hold_plan(None, Plan(options=None, jobs=[]))
        assert move(run)
        await book.save(run)


async def submitted(book: RunBook, run: Run) -> None:
    await book.record(run, run.spec, run.submitted(run.spec))


async def eventually(predicate, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_lease_is_taken_once_and_a_second_contender_stands_by(jetstream):
    async def scenario():
        async with bucket(jetstream) as (_, _, kv, _):
            first, second = Lease(kv, LEASE), Lease(kv, LEASE)
            taken = (await first.take(), await second.take())
            renewing = asyncio.create_task(first.keep())
            waiting = asyncio.create_task(second.wait_to_lead())
            await asyncio.sleep(3 * LEASE)  # renewed all along: the standby never takes over
            held = (first.leading(), second.leading(), waiting.done())
            renewing.cancel()
            started = time.monotonic()
            await asyncio.wait_for(waiting, 5 * LEASE)  # renewals stopped: it takes over after a lease
            return taken, held, time.monotonic() - started, second.leading(), first.leading()

    taken, held, took, second_leads, first_leads = asyncio.run(scenario())
    assert taken == (True, False)
    assert held == (True, False, False)
    assert LEASE * 0.5 <= took <= LEASE + 1.0
    assert second_leads and not first_leads


def test_a_deposed_leaders_write_is_refused_by_nats_and_the_bucket_keeps_the_new_leaders(jetstream,
                                                                                          cluster_settings):
    async def scenario():
        async with bucket(jetstream) as (nc, js, kv, name):
            clock = Frozen()
            old_lease, new_lease = Lease(kv, LEASE, clock=clock), Lease(kv, LEASE)
            assert await old_lease.take()
            old = aggregator(cluster_settings, js, kv, name, old_lease, nc)
            entry, spec, status = new_run("r1")
            await old.book.record(entry, spec, status)
            await submitted(old.book, entry)
            await moved(old.book, entry, Run.planned)
            # The old leader's renewals stop (a pause) while its own clock says its lease is fresh.
            await asyncio.wait_for(new_lease.wait_to_lead(), 5 * LEASE)
            new = aggregator(cluster_settings, js, kv, name, new_lease, nc)
            # r1 is reclaimed, not resumed: planning it again would fail here (nothing in S3) and write its status
            # between the two reads below (a race lost every time once the modules' bytecode was cached)
            new.runner.resume = lambda entry: None
            await new.restore()  # reclaims r1: its revisions move on
            await moved(new.book, new.runs["r1"], Run.planned, Run.ready)
            before = await kv.get(status_key("r1"))
            assert old_lease.leading()  # by its clock: only NATS can refuse it now
            with pytest.raises(Deposed):
                await moved(old.book, entry, lambda run: run.end("deposed"))
            after = await kv.get(status_key("r1"))
            return before, after, old_lease.deposed.is_set()

    before, after, deposed = asyncio.run(scenario())
    assert (after.revision, after.value) == (before.revision, before.value)
    assert runs_pb2.RunStatus.FromString(after.value).state == State.RUN_STATE_REPORTING
    assert deposed


def test_a_renewal_that_landed_though_its_answer_was_lost_does_not_depose_its_holder(jetstream):
    """NATS going away can lose the answer to a renewal that was applied: the key moved on with this process's own
    name in it. The next renewal's compare-and-swap fails, but the holder reads the key, finds itself, and leads on
    (a lone aggregator must not step down after an outage longer than its lease)."""
    async def scenario():
        async with bucket(jetstream) as (_, _, kv, _):
            lease = Lease(kv, LEASE)
            assert await lease.take()
            landed = await kv.update(KEY, lease.holder, last=lease.revision)  # the renewal whose answer was lost
            renewing = asyncio.create_task(lease.keep())
            await asyncio.sleep(2 * LEASE)
            renewing.cancel()
            return lease.deposed.is_set(), lease.leading(), lease.revision, landed, (await kv.get(KEY)).revision

    deposed, leads, revision, landed, now = asyncio.run(scenario())
    assert not deposed and leads
    assert revision == now > landed  # it renewed from the revision that landed


def test_a_renewal_that_finds_the_lease_taken_deposes_its_holder(jetstream):
    async def scenario():
        async with bucket(jetstream) as (_, _, kv, _):
            old, new = Lease(kv, LEASE), Lease(kv, LEASE)
            assert await old.take()
            await asyncio.wait_for(new.wait_to_lead(), 5 * LEASE)  # old never renewed
            await asyncio.wait_for(old.keep(), 5 * LEASE)  # its first renewal's compare-and-swap fails
            return old.deposed.is_set(), old.leading(), new.leading(), (await kv.get(KEY)).revision, new.revision

    deposed, old_leads, new_leads, revision, new_revision = asyncio.run(scenario())
    assert deposed and not old_leads and new_leads
    assert revision == new_revision  # the key is as the new leader left it


def test_a_standby_follows_the_bucket_serves_reads_and_refuses_writes(jetstream, cluster_settings):
    token = "t" * 32

    async def scenario():
        async with bucket(jetstream) as (nc, js, kv, name):
            leader_lease, standby_lease = Lease(kv, LEASE), Lease(kv, LEASE)
            assert await leader_lease.take() and not await standby_lease.take()
            renewing = asyncio.create_task(leader_lease.keep())
            leader = aggregator(cluster_settings, js, kv, name, leader_lease, nc)
            standby = aggregator(cluster_settings, js, kv, name, standby_lease, nc)
            following = asyncio.create_task(standby.mirror_bucket(kv))
            await asyncio.to_thread(leader.datasets.store.ensure_bucket)

            entry, spec, status = new_run("r2")
            await leader.book.record(entry, spec, status)
            await eventually(lambda: "r2" in standby.runs, "the standby to see the new run")
            seen = standby.runs["r2"]
            await submitted(leader.book, entry)
            await moved(leader.book, entry, Run.planned)
            await eventually(lambda: seen.status.state == State.RUN_STATE_SCORING, "the standby to see SCORING")
            same_entry = standby.runs["r2"] is seen  # changed in place: its watchers keep watching

            dataset = datasets_pb2.Dataset(name="d", version="1", owner="op", owner_role="operator")
            await leader.datasets.add(dataset, [])
            await eventually(lambda: "d@1" in standby.datasets.datasets, "the standby to see the dataset")

            server, port = await start_grpc_server(
                [(services_pb2_grpc.add_AggregatorServiceServicer_to_server, standby.api,
                  "mfscore.v1.AggregatorService")], port=0, callers=Callers.of_tokens({token: OPERATOR}))
            try:
                def calls():
                    with client_channel(f"127.0.0.1:{port}", token=token) as channel:
                        stub = services_pb2_grpc.AggregatorServiceStub(channel)
                        try:
                            stub.GetRun(runs_pb2.GetRunRequest(run_id="r2"), timeout=5)
                            in_progress = None
                        except grpc.RpcError as error:
                            in_progress = (error.code(), error.details())
                        try:
                            stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=5)
                            listed = None
                        except grpc.RpcError as error:
                            listed = error.code()
                        try:
                            stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=5)
                            refused = None
                        except grpc.RpcError as error:
                            refused = (error.code(), error.details())
                        try:
                            stub.CancelRun(runs_pb2.CancelRunRequest(run_id="r2"), timeout=5)
                            cancel_refused = None
                        except grpc.RpcError as error:
                            cancel_refused = error.code()
                        return in_progress, listed, refused, cancel_refused

                def ended():
                    with client_channel(f"127.0.0.1:{port}", token=token) as channel:
                        return services_pb2_grpc.AggregatorServiceStub(channel).GetRun(
                            runs_pb2.GetRunRequest(run_id="r2"), timeout=5).run

                in_progress, listed, refused, cancel_refused = await asyncio.to_thread(calls)
                stored = runs_pb2.RunStatus.FromString((await kv.get(status_key("r2"))).value)
                await moved(leader.book, entry, Run.ready, Run.done)
                await eventually(lambda: seen.status.state == State.RUN_STATE_DONE, "the standby to see DONE")
                read = await asyncio.to_thread(ended)
            finally:
                await stop_grpc_server(server, grace=0)
            following.cancel()
            renewing.cancel()
            return same_entry, in_progress, listed, read, refused, cancel_refused, stored, set(standby.runs)

    same_entry, in_progress, listed, read, refused, cancel_refused, stored, runs = asyncio.run(scenario())
    assert same_entry
    assert in_progress == (grpc.StatusCode.UNAVAILABLE, FOLLOWING)  # issue 41 (11): its progress would be stale
    assert listed == grpc.StatusCode.UNAVAILABLE
    assert read.run_id == "r2" and read.state == State.RUN_STATE_DONE  # an ended run: the bucket holds it whole
    assert refused == (grpc.StatusCode.UNAVAILABLE, STANDBY)
    assert cancel_refused == grpc.StatusCode.UNAVAILABLE
    assert stored.state == State.RUN_STATE_SCORING  # the standby's refusal changed nothing
    assert runs == {"r2"}


async def health_settles(port: int, expected: tuple[str, ...], timeout: float = 10.0) -> tuple[str, ...]:
    """The server's health for ``NAMES`` (Health.Check of each), polled until it is ``expected`` or ``timeout``
    s have passed; the last answers."""
    deadline = time.monotonic() + timeout
    while True:
        seen = tuple([await asyncio.to_thread(health, f"127.0.0.1:{port}", 2.0, "", name) for name in NAMES])
        if seen == expected or time.monotonic() > deadline:
            return seen
        await asyncio.sleep(0.1)


def test_a_standby_is_alive_and_only_the_leader_serves_the_aggregator_service(jetstream, cluster_settings):
    """Kubernetes probes the whole server (""), SERVING on a standby too; clients pick the leader by its
    AggregatorService, SERVING on the leader alone. Without NATS the whole server is NOT_SERVING."""
    serving, not_serving = "SERVING", "NOT_SERVING"

    async def scenario():
        async with bucket(jetstream) as (nc, js, kv, name):
            first, second = Lease(kv, LEASE), Lease(kv, LEASE)
            assert await first.take() and not await second.take()
            renewing = asyncio.create_task(first.keep())
            ports, background, servers, connections = [], [], [], []
            for lease in (first, second):
                own, _ = await connect(cluster_settings, name="mfscore-tests-health")  # what health sees of NATS
                connections.append(own)
                agg = aggregator(cluster_settings, js, kv, name, lease, nc)
                server, port = await start_grpc_server(
                    [(services_pb2_grpc.add_AggregatorServiceServicer_to_server, agg.api, NAMES[1]),
                     (datasets_pb2_grpc.add_DatasetServiceServicer_to_server, agg.dataset_api, NAMES[2])],
                    port=0, callers=Callers.of_tokens({"t" * 32: OPERATOR}))
                servers.append(server)
                ports.append(port)
                background.append(asyncio.create_task(
                    track_leader_health(server, lambda own=own: own.is_connected, lease.leading)))
            try:
                seen = {"first leads": [await health_settles(port, expected) for port, expected in
                                        zip(ports, [(serving,) * 3, (serving, not_serving, not_serving)])]}
                renewing.cancel()  # the first's renewals stop: the second takes over
                await asyncio.wait_for(second.wait_to_lead(), 5 * LEASE)
                renewing = asyncio.create_task(second.keep())
                seen["second leads"] = [await health_settles(port, expected) for port, expected in
                                        zip(ports, [(serving, not_serving, not_serving), (serving,) * 3])]
                await connections[1].close()  # the leader loses NATS
                seen["leader without NATS"] = [await health_settles(ports[1], (not_serving,) * 3)]
                return seen
            finally:
                renewing.cancel()
                for task in background:
                    task.cancel()
                for server in servers:
                    await stop_grpc_server(server, grace=0)
                for own in connections:
                    await own.close()

    seen = asyncio.run(scenario())
    assert seen["first leads"] == [("SERVING", "SERVING", "SERVING"), ("SERVING", "NOT_SERVING", "NOT_SERVING")]
    assert seen["second leads"] == [("SERVING", "NOT_SERVING", "NOT_SERVING"), ("SERVING", "SERVING", "SERVING")]
    assert seen["leader without NATS"] == [("NOT_SERVING", "NOT_SERVING", "NOT_SERVING")]


def test_a_new_leader_takes_no_run_until_it_has_read_the_runs_back(jetstream, cluster_settings):
    """A standby that has just taken the lease answers CreateRun UNAVAILABLE (and its AggregatorService health
    NOT_SERVING) until it has read the runs back: the read-back drops from memory a run its listing missed, so a run
    created meanwhile was lost (the soak saw two submits fail with "there is no run")."""
    token = "t" * 32

    async def scenario():
        async with bucket(jetstream) as (nc, js, kv, name):
            first, second = Lease(kv, LEASE), Lease(kv, LEASE)
            assert await first.take() and not await second.take()
            renewing = asyncio.create_task(first.keep())
            standby = aggregator(cluster_settings, js, kv, name, second, nc)
            following = asyncio.create_task(standby.mirror_bucket(kv))
            await asyncio.to_thread(standby.datasets.store.ensure_bucket)
            server, port = await start_grpc_server(
                [(services_pb2_grpc.add_AggregatorServiceServicer_to_server, standby.api, NAMES[1]),
                 (datasets_pb2_grpc.add_DatasetServiceServicer_to_server, standby.dataset_api, NAMES[2])],
                port=0, callers=Callers.of_tokens({token: OPERATOR}))
            health_task = asyncio.create_task(track_leader_health(server, lambda: True, standby.book.leading))

            def create() -> str:
                with client_channel(f"127.0.0.1:{port}", token=token) as channel:
                    try:
                        return services_pb2_grpc.AggregatorServiceStub(channel).CreateRun(
                            runs_pb2.CreateRunRequest(), timeout=5).run_id
                    except grpc.RpcError as error:
                        return error.code().name

            try:
                renewing.cancel()
                await asyncio.wait_for(second.wait_to_lead(), 5 * LEASE)
                renewing = asyncio.create_task(second.keep())
                following.cancel()
                before = (await asyncio.to_thread(create), await health_settles(port, ("SERVING", "NOT_SERVING",
                                                                                           "NOT_SERVING")))
                await standby.restore()
                created = await asyncio.to_thread(create)
                after = await health_settles(port, ("SERVING",) * 3)
                return before, created, after, set(standby.runs)
            finally:
                renewing.cancel()
                health_task.cancel()
                await stop_grpc_server(server, grace=0)

    before, created, after, runs = asyncio.run(scenario())
    assert before == ("UNAVAILABLE", ("SERVING", "NOT_SERVING", "NOT_SERVING"))
    assert len(created) == 32 and runs == {created} and after == ("SERVING",) * 3


def test_bucket_keys_are_not_lost_to_nats_py_s_early_end_marker(jetstream):
    """``bucket_keys``: nats-py's ``kv.keys()`` can answer "no key" on a loaded machine (its watcher's end marker
    overtakes the deliveries; a new leader then restored no run). An empty answer is asked again while the stream
    holds messages; an empty bucket, and one whose keys were all deleted, are [] all the same, read directly or
    through the fenced view the aggregator's books hold."""
    async def scenario():
        async with bucket(jetstream) as (nc, js, kv, name):
            assert await bucket_keys(kv) == []
            assert await bucket_keys(Fenced(kv, js, name, Lease(kv, 10))) == []
            await kv.put("status.r1", b"1")
            await kv.put("spec.r1", b"2")
            listed, early_end = kv.keys, [True]

            async def keys_once_empty():  # the race, as keys() then answers
                if early_end.pop() if early_end else False:
                    raise NoKeysError
                return await listed()

            kv.keys = keys_once_empty
            assert sorted(await bucket_keys(kv)) == ["spec.r1", "status.r1"] and not early_end
            kv.keys = listed
            await kv.delete("status.r1")
            await kv.delete("spec.r1")
            assert await bucket_keys(kv, attempts=2) == []

    asyncio.run(scenario())
