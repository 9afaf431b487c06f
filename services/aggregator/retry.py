"""Waiting out what waiting fixes: NATS or S3 down, the validator away. One backoff for every retry in the aggregator."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import nats.errors
from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

from mfscore.errors import MfscoreError
from mfscore.services.common.object_store import ObjectStoreUnavailable

T = TypeVar("T")
DELAYS = (0.2, 5.0)  # the first and the longest wait between attempts
log = logging.getLogger("mfscore.aggregator")


def nats_unavailable(error: BaseException) -> bool:
    """Whether a NATS call failed because the server is out of reach or its JetStream not ready: waiting fixes it."""
    return isinstance(error, (TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
                              nats.errors.OutboundBufferLimitError, nats.errors.StaleConnectionError,
                              NoStreamResponseError, ServiceUnavailableError))


def s3_or_validator_unavailable(error: BaseException) -> bool:
    """Whether S3 stayed unavailable through the object store's own retries, or the validator answered UNAVAILABLE."""
    return isinstance(error, ObjectStoreUnavailable) or (
        isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNAVAILABLE)


def one_line(error: BaseException) -> str:
    if isinstance(error, MfscoreError):
        return " ".join(error.sentence().split())
    if isinstance(error, grpc.aio.AioRpcError):
        return f"the validator: {' '.join((error.details() or error.code().name).split())}"
    return " ".join(f"{type(error).__name__}: {error}".split())


async def retrying(what: str, call: Callable[[], Awaitable[T]], *, transient: Callable[[BaseException], bool],
                   waiting_for: str, budget: float | None = None, ready: Callable[[], bool] = lambda: True) -> T:
    """``call()`` until it returns. While ``ready()`` is false, or the call fails with an error ``transient`` says
    waiting fixes, wait (DELAYS: 0.2 s, doubling, at most 5 s) and call again; log once when the wait starts and
    once when it ends. Any other error is raised, and so is an ``MfscoreError`` once ``budget`` seconds have passed
    waiting (None: wait for ever)."""
    delay, since = DELAYS[0], None
    while True:
        why = "not connected"
        if ready():
            try:
                result = await call()
            except Exception as error:
                if not transient(error):
                    raise
                why = one_line(error)
            else:
                if since is not None:
                    log.info("%s: done, after %.1f s waiting %s", what, time.monotonic() - since, waiting_for)
                return result
        if since is None:
            since = time.monotonic()
            log.warning("%s: waiting %s (%s)", what, waiting_for, why)
        waited = time.monotonic() - since
        if budget is not None and waited >= budget:
            raise MfscoreError(f"{what} failed for {waited:.0f} s, its retry budget: {why}")
        await asyncio.sleep(delay)
        delay = min(DELAYS[1], delay * 2)
