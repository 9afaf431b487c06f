"""Queue lag as gauges: a scorer pool reads its durable consumers and the jobs and dead-letter streams from
JetStream every few seconds (the figures nats-surveyor would give, exported by mfscore itself).

Every replica of a pool exports the same figures for the same consumer: dashboards and alerts take their ``max``.
While NATS is away the figures are withdrawn rather than left as they last were.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

import nats.errors
from nats.js import JetStreamContext

from mfscore.services.common.metrics import (
    CONSUMER_ACK_PENDING,
    CONSUMER_PENDING,
    CONSUMER_REDELIVERED,
    STREAM_MESSAGES,
)
from mfscore.services.common.subjects import DEAD_STREAM, JOBS_STREAM

POLL_SECONDS = 5.0
STREAMS = (JOBS_STREAM, DEAD_STREAM)
log = logging.getLogger("mfscore.nats")


async def read_lag(js: JetStreamContext, consumers: Sequence[str]) -> None:
    """Set the gauges from one reading of each consumer of the jobs stream, and of the jobs and dead-letter streams."""
    for consumer in consumers:
        info = await js.consumer_info(JOBS_STREAM, consumer)
        CONSUMER_PENDING.labels(JOBS_STREAM, consumer).set(info.num_pending or 0)
        CONSUMER_ACK_PENDING.labels(JOBS_STREAM, consumer).set(info.num_ack_pending or 0)
        CONSUMER_REDELIVERED.labels(JOBS_STREAM, consumer).set(info.num_redelivered or 0)
    for stream in STREAMS:
        STREAM_MESSAGES.labels(stream).set((await js.stream_info(stream)).state.messages)


def _withdraw(consumers: Sequence[str]) -> None:
    for consumer in consumers:
        for gauge in (CONSUMER_PENDING, CONSUMER_ACK_PENDING, CONSUMER_REDELIVERED):
            with contextlib.suppress(KeyError):
                gauge.remove(JOBS_STREAM, consumer)
    for stream in STREAMS:
        with contextlib.suppress(KeyError):
            STREAM_MESSAGES.remove(stream)


async def watch_lag(js: JetStreamContext, consumers: Sequence[str], *, interval: float = POLL_SECONDS) -> None:
    """Read the lag every ``interval`` seconds until cancelled; a reading NATS does not answer within the interval
    withdraws the figures until the next one succeeds."""
    while True:
        try:
            await asyncio.wait_for(read_lag(js, consumers), interval)
        except (nats.errors.Error, TimeoutError, ConnectionError) as exc:
            log.debug("could not read the queue lag: %s", exc)
            _withdraw(consumers)
        await asyncio.sleep(interval)
