"""Retrying what waiting fixes, one way everywhere: the backoff schedules, ``retrying``, and a failure as one line.

Which failures waiting fixes is ``transient``'s. Each failure is retried by one layer (docs/reliability.md, "Who
retries what"); where two layers meet, the lower one rides out a blip in one request and the upper one waits out an
outage by doing a whole step again:

- The object store retries one S3 request (``S3``, ``ObjectStore.attempts`` times) on a transient failure, then
  raises ``ObjectStoreUnavailable``. minio's own retries are off.
- The aggregator waits out an outage with ``retrying`` (``AGGREGATOR``): of S3 once the store's attempts ran out
  (it repeats the run's step: planning, storing its reports), of the validator, of NATS (nats-py retries no request;
  it reconnects, 1 s apart); for ``MFSCORE_RETRY_BUDGET``, ``RESTORE_BUDGET``, or for ever (state writes, watches).
- Setting up the streams, consumers and the runs' bucket waits out NATS with ``retrying`` too (``NATS``, 60 s).
- A scorer's job worker never waits in place: a job failing for the infrastructure is handed back and the worker
  pauses (``JOB_OUTAGE``), so one job at a time probes the outage, until ``MFSCORE_RETRY_BUDGET`` is spent; a job
  failing on its input is handed back with a growing delay (``JOB_REDELIVERY``), ``MFSCORE_MAX_DELIVER`` times.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import grpc

from mfscore.errors import MfscoreError

T = TypeVar("T")
log = logging.getLogger("mfscore.retry")


@dataclass(frozen=True)
class Backoff:
    """The waits between attempts: ``first``, then ``factor`` times the one before, at most ``most``."""

    first: float
    most: float
    factor: float = 2.0

    def delay(self, n: int) -> float:
        """The wait after the ``n``-th failure in a row (0 the first)."""
        return min(self.most, self.first * self.factor ** min(n, 64))

    def delays(self) -> Iterator[float]:
        """The waits after each failure in a row, without end."""
        return map(self.delay, itertools.count())


AGGREGATOR = Backoff(first=0.2, most=5.0)      # the aggregator waiting out NATS, S3 or the validator
NATS = Backoff(first=0.2, most=2.0)            # setting up the streams and the runs' bucket
S3 = Backoff(first=0.1, most=2.0)              # one S3 request, ObjectStore.attempts (4) times in all
KV_LISTING = Backoff(first=0.05, most=0.4)     # a bucket's key listing that ended before its first key
JOB_REDELIVERY = Backoff(first=1.0, most=30.0)  # a job failing on its input: a JobWorker's default retry delays
JOB_OUTAGE = Backoff(first=JOB_REDELIVERY.first, most=5.0)  # a worker's pause after an infrastructure failure


class RetryBudgetSpent(MfscoreError):
    """``retrying`` waited its whole budget; ``last`` is the last failure, in one line."""

    def __init__(self, what: str, waited: float, last: str):
        self.last = last
        super().__init__(f"{what} failed for {waited:.0f} s, its retry budget: {last}")


def one_line(error: BaseException, *, typed: bool = True) -> str:
    """``error`` as one line: an ``MfscoreError``'s sentence; a gRPC error's details, as the validator's (the one
    gRPC service a service calls); else ``Type: text``, or with ``typed=False`` the text alone (the type's name
    when there is none), as the object store quotes what S3's client raised."""
    if isinstance(error, MfscoreError):
        text = error.sentence()
    elif isinstance(error, grpc.aio.AioRpcError):
        text = f"the validator: {error.details() or error.code().name}"
    elif not typed:
        return " ".join(str(error).split()) or type(error).__name__
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())


async def retrying(what: str, call: Callable[[], Awaitable[T]], *, transient: Callable[[BaseException], bool],
                   waiting_for: str, budget: float | None = None, ready: Callable[[], bool] = lambda: True,
                   backoff: Backoff = AGGREGATOR) -> T:
    """``call()`` until it returns. While ``ready()`` is false, or the call fails with an error ``transient`` says
    waiting fixes, wait (``backoff``; the aggregator's: 0.2 s, doubling, at most 5 s) and call again; log once when
    the wait starts and once when it ends. Any other error is raised, and so is ``RetryBudgetSpent`` once ``budget``
    seconds have passed waiting (None: wait for ever)."""
    delays, since = backoff.delays(), None
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
            raise RetryBudgetSpent(what, waited, why)
        await asyncio.sleep(next(delays))
