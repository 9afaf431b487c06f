"""Masks decoded once for the jobs of a process that read the same file.

With ``-qm`` a probe is scored under each manipulation query, one job each, and every job decoded its
two masks again (a colour reference of 1024x768 about 7 ms, most of a job). The planner counts the
jobs that read the same masks (``MaskJob.readers``) and puts them next to each other
(``tasks/mask.py``); a mask read by several jobs is kept decoded here until the last of them has read
it: read-only arrays, at most ``budget`` bytes in all, each file decoded by one thread at a time (a
second job of the probe waits for the first's decode instead of doing it too). A mask read by one
job is decoded and dropped as before, so a single-query run holds no more memory than
``job_bytes_per_pixel`` says. A file is known by its path and its ``stat`` (device, inode, size,
modification time): a file changed on disk is read again. Masks given in memory (a cluster scorer's
``ImageBytes``) are kept under their ``identity``, the content-addressed key of the object they were fetched
from (a job names only objects of its own run's manifest), and not kept without one.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from mfscore.formats.images import ImageBytes, ImageSource


class DecodedMasks:
    """Decoded images by file, each kept until its readers have read it, within ``budget`` bytes (the least
    recently used dropped first)."""

    def __init__(self, budget: int):
        self.budget = budget
        self._kept: OrderedDict[Hashable, tuple[np.ndarray, int]] = OrderedDict()  # the image, reads still to come
        self._bytes = 0
        self._decoding: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def read(self, source: ImageSource, how: Hashable, decode: Callable[[], np.ndarray], readers: int) -> np.ndarray:
        """``decode()``'s image of ``source``, one of ``readers`` reads of it (read-only when kept); ``how`` names
        the reader and its options."""
        key = self._key(source, how) if readers > 1 else None
        if key is None:
            return decode()
        with self._lock:
            image = self._taken(key)
            if image is not None:
                return image
            pending = self._decoding.get(key)
            if pending is None:
                self._decoding[key] = threading.Event()
        if pending is not None:  # another thread decodes this file: wait, then take its image
            pending.wait()
            with self._lock:
                image = self._taken(key)
            return image if image is not None else decode()
        try:
            image = decode()
            self._keep(key, image, readers - 1)
            return image
        finally:
            with self._lock:
                self._decoding.pop(key).set()

    @staticmethod
    def _key(source: ImageSource, how: Hashable) -> Hashable | None:
        """What names the decoded image for good: a file's path and ``stat``, bytes' identity; None for neither."""
        if isinstance(source, ImageBytes):
            return ("bytes", source.identity, how) if source.identity and source.data is not None else None
        try:
            info = os.stat(source)
        except OSError:
            return None  # the reader words the error
        return ("file", source, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, how)

    def _taken(self, key: Hashable) -> np.ndarray | None:
        """The kept image, one read fewer to come (dropped after the last); the caller holds the lock."""
        if key not in self._kept:
            return None
        image, left = self._kept.pop(key)
        if left > 1:
            self._kept[key] = (image, left - 1)
        else:
            self._bytes -= image.nbytes
        return image

    def _keep(self, key: Hashable, image: np.ndarray, reads: int) -> None:
        if image.nbytes > self.budget:
            return
        image.flags.writeable = False
        with self._lock:
            self._kept[key] = (image, reads)
            self._bytes += image.nbytes
            while self._bytes > self.budget:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._bytes -= dropped.nbytes
