"""Each caller's quotas on the aggregator: how fast it creates runs, and how much of its uploads is under way.

A caller is a token's name and role (``auth.Caller``). The operator sets every quota (``MFSCORE_QUOTA_*``,
``settings.Settings``); a call over one is refused with ``QuotaExceeded``, one sentence naming the quota and its
value, which the API answers as RESOURCE_EXHAUSTED. The counts live in this process's memory only: a restarted
aggregator starts every caller afresh (the runs themselves, which ``RunBook`` counts, are in the bucket).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mfscore.services.common.auth import Caller
from mfscore.services.common.settings import ENV_VARS, Settings
from mfscore.services.common.status_codes import ResourceExhausted


class QuotaExceeded(ResourceExhausted):
    """A caller asked for more than one of its quotas allows; nothing was done."""


def exceeded(setting: str, value: int, what: str) -> QuotaExceeded:
    """The refusal of ``what`` by the quota ``setting`` (a field of Settings) set to ``value``."""
    return QuotaExceeded(f"{what}: the quota {ENV_VARS[setting]} is {value}")


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimit:
    """A token bucket per caller: ``per_minute`` calls at once, then one every ``60 / per_minute`` seconds."""

    def __init__(self, setting: str, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.setting, self.per_minute, self.clock = setting, per_minute, clock
        self._buckets: dict[Caller, _Bucket] = {}

    def take(self, who: Caller, what: str) -> None:
        """Spend one of ``who``'s tokens, or raise ``QuotaExceeded`` when it has none left."""
        now = self.clock()
        bucket = self._buckets.setdefault(who, _Bucket(self.per_minute, now))
        bucket.tokens = min(self.per_minute, bucket.tokens + (now - bucket.stamp) * self.per_minute / 60)
        bucket.stamp = now
        if bucket.tokens < 1:
            raise exceeded(self.setting, self.per_minute, f"{what} more than {self.per_minute} times a minute")
        bucket.tokens -= 1
        if len(self._buckets) > 10_000:  # full buckets carry nothing worth keeping
            self._buckets = {c: b for c, b in self._buckets.items() if b.tokens < self.per_minute or c == who}


class InFlight:
    """Each caller's upload streams open and the bytes declared by the files they are receiving, both bounded."""

    def __init__(self, max_streams: int, max_bytes: int):
        self.max_streams, self.max_bytes = max_streams, max_bytes
        self.streams: dict[Caller, int] = {}
        self.bytes: dict[Caller, int] = {}

    @contextlib.contextmanager
    def stream(self, who: Caller) -> Iterator[Callable[[int], contextlib.AbstractContextManager]]:
        """One upload stream of ``who`` while the block runs (``QuotaExceeded`` if it has as many open as allowed);
        yields ``holding(size)``, a context in which ``size`` bytes of the caller's are reserved."""
        if self.streams.get(who, 0) >= self.max_streams:
            raise exceeded("quota_upload_streams", self.max_streams,
                           f"{who.name} has {self.max_streams} upload stream(s) open already")
        self.streams[who] = self.streams.get(who, 0) + 1
        try:
            yield lambda size: self._holding(who, size)
        finally:
            self._less(self.streams, who, 1)

    @contextlib.contextmanager
    def _holding(self, who: Caller, size: int) -> Iterator[None]:
        held = self.bytes.get(who, 0)
        if held + size > self.max_bytes:
            raise exceeded("quota_upload_bytes", self.max_bytes,
                           f"a file of {size} bytes, with the {held} bytes of {who.name}'s other files being "
                           "received, is more than may be under way at once")
        self.bytes[who] = held + size
        try:
            yield
        finally:
            self._less(self.bytes, who, size)

    @staticmethod
    def _less(counts: dict[Caller, int], who: Caller, amount: int) -> None:
        left = counts.get(who, 0) - amount
        if left > 0:
            counts[who] = left
        else:
            counts.pop(who, None)


class Quotas:
    """The aggregator's quotas, from its settings: CreateRun's rate, uploads under way, the files of a dataset.
    The quotas on runs (created, in flight) are checked against ``RunBook.held``."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.create_run = RateLimit("quota_create_run_per_minute", settings.quota_create_run_per_minute, clock)
        self.uploads = InFlight(settings.quota_upload_streams, settings.quota_upload_bytes)

    def check_runs(self, who: Caller, created: int, in_flight: int, *, submitting: bool) -> None:
        """Refuse one more run created (or, ``submitting``, one more submitted) by ``who``, which holds
        ``created`` runs not yet submitted and ``in_flight`` submitted that have not ended."""
        if submitting:
            if in_flight >= self.settings.quota_runs_in_flight:
                raise exceeded("quota_runs_in_flight", self.settings.quota_runs_in_flight,
                               f"{who.name} has {in_flight} run(s) under way; submit this one once one has ended")
        elif created >= self.settings.quota_created_runs:
            raise exceeded("quota_created_runs", self.settings.quota_created_runs,
                           f"{who.name} has {created} run(s) created and not submitted; submit or cancel some first")

    def check_dataset_files(self, count: int) -> None:
        if count > self.settings.quota_dataset_files:
            raise exceeded("quota_dataset_files", self.settings.quota_dataset_files,
                           f"a dataset of more than {self.settings.quota_dataset_files} files cannot be created")
