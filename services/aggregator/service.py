"""The aggregator (AggregatorService): runs from creation to reports, its parts wired together.

- ``api``: the gRPC API a caller uses (CreateRun, DeclareInputs, UploadInputs, SubmitRun, GetRun, WatchRun, ListRuns,
  CancelRun, DeleteRun, FetchReport, GetResults), each caller seeing its own runs; ``paging``: ListRuns' pages;
  ``access``: what a caller reaches (its namespace of objects, the datasets it may read); ``dead_letters_api``: the
  operator's ListDeadLetters and PurgeDeadLetters (the jobs the scorers gave up on);
- ``dataset_api`` and ``datasets``: DatasetService, datasets registered once; ``objects``: every caller's
  content-addressed objects, deleted once nothing names them (docs/datasets.md);
- ``campaign_api`` and ``campaigns``: CampaignService, evaluation campaigns and their boards (docs/campaigns.md);
  ``packages``: a package run planned against its dataset; ``releasing``: what a caller receives of a run
  (docs/release.md);
- ``runner``: the cluster runner (validate, plan, publish, fold, report), the local runner's steps;
- ``run``: a run's states and the moves between them, its plan and its records folded (the decisions);
- ``state``: the runs in memory and in the JetStream key-value bucket (spec, status, report seal), and their watchers;
- ``retention``: what a run leaves behind, and for how long (and DeleteRun's deletion, the same);
- ``uploads`` and ``reports``: files in (checked against their declaration) and out (checked against the
  manifest recorded when they were written);

The aggregator holds no state of its own: on start it reads every run from the bucket and replays the results
stream from the beginning, so a restart loses nothing (docs/distributed.md, "What happens to a run").

Two may run (``lease``): the one holding the lease leads and its AggregatorService is SERVING; the other stands by,
its books following the bucket so it serves the calls that read (its whole server "" SERVING, its services
NOT_SERVING), until the lease is free or lapses. Then it reads the bucket again, takes over the runs that have
not ended and replays the records. A leader deposed (another took the lease) exits with status 1, to come back as
a standby (Kubernetes, or the local cluster's supervisor, starts it again: docs/reliability.md, "Two aggregators").
Reading the bucket and the streams back waits out NATS away or JetStream without a leader (RESTORE_BUDGET).
"""

from __future__ import annotations

import asyncio
import logging
import os

from nats.js.api import DeliverPolicy
from nats.js.kv import KV_DEL, KV_PURGE

from mfscore import tasks
from mfscore.run import figure_process
from mfscore.run.collector import collect_less
from mfscore.services.aggregator.api import AggregatorApi
from mfscore.services.aggregator.campaign_api import CampaignApi
from mfscore.services.aggregator.campaigns import CampaignBook
from mfscore.services.aggregator.dataset_api import DatasetApi
from mfscore.services.aggregator.datasets import DatasetBook
from mfscore.services.aggregator.lease import Deposed, Fenced, Lease
from mfscore.services.aggregator.objects import Objects
from mfscore.services.aggregator.retention import Retention, remove_run_dirs
from mfscore.services.aggregator.runner import ClusterRunner
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common import metrics
from mfscore.services.common.auth import aio_client_channel
from mfscore.services.common.grpc_server import (
    MESSAGE_OPTIONS,
    set_serving,
    start_service_server,
    stop_grpc_server,
)
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.retry import retrying
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import ensure_streams, runs_bucket
from mfscore.services.common.subjects import RESULTS_STREAM, RUNS_BUCKET
from mfscore.services.common.transient import nats_unavailable
from mfscore.services.wire import campaigns_pb2_grpc, datasets_pb2_grpc, services_pb2_grpc

RESULTS_HEARTBEAT = 1.0  # seconds between the server's heartbeats on the replay of records
HEALTH_POLL = 0.2        # seconds between looks at NATS and the lease, for the health service
RESTORE_BUDGET = 300.0   # seconds starting or taking over waits out NATS before the process exits (and is restarted)
log = logging.getLogger("mfscore.aggregator")


class Aggregator:
    """One aggregator: its run book, runner, retention and API over one object store, JetStream and validator."""

    def __init__(self, settings: Settings, store: ObjectStore, js, kv, validator, *, nc=None,
                 lease: Lease | None = None):
        self.book = RunBook(kv, nc=nc, lease=lease)
        self.datasets = DatasetBook(kv, store)
        self.campaigns = CampaignBook(kv)
        self.objects = Objects(store, self.book, self.datasets)
        self.runner = ClusterRunner(settings, store, js, self.book, validator, self.datasets, self.campaigns)
        self.retention = Retention(settings, store, js, self.book, self.objects)
        self.book.on_end = self.retention.clean_up
        self.api = AggregatorApi(settings, store, self.book, self.runner, self.retention, self.datasets, self.objects,
                                 self.campaigns, js=js, nc=nc)
        self.campaign_api = CampaignApi(settings, self.book, self.datasets, self.campaigns, self.api.results)
        self.dataset_api = DatasetApi(settings, store, self.book, self.datasets, self.objects, self.api.quotas)
        self.runs, self.kv = self.book.runs, kv
        self.on_result, self.sweep = self.runner.on_result, self.retention.sweep
        self.loaded = asyncio.Event()  # the books hold what the bucket held: the API may answer from them

    async def restore(self) -> None:
        """Read every dataset and run from the bucket; with a lease, rewrite the runs that have not ended (fencing
        off the leader before); resume the unfinished runs (their records replay from the stream). Reading waits out
        NATS away or JetStream unavailable (a quorum forming again) for RESTORE_BUDGET seconds."""
        async def read_back():
            await self.datasets.restore()
            await self.campaigns.restore()
            return await self.book.restore()

        unfinished = await retrying("reading the runs and datasets back", read_back, transient=nats_unavailable,
                                    waiting_for="for NATS", budget=RESTORE_BUDGET)
        if self.book.lease is not None:
            await self.book.reclaim()
        self.book.read_back = True
        self.loaded.set()
        for run in unfinished:
            self.runner.resume(run)

    async def mirror_bucket(self, kv) -> None:
        """A standby's books follow every change of the bucket ``kv`` (unfenced), until cancelled."""
        watcher = await retrying("watching the bucket", kv.watchall, transient=nats_unavailable,
                                 waiting_for="for NATS")
        try:
            async for update in watcher:
                if update is None:  # every value the bucket held is in the books
                    self.loaded.set()
                    continue
                value = None if update.operation in (KV_DEL, KV_PURGE) else update.value
                self.datasets.take_change(update.key, value)
                self.campaigns.take_change(update.key, value)
                await self.book.take_change(update.key, value)
        finally:
            await watcher.stop()


async def run_aggregator(settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    metrics_port = _prepare_process(settings)
    store = ObjectStore(settings)
    await asyncio.to_thread(store.ensure_bucket)
    nc, js = await connect(settings)
    channel = aio_client_channel(settings.validator_address, token=settings.token, tls_ca=settings.tls_ca,
                                 options=MESSAGE_OPTIONS)
    background: list[asyncio.Task] = []
    try:
        await ensure_streams(js, settings)
        bucket = await runs_bucket(js, settings, budget=RESTORE_BUDGET)  # it waits out NATS itself
        lease = Lease(bucket, settings.lease_seconds)
        aggregator = Aggregator(settings, store, js, Fenced(bucket, js, RUNS_BUCKET, lease),
                                services_pb2_grpc.ValidatorServiceStub(channel), nc=nc, lease=lease)
        server = await _serve_until_leading(aggregator, bucket, lease, settings, stop, background, nc, metrics_port)
        if server is None:
            return
        await _replay_records(js, aggregator)
        background.append(asyncio.create_task(aggregator.retention.sweep_periodically()))
        await _until_stopped(server, lease, stop)
    finally:
        for task in background:
            task.cancel()
        await channel.close()
        await nc.drain()


def _prepare_process(settings: Settings) -> int:
    """Make the scratch space (removing what an earlier process left), import what scoring and drawing need once,
    and serve the metrics; their port."""
    os.makedirs(settings.work_dir, exist_ok=True)
    if removed := remove_run_dirs(settings.work_dir):
        log.info("removed the scratch folders of %d run(s) an earlier process of this aggregator left", len(removed))
    tasks.load_all()
    figure_process.import_drawing()
    collect_less()
    return metrics.start_metrics_server(settings.metrics_port, settings.metrics_host, role="aggregator")


async def _serve_until_leading(aggregator: Aggregator, bucket, lease: Lease, settings: Settings, stop: asyncio.Event,
                           background: list[asyncio.Task], nc, metrics_port: int):
    """Serve the API, leading once this aggregator holds the lease and has read the runs back; its server, or None
    when ``stop`` came first. The API answers only from books that hold the bucket's state (a restarted aggregator
    must not say a run does not exist): a leader serves once it has read the bucket, a standby once its watch has."""
    leading = await lease.try_take()
    following = None
    if leading:
        background.append(asyncio.create_task(lease.keep()))
        await aggregator.restore()
    else:
        following = asyncio.create_task(aggregator.mirror_bucket(bucket))
        if await _first(aggregator.loaded.wait(), stop.wait()) == 1:
            following.cancel()
            return None
    server, port = await start_service_server(
        [(services_pb2_grpc.add_AggregatorServiceServicer_to_server, aggregator.api, "mfscore.v1.AggregatorService"),
         (datasets_pb2_grpc.add_DatasetServiceServicer_to_server, aggregator.dataset_api,
          "mfscore.v1.DatasetService"),
         (campaigns_pb2_grpc.add_CampaignServiceServicer_to_server, aggregator.campaign_api,
          "mfscore.v1.CampaignService")], settings)
    await set_serving(server, True, services=leading)
    background.append(asyncio.create_task(track_leader_health(server, lambda: nc.is_connected,
                                                              aggregator.book.leading)))
    log.info("aggregator: gRPC on %d, metrics on %d", port, metrics_port)
    if not leading:
        if not await _stand_by(lease, following, stop):
            await stop_grpc_server(server, grace=5)
            return None
        background.append(asyncio.create_task(lease.keep()))
        await aggregator.restore()
    return server


async def _replay_records(js, aggregator: Aggregator) -> None:
    """Fold every record of the results stream, from the first, and each one as it comes. The ordered consumer lives
    in the server's memory: after NATS restarts, two missed heartbeats make the client recreate it, so records flow
    again within seconds."""
    await retrying("replaying the records", lambda: js.subscribe(
        "mfscore.results.>", stream=RESULTS_STREAM, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL,
        cb=aggregator.on_result, idle_heartbeat=RESULTS_HEARTBEAT), transient=nats_unavailable,
        waiting_for="for NATS", budget=RESTORE_BUDGET)


async def _until_stopped(server, lease: Lease, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set (then let the lease go) or another aggregator takes the lease (``Deposed``)."""
    await _first(stop.wait(), lease.deposed.wait())
    if lease.deposed.is_set():
        await stop_grpc_server(server, grace=0)
        raise Deposed("another aggregator took the lease: this one stopped (it comes back as a standby)")
    await stop_grpc_server(server, grace=5)
    await lease.release()


async def _stand_by(lease: Lease, following: asyncio.Task, stop: asyncio.Event) -> bool:
    """Stand by (the books following the bucket) until this aggregator takes the lease; False when ``stop`` comes
    first."""
    log.info("aggregator: standing by until the lease is free")
    try:
        return await _first(lease.wait_to_lead(), stop.wait()) == 0
    finally:
        following.cancel()


async def _first(*awaitables) -> int:
    """Wait for the first of ``awaitables`` to finish, cancel the others; its index."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        winner = next(i for i, task in enumerate(tasks) if task in done)
        tasks[winner].result()
        return winner
    finally:
        for task in tasks:
            task.cancel()


async def track_leader_health(server, reaches_nats, leading) -> None:
    """Keep the server's health in step, until cancelled: the whole server ("", what Kubernetes probes) SERVING
    while this aggregator reaches NATS, a standby too (it serves reads); AggregatorService and DatasetService
    SERVING only while it also leads (what clients' health checking picks the leader by)."""
    health = None
    while True:
        alive = reaches_nats()
        now = (alive, alive and leading())
        if now != health:
            health = now
            await set_serving(server, alive, services=now[1])
            log.info("health: %s", "SERVING, leading" if now[1] else "SERVING, standing by" if alive
                     else "NOT_SERVING, NATS unreachable")
        await asyncio.sleep(HEALTH_POLL)
