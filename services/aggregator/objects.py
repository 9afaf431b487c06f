"""Every caller's content-addressed objects (docs/datasets.md): ``objects/<role>/<name>/<sha256>``, stored once per
content and namespace, found only in the caller's own namespace, deleted once nothing names them.

What names an object: a dataset of its namespace (its files), and a run whose input manifest names it (the manifest
lives as long as the run). No count is kept that could drift: when a run or a dataset is deleted, the objects it
named are collected (``collect``), each deleted unless a remaining dataset or run names it, which is computed from
the manifests then (``named``: the files of the namespace's datasets, and the manifest of every run its owner made
or that names a dataset: a listing and a read per record, about ten records per submitted run). The hourly sweep
deletes what nothing names and was not written for a day (``sweep``): objects uploaded for a dataset never
created, or that a collection could not delete.

One aggregator serves a bucket, so a lock per namespace keeps a collection apart from what makes an object named
(a run's manifest recorded, a dataset created); an object an upload stream stored but has not recorded yet is
pinned, and no collection deletes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from mfscore.errors import MfscoreError
from mfscore.services.aggregator.datasets import DatasetBook, owner_space
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common import input_manifest
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import OBJECTS, namespace, object_key, objects_prefix

ORPHAN_SECONDS = 86400.0  # an object nothing names is kept this long after it was written (an upload under way)
LOOKUP_THREADS = 16
REMEMBERED_RUNS = 256  # runs whose lacking objects are remembered between DeclareInputs and UploadInputs
log = logging.getLogger("mfscore.aggregator")


def space_of_key(key: str) -> str:
    """The namespace of the object ``key`` (``objects/<role>/<name>/<sha256>``)."""
    return key[len(OBJECTS):].rsplit("/", 1)[0]


def run_space(status) -> str | None:
    """The namespace of a run's owner; None for an owner whose name cannot be one (it uploads nothing)."""
    try:
        return namespace(status.owner_role or "client", status.owner)
    except MfscoreError:
        return None


class Objects:
    def __init__(self, store: ObjectStore, book: RunBook, datasets: DatasetBook):
        self.store, self.book, self.datasets = store, book, datasets
        self._locks: dict[str, asyncio.Lock] = {}
        self._pinned: Counter[str] = Counter()
        self._lacking: dict[str, set[str]] = {}  # run -> objects its DeclareInputs found lacking, not written since

    def lock(self, space: str) -> asyncio.Lock:
        """Held while what names the objects of ``space`` changes or is counted."""
        return self._locks.setdefault(space, asyncio.Lock())

    @contextlib.contextmanager
    def pinning(self):
        """``pin(key)``: no collection deletes ``key`` until the block ends (an object stored, not yet recorded)."""
        pinned: list[str] = []

        def pin(key: str) -> None:
            self._pinned[key] += 1
            pinned.append(key)

        try:
            yield pin
        finally:
            for key in pinned:
                self._pinned[key] -= 1
                if not self._pinned[key]:
                    del self._pinned[key]

    def held(self, space: str, wanted: dict[str, int]) -> set[str]:
        """The SHA-256s of ``wanted`` (SHA-256 -> size) whose object is in ``space`` with that size (blocking).

        A namespace of no more objects than are wanted (a new caller's, or one that uploads about as much each time)
        is listed, a request per thousand objects; a larger one is asked object by object (``held_one_by_one``)."""
        if not wanted:
            return set()
        listed = self.store.sizes_under(objects_prefix(space), limit=len(wanted))
        if listed is None:
            return self.held_one_by_one(space, wanted)
        return {sha256 for sha256, size in wanted.items() if listed.get(object_key(space, sha256)) == size}

    def held_one_by_one(self, space: str, wanted: dict[str, int]) -> set[str]:
        """``held``, with a HEAD request per object wanted."""
        digests = sorted(wanted)
        with ThreadPoolExecutor(LOOKUP_THREADS) as pool:
            sizes = list(pool.map(lambda sha256: self.store.size_of(object_key(space, sha256)), digests))
        return {sha256 for sha256, size in zip(digests, sizes) if size is not None and size == wanted[sha256]}

    def lacking(self, run_id: str, keys: Iterable[str]) -> None:
        """Remember that DeclareInputs found none of ``keys`` for the run ``run_id``: its upload writes them without
        asking S3 again (``put``). Only the latest REMEMBERED_RUNS runs are remembered; a run forgotten, or an
        aggregator restarted, asks again."""
        keys = set(keys)
        if not keys:
            return
        self._lacking.setdefault(run_id, set()).update(keys)
        while len(self._lacking) > REMEMBERED_RUNS:
            del self._lacking[next(iter(self._lacking))]

    def take_lacking(self, run_id: str, key: str) -> bool:
        """Whether DeclareInputs found ``key`` lacking for ``run_id`` and it was not taken since; forgets it, so a
        stream sent again asks S3 (call from the event loop)."""
        keys = self._lacking.get(run_id)
        if keys is None or key not in keys:
            return False
        keys.discard(key)
        if not keys:
            del self._lacking[run_id]
        return True

    def put(self, key: str, data: BinaryIO, size: int, sha256: str, *, lacking: bool = False) -> bool:
        """Store the bytes ``data``, checked to have the SHA-256 ``sha256`` that ``key`` names, as the object ``key``
        unless it is there already (blocking); whether they were written. The request is signed with that digest,
        not one computed again. One known ``lacking`` (``take_lacking``) is written without asking S3: a
        content-addressed object written meanwhile holds these very bytes, so writing them again changes nothing."""
        if not lacking and self.store.size_of(key) == size:
            return False
        self.store.put_stream(key, data, size, sha256=sha256)
        return True

    async def named(self, space: str) -> set[str]:
        """The objects of ``space`` that a dataset or a run names now."""
        keys = set()
        for dataset in self.datasets.owned_by(space):
            keys |= {object_key(space, file.sha256) for file in await self.datasets.files(dataset)}
        for entry in list(self.book.runs.values()):
            if entry.spec.dataset or run_space(entry.status) == space:
                inputs = await asyncio.to_thread(input_manifest.read, self.store, entry.spec.run_id)
                keys |= input_manifest.keys(inputs)
        prefix = objects_prefix(space)
        return {key for key in keys if key.startswith(prefix)}

    async def collect(self, keys: Iterable[str]) -> int:
        """Delete the objects of ``keys`` that nothing names any more (what a deleted run or dataset named); how
        many. Raises (S3 unavailable) with what is left to the sweep."""
        by_space: dict[str, set[str]] = {}
        for key in keys:
            if key.startswith(OBJECTS):
                by_space.setdefault(space_of_key(key), set()).add(key)
        deleted = 0
        for space, candidates in sorted(by_space.items()):
            async with self.lock(space):
                named = await self.named(space)
                doomed = sorted(key for key in candidates if key not in named and key not in self._pinned)
                deleted += await asyncio.to_thread(self.store.delete_keys, doomed)
            if doomed:
                log.info("deleted %d object(s) of %s that nothing names any more", len(doomed), space)
        return deleted

    async def sweep(self, now: float) -> int:
        """Delete the objects nothing names and nothing wrote for ORPHAN_SECONDS; how many."""
        deleted = 0
        for role in await asyncio.to_thread(self.store.folders, OBJECTS):
            for folder in await asyncio.to_thread(self.store.folders, role):
                space = folder[len(OBJECTS):].rstrip("/")
                async with self.lock(space):
                    listed = await asyncio.to_thread(self.store.list_objects, folder)
                    old = [key for key, _, written in listed if written < now - ORPHAN_SECONDS
                           and key not in self._pinned]
                    if not old:
                        continue
                    named = await self.named(space)
                    doomed = [key for key in old if key not in named]
                    deleted += await asyncio.to_thread(self.store.delete_keys, doomed)
                if doomed:
                    log.info("deleted %d object(s) of %s that nothing names", len(doomed), space)
        return deleted


def dataset_keys(dataset, files) -> set[str]:
    """The objects a dataset's files are."""
    space = owner_space(dataset)
    return {object_key(space, file.sha256) for file in files}
