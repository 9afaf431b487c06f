"""Temporal confusion coding and MCC (docs/video.md §A.5).

The global range and every interval endpoint cut the range into elementary segments. Each segment
is coded from where its midpoint lies::

    code = 1·[in reference] + 2·[in system]     0 TN, 1 FN, 2 FP, 3 TP
    in a collar            -> -1  ("X", not scored)
    in a system no-score   -> -2  ("Y", not scored; applied last, so it wins over a collar)

Counting is continuous: a segment ``[s, e]`` weighs ``e − s``, so ``[100, 200]`` weighs 100 and the
range ``[1, FrameCount]`` weighs ``FrameCount − 1``. Worked example, global range [0, 25]::

    ref     .....RRRRRRR....RRRRRRR..     [[5,12],[16,23]]
    sys     ..........SSSSSSSS.......     [[10,18]]
    codes   0    1    3 2   3 1    0      TN 5+2=7, FN 5+5=10, TP 2+2=4, FP 4 (sum 25 = 25 − 0)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from mfscore.masks.mcc import exact_mcc
from mfscore.video.interval_algebra import Interval, collars, drop_zero_length, union

TN, FN, FP, TP = 0, 1, 2, 3
COLLAR = -1      # "X"
NO_SCORE = -2    # "Y"
# the code of a segment from its membership bits: 1 reference, 2 system, 4 collar, 8 no-score (wins over a collar)
_CODE = [NO_SCORE if bits & 8 else COLLAR if bits & 4 else bits & 3 for bits in range(16)]


@dataclass(frozen=True)
class TemporalCounts:
    """Continuous lengths (``end − start``, in frames) of the TP, TN, FP and FN segments of one video."""

    tp: int
    tn: int
    fp: int
    fn: int

    @property
    def mcc(self) -> float:
        """Matthews correlation coefficient (higher is better), 0.0 when its denominator is 0."""
        # docs/video.md §A.5: MCC = (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)), 0 on a 0 denominator.
        # exact_mcc agrees except for an empty video (n = 0), where it gives NaN and VTL gives 0.
        if self.tp + self.tn + self.fp + self.fn == 0:
            return 0.0
        return exact_mcc(self.tp, self.tn, self.fp, self.fn)

    def to_dict(self) -> dict[str, int]:
        return {"TP": self.tp, "TN": self.tn, "FP": self.fp, "FN": self.fn}

    @classmethod
    def from_dict(cls, data: dict) -> TemporalCounts:
        values = {}
        for key in ("TP", "TN", "FP", "FN"):
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} must be a non-negative integer, not {value!r}")
            values[key.lower()] = value
        return cls(**values)


def _check_inside(name: str, intervals: list[Interval], first: int, last: int) -> None:
    if intervals and (intervals[0][0] < first or intervals[-1][1] > last):
        raise ValueError(f"{name} interval outside the global range [{first}, {last}]: {intervals}")


def _segments(global_range: Interval, reference: Iterable[Interval], system: Iterable[Interval],
              collar: int | None, no_score: Iterable[Interval]) -> tuple[list[Interval], list[int]]:
    """Elementary segments and their codes, consecutive equal codes merged."""
    first, last = global_range
    ref = union(reference)
    sets = {
        "reference": drop_zero_length(ref),
        "system": drop_zero_length(union(system)),
        # docs/video.md §A.4: collars come from the reference endpoints, clipped to the global range
        "collar": drop_zero_length(union(collars(ref, collar, last, first_frame=first))) if collar is not None else [],
        "no-score": drop_zero_length(union(no_score)),
    }
    for name, intervals in sets.items():
        _check_inside(name, intervals, first, last)
    # docs/video.md §A.5: all boundaries in one sorted sweep. Within a set the intervals are disjoint and
    # never touch, so at each point a set is entered or left, never both: adding +bit on entry and −bit on
    # exit to a bit mask gives the membership of the segment that starts there.
    changes = {first: 0, last: 0}
    for bit, name in ((1, "reference"), (2, "system"), (4, "collar"), (8, "no-score")):
        for start, end in sets[name]:
            changes[start] = changes.get(start, 0) + bit
            changes[end] = changes.get(end, 0) - bit
    segments: list[Interval] = []
    codes: list[int] = []
    member = 0
    points = sorted(changes)
    for start, end in pairwise(points):
        member += changes[start]
        code = _CODE[member]
        # docs/video.md §A.5: consecutive equal codes merge (with collars or SNS; without them no two
        # neighbours share a code, since every breakpoint then changes the reference or system membership)
        if codes and codes[-1] == code:
            segments[-1] = (segments[-1][0], end)
        else:
            segments.append((start, end))
            codes.append(code)
    return segments, codes


def confusion_codes(global_range: Interval, reference: Iterable[Interval], system: Iterable[Interval], *,
                    collar: int | None = None, no_score: Iterable[Interval] = ()) -> tuple[list[Interval], list[int]]:
    """The elementary segments of ``global_range`` and their codes (0 TN, 1 FN, 2 FP, 3 TP, −1 collar, −2 no-score).

    The sets are unioned and their zero-length intervals dropped first; ``collar`` is the half-width N
    of the collars around the reference endpoints (None for none; ``ValueError`` unless N > 0).
    An interval outside ``global_range`` is a ``ValueError`` (MediScore's range assertion): clip
    system intervals with ``truncate`` first.
    """
    # docs/video.md §A.5
    return _segments(global_range, reference, system, collar, no_score)


def counts_from_codes(segments: Sequence[Interval], codes: Sequence[int]) -> TemporalCounts:
    """Sum the continuous length ``end − start`` of the segments of each code; collar and no-score are not counted."""
    # docs/video.md §A.5: counting is continuous, not per frame
    total = {TP: 0, TN: 0, FP: 0, FN: 0, COLLAR: 0, NO_SCORE: 0}
    for (start, end), code in zip(segments, codes):
        total[code] += end - start
    return TemporalCounts(tp=total[TP], tn=total[TN], fp=total[FP], fn=total[FN])


def temporal_counts(frame_count: int, reference: Iterable[Interval], system: Iterable[Interval], *,
                    collar: int | None = None, no_score: Iterable[Interval] = ()) -> TemporalCounts:
    """TP/TN/FP/FN lengths of one video over the global range ``[1, frame_count]``."""
    # docs/video.md §A.4, §A.5: the global range [1, FrameCount], coding and continuous counting
    return counts_from_codes(*_segments((1, frame_count), reference, system, collar, no_score))
