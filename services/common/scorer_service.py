"""Run a scorer: its gRPC servicer (score one job now) and its JetStream worker (score queued jobs), with metrics."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from services.common.grpc_server import start_grpc_server, stop_grpc_server
from services.common.jetstream import JobWorker, connect, ensure_streams
from services.common.metrics import start_metrics_server
from services.common.settings import Settings
from services.wire import jobs_pb2, records_pb2

log = logging.getLogger("mfscore.services")


@dataclass
class ScorerService:
    name: str                   # mask-scorer, detection-scorer, ...
    kind: str                   # the job subject it consumes: mask, detection, provenance
    handle: Callable[[jobs_pb2.Job], Awaitable[records_pb2.TrialRecord]]
    servicer: object
    add_servicer: Callable
    service_name: str           # the full gRPC name, for health and reflection
    concurrency: int = 1        # jobs in flight per worker


async def run_scorer(service: ScorerService, settings: Settings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set; then stop pulling, finish (or nak) the job in hand, and close."""
    os.makedirs(settings.work_dir, exist_ok=True)
    metrics_port = start_metrics_server(settings.metrics_port)
    server, port = await start_grpc_server([(service.add_servicer, service.servicer, service.service_name)],
                                           port=settings.grpc_port)
    nc, js = await connect(settings)
    try:
        await ensure_streams(js)
        log.info("%s: gRPC on %d, metrics on %d, pulling %s jobs", service.name, port, metrics_port, service.kind)
        worker = JobWorker(js, kind=service.kind, service=service.name, handle=service.handle,
                           ack_wait=settings.ack_wait_seconds, max_deliver=settings.max_deliver,
                           shutdown_grace_seconds=settings.ack_wait_seconds, concurrency=service.concurrency)
        await worker.run(stop)
    finally:
        await stop_grpc_server(server, grace=5)
        await nc.drain()
        log.info("%s: stopped", service.name)
