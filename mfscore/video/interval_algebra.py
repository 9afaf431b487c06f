"""Frame-interval algebra for temporal localization (docs/video.md §A.4).

An interval ``(a, b)`` names frames a..b, 1-based and inclusive; a list of them is a set of frames.
Every function is pure and returns a new list: sorted by start, pairwise disjoint and not touching
whenever the input went through ``union``.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Interval = tuple[int, int]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge a list of intervals into sorted, disjoint ones; touching intervals merge."""
    # docs/video.md §A.4 (union): sort each pair, sort by start, merge when next.start <= current.end
    merged: list[Interval] = []
    for start, end in sorted((a, b) if a <= b else (b, a) for a, b in intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def truncate(intervals: Iterable[Interval], last_frame: int) -> list[Interval]:
    """MediScore's clip of a sorted interval list at ``last_frame`` (FrameCount).

    The endpoints are scanned in row-major order for the first one ``>= last_frame``: an end point
    is set to ``last_frame`` and everything after it dropped; a start point drops its interval and
    everything after it. So ``[v, ...]`` is dropped and ``[..., v]`` kept. On a ``union`` result this
    is a plain clip at ``last_frame`` that drops what would become zero-length.
    """
    # docs/video.md §A.4 (truncation at v)
    kept: list[Interval] = []
    for start, end in intervals:
        if start >= last_frame:
            break
        if end >= last_frame:
            kept.append((start, last_frame))
            break
        kept.append((start, end))
    return kept


def collars(reference: Iterable[Interval], half_width: int, frame_count: int, *, first_frame: int = 1) -> list[Interval]:
    """The collar ``[x − N, x + N]`` around every endpoint x of the reference, clipped to the video.

    ``first_frame`` is the start of the global range (1 for a video; the unit vectors use 0). The
    collars are returned as MediScore builds them (one per endpoint, in order); pass them through
    ``union`` before using them as a set.
    """
    # docs/video.md §A.4 (collars): N must be an int > 0 (MediScore asserts); clipped to [1, FrameCount]
    if isinstance(half_width, bool) or not isinstance(half_width, Integral) or half_width <= 0:  # numpy ints too
        raise ValueError(f"the collar half-width must be a positive whole number of frames, not {half_width!r}")
    found: list[Interval] = []
    for start, end in sorted((a, b) if a <= b else (b, a) for a, b in reference):
        for x in (start, end):
            found.append((max(first_frame, x - half_width), min(frame_count, x + half_width)))
    return found


def drop_zero_length(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals with ``a != b``: a single-frame interval ``[k, k]`` weighs nothing."""
    # docs/video.md §A.4: zero-length intervals (a == b) leave every set before scoring
    return [(a, b) for a, b in intervals if a != b]


def frame_runs(positive: np.ndarray) -> list[Interval]:
    """1-based intervals ``[a, b]`` of the runs of True in a per-frame boolean array (``positive[0]`` is frame 1)."""
    # docs/video.md §B.5: runs of consecutive positive frames become intervals
    import numpy as np  # here: temporal scoring, which has no frames, runs without numpy

    flags = np.asarray(positive, dtype=bool).ravel()
    edges = np.diff(np.concatenate(([False], flags, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1) + 1   # frame number of the first True of each run
    ends = np.flatnonzero(edges == -1)        # frame number of the last True of each run
    return [(int(a), int(b)) for a, b in zip(starts, ends)]
