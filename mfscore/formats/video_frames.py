"""Streaming the frames of an HDF5 video mask, in order, a few at a time (docs/video.md §B.2).

A 1080p video of 1,200 frames is 2.5 GB per mask, so frames are never loaded as a volume: each block
is read in slabs of a few frames (whole HDF5 chunks, so a compressed chunk is decoded once); gzip
chunks are inflated on a thread, ahead of the frames being scored. Memory stays at a few frames
whatever the video's length.

Frames are numbered 1..frame_count; a block starting at 0-indexed frame ``s`` holds frames s+1 .. s+n
(its group name is ``s`` plus the frame base, see ``video_masks``). Frames no block covers are
yielded as ``None``: the caller knows what an uncovered frame means (all-zero reference, all-white
system).
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

from mfscore.formats.video_masks import MaskBlock, VideoMaskError

SLAB_BYTES = 1 << 20  # at most this much of one block is read at once
READ_AHEAD_CHUNKS = 2  # compressed chunks inflating ahead of the one being scored
_H5_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError, zlib.error)


def _slab_frames(dataset: h5py.Dataset) -> int:
    """Frames per read: whole chunks along the frame axis, within ``SLAB_BYTES``."""
    frame_bytes = max(1, int(np.prod(dataset.shape[1:])))
    budget = max(1, SLAB_BYTES // frame_bytes)
    chunk = dataset.chunks[0] if dataset.chunks else 1
    return max(chunk, budget - budget % chunk)


def _deflate_chunks_of_whole_frames(dataset: h5py.Dataset) -> bool:
    """Whether every chunk is whole frames compressed by deflate alone (the usual gzip mask layout)."""
    if dataset.chunks is None or tuple(dataset.chunks[1:]) != tuple(dataset.shape[1:]):
        return False
    plist = dataset.id.get_create_plist()
    return [plist.get_filter(i)[0] for i in range(plist.get_nfilters())] == [h5py.h5z.FILTER_DEFLATE]


def _inflated(raw: bytes, filter_mask: int, shape: tuple[int, ...], limit: int) -> np.ndarray:
    data = raw if filter_mask & 1 else zlib.decompress(raw, bufsize=int(np.prod(shape)))  # bit 0 set: stored raw
    frames = np.frombuffer(data, np.uint8)
    if frames.size != int(np.prod(shape)):
        raise ValueError(f"a chunk holds {frames.size} bytes, not {int(np.prod(shape))}")
    return frames.reshape(shape)[:limit]


def _deflate_slabs(dataset: h5py.Dataset, stop: int, pool: ThreadPoolExecutor) -> Iterator[tuple[int, np.ndarray]]:
    """(offset, frames) chunk by chunk: h5py fetches the compressed bytes, zlib inflates them on a thread.

    h5py holds the GIL while it decompresses, so scoring would wait for every read; zlib releases it,
    so the next chunks inflate while the current frames are scored.
    """
    chunk = dataset.chunks[0]
    pending: deque = deque()
    offsets = iter(range(0, stop, chunk))
    for offset in offsets:
        if dataset.id.get_chunk_info_by_coord((offset,) + (0,) * (dataset.ndim - 1)).byte_offset is None:
            pending.append((offset, None))  # never written: the dataset's fill value
        else:
            mask, raw = dataset.id.read_direct_chunk((offset,) + (0,) * (dataset.ndim - 1))
            limit = min(chunk, stop - offset)
            pending.append((offset, pool.submit(_inflated, raw, mask, dataset.chunks, limit)))
        while len(pending) > READ_AHEAD_CHUNKS or (pending and offset + chunk >= stop):
            first, future = pending.popleft()
            yield first, (dataset[first:min(first + chunk, stop)] if future is None else future.result())


def _slabs(path: str, blocks: list[MaskBlock], last_frame: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first frame number, frames) for every block, up to ``last_frame``."""
    with h5py.File(path, "r") as f, ThreadPoolExecutor(max_workers=1) as pool:
        for block in blocks:
            dataset = f[f"{block.group}/masks"]
            stop = max(0, min(block.frames, last_frame - block.start))
            if _deflate_chunks_of_whole_frames(dataset):
                for offset, frames in _deflate_slabs(dataset, stop, pool):
                    yield block.start + offset + 1, frames
                continue
            step = _slab_frames(dataset)
            for offset in range(0, stop, step):
                yield block.start + offset + 1, dataset[offset:min(offset + step, stop)]


def video_frames(path: str | None, blocks: list[MaskBlock], frame_count: int) -> Iterator[np.ndarray | None]:
    """Frames 1..frame_count of the mask, ``None`` for uncovered ones; ``path`` None: all uncovered.

    ``blocks`` come from ``read_video_mask_layout``; frames past ``frame_count`` are not read.
    """
    frame = 1
    try:
        for first, slab in _slabs(path, blocks, frame_count) if path and blocks else ():
            for _ in range(frame, first):
                yield None
            for i in range(slab.shape[0]):
                yield slab[i]
            frame = first + slab.shape[0]
    except _H5_ERRORS as exc:
        raise VideoMaskError(f"the video mask could not be read ({exc})", path=path) from None
    for _ in range(frame, frame_count + 1):
        yield None
