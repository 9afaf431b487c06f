"""Streaming the frames of an HDF5 video mask, in order, a few at a time (video.md §B.2).

A 1080p video of 1,200 frames is 2.5 GB per mask, so frames are never loaded as a volume: each block
is read in slabs of a few frames (whole HDF5 chunks, so a compressed chunk is decoded once), and
a background thread reads the next slab while the caller scores the current one. Memory stays at
a few frames whatever the video's length.

Frames are numbered 1..frame_count; a block in group ``s`` holds frames s+1 .. s+n (group names are
0-indexed, see ``video_masks``). Frames no block covers are yielded as ``None``: the caller knows
what an uncovered frame means (all-zero reference, all-white system).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import h5py
import numpy as np

from mfscore.formats.video_masks import MaskBlock, VideoMaskError

SLAB_BYTES = 16 << 20  # at most this much of one block is read at once (and one more slab is in flight)
_H5_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError)


def _dataset_name(block: MaskBlock, single: bool) -> str:
    return "masks/masks" if single else f"{block.start}/masks"


def _slab_frames(dataset: h5py.Dataset) -> int:
    """Frames per read: whole chunks along the frame axis, within ``SLAB_BYTES``."""
    frame_bytes = max(1, int(np.prod(dataset.shape[1:])))
    budget = max(1, SLAB_BYTES // frame_bytes)
    chunk = dataset.chunks[0] if dataset.chunks else 1
    return max(chunk, budget - budget % chunk)


def _slabs(path: str, blocks: list[MaskBlock], last_frame: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first frame number, frames) for every block, up to ``last_frame``."""
    with h5py.File(path, "r") as f:
        single = "masks" in f and isinstance(f["masks"], h5py.Group)
        for block in blocks:
            dataset = f[_dataset_name(block, single)]
            step = _slab_frames(dataset)
            stop = min(block.frames, last_frame - block.start)
            for offset in range(0, max(0, stop), step):
                yield block.start + offset + 1, dataset[offset:min(offset + step, stop)]


class _Prefetch:
    """Runs ``_slabs`` on a thread, one slab ahead of the consumer."""

    _DONE = object()

    def __init__(self, path: str, blocks: list[MaskBlock], last_frame: int):
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._path = path
        self._thread = threading.Thread(target=self._run, args=(path, blocks, last_frame), daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, path: str, blocks: list[MaskBlock], last_frame: int) -> None:
        try:
            for slab in _slabs(path, blocks, last_frame):
                if not self._put(slab):
                    return
        except _H5_ERRORS as exc:
            self._put(VideoMaskError(f"the video mask could not be read ({exc})", path=path))
            return
        self._put(self._DONE)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            if isinstance(item, VideoMaskError):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def video_frames(path: str | None, blocks: list[MaskBlock], frame_count: int) -> Iterator[np.ndarray | None]:
    """Frames 1..frame_count of the mask, ``None`` for uncovered ones; ``path`` None: all uncovered.

    ``blocks`` come from ``read_video_mask_layout``; frames past ``frame_count`` are not read.
    """
    prefetch = _Prefetch(path, blocks, frame_count) if path and blocks else None
    try:
        frame = 1
        for first, slab in prefetch or ():
            for _ in range(frame, first):
                yield None
            for i in range(slab.shape[0]):
                yield slab[i]
            frame = first + slab.shape[0]
        for _ in range(frame, frame_count + 1):
            yield None
    finally:
        if prefetch is not None:
            prefetch.close()
