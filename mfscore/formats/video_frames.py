"""Streaming the frames of an HDF5 video mask, in order, a few at a time (video.md §B.2).

A 1080p video of 1,200 frames is 2.5 GB per mask, so frames are never loaded as a volume: each block
is read in slabs of a few frames (whole HDF5 chunks, so a compressed chunk is decoded once).
Memory stays at a few frames whatever the video's length.

Frames are numbered 1..frame_count; a block in group ``s`` holds frames s+1 .. s+n (group names are
0-indexed, see ``video_masks``). Frames no block covers are yielded as ``None``: the caller knows
what an uncovered frame means (all-zero reference, all-white system).
"""

from __future__ import annotations

from collections.abc import Iterator

import h5py
import numpy as np

from mfscore.formats.video_masks import MaskBlock, VideoMaskError

SLAB_BYTES = 4 << 20  # at most this much of one block is read at once
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


def video_frames(path: str | None, blocks: list[MaskBlock], frame_count: int) -> Iterator[np.ndarray | None]:
    """Frames 1..frame_count of the mask, ``None`` for uncovered ones; ``path`` None: all uncovered.

    ``blocks`` come from ``read_video_mask_layout``; frames past ``frame_count`` are not read. Reads
    are synchronous: h5py holds the GIL while it decompresses, so a reader thread only slows scoring.
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
