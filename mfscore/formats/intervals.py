"""Temporal interval lists such as ``[[3, 33], [40, 46]]`` or ``[]`` (MFC2019 plan §5.1.1, video output).

An interval ``[a, b]`` names the 1-based frames a..b inclusive.  Cells are parsed as JSON, never
evaluated: MediScore's ``literal_eval`` also accepted Python tuples (``[(3, 33)]``) and trailing
commas; the plan asks for JSON, so those are unreadable here.
"""

from __future__ import annotations

import bisect
import heapq
import json
from collections.abc import Sequence
from typing import Literal

MAX_TEXT_CHARS = 1 << 20  # a cell longer than 1 MiB is refused before parsing


class IntervalSyntaxError(ValueError):
    """``kind`` is ``"unreadable"`` (not a list of lists) or ``"not_pair"`` (an element that is not two
    integers); ``value`` is the offending text or element, as JSON."""

    def __init__(self, kind: Literal["unreadable", "not_pair"], value: str):
        self.kind = kind
        self.value = value
        super().__init__(f"{value} is not a valid interval" if kind == "not_pair"
                         else f"{value[:80]} cannot be read as a list of intervals")


def parse_interval_list(text: str) -> list[tuple[int, int]]:
    """The pairs in list order; bounds, order and overlap are the caller's to check."""
    if len(text) > MAX_TEXT_CHARS:
        raise IntervalSyntaxError("unreadable", text[:80] + "...")
    try:
        items = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError, huge integers, deep nesting
        raise IntervalSyntaxError("unreadable", text) from None
    if not isinstance(items, list) or not all(isinstance(item, list) for item in items):
        raise IntervalSyntaxError("unreadable", text)
    for item in items:
        if len(item) != 2 or not all(type(x) is int for x in item):  # bools are not frame numbers
            raise IntervalSyntaxError("not_pair", json.dumps(item))
    return [(a, b) for a, b in items]


def intersecting_pairs(intervals: Sequence[tuple[int, int]], *, limit: int | None = None) -> list[tuple[int, int]]:
    """Index pairs ``(earlier, later)`` of intervals sharing at least one frame, sorted by (later, earlier).

    Reversed intervals (a > b) hold no frame and are ignored.  A sweep over the intervals sorted by
    start costs O(n log n + pairs); with ``limit`` it stops after that many pairs, so a hostile list
    of 100,000 identical intervals does not ask for 5e9 of them.
    """
    active: list[tuple[int, int]] = []  # heap of (end, index) of intervals started so far
    pairs: list[tuple[int, int]] = []
    for i in sorted((i for i, (a, b) in enumerate(intervals) if a <= b), key=lambda i: intervals[i]):
        start, end = intervals[i]
        while active and active[0][0] < start:
            heapq.heappop(active)
        for _, j in active:
            if limit is not None and len(pairs) >= limit:
                return sorted(pairs, key=lambda p: (p[1], p[0]))
            pairs.append((min(i, j), max(i, j)))
        heapq.heappush(active, (end, i))
    return sorted(pairs, key=lambda p: (p[1], p[0]))


def point_inside_pairs(intervals: Sequence[tuple[int, int]], *, limit: int | None = None) -> list[tuple[int, int]]:
    """Index pairs ``(earlier, later)`` where one is a point ``[k, k]`` and the other ``[c, d]`` has c < k < d,
    sorted by (later, earlier); O(n log n + pairs), stopping after ``limit`` pairs."""
    points = sorted((a, i) for i, (a, b) in enumerate(intervals) if a == b)
    keys = [k for k, _ in points]
    pairs: list[tuple[int, int]] = []
    for j, (c, d) in enumerate(intervals):
        if d - c < 2:
            continue
        for _, i in points[bisect.bisect_right(keys, c):bisect.bisect_left(keys, d)]:
            if limit is not None and len(pairs) >= limit:
                return sorted(pairs, key=lambda p: (p[1], p[0]))
            pairs.append((min(i, j), max(i, j)))
    return sorted(pairs, key=lambda p: (p[1], p[0]))


def is_point_inside(p: tuple[int, int], q: tuple[int, int]) -> bool:
    """Whether one of ``p``, ``q`` is a point strictly inside the other."""
    return any(x[0] == x[1] and y[0] < x[0] < y[1] for x, y in ((p, q), (q, p)))
