"""Which of two aggregators leads: a lease in the runs' key-value bucket, and the state writes it fences.

One aggregator leads (runs runs, writes state); the other stands by, serving reads from the bucket, until the lease
is free. Each process times the lease by its own monotonic clock; no clock is compared across hosts.

- The leader takes the key ``lease.aggregator`` with ``create`` and renews it with ``update(last=revision)`` (a
  compare-and-swap) every lease/3 s. It leads while its last renewal was sent less than lease x (1 - MARGIN) s ago;
  a renewal whose compare-and-swap fails means another aggregator took the lease: it is deposed (``Deposed``).
- A standby watches the key and takes it with ``update(last=the revision it saw)`` once that revision has not
  changed for a whole lease by its clock, or at once when the key is deleted (a leader that stopped gracefully).
- ``Fenced`` is the bucket as the leader writes it: every write first checks the lease, then is conditional on the
  key's revision this process last saw (``update(last=...)``, ``create``, a purge expecting that revision), so a
  deposed leader whose write races the new leader's is refused by NATS itself.

The lease lives in the runs' bucket itself (not a bucket of its own): the same stream, the same replicas, and the
NATS permissions the aggregator already has. A key this process never saw (a new run's) cannot be conditioned on
a revision: the lease check just before the write is its only fence.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
import uuid

import nats.errors
from nats.js import api
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE, MSG_ROLLUP_SUBJECT

from mfscore.services.common.retry import one_line, retrying
from mfscore.services.common.status_codes import Unavailable
from mfscore.services.common.transient import nats_unavailable

KEY = "lease.aggregator"
MARGIN = 0.2        # the share of the lease a leader gives up early, for a renewal's time in flight
WATCH_POLL = 0.2    # seconds between a standby's looks at its clock while the key does not change
WRONG_LAST = (10071, 10164)  # NATS' error codes of a write whose expected last revision is not the key's
STANDBY = "this aggregator is a standby; the leading aggregator takes the calls that change state, try another address"
log = logging.getLogger("mfscore.aggregator")


class NotLeading(Unavailable):
    """This aggregator's lease lapsed (NATS out of reach, say): it writes no state until it renews the lease."""


class Deposed(NotLeading):
    """Another aggregator took the lease: this one's state writes are refused for good."""


class Lease:
    """This process's hold on the leader's lease in ``kv``, ``seconds`` long."""

    def __init__(self, kv, seconds: float, *, clock=time.monotonic):
        self.kv, self.seconds, self.clock = kv, float(seconds), clock
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}".encode()  # this hold, no other
        self.revision: int | None = None
        self.renewed_at: float | None = None  # by our clock, when the last renewal that succeeded was sent
        self.deposed = asyncio.Event()
        self.released = False

    def leading(self) -> bool:
        return self.taken() and self.clock() - self.renewed_at < self.seconds * (1 - MARGIN)

    def taken(self) -> bool:
        """Whether this process took the lease and neither lost it to another nor gave it up: it led last, even
        while a lapsed lease waits for NATS to renew it."""
        return self.renewed_at is not None and not self.released and not self.deposed.is_set()

    def check(self) -> None:
        """Raise unless this process holds a fresh lease: ``Deposed`` once another took it, else ``NotLeading``."""
        if self.deposed.is_set():
            raise Deposed("another aggregator holds the lease, so this one writes nothing")
        if not self.leading():
            raise NotLeading("this aggregator does not hold a fresh lease, so it writes nothing")

    def depose(self, why: str) -> None:
        if not self.deposed.is_set():
            log.error("deposed: %s; this aggregator steps down and exits", why)
            self.deposed.set()

    async def take(self) -> bool:
        """Take the lease if no one holds it; whether this process holds it now."""
        sent = self.clock()
        try:
            self.revision = await self.kv.create(KEY, self.holder)
        except KeyWrongLastSequenceError:
            return False
        self.renewed_at = sent
        log.info("leading: took the free lease (revision %d)", self.revision)
        return True

    async def try_take(self) -> bool:
        """``take``, NATS being away counting as no."""
        return await self._trying(self.take)

    async def wait_to_lead(self) -> None:
        """Stand by until this process holds the lease: take it when it is free, or when the revision last seen
        has not changed for a whole lease."""
        watcher = await retrying("watching the lease", lambda: self.kv.watch(KEY), transient=nats_unavailable,
                                 waiting_for="for NATS")
        seen, since, free = None, self.clock(), False
        try:
            while True:
                try:
                    update = await watcher.updates(timeout=WATCH_POLL)
                except nats.errors.TimeoutError:
                    update = None
                if update is not None:
                    seen, since = update.revision, self.clock()
                    free = update.operation in (KV_DEL, KV_PURGE)
                if (free or seen is None) and await self._trying(self.take):
                    return
                if seen is not None and not free and self.clock() - since >= self.seconds \
                        and await self._trying(lambda: self._take_over(seen)):
                    return
        finally:
            await watcher.stop()

    async def _take_over(self, seen: int) -> bool:
        sent = self.clock()
        try:
            self.revision = await self.kv.update(KEY, self.holder, last=seen)
        except KeyWrongLastSequenceError:
            return False  # renewed, or taken by another: the watch shows it
        self.renewed_at = sent
        log.info("leading: the lease was not renewed for %.0f s, took it over (revision %d)", self.seconds,
                 self.revision)
        return True

    async def _trying(self, attempt) -> bool:
        try:
            return await attempt()
        except Exception as error:
            if not nats_unavailable(error):
                raise
            log.warning("the lease cannot be read or taken now: %s", one_line(error))
            return False

    async def keep(self) -> None:
        """Renew the lease every lease/3 s until deposed or released (cancel it to stop)."""
        lapsed = False
        while not (self.deposed.is_set() or self.released):
            await asyncio.sleep(self.seconds / 3)
            sent = self.clock()
            try:
                self.revision = await self.kv.update(KEY, self.holder, last=self.revision)
            except KeyWrongLastSequenceError:
                try:
                    ours = await self._ours_after_all()
                except Exception as error:
                    if not nats_unavailable(error):
                        raise
                    continue  # who holds it cannot be told now: the next renewal asks again
                if ours:
                    continue  # a renewal whose answer was lost (NATS going away) had landed: renew from it
                self.depose("renewing the lease found it taken by another aggregator")
                return
            except Exception as error:
                if not nats_unavailable(error):
                    raise
                if not lapsed and not self.leading():
                    lapsed = True
                    log.warning("the lease lapsed, it cannot be renewed now (%s): writing nothing until it is",
                                one_line(error))
                continue
            self.renewed_at = sent
            if lapsed:
                lapsed = False
                log.info("the lease is renewed again: leading")

    async def _ours_after_all(self) -> bool:
        """Whether the key still names this process (a later revision than ours: one of our renewals landed though
        its answer never came); if so, that revision is ours."""
        try:
            entry = await self.kv.get(KEY)
        except (KeyNotFoundError, NotFoundError):
            return False
        if entry.value != self.holder:
            return False
        self.revision = entry.revision
        return True

    async def release(self) -> None:
        """Stop leading and free the lease, so a standby takes over at once (a graceful stop)."""
        self.released = True
        if self.revision is not None and not self.deposed.is_set():
            try:
                await self.kv.delete(KEY, last=self.revision)
            except (nats.errors.Error, APIError, TimeoutError) as error:
                log.warning("the lease could not be freed (a standby takes it once it lapses): %s", one_line(error))


class Fenced:
    """The bucket ``kv`` (named ``bucket``) as the holder of ``lease`` writes it: reads pass through and note each
    key's revision; each write checks the lease, then is conditional on that revision (``Deposed`` when NATS
    refuses it: another aggregator wrote the key since)."""

    def __init__(self, kv, js, bucket: str, lease: Lease):
        self.kv, self.js, self.bucket, self.lease = kv, js, bucket, lease
        self.revisions: dict[str, int] = {}

    async def get(self, key: str):
        entry = await self.kv.get(key)
        self.revisions[key] = entry.revision
        return entry

    async def keys(self, **kwargs) -> list[str]:
        return await self.kv.keys(**kwargs)

    async def status(self):
        """The bucket's status (``bucket_keys`` asks it when a listing comes back empty)."""
        return await self.kv.status()

    async def put(self, key: str, value: bytes) -> int:
        self.lease.check()
        last = self.revisions.get(key)
        try:
            revision = await (self.kv.create(key, value) if last is None else self.kv.update(key, value, last=last))
        except KeyWrongLastSequenceError:
            revision = await self._landed(key, value)
        self.revisions[key] = revision
        return revision

    async def _landed(self, key: str, value: bytes) -> int:
        """The revision of our own earlier attempt that landed (its reply was lost, then retried), or ``Deposed``."""
        try:
            entry = await self.kv.get(key)
        except (KeyNotFoundError, NotFoundError):
            entry = None
        if entry is not None and entry.value == value and self.lease.leading():
            return entry.revision
        self.lease.depose(f"NATS refused a write of {key}: another aggregator wrote it since")
        raise Deposed(f"NATS refused a write of {key}: another aggregator holds the lease")

    async def purge(self, key: str) -> None:
        self.lease.check()
        headers = {KV_OP: KV_PURGE, api.Header.ROLLUP: MSG_ROLLUP_SUBJECT}
        last = self.revisions.get(key)
        if last is not None:
            headers[api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE] = str(last)
        try:
            await self.js.publish(f"$KV.{self.bucket}.{key}", headers=headers)
        except APIError as error:
            if error.err_code not in WRONG_LAST:
                raise
            self.lease.depose(f"NATS refused the purge of {key}: another aggregator wrote it since")
            raise Deposed(f"NATS refused the purge of {key}: another aggregator holds the lease") from None
        self.revisions.pop(key, None)

    async def purge_deletes(self, **kwargs) -> None:
        self.lease.check()
        await self.kv.purge_deletes(**kwargs)


def leader_only(method):
    """A gRPC method that changes state, with one reply (``status_codes.answers`` wraps it): UNAVAILABLE on a
    standby (so a client tries another address), and when this aggregator loses the lease during the call."""
    @functools.wraps(method)
    async def checked(self, request, context):
        if not self.book.leading():
            raise Unavailable(STANDBY)
        try:
            return await method(self, request, context)
        except NotLeading as error:
            raise Unavailable("this aggregator lost the leader's lease during the call; try again, another address "
                              "if need be") from error
    return checked

