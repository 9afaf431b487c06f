"""``video_frames`` (mfscore/formats/video_frames.py): frames 1..frame_count of an HDF5 mask, streamed.

Each layout is written with h5py directly and the expected frames are assembled here, independently
of the reader and of the fixture generator: group ``s`` with n frames holds frames s+1 .. s+n
(0-indexed group names, docs/video.md §B.2); frames no block covers are ``None``.

The reader has two paths: deflate-only chunks of whole frames are fetched raw and inflated by zlib on a
thread (read-ahead), everything else (contiguous, shuffle+gzip, lzf, chunks of part of a frame) is read
through h5py in slabs. Both are exercised.
"""

from __future__ import annotations

import tracemalloc
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest

from mfscore.formats.video_frames import READ_AHEAD_CHUNKS, SLAB_BYTES, video_frames
from mfscore.formats.video_masks import VideoMaskError, read_video_mask_layout


def write(path, blocks: dict, *, single: bool = False, chunk: int | None = None, compression: str | None = None,
          shuffle: bool = False, part: bool = False):
    """An HDF5 mask: ``{start: uint8 array}``; ``single`` writes ``masks/masks``; ``chunk`` frames per chunk
    (``part``: chunks hold the top half of the rows only)."""
    with h5py.File(path, "w") as f:
        for start, data in blocks.items():
            options = {}
            if chunk is not None:
                rows = max(1, data.shape[1] // 2) if part else data.shape[1]
                options = {"chunks": (min(chunk, len(data)), rows, *data.shape[2:]), "compression": compression,
                           "shuffle": shuffle}
            f.create_dataset("masks/masks" if single else f"{start}/masks", data=data, **options)
    return str(path)


def expected_frames(blocks: dict, frame_count: int) -> list[np.ndarray | None]:
    """Frame f (1-based) of the video: row f-1-s of the block starting at s, else None."""
    frames: list[np.ndarray | None] = [None] * frame_count
    for start, data in blocks.items():
        for i in range(len(data)):
            if start + i < frame_count:
                frames[start + i] = data[i]
    return frames


def random_blocks(rng, spec: dict[int, int], shape: tuple[int, ...]) -> dict[int, np.ndarray]:
    """``{start: frames}`` -> random uint8 blocks of ``shape`` frames."""
    return {start: rng.integers(0, 256, (n, *shape), dtype=np.uint8) for start, n in spec.items()}


def assert_streams(path, blocks, frame_count, *, layers=False):
    layout = read_video_mask_layout(path, layers=layers)
    got = list(video_frames(path, layout, frame_count))
    want = expected_frames(blocks, frame_count)
    assert len(got) == frame_count
    for number, (g, w) in enumerate(zip(got, want), start=1):
        if w is None:
            assert g is None, f"frame {number} is not covered by any block"
        else:
            assert g is not None, f"frame {number} is covered"
            assert g.dtype == np.uint8 and g.shape == w.shape
            assert np.array_equal(g, w), f"frame {number} differs"
    return got


# --------------------------------------------------------------------------------------------
# Layouts


CASES = {
    # name: (blocks {start: frames}, frame_count)
    "gaps": ({0: 2, 5: 3, 12: 1, 20: 4}, 30),          # a gap before, between and after blocks
    "late-first-block": ({4: 3, 9: 2}, 12),
    "adjacent": ({0: 3, 3: 3, 6: 2}, 8),                 # blocks that touch, no gap
    "past-the-end": ({2: 3, 8: 10}, 12),                 # the last block runs 6 frames past frame_count
    "count-beyond-blocks": ({0: 2, 4: 2}, 25),           # frame_count larger than every block
    "block-starting-at-the-end": ({0: 2, 10: 5}, 10),    # a block wholly past the end
}


STORAGE = {  # name: write() options
    "contiguous": {},
    "gzip-chunk-1": {"chunk": 1, "compression": "gzip"},      # read-ahead path
    "gzip-chunk-3": {"chunk": 3, "compression": "gzip"},      # read-ahead path, chunks cut at the end
    "shuffle-gzip-chunk-2": {"chunk": 2, "compression": "gzip", "shuffle": True},  # h5py path
    "lzf-chunk-3": {"chunk": 3, "compression": "lzf"},        # h5py path
    "gzip-half-frames": {"chunk": 2, "compression": "gzip", "part": True},  # h5py path
    "chunked-uncompressed": {"chunk": 3},                     # h5py path
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("storage", STORAGE)
def test_blocks_stream_in_order(tmp_path, name, storage):
    spec, frame_count = CASES[name]
    blocks = random_blocks(np.random.default_rng(len(name)), spec, (5, 7))
    options = STORAGE[storage]
    path = write(tmp_path / "m.hdf5", blocks, **options)
    with h5py.File(path) as f:
        for start, data in blocks.items():
            dataset = f[f"{start}/masks"]
            assert dataset.compression == options.get("compression")
            assert dataset.chunks == (None if not options else
                                      (min(options["chunk"], len(data)), 2 if options.get("part") else 5, 7))
    assert_streams(path, blocks, frame_count)


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_single_block_form(tmp_path, chunk):
    """``masks/masks`` starts at frame 1; frames past its end are None, frames past frame_count are not read."""
    data = np.random.default_rng(1).integers(0, 256, (7, 4, 6), dtype=np.uint8)
    path = write(tmp_path / "m.hdf5", {0: data}, single=True, chunk=chunk, compression=chunk and "gzip")
    assert_streams(path, {0: data}, 10)
    assert_streams(path, {0: data}, 5)  # the block is longer than the video


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_layered_reference_blocks(tmp_path, chunk):
    """A reference's (frames, H, W, layers) uint8 blocks stream as (H, W, layers) frames."""
    blocks = random_blocks(np.random.default_rng(2), {1: 4, 8: 5}, (3, 5, 2))
    path = write(tmp_path / "ref.hdf5", blocks, chunk=chunk, compression=chunk and "gzip")
    got = assert_streams(path, blocks, 11, layers=True)
    assert got[2].shape == (3, 5, 2)


def test_no_blocks_and_no_path(tmp_path):
    path = write(tmp_path / "empty.hdf5", {})
    assert list(video_frames(path, read_video_mask_layout(path), 4)) == [None] * 4
    assert list(video_frames(None, [], 3)) == [None] * 3  # no mask at all: every frame uncovered
    assert list(video_frames(path, [], 0)) == []


def test_slabs_follow_chunks(tmp_path):
    """Many frames in many chunks of 3 (more than one slab), still frame by frame in order."""
    frame_bytes = 64 * 64
    n = 3 * (SLAB_BYTES // frame_bytes) + 5
    blocks = {2: np.random.default_rng(3).integers(0, 256, (n, 64, 64), dtype=np.uint8)}
    path = write(tmp_path / "m.hdf5", blocks, chunk=3, compression="gzip")
    assert_streams(path, blocks, n + 4)
    assert_streams(path, blocks, n // 2)


def chunked_dataset(path, frames: int, chunk: int, fill: int = 0):
    """An empty gzip block ``0/masks`` of ``frames`` 4x6 frames, ``chunk`` frames per chunk."""
    f = h5py.File(path, "w")
    return f, f.create_dataset("0/masks", shape=(frames, 4, 6), dtype=np.uint8, chunks=(chunk, 4, 6),
                               compression="gzip", fillvalue=fill)


@pytest.mark.parametrize("chunk", [1, 2])
def test_chunks_never_written_read_as_the_fill_value(tmp_path, chunk):
    """A block whose chunks are partly unallocated: those frames are the dataset's fill value."""
    path = str(tmp_path / "m.hdf5")
    f, dataset = chunked_dataset(path, 7, chunk, fill=255)
    with f:
        dataset[0:2] = 9
        dataset[5] = 3
        volume = dataset[:]
    assert (volume[2:4] == 255).all()
    got = list(video_frames(path, read_video_mask_layout(path), 9))
    assert [g is None for g in got] == [False] * 7 + [True] * 2
    assert np.array_equal(np.stack(got[:7]), volume)


def test_chunk_stored_raw(tmp_path):
    """A chunk whose deflate filter was skipped (filter mask bit 0) holds its bytes as they are."""
    path = str(tmp_path / "m.hdf5")
    frames = np.arange(3 * 24, dtype=np.uint8).reshape(3, 4, 6)
    f, dataset = chunked_dataset(path, 3, 1)
    with f:
        dataset[0] = frames[0]
        dataset.id.write_direct_chunk((1, 0, 0), frames[1].tobytes(), filter_mask=1)
        dataset[2] = frames[2]
        assert np.array_equal(dataset[:], frames)  # what HDF5 itself reads
    got = list(video_frames(path, read_video_mask_layout(path), 3))
    assert np.array_equal(np.stack(got), frames)


@pytest.mark.parametrize("payload, match", [
    (lambda: b"\x78\x9c" + b"\xff" * 30, "could not be read"),                   # not a deflate stream
    (lambda: zlib.compress(bytes(23)), "could not be read"),                       # one byte short of a frame
    (lambda: zlib.compress(bytes(25)), "could not be read"),                       # one byte too many
])
def test_bad_chunk_is_a_video_mask_error(tmp_path, payload, match):
    """Metadata read fine, but one chunk's data is wrong: one VideoMaskError naming the file."""
    path = str(tmp_path / "m.hdf5")
    f, dataset = chunked_dataset(path, 4, 1)
    with f:
        dataset[:] = 7
        dataset.id.write_direct_chunk((2, 0, 0), payload(), filter_mask=0)
    layout = read_video_mask_layout(path)
    with pytest.raises(VideoMaskError, match=match) as info:
        list(video_frames(path, layout, 4))
    assert info.value.path == path


def test_corrupt_file_bytes_are_a_video_mask_error(tmp_path):
    data = np.random.default_rng(4).integers(0, 256, (4, 32, 32), dtype=np.uint8)
    path = write(tmp_path / "m.hdf5", {0: data}, chunk=1, compression="gzip")
    layout = read_video_mask_layout(path)
    with h5py.File(path) as f:
        offset = f["0/masks"].id.get_chunk_info(1).byte_offset
    raw = bytearray(Path(path).read_bytes())
    raw[offset:offset + 64] = b"\xff" * 64
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(VideoMaskError) as info:
        list(video_frames(path, layout, 4))
    assert info.value.path == path


def test_stopping_early(tmp_path):
    """A consumer may stop after a few frames (the read-ahead thread is shut down with the generator)."""
    blocks = random_blocks(np.random.default_rng(6), {0: 40}, (8, 8))
    path = write(tmp_path / "m.hdf5", blocks, chunk=1, compression="gzip")
    stream = video_frames(path, read_video_mask_layout(path), 40)
    first = [next(stream) for _ in range(3)]
    stream.close()
    assert all(np.array_equal(a, b) for a, b in zip(first, blocks[0][:3]))


# --------------------------------------------------------------------------------------------
# Memory


@pytest.mark.parametrize("shuffle", [False, True], ids=["gzip-read-ahead", "shuffle-gzip-h5py"])
def test_memory_stays_at_a_few_frames(tmp_path, shuffle):
    """200 frames of 256x256 (a 13.1 MB volume), gzip, one frame per chunk, streamed in one block.

    Plain gzip chunks are inflated a few chunks ahead (``READ_AHEAD_CHUNKS`` = 2): the chunks in flight,
    the frame in the caller's hands and zlib's output buffer, under READ_AHEAD_CHUNKS + 6 frames (0.5 MB).
    Other layouts are read through h5py one slab (``SLAB_BYTES``, 1 MiB = 16 such frames) at a time, and
    while the next slab is read the previous one is still alive (the frame in the caller's hands is a
    view of it): under two slabs plus 4 frames (2.4 MB). Both are under a fifth of the volume (the peak
    of Python/NumPy allocations: tracemalloc sees NumPy's buffers and zlib's bytes); reading the block
    whole, or keeping the slabs or the inflated chunks, would show the full 13 MB. Neither bound grows
    with the video's length. HDF5's own chunk cache is C memory tracemalloc does not see; h5py bounds it
    per dataset (1 MiB).
    """
    frames, side = 200, 256
    frame_bytes = side * side
    bound = (2 * SLAB_BYTES + 4 * frame_bytes) if shuffle else (READ_AHEAD_CHUNKS + 6) * frame_bytes
    assert bound < frames * frame_bytes / 5, "the reader's buffers are too large for this test to mean much"
    rng = np.random.default_rng(5)
    volume = np.full((frames, side, side), 255, np.uint8)
    volume[:, 100:150, 80:200] = rng.integers(0, 255, (frames, 1, 120), dtype=np.uint8)  # compressible
    path = write(tmp_path / "long.hdf5", {0: volume}, chunk=1, compression="gzip", shuffle=shuffle)
    sums = volume.reshape(frames, -1).sum(axis=1, dtype=np.int64)
    del volume
    layout = read_video_mask_layout(path)

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        seen = 0
        for i, frame in enumerate(video_frames(path, layout, frames)):
            assert int(frame.sum(dtype=np.int64)) == sums[i]
            seen += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == frames
    assert peak < bound, f"peak {peak / 1e6:.2f} MB for a {frames * frame_bytes / 1e6:.1f} MB volume"


# --------------------------------------------------------------------------------------------
# The layout's fourth axis


def test_layers_option(tmp_path):
    four = write(tmp_path / "four.hdf5", {0: np.zeros((2, 3, 4, 2), np.uint8)})
    five = write(tmp_path / "five.hdf5", {0: np.zeros((2, 3, 4, 2, 1), np.uint8)})
    blocks = read_video_mask_layout(four, layers=True)
    assert [(b.frames, b.height, b.width, b.layers) for b in blocks] == [(2, 3, 4, 2)]
    with pytest.raises(VideoMaskError, match=r"shape \(2, 3, 4, 2, 1\)"):
        read_video_mask_layout(five, layers=True)
    with pytest.raises(VideoMaskError, match=r"shape \(2, 3, 4, 2\); expected \(frames, height, width\)"):
        read_video_mask_layout(four)
