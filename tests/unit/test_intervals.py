"""Tests for mfscore.formats.intervals: JSON parsing of interval cells and the intersection rules."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.formats.intervals import (
    MAX_TEXT_CHARS,
    IntervalSyntaxError,
    intersecting_pairs,
    is_point_inside,
    parse_interval_list,
    point_inside_pairs,
)


@pytest.mark.parametrize("text, expected", [
    ("[]", []),
    ("[[3, 33], [40, 46]]", [(3, 33), (40, 46)]),
    ("  [[40,46],[3,33]] ", [(40, 46), (3, 33)]),    # order kept
    ("[[9, 4], [0, -2]]", [(9, 4), (0, -2)]),        # reversed and out of range: the caller's to judge
    ("[[30, 30], [30, 30]]", [(30, 30), (30, 30)]),  # duplicates kept
])
def test_parse_valid(text, expected):
    assert parse_interval_list(text) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "abc", "nan", "5", "{}", '"[[1, 2]]"', "null",
    "[23,46]",               # a flat pair, not a list of pairs
    "[[1, 2], 3]",
    "[(3, 33)]",             # Python tuples: literal_eval took them, JSON does not
    "[[1, 2],]",             # trailing comma
    "[[1, 2]",               # truncated
    "[" * 100_000,           # deep nesting must not crash the parser
    "[[" + "9" * 5000 + ", 1]]",  # an integer too long to convert
    "[[1, 2]]" + " " * MAX_TEXT_CHARS,  # over the size limit, even though it would parse
])
def test_parse_unreadable(text):
    with pytest.raises(IntervalSyntaxError) as info:
        parse_interval_list(text)
    assert info.value.kind == "unreadable"


@pytest.mark.parametrize("text, value", [
    ("[[1, 2, 3]]", "[1, 2, 3]"),
    ("[[1]]", "[1]"),
    ("[[]]", "[]"),
    ("[[1, 2], [1.0, 2]]", "[1.0, 2]"),
    ("[[true, 2]]", "[true, 2]"),        # bools are not integers
    ('[["1", "2"]]', '["1", "2"]'),
    ("[[1, NaN]]", "[1, NaN]"),
    ("[[1, [2]]]", "[1, [2]]"),
])
def test_parse_not_pair(text, value):
    with pytest.raises(IntervalSyntaxError) as info:
        parse_interval_list(text)
    assert (info.value.kind, info.value.value) == ("not_pair", value)
    assert isinstance(info.value, ValueError)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(-10**12, 10**12), st.integers(-10**12, 10**12)), max_size=30))
def test_parse_round_trips_json(pairs):
    assert parse_interval_list(json.dumps(pairs)) == pairs


# Overlap fixtures, drawn on a frame ruler (frames 1..12):
#
#        frame  1 2 3 4 5 6 7 8 9 10 11 12
#   0  [1, 5]   |-------|
#   1  [5, 9]           |-------|              touches 0 at frame 5
#   2  [3, 3]       *                          point strictly inside 0
#   3  [11, 12]                      |----|    alone
#   4  [6, 8]             |---|                contained in 1
#   5  [9, 9]                   *              point on 1's end: an overlap, not "inside"
RULER = [(1, 5), (5, 9), (3, 3), (11, 12), (6, 8), (9, 9)]


def test_ruler_fixture_pairs():
    assert intersecting_pairs(RULER) == [(0, 1), (0, 2), (1, 4), (1, 5)]
    assert point_inside_pairs(RULER) == [(0, 2)]


@pytest.mark.parametrize("p, q, inside", [
    #  frame 1 2 3 4 5
    #  p     |-------|        q = point 3 strictly inside
    ((1, 5), (3, 3), True),
    #  p     |-------|        q = point 1 on p's start
    ((1, 5), (1, 1), False),
    #  p     *                q = the same point
    ((2, 2), (2, 2), False),
    #  p       *  q |-----|   point inside, in the other order
    ((3, 3), (2, 4), True),
    #  p   |-|   q   |-|      disjoint
    ((1, 2), (4, 5), False),
])
def test_point_inside(p, q, inside):
    assert is_point_inside(p, q) is inside


#        frame  1 2 3 4 5 6
#   0  [4, 2]       <---|      reversed: holds no frame, pairs with nothing
#   1  [1, 6]   |---------|
#   2  [3, 3]       *
def test_reversed_intervals_hold_no_frame():
    intervals = [(4, 2), (1, 6), (3, 3)]
    assert intersecting_pairs(intervals) == [(1, 2)]
    assert point_inside_pairs(intervals) == [(1, 2)]


def frames(interval: tuple[int, int]) -> set[int]:
    return set(range(interval[0], interval[1] + 1))


def brute_force(intervals):
    """Pairs sharing a frame, and pairs where one is a point strictly inside the other, by expanding frames."""
    shared, inside = [], []
    for j, i in itertools.combinations(range(len(intervals)), 2):
        p, q = intervals[j], intervals[i]
        if frames(p) & frames(q):
            shared.append((j, i))
        for x, y in ((p, q), (q, p)):
            if len(frames(x)) == 1 and frames(x) < frames(y) and min(frames(y)) not in frames(x) \
                    and max(frames(y)) not in frames(x):
                inside.append((j, i))
    def later_first(pair):
        return pair[1], pair[0]
    return sorted(shared, key=later_first), sorted(set(inside), key=later_first)


interval_lists = st.lists(st.tuples(st.integers(-3, 15), st.integers(-3, 15)), max_size=12)


@settings(max_examples=400)
@given(interval_lists)
def test_pairs_match_brute_force(intervals):
    shared, inside = brute_force(intervals)
    assert intersecting_pairs(intervals) == shared
    assert point_inside_pairs(intervals) == inside
    assert [p for p in shared if is_point_inside(intervals[p[0]], intervals[p[1]])] == inside


@settings(max_examples=100)
@given(interval_lists, st.integers(0, 5))
def test_limit_returns_a_subset(intervals, limit):
    shared, inside = brute_force(intervals)
    for found, everything in ((intersecting_pairs(intervals, limit=limit), shared),
                              (point_inside_pairs(intervals, limit=limit), inside)):
        assert len(found) == min(limit, len(everything))
        assert set(found) <= set(everything)


def test_hostile_list_is_bounded():
    many = [(1, 10)] * 50_000 + [(5, 5)] * 50_000
    started = time.perf_counter()
    assert len(intersecting_pairs(many, limit=101)) == 101
    assert len(point_inside_pairs(many, limit=101)) == 101
    assert time.perf_counter() - started < 5
