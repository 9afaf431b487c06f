"""The layout of a video mask (HDF5), read from metadata only, and the frame count of a video.

Layout (docs/video.md §B.2, MFC2019 plan §5.1.2.2): top-level groups named by a block's start frame
(decimal digits), each holding a uint8 dataset ``masks`` of shape (frames, height, width); or the
single-block form ``masks/masks``, starting at frame 0. A reference mask may add a fourth axis of
bit-plane layers, (frames, height, width, layers).

Frame convention: by default a group name is the plan's **0-indexed** frame number, so frame f of
the file (0-indexed) is frame f + 1 of the temporal intervals, which are 1-based within
[1, FrameCount]. A block starting at group ``s`` with n frames thus covers interval frames s+1 .. s+n.
MediScore's ReadMe and mask generator name blocks from frame 1 instead (docs/video.md §B.2,
frame numbering); ``frame_base`` 1 reads such files, group ``b`` then starting at 0-indexed
frame b − 1. The single-block form starts at the first frame whatever the numbering.

The file is untrusted: only hard links, contiguous or chunked storage inside the file, and a total
size bounded before any read are accepted; every failure becomes a ``VideoMaskError`` naming it.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from dataclasses import dataclass, field

import cv2
import h5py
import numpy as np

from mfscore.errors import InputFileError, MissingFileError
from mfscore.limits import DEFAULT_MAX_VIDEO_ELEMENTS

# The total pixel count a mask may declare.  2**36 (about 6.9e10, 64 GiB of uint8) covers a 1080p
# video of 33,000 frames (18 minutes at 30 fps), a long forensics probe, while an absurd declared
# shape (a few bytes of metadata, e.g. 10**12 pixels) is refused before the scorer tries to stream it.

_START = re.compile(r"[0-9]{1,18}")
_CONVENTION = {0: "the MFC2019 plan's convention", 1: "MediScore's convention"}
_H5_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError)  # what h5py raises on bad files


class _Bad(Exception):
    """A layout problem; ``read_video_mask_layout`` turns it into a VideoMaskError naming the file."""


class _BeforeFirstFrame(_Bad):
    """A block name below the frame base: the block would start before the video."""


class VideoMaskError(InputFileError):
    """A video mask is missing, not HDF5, or laid out other than as blocks of uint8 frames."""


class VideoMaskFramesError(VideoMaskError):
    """A block name places the block before the video's first frame (the numbering may be the other one)."""


class MissingVideoMaskError(VideoMaskError, MissingFileError):
    """A video mask that does not exist (a ``VideoMaskError`` and a ``FileNotFoundError``)."""


@dataclass(frozen=True)
class MaskBlock:
    """A run of mask frames; ``start`` is 0-indexed (the group name less the frame base)."""

    start: int
    frames: int
    height: int
    width: int
    layers: int = 0  # 0: (frames, height, width); n: a fourth axis of n bit-plane layers
    group: str = field(default="", compare=False)  # the HDF5 group holding the block's dataset ``masks``

    @property
    def stop(self) -> int:
        """The 0-indexed frame after the block (exclusive)."""
        return self.start + self.frames


def _hard_member(group: h5py.Group, name: str, what: str) -> h5py.Group | h5py.Dataset:
    """``group[name]``, refusing soft and external links (they could alias blocks or read other files)."""
    if not isinstance(group.get(name, getlink=True), h5py.HardLink):
        raise _Bad(f"{what} is a link; only plain groups and datasets are accepted")
    return group[name]


def _block(f: h5py.File, name: str, start: int, layers: bool) -> MaskBlock:
    group = _hard_member(f, name, f"'{name}'")
    if not isinstance(group, h5py.Group):
        raise _Bad(f"'{name}' is not a group holding a dataset 'masks'")
    if group.get("masks", getlink=True) is None:
        raise _Bad(f"the group '{name}' has no dataset 'masks'")
    ds = _hard_member(group, "masks", f"'{name}/masks'")
    if not isinstance(ds, h5py.Dataset):
        raise _Bad(f"'{name}/masks' is not a dataset")
    if ds.is_virtual or ds.external:
        raise _Bad(f"'{name}/masks' keeps its data outside the file (virtual or external storage)")
    if ds.shape is None or len(ds.shape) not in ((3, 4) if layers else (3,)):
        expected = "(frames, height, width[, layers])" if layers else "(frames, height, width)"
        raise _Bad(f"'{name}/masks' has shape {ds.shape}; expected {expected}")
    if ds.dtype != np.uint8:
        raise _Bad(f"'{name}/masks' holds {ds.dtype} values; expected uint8")
    frames, height, width = ds.shape[:3]
    if frames == 0:
        raise _Bad(f"'{name}/masks' holds no frames")
    if len(ds.shape) == 4 and ds.shape[3] == 0:
        raise _Bad(f"'{name}/masks' has no bit-plane layer")
    return MaskBlock(start, frames, height, width, ds.shape[3] if len(ds.shape) == 4 else 0, group=name)


def _blocks(f: h5py.File, max_elements: int, layers: bool, frame_base: int) -> list[MaskBlock]:
    names = list(f.keys())
    if "masks" in names and len(names) > 1:
        raise _Bad("it mixes the single-block form 'masks/masks' with numbered blocks")
    blocks, elements = [], 0
    for name in names:
        if name != "masks" and not _START.fullmatch(name):
            raise _Bad(f"the top-level name '{name[:40]}' is not a start frame number")
        start = 0 if name == "masks" else int(name) - frame_base
        if start < 0:
            raise _BeforeFirstFrame(f"the block '{name}' starts before the video's first frame "
                                    f"(block names count from {frame_base} with --hdf5-frame-base {frame_base})")
        block = _block(f, name, start, layers)
        elements += block.frames * block.height * block.width * max(1, block.layers)
        if elements > max_elements:
            raise _Bad(f"it declares more than {max_elements} mask pixels in all")
        blocks.append(block)
    blocks.sort(key=lambda b: b.start)
    for before, after in itertools.pairwise(blocks):
        if before.stop > after.start:
            raise _Bad(f"the block starting at frame {after.start} overlaps the one starting at "
                       f"frame {before.start} ({before.frames} frames)")
    return blocks


def read_video_mask_layout(path: str, *, max_elements: int = DEFAULT_MAX_VIDEO_ELEMENTS,
                           layers: bool = False, frame_base: int = 0) -> list[MaskBlock]:
    """The mask blocks sorted by start, from metadata only (no pixel is read).

    ``layers`` accepts a reference mask's fourth axis of bit-plane layers; ``frame_base`` is the frame
    number block names count from (0: the MFC2019 plan, 1: MediScore).
    """
    if not os.path.isfile(path):
        if not os.path.exists(path):
            raise MissingVideoMaskError("the video mask does not exist", path=path)
        raise VideoMaskError("the video mask is not a regular file", path=path)
    try:
        with h5py.File(path, "r") as f:
            return _blocks(f, max_elements, layers, frame_base)
    except _BeforeFirstFrame as exc:
        raise VideoMaskFramesError(f"the video mask is refused: {exc}", path=path) from None
    except _Bad as exc:
        raise VideoMaskError(f"the video mask is refused: {exc}", path=path) from None
    except _H5_ERRORS as exc:
        raise VideoMaskError(f"the video mask is not a readable HDF5 file ({exc})", path=path) from None


def frame_base_hint(path: str, *, frame_base: int, frame_count: int | None,
                    max_elements: int = DEFAULT_MAX_VIDEO_ELEMENTS, layers: bool = False) -> str:
    """A hint for a mask refused because a block lies outside the video, or "": whether its blocks fit
    ``frame_count`` frames (None: any count) when named from the other frame base (docs/video.md §B.2).

    MediScore's files name blocks from 1, the plan's from 0, and a file of one read in the other either
    starts before the first frame or runs one frame past the last: this says which numbering fits.
    """
    other = 1 - frame_base
    try:
        blocks = read_video_mask_layout(path, max_elements=max_elements, layers=layers, frame_base=other)
    except VideoMaskError:
        return ""
    if not blocks or (frame_count is not None and max(b.stop for b in blocks) > frame_count):
        return ""
    return f"its blocks fit if numbered from {other} ({_CONVENTION[other]}): try --hdf5-frame-base {other}"


def frame_count_of_video(path: str) -> int | None:
    """The frame count OpenCV reports for a probe video; None if the file is missing, cannot be opened,
    or its container does not say (OpenCV then reports a negative count)."""
    if not os.path.isfile(path):
        return None
    capture = None
    try:
        capture = cv2.VideoCapture(path)
        count = capture.get(cv2.CAP_PROP_FRAME_COUNT) if capture.isOpened() else -1.0
    except cv2.error:
        return None
    finally:
        if capture is not None:
            capture.release()
    return int(count) if math.isfinite(count) and count >= 0 else None
