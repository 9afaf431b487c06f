"""Video rows of a submission: the temporal interval columns and the HDF5 spatial mask (docs/validation.md §4 step 9).

Rules for one interval list, each interval taken in list order:
* a list that is not JSON lists of lists is unreadable; an element that is not two integers is not a pair;
* ``a > b`` is reversed (the plan requires x <= y; MediScore crashed into its "cannot be read" message);
* ``a < 1`` or ``b > frame_count`` is out of bounds (a warning with ``ignore_eof``);
* against every earlier interval with a <= b (in bounds or not): a point ``[k, k]`` strictly inside the
  other is always an error; any other shared frame (touching endpoints, containment) is an overlap
  (a warning with ``ignore_overlap``).

A hostile list may hold 10^5 intervals and 10^10 intersecting pairs, so at most
``MAX_PAIR_FINDINGS`` pairs of each kind are listed; the count never changes whether the list is valid.
"""

from __future__ import annotations

from mfscore.formats.intervals import (
    IntervalSyntaxError,
    intersecting_pairs,
    is_point_inside,
    parse_interval_list,
    point_inside_pairs,
)
from mfscore.formats.video_masks import VideoMaskError, VideoMaskFramesError, frame_base_hint, read_video_mask_layout
from mfscore.validation.findings import Severity, ValidationReport

MAX_PAIR_FINDINGS = 100


def _show(text: str) -> str:
    if not text.strip():
        return "(blank)"
    return text if len(text) <= 80 else text[:77] + "..."


def check_interval_column(report: ValidationReport, text: str, *, column: str, probe: str, frame_count: int | None,
                          ignore_eof: bool, ignore_overlap: bool, file: str, line: int) -> None:
    """Report what is wrong with the interval list ``text`` of ``column``; frame_count None skips bounds."""
    where = {"file": file, "line": line}
    try:
        intervals = parse_interval_list(text)
    except IntervalSyntaxError as exc:
        if exc.kind == "unreadable":
            report.error("interval.unreadable", f"Interval list {_show(text)} in {column} for probe {probe} "
                         "cannot be read as intervals.", **where)
        else:
            report.error("interval.not_pair", f"Interval {_show(exc.value)} in {column} for probe {probe} is not a "
                         "valid interval. An interval is a pair of integer frame numbers [start, end].", **where)
        return

    overlaps = intersecting_pairs(intervals, limit=MAX_PAIR_FINDINGS + 1)
    points = point_inside_pairs(intervals, limit=MAX_PAIR_FINDINGS + 1)
    listed = sorted(set(overlaps[:MAX_PAIR_FINDINGS]) | set(points[:MAX_PAIR_FINDINGS]), key=lambda p: (p[1], p[0]))
    earlier_of: dict[int, list[int]] = {}
    for j, i in listed:
        earlier_of.setdefault(i, []).append(j)

    overlap_severity = Severity.WARNING if ignore_overlap else Severity.ERROR
    for i, (a, b) in enumerate(intervals):
        name = f"Interval [{a}, {b}] in {column} for probe {probe}"
        if a > b:
            report.error("interval.reversed", f"{name} is reversed: its start frame is after its end frame.", **where)
            continue
        if frame_count is not None and (a < 1 or b > frame_count):
            report.add("interval.out_of_bounds", Severity.WARNING if ignore_eof else Severity.ERROR,
                       f"{name} is out of bounds. Frames must be within [1, {frame_count}].", **where)
        for j in earlier_of.get(i, ()):
            c, d = intervals[j]
            if is_point_inside((a, b), (c, d)):
                point, other = ((a, b), (c, d)) if a == b else ((c, d), (a, b))
                report.error("interval.point_inside", f"Interval [{point[0]}, {point[1]}] in {column} for probe "
                             f"{probe} is a singular frame contained in [{other[0]}, {other[1]}].", **where)
            else:
                report.add("interval.overlap", overlap_severity, f"{name} intersects with [{c}, {d}].", **where)

    if len(overlaps) > MAX_PAIR_FINDINGS:
        report.add("interval.overlap", overlap_severity, f"Interval list in {column} for probe {probe} has more "
                   f"than {MAX_PAIR_FINDINGS} intersecting pairs of intervals; only the first ones are listed.",
                   **where)
    if len(points) > MAX_PAIR_FINDINGS:
        report.error("interval.point_inside", f"Interval list in {column} for probe {probe} has more than "
                     f"{MAX_PAIR_FINDINGS} singular frames contained in other intervals; only the first ones "
                     "are listed.", **where)


def _hint(path: str, frame_base: int, frame_count: int | None, max_elements: int) -> str:
    """The clause "; its blocks fit if numbered from …" when the other numbering fits (docs/video.md §B.2), else ""."""
    hint = frame_base_hint(path, frame_base=frame_base, frame_count=frame_count, max_elements=max_elements)
    return f"; {hint}" if hint else ""


def check_video_mask(report: ValidationReport, path: str, *, probe: str, width: int, height: int,
                     frame_count: int | None, max_elements: int, file: str, line: int, frame_base: int = 0) -> None:
    """Report what is wrong with the HDF5 mask at ``path`` (already confined), reading its metadata only.

    ``frame_base`` is what block names count from; a mask that fits only the other numbering says so.
    """
    where = {"file": file, "line": line}
    if not path.lower().endswith((".hdf5", ".h5")):
        report.error("video_mask.extension", f"Mask {path} for probe {probe} is not an HDF5 file "
                     "(.hdf5 or .h5).", **where)
        return
    try:
        blocks = read_video_mask_layout(path, max_elements=max_elements, frame_base=frame_base)
    except VideoMaskFramesError as exc:
        report.error("video_mask.frames", exc.sentence() + _hint(path, frame_base, frame_count, max_elements) + ".",
                     **where)
        return
    except VideoMaskError as exc:
        report.error("video_mask.unreadable", exc.sentence() + ".", **where)
        return
    wrong = [b for b in blocks if (b.height, b.width) != (height, width)]
    if wrong:
        report.error("video_mask.dimensions", f"Expected dimensions {height},{width} (height,width) for the frames "
                     f"of mask {path} for probe {probe}, got {wrong[0].height},{wrong[0].width} in the block "
                     f"starting at frame {wrong[0].start}" + (f" and {len(wrong) - 1} other blocks." if len(wrong) > 1
                                                              else "."), **where)
    stop = max((b.stop for b in blocks), default=0)
    if frame_count is not None and stop > frame_count:
        report.error("video_mask.frames", f"Mask {path} for probe {probe} has frames up to 0-indexed frame {stop - 1}, "
                     f"but the video has {frame_count} frames{_hint(path, frame_base, frame_count, max_elements)}.",
                     **where)
