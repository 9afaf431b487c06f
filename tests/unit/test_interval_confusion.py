"""Interval algebra and temporal confusion coding (docs/video.md §A.4–§A.5).

The 16 vectors of MediScore's ``Unittest_IntervalConfusion.py`` (docs/compatibility.md "Video temporal cases",
global range [0, 25]), then property tests of every function against slow, obviously correct
references that look at one unit segment ``[k, k+1]`` (or one frame) at a time.

Reading the pictures: one character per unit segment ``[k, k+1]`` of the range 0..25.
"""

from __future__ import annotations

import math
import random
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import matthews_corrcoef

from mfscore.reports.video_temporal_report import probe_scores, query_scores
from mfscore.video.interval_algebra import (
    collars,
    drop_zero_length,
    frame_runs,
    truncate,
    union,
)
from mfscore.video.temporal_confusion import (
    TemporalCounts,
    confusion_codes,
    counts_from_codes,
    temporal_counts,
)
from mfscore.video.temporal_scorer import ProbeRecord

RANGE = (0, 25)


def codes(ref, sys, collar=None, sns=()):
    return confusion_codes(RANGE, ref, sys, collar=collar, no_score=sns)[1]


# --------------------------------------------------------------------------------------------------
# The 16 vectors (docs/compatibility.md "Video temporal cases", U-VTL)

def test_1():
    # ref  .....RRRRR...............
    # sys  ...............SSSSS.....
    assert codes([[5, 10]], [[15, 20]]) == [0, 1, 0, 2, 0]


def test_2():
    # ref  .....RRRRRRRRRR..........
    # sys  ..........SSSSSSSSSS.....
    assert codes([[5, 15]], [[10, 20]]) == [0, 1, 3, 2, 0]


def test_3():
    # ref  ..........RRRRR..........
    # sys  .....SSSSSSSSSSSSSSS.....
    assert codes([[10, 15]], [[5, 20]]) == [0, 2, 3, 2, 0]


def test_4():
    # ref  .....RRRRRRRRRRRRRRR.....
    # sys  ..........SSSSS..........
    assert codes([[5, 20]], [[10, 15]]) == [0, 1, 3, 1, 0]


def test_5():
    # ref  .....RRRRRRR....RRRRRRR..
    # sys  ..........SSSSSSSS.......
    assert codes([[5, 12], [16, 23]], [[10, 18]]) == [0, 1, 3, 2, 3, 1, 0]


def test_6():
    # ref  ..........RRRRRRRR.......
    # sys  .....SSSSSSS....SSSSSSS..
    assert codes([[10, 18]], [[5, 12], [16, 23]]) == [0, 2, 3, 1, 3, 2, 0]


def test_7():
    # ref  .....RRRRRRR....RRRRRRR..
    # sys  ..........SSSSSSSS.......
    # col  ....XX.....XX..XX.....XX.   collar 1 around 5, 12, 16, 23
    assert codes([[5, 12], [16, 23]], [[10, 18]], collar=1) == [0, -1, 1, 3, -1, 2, -1, 3, 1, -1, 0]


def test_8():
    # ref  ..........RRRRRRRR.......
    # sys  .....SSSSSSS....SSSSSSS..
    # col  .........XX.....XX.......
    assert codes([[10, 18]], [[5, 12], [16, 23]], collar=1) == [0, 2, -1, 3, 1, 3, -1, 2, 0]


def test_9():
    with pytest.raises(ValueError):
        codes([[10, 18]], [[5, 12], [16, 23]], collar=0)


def test_10():
    with pytest.raises(ValueError):
        codes([[10, 18]], [[5, 12], [16, 23]], collar=-1)


def test_11():
    # a reversed pair [23, 16] is [16, 23]
    assert codes([[10, 18]], [[5, 12], [23, 16]], collar=1) == [0, 2, -1, 3, 1, 3, -1, 2, 0]


def test_12():
    # shuffled and reversed
    assert codes([[10, 18]], [[23, 16], [5, 12]], collar=1) == [0, 2, -1, 3, 1, 3, -1, 2, 0]


def test_13():
    # ref  ..........RRRRRRRR.......
    # sys  .....SSSSSSSSSSS.........   [5,16] and [12,20] overlap: one interval [5,20]
    #      ............SSSSSSSS.....
    assert codes([[10, 18]], [[5, 16], [12, 20]], collar=1) == [0, 2, -1, 3, -1, 2, 0]


def test_14():
    # [14, 14] has zero length and is dropped
    assert codes([[10, 18]], [[5, 12], [14, 14], [17, 20]], collar=1) == [0, 2, -1, 3, 1, -1, 2, 0]


def test_15():
    # ref  ..........RRRRRRRR.......
    # sys  .....SSSSSSS.....SSS.....
    # col  .........XX.....XX.......
    # sns  ....YYYYY....YYY.........   no-score wins over the collar
    assert codes([[10, 18]], [[5, 12], [17, 20]], collar=1, sns=[[4, 9], [13, 16]]) == \
        [0, -2, -1, 3, 1, -2, 1, -1, 2, 0]


def test_16():
    # ref  (empty)
    # sys  .....SSSSSSS.....SSS.....
    # sns  ....YYYYY....YYY.........
    assert codes([], [[5, 12], [17, 20]], sns=[[4, 9], [13, 16]]) == [0, -2, 2, 0, -2, 0, 2, 0]


def test_counts_are_continuous_lengths():
    # docs/video.md §A.5: [100, 200] weighs 100; the whole range weighs FrameCount − 1
    assert temporal_counts(1000, [(100, 200)], [(100, 200)]) == TemporalCounts(tp=100, tn=899, fp=0, fn=0)
    assert temporal_counts(1000, [], []) == TemporalCounts(tp=0, tn=999, fp=0, fn=0)
    assert temporal_counts(1000, [], []).mcc == 0.0          # all TN: denominator 0
    assert temporal_counts(1000, [(5, 5)], [(7, 7)]) == TemporalCounts(tp=0, tn=999, fp=0, fn=0)


def test_interval_outside_the_range_is_refused():
    with pytest.raises(ValueError):
        temporal_counts(100, [(1, 10)], [(90, 101)])
    with pytest.raises(ValueError):
        temporal_counts(100, [(0, 10)], [])


# --------------------------------------------------------------------------------------------------
# Slow references


def unit_segments(intervals) -> set[int]:
    """The k of every unit segment [k, k+1] covered by an interval (a pair in either order)."""
    return {k for a, b in intervals for k in range(min(a, b), max(a, b))}


def frames(intervals) -> set[int]:
    return {k for a, b in intervals for k in range(min(a, b), max(a, b) + 1)}


def reference_endpoints(reference) -> set[int]:
    """Endpoints of the merged reference: the ends of the runs of covered unit segments, and the
    zero-length intervals [k, k] no positive-length interval touches (they stay separate intervals)."""
    covered = unit_segments(reference)
    ends = {k for k in covered if k - 1 not in covered} | {k + 1 for k in covered if k + 1 not in covered}
    wide = [(min(a, b), max(a, b)) for a, b in reference if a != b]
    points = {a for a, b in reference if a == b and not any(s <= a <= e for s, e in wide)}
    return ends | points


def slow_unit_codes(first, last, reference, system, collar, no_score) -> list[int]:
    """The code of every unit segment [k, k+1] of the range, classified from its midpoint directly."""
    collar_zones = [] if collar is None else [(max(first, x - collar), min(last, x + collar))
                                              for x in reference_endpoints(reference)]
    ref, sys_, sns, col = (unit_segments(s) for s in (reference, system, no_score, collar_zones))
    out = []
    for k in range(first, last):
        if k in sns:
            out.append(-2)
        elif k in col:
            out.append(-1)
        else:
            out.append((k in ref) + 2 * (k in sys_))
    return out


def slow_counts(first, last, reference, system, collar, no_score) -> TemporalCounts:
    unit = slow_unit_codes(first, last, reference, system, collar, no_score)
    return TemporalCounts(tp=unit.count(3), tn=unit.count(0), fp=unit.count(2), fn=unit.count(1))


@st.composite
def interval_lists(draw, first, last, max_size=5):
    pairs = draw(st.lists(st.tuples(st.integers(first, last), st.integers(first, last)), max_size=max_size))
    return [p if draw(st.booleans()) else (p[1], p[0]) for p in pairs]  # some reversed


@st.composite
def scenes(draw):
    first = draw(st.integers(0, 3))
    last = first + draw(st.integers(1, 40))
    return (first, last, draw(interval_lists(first, last)), draw(interval_lists(first, last)),
            draw(st.one_of(st.none(), st.integers(1, 6))), draw(interval_lists(first, last, max_size=3)))


# --------------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=300, deadline=None)
@given(scenes())
def test_confusion_codes_match_unit_segment_classification(scene):
    first, last, reference, system, collar, no_score = scene
    segments, got = confusion_codes((first, last), reference, system, collar=collar, no_score=no_score)
    # the segments tile the range, and neighbours never share a code (they were merged)
    assert segments[0][0] == first and segments[-1][1] == last
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in pairwise(segments))
    assert all(c != d for c, d in pairwise(got))
    expanded = [code for (a, b), code in zip(segments, got) for _ in range(a, b)]
    assert expanded == slow_unit_codes(first, last, reference, system, collar, no_score)
    assert counts_from_codes(segments, got) == slow_counts(first, last, reference, system, collar, no_score)


@settings(max_examples=300, deadline=None)
@given(scenes())
def test_temporal_counts_match_slow_reference(scene):
    _, last, reference, system, collar, no_score = scene
    shift = 1 - scene[0]  # move the scene onto [1, FrameCount]
    moved = [[(a + shift, b + shift) for a, b in s] for s in (reference, system, no_score)]
    frame_count = last + shift
    expected = slow_counts(1, frame_count, moved[0], moved[1], collar, moved[2])
    assert temporal_counts(frame_count, moved[0], moved[1], collar=collar, no_score=moved[2]) == expected


@given(interval_lists(0, 30, max_size=8))
def test_union_against_unit_segments(intervals):
    merged = union(intervals)
    assert unit_segments(merged) == unit_segments(intervals)
    assert frames(merged) == frames(intervals)
    assert all(a <= b for a, b in merged)
    assert all(x[1] < y[0] for x, y in pairwise(merged))  # disjoint and not touching


@given(interval_lists(0, 30, max_size=8), st.integers(1, 32))
def test_truncate_is_a_clip_at_the_last_frame(intervals, last_frame):
    merged = union(intervals)
    clipped = truncate(merged, last_frame)
    assert clipped == [(a, min(b, last_frame)) for a, b in merged if a < last_frame]
    assert unit_segments(clipped) == {k for k in unit_segments(merged) if k < last_frame}


def test_truncate_edge_cases():
    # docs/video.md §A.4: an interval starting at v is dropped, one ending at v is kept unchanged
    assert truncate([(1, 5), (10, 20)], 10) == [(1, 5)]
    assert truncate([(1, 10), (12, 20)], 10) == [(1, 10)]
    assert truncate([(1, 5), (8, 20), (30, 40)], 10) == [(1, 5), (8, 10)]


@given(st.lists(st.booleans(), max_size=60))
def test_frame_runs(flags):
    runs = frame_runs(np.array(flags, dtype=bool))
    assert frames(runs) == {i + 1 for i, f in enumerate(flags) if f}
    assert all(a <= b for a, b in runs)
    assert all(x[1] + 1 < y[0] for x, y in pairwise(runs))  # maximal runs


def test_frame_runs_example():
    #            frame 1  2  3  4  5  6
    assert frame_runs(np.array([1, 1, 0, 1, 0, 1], dtype=bool)) == [(1, 2), (4, 4), (6, 6)]
    assert frame_runs(np.zeros(0, dtype=bool)) == []


def test_collars_and_zero_length():
    assert collars([(5, 12)], 2, 13) == [(3, 7), (10, 13)]
    assert collars([(1, 3)], 5, 100) == [(1, 6), (1, 8)]
    with pytest.raises(ValueError):
        collars([(1, 3)], 0, 100)
    assert drop_zero_length([(1, 1), (2, 3), (4, 4)]) == [(2, 3)]


# --------------------------------------------------------------------------------------------------
# MCC and records

MCC_TOLERANCE = 1e-12  # exact arithmetic against scikit-learn's float computation


@pytest.mark.filterwarnings("ignore:A single label was found")  # all-TN samples: sklearn warns, returns 0
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_mcc_against_sklearn(tp, tn, fp, fn):
    counts = TemporalCounts(tp=tp, tn=tn, fp=fp, fn=fn)
    if tp + tn + fp + fn == 0:
        assert counts.mcc == 0.0
        return
    truth = [1] * tp + [0] * tn + [0] * fp + [1] * fn
    predicted = [1] * tp + [0] * tn + [1] * fp + [0] * fn
    assert abs(counts.mcc - matthews_corrcoef(truth, predicted)) <= MCC_TOLERANCE


def test_mcc_is_zero_when_the_denominator_is():
    assert TemporalCounts(tp=0, tn=999, fp=0, fn=0).mcc == 0.0   # empty reference, empty system
    assert TemporalCounts(tp=0, tn=899, fp=100, fn=0).mcc == 0.0  # empty reference
    assert TemporalCounts(tp=188, tn=791, fp=0, fn=0).mcc == 1.0


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_counts_dict_round_trip(tp, tn, fp, fn):
    counts = TemporalCounts(tp=tp, tn=tn, fp=fp, fn=fn)
    assert TemporalCounts.from_dict(counts.to_dict()) == counts
    record = ProbeRecord(query=1, ordinal=3, probe_id="p", counts=counts)
    assert ProbeRecord.from_dict(record.to_dict()) == record


def test_counts_from_dict_refuses_bad_values():
    with pytest.raises(ValueError):
        TemporalCounts.from_dict({"TP": -1, "TN": 0, "FP": 0, "FN": 0})
    with pytest.raises(ValueError):
        TemporalCounts.from_dict({"TP": 1.5, "TN": 0, "FP": 0, "FN": 0})


def test_report_does_not_depend_on_record_order():
    """Records merged from shards in any order give the same tables as scoring everything at once."""
    rng = random.Random(7)
    records = [ProbeRecord(query=q, ordinal=i, probe_id=f"p{i}",
                           counts=TemporalCounts(*(rng.randrange(0, 50) for _ in range(4))))
               for q in range(2) for i in range(6)]
    queries = ("*", "Operation == 'x'")
    shuffled = records[:]
    rng.shuffle(shuffled)
    assert probe_scores(shuffled) == probe_scores(records)
    assert query_scores(shuffled, queries) == query_scores(records, queries)
    # a query with no record gets an empty (NaN) MCC
    assert [math.isnan(row["MCC"]) for row in query_scores(records[:6], queries)] == [False, True]
