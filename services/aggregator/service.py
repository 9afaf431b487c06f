"""The aggregator (AggregatorService): runs from creation to reports, its parts wired together.

- ``api``: the gRPC API a caller uses (CreateRun, DeclareInputs, UploadInputs, SubmitRun, GetRun, WatchRun, ListRuns,
  CancelRun, DeleteRun, FetchReport, GetResults), each caller seeing its own runs; ``paging``: ListRuns' pages;
- ``dataset_api`` and ``datasets``: DatasetService, datasets registered once; ``objects``: every caller's
  content-addressed objects, deleted once nothing names them (docs/datasets.md);
- ``runner``: the cluster runner (validate, plan, publish, fold, report), the local runner's steps;
- ``state``: the runs in memory and in the JetStream key-value bucket (spec, status, report seal);
- ``retention``: what a run leaves behind, and for how long (and DeleteRun's deletion, the same);
- ``uploads`` and ``reports``: files in (checked against their declaration) and out (checked against the
  manifest recorded when they were written);
- ``retry``: the one backoff for NATS, S3 and the validator being away.

The aggregator holds no state of its own: on start it reads every run from the bucket and replays the results
stream from the beginning, so a restart loses nothing (docs/distributed.md, "What happens to a run").
"""

from __future__ import annotations

import asyncio
import logging
import os

from nats.js.api import DeliverPolicy

from mfscore import tasks
from mfscore.run import figure_process
from mfscore.services.aggregator.api import AggregatorApi
from mfscore.services.aggregator.dataset_api import DatasetApi
from mfscore.services.aggregator.datasets import DatasetBook
from mfscore.services.aggregator.objects import Objects
from mfscore.services.aggregator.retention import Retention
from mfscore.services.aggregator.runner import ClusterRunner
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common import metrics
from mfscore.services.common.auth import aio_client_channel
from mfscore.services.common.grpc_server import (
    MESSAGE_OPTIONS,
    follow_health,
    start_service_server,
    stop_grpc_server,
)
from mfscore.services.common.jetstream import RESULTS_STREAM, connect, ensure_streams, runs_bucket
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.settings import Settings
from mfscore.services.wire import datasets_pb2_grpc, services_pb2_grpc

RESULTS_HEARTBEAT = 1.0  # seconds between the server's heartbeats on the replay of records
log = logging.getLogger("mfscore.aggregator")


class Aggregator:
    """One aggregator: its run book, runner, retention and API over one object store, JetStream and validator."""

    def __init__(self, settings: Settings, store: ObjectStore, js, kv, validator, *, nc=None):
        self.book = RunBook(kv, nc=nc)
        self.datasets = DatasetBook(kv, store)
        self.objects = Objects(store, self.book, self.datasets)
        self.runner = ClusterRunner(settings, store, js, self.book, validator)
        self.retention = Retention(settings, store, js, self.book, self.objects)
        self.book.on_end = self.retention.clean_up
        self.api = AggregatorApi(settings, store, self.book, self.runner, self.retention, self.datasets, self.objects)
        self.dataset_api = DatasetApi(settings, store, self.book, self.datasets, self.objects)
        self.runs, self.kv = self.book.runs, kv
        self.on_result, self.sweep = self.runner.on_result, self.retention.sweep

    async def restore(self) -> None:
        """Read every dataset and run from the bucket; resume the unfinished runs (their records replay from the
        stream)."""
        await self.datasets.restore()
        for entry in await self.book.restore():
            self.runner.resume(entry)


async def run_aggregator(settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    os.makedirs(settings.work_dir, exist_ok=True)
    tasks.load_all()
    figure_process.import_drawing()
    metrics_port = metrics.start_metrics_server(settings.metrics_port, settings.metrics_host)
    store = ObjectStore(settings)
    await asyncio.to_thread(store.ensure_bucket)
    nc, js = await connect(settings)
    channel = aio_client_channel(settings.validator_address, token=settings.token, tls_ca=settings.tls_ca,
                                 options=MESSAGE_OPTIONS)
    try:
        await ensure_streams(js)
        aggregator = Aggregator(settings, store, js, await runs_bucket(js),
                                services_pb2_grpc.ValidatorServiceStub(channel), nc=nc)
        await aggregator.restore()
        # The ordered consumer lives in the server's memory: after NATS restarts, two missed heartbeats make the
        # client recreate it, so records flow again within seconds.
        await js.subscribe("mfscore.results.>", stream=RESULTS_STREAM, ordered_consumer=True,
                           deliver_policy=DeliverPolicy.ALL, cb=aggregator.on_result, idle_heartbeat=RESULTS_HEARTBEAT)
        server, port = await start_service_server(
            [(services_pb2_grpc.add_AggregatorServiceServicer_to_server, aggregator.api,
              "mfscore.v1.AggregatorService"),
             (datasets_pb2_grpc.add_DatasetServiceServicer_to_server, aggregator.dataset_api,
              "mfscore.v1.DatasetService")], settings)
        log.info("aggregator: gRPC on %d, metrics on %d", port, metrics_port)
        healthy = follow_health(server, lambda: nc.is_connected, f"NATS at {settings.nats_url}")
        background = [asyncio.create_task(healthy), asyncio.create_task(aggregator.retention.sweep_periodically())]
        await stop.wait()
        for task in background:
            task.cancel()
        await stop_grpc_server(server, grace=5)
    finally:
        await channel.close()
        await nc.drain()
