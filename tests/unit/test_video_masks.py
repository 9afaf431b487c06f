"""Tests for mfscore.formats.video_masks: the HDF5 block layout from metadata, and video frame counts."""

from __future__ import annotations

import os
import time

import cv2
import h5py
import numpy as np
import pytest

from mfscore.errors import InputFileError
from mfscore.formats.video_masks import (
    DEFAULT_MAX_VIDEO_ELEMENTS,
    MaskBlock,
    VideoMaskError,
    frame_count_of_video,
    read_video_mask_layout,
)


def h5(tmp_path, name="mask.hdf5", **blocks) -> str:
    """An HDF5 file with one ``<key>/masks`` dataset per keyword (``b7`` is group ``7``)."""
    path = str(tmp_path / name)
    with h5py.File(path, "w") as f:
        for key, data in blocks.items():
            f.create_dataset(f"{key.removeprefix('b')}/masks", data=data)
    return path


def refused(path, match, **kw):
    with pytest.raises(VideoMaskError, match=match) as info:
        read_video_mask_layout(path, **kw)
    assert info.value.path == path
    return info.value


def test_block_form(tmp_path):
    path = h5(tmp_path, b20=np.zeros((3, 4, 5), np.uint8), b0=np.full((10, 4, 5), 255, np.uint8))
    blocks = read_video_mask_layout(path)
    assert blocks == [MaskBlock(0, 10, 4, 5), MaskBlock(20, 3, 4, 5)]
    assert [b.stop for b in blocks] == [10, 23]


def test_adjacent_blocks_do_not_overlap(tmp_path):
    path = h5(tmp_path, b0=np.zeros((5, 2, 2), np.uint8), b5=np.zeros((1, 2, 2), np.uint8))
    assert [b.start for b in read_video_mask_layout(path)] == [0, 5]


def test_single_block_form(tmp_path):
    path = h5(tmp_path, masks=np.zeros((7, 3, 2), np.uint8))
    assert read_video_mask_layout(path) == [MaskBlock(0, 7, 3, 2)]


def test_empty_hdf5_has_no_blocks(tmp_path):
    path = h5(tmp_path)
    assert read_video_mask_layout(path) == []


@pytest.mark.parametrize("blocks, match", [
    ({"b0": np.zeros((2, 3, 4), np.uint16)}, "uint16 values; expected uint8"),
    ({"b0": np.zeros((2, 3, 4), np.float32)}, "expected uint8"),
    ({"b0": np.zeros((3, 4), np.uint8)}, r"shape \(3, 4\); expected \(frames, height, width\)"),
    ({"b0": np.zeros((1, 3, 4, 1), np.uint8)}, "expected \\(frames, height, width\\)"),
    ({"b0": np.zeros((0, 3, 4), np.uint8)}, "holds no frames"),
    ({"bstart": np.zeros((1, 3, 4), np.uint8)}, "'start' is not a start frame number"),
    ({"b-1": np.zeros((1, 3, 4), np.uint8)}, "not a start frame number"),
    ({"b0": np.zeros((5, 2, 2), np.uint8), "b4": np.zeros((1, 2, 2), np.uint8)},
     "block starting at frame 4 overlaps the one starting at frame 0"),
    ({"b3": np.zeros((1, 2, 2), np.uint8), "b03": np.zeros((1, 2, 2), np.uint8)}, "overlaps"),
    ({"masks": np.zeros((5, 2, 2), np.uint8), "b9": np.zeros((1, 2, 2), np.uint8)}, "mixes the single-block form"),
])
def test_bad_layouts(tmp_path, blocks, match):
    refused(h5(tmp_path, **blocks), match)


def test_group_without_masks(tmp_path):
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f.create_dataset("0/mask", data=np.zeros((1, 2, 2), np.uint8))
    refused(path, "the group '0' has no dataset 'masks'")


def test_top_level_dataset_instead_of_group(tmp_path):
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f.create_dataset("0", data=np.zeros((1, 2, 2), np.uint8))
    refused(path, "'0' is not a group holding a dataset 'masks'")


def test_external_link_is_refused(tmp_path):
    other = h5(tmp_path, "other.hdf5", b0=np.zeros((1, 2, 2), np.uint8))
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f["0"] = h5py.ExternalLink(other, "/0")
    refused(path, "'0' is a link")


def test_external_link_to_masks_dataset_is_refused(tmp_path):
    other = h5(tmp_path, "other.hdf5", b0=np.zeros((1, 2, 2), np.uint8))
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f.create_group("0")["masks"] = h5py.ExternalLink(other, "/0/masks")
    refused(path, "'0/masks' is a link")


def test_soft_link_is_refused(tmp_path):
    path = h5(tmp_path, b0=np.zeros((1, 2, 2), np.uint8))
    with h5py.File(path, "a") as f:
        f["5"] = h5py.SoftLink("/0")
    refused(path, "'5' is a link")


def test_virtual_dataset_is_refused(tmp_path):
    other = h5(tmp_path, "other.hdf5", b0=np.zeros((4, 2, 2), np.uint8))
    layout = h5py.VirtualLayout(shape=(4, 2, 2), dtype=np.uint8)
    layout[:] = h5py.VirtualSource(other, "0/masks", shape=(4, 2, 2))
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f.create_group("0").create_virtual_dataset("masks", layout)
    refused(path, "outside the file")


def test_external_raw_storage_is_refused(tmp_path):
    raw = tmp_path / "pixels.raw"
    raw.write_bytes(bytes(16))
    path = str(tmp_path / "m.hdf5")
    with h5py.File(path, "w") as f:
        f.create_dataset("0/masks", shape=(4, 2, 2), dtype=np.uint8, external=[(str(raw), 0, 16)])
    refused(path, "outside the file")


def test_huge_declared_dataset_is_refused_quickly(tmp_path):
    path = str(tmp_path / "huge.hdf5")
    with h5py.File(path, "w") as f:
        f.create_dataset("0/masks", shape=(10**6, 10**3, 10**3), dtype=np.uint8, chunks=(1, 1000, 1000))
    assert os.path.getsize(path) < 1_000_000
    assert 10**12 > DEFAULT_MAX_VIDEO_ELEMENTS
    started = time.perf_counter()
    refused(path, f"more than {DEFAULT_MAX_VIDEO_ELEMENTS} mask pixels")
    assert time.perf_counter() - started < 1


def test_element_limit_counts_all_blocks(tmp_path):
    path = h5(tmp_path, b0=np.zeros((2, 2, 2), np.uint8), b10=np.zeros((2, 2, 2), np.uint8))
    assert len(read_video_mask_layout(path, max_elements=16)) == 2
    refused(path, "more than 15 mask pixels", max_elements=15)


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.hdf5"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    refused(str(path), "not a readable HDF5 file")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.hdf5"
    path.write_bytes(b"")
    refused(str(path), "not a readable HDF5 file")


def test_truncated_file(tmp_path):
    path = h5(tmp_path, **{f"b{10 * i}": np.zeros((10, 8, 8), np.uint8) for i in range(20)})
    with open(path, "rb") as f:
        data = f.read()
    for keep in (len(data) // 2, 600, 100):
        cut = tmp_path / f"cut{keep}.hdf5"
        cut.write_bytes(data[:keep])
        refused(str(cut), "not a readable HDF5 file")


def test_missing_file_and_directory(tmp_path):
    error = refused(str(tmp_path / "absent.hdf5"), "does not exist")
    assert isinstance(error, InputFileError)
    assert str(tmp_path / "absent.hdf5") in str(error)
    refused(str(tmp_path), "not a regular file")


def test_frame_count_of_video(tmp_path):
    path = str(tmp_path / "probe.avi")
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 24))
    assert writer.isOpened()
    for i in range(12):
        writer.write(np.full((24, 32, 3), 20 * i, np.uint8))
    writer.release()
    assert frame_count_of_video(path) == 12


def test_frame_count_of_missing_or_bad_video(tmp_path):
    assert frame_count_of_video(str(tmp_path / "absent.mp4")) is None
    (tmp_path / "junk.mp4").write_bytes(b"not a video at all" * 10)
    assert frame_count_of_video(str(tmp_path / "junk.mp4")) is None
    assert frame_count_of_video(str(tmp_path)) is None


def test_the_validator_counts_frames_of_videos_inside_the_dataset_only(tmp_path):
    """A ProbeFileName leaving the dataset (absolute, '..') is never opened: its frame count is not known."""
    import pandas as pd

    from mfscore.validation.options import ValidatorOptions
    from mfscore.validation.probe_submission import _frame_count

    dataset, outside = tmp_path / "dataset", tmp_path / "outside.avi"
    (dataset / "indexes").mkdir(parents=True)
    (dataset / "probe").mkdir()
    for path in (dataset / "probe" / "inside.avi", outside):
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 24))
        for i in range(7):
            writer.write(np.full((24, 32, 3), 20 * i, np.uint8))
        writer.release()

    def counted(name):
        return _frame_count(pd.Series({"ProbeFileName": name, "FrameCount": ""}), str(dataset / "indexes"),
                            ValidatorOptions(kind="VSSD"))

    assert counted("probe/inside.avi") == 7
    assert counted("../outside.avi") is None
    assert counted(str(outside)) is None
