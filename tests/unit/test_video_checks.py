"""Tests for mfscore.validation.video_checks: interval-list findings and HDF5 mask findings."""

from __future__ import annotations

import itertools
import json

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.validation.findings import Severity, ValidationReport
from mfscore.validation.video_checks import (
    MAX_PAIR_FINDINGS,
    check_interval_column,
    check_video_mask,
)

E, W = Severity.ERROR, Severity.WARNING


def intervals(text, *, frame_count=100, ignore_eof=False, ignore_overlap=False) -> ValidationReport:
    report = ValidationReport()
    check_interval_column(report, text, column="VideoFrameSegments", probe="P1", frame_count=frame_count,
                          ignore_eof=ignore_eof, ignore_overlap=ignore_overlap, file="sys.csv", line=3)
    return report


def found(report):
    return [(f.code, f.severity) for f in report.findings]


@pytest.mark.parametrize("text", ["[]", "[[3, 33], [40, 46]]", "[[1, 100]]", "[[30, 30]]", "[[1, 4], [5, 9]]"])
def test_valid_lists(text):
    assert intervals(text).findings == []


def test_unreadable():
    report = intervals("[23,46]")
    assert found(report) == [("interval.unreadable", E)]
    assert report.findings[0].render() == ("ERROR: Interval list [23,46] in VideoFrameSegments for probe P1 cannot "
                                           "be read as intervals. [sys.csv, line 3]")


def test_blank_is_unreadable():
    assert "cannot be read as intervals" in intervals("").findings[0].message


def test_not_pair():
    report = intervals("[[1, 2], [1, 2, 3]]")
    assert found(report) == [("interval.not_pair", E)]
    assert ("Interval [1, 2, 3] in VideoFrameSegments for probe P1 is not a valid interval."
            in report.findings[0].message)


def test_reversed():
    report = intervals("[[9, 4]]")
    assert found(report) == [("interval.reversed", E)]
    assert "[9, 4]" in report.findings[0].message


@pytest.mark.parametrize("ignore_eof, severity", [(False, E), (True, W)])
@pytest.mark.parametrize("text", ["[[0, 5]]", "[[90, 101]]", "[[-4, -1]]"])
def test_out_of_bounds(text, ignore_eof, severity):
    report = intervals(text, ignore_eof=ignore_eof)
    assert found(report) == [("interval.out_of_bounds", severity)]
    a, b = json.loads(text)[0]
    assert report.findings[0].render().startswith(
        ("ERROR: " if severity is E else "Warning: ") + f"Interval [{a}, {b}] in VideoFrameSegments for probe P1 "
        "is out of bounds. Frames must be within [1, 100].")


def test_unknown_frame_count_skips_bounds():
    assert intervals("[[0, 1000000000]]", frame_count=None).findings == []


def test_zero_frame_count_puts_everything_out_of_bounds():
    assert found(intervals("[[1, 1]]", frame_count=0)) == [("interval.out_of_bounds", E)]


#        frame  1 2 3 4 5 6 7 8 9
#   0  [1, 5]   |-------|
#   1  [5, 9]           |-------|   touches 0 at frame 5
@pytest.mark.parametrize("ignore_overlap, severity", [(False, E), (True, W)])
def test_touching_endpoints_overlap(ignore_overlap, severity):
    report = intervals("[[1, 5], [5, 9]]", ignore_overlap=ignore_overlap)
    assert found(report) == [("interval.overlap", severity)]
    assert report.findings[0].message == "Interval [5, 9] in VideoFrameSegments for probe P1 intersects with [1, 5]."


#        frame  1 2 3 4 5 6 7 8 9
#   0  [2, 8]     |-----------|
#   1  [1, 9]   |---------------|   contains 0
def test_containing_interval_overlaps():
    assert found(intervals("[[2, 8], [1, 9]]")) == [("interval.overlap", E)]


#        frame  1 2 3 4 5 6 7 8 9
#   0  [1, 9]   |---------------|
#   1  [4, 4]         *             strictly inside 0: always an error
#   2  [9, 9]                   *   on 0's end: an ordinary overlap
@pytest.mark.parametrize("ignore_overlap", [False, True])
def test_point_inside_is_always_an_error(ignore_overlap):
    report = intervals("[[1, 9], [4, 4], [9, 9]]", ignore_overlap=ignore_overlap)
    assert found(report) == [("interval.point_inside", E), ("interval.overlap", W if ignore_overlap else E)]
    assert "Interval [4, 4] in VideoFrameSegments for probe P1 is a singular frame contained in [1, 9]." \
        == report.findings[0].message
    assert report.valid is False


def test_point_before_its_container_is_named_first():
    report = intervals("[[4, 4], [1, 9]]")
    assert found(report) == [("interval.point_inside", E)]
    assert report.findings[0].message.startswith("Interval [4, 4] ")
    assert report.findings[0].message.endswith("contained in [1, 9].")


def test_findings_follow_list_order_and_combine():
    report = intervals("[[0, 5], [5, 9], [9, 4], [120, 130], [125, 126]]", ignore_eof=True)
    assert found(report) == [("interval.out_of_bounds", W), ("interval.overlap", E), ("interval.reversed", E),
                             ("interval.out_of_bounds", W), ("interval.out_of_bounds", W), ("interval.overlap", E)]


def test_hostile_list_is_capped_but_stays_invalid():
    text = json.dumps([[1, 10]] * 20_000 + [[5, 5]] * 20_000)
    report = intervals(text, ignore_overlap=True)
    codes = [f.code for f in report.findings]
    assert len(report.findings) <= 2 * MAX_PAIR_FINDINGS + 2
    assert "interval.point_inside" in codes and not report.valid
    assert any("only the first ones are listed" in f.message for f in report.findings)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), max_size=8), st.booleans())
def test_overlap_findings_match_frame_sets(pairs, ignore_overlap):
    report = intervals(json.dumps(pairs), frame_count=12, ignore_overlap=ignore_overlap)
    expected = []
    for (j, p), (i, q) in itertools.combinations(enumerate(pairs), 2):
        fp, fq = set(range(p[0], p[1] + 1)), set(range(q[0], q[1] + 1))
        if fp & fq:
            point_inside = any(len(x) == 1 and min(y) < min(x) < max(y) for x, y in ((fp, fq), (fq, fp)))
            expected.append((i, j, "interval.point_inside" if point_inside else "interval.overlap"))
    pair_codes = [f.code for f in report.findings if f.code in ("interval.point_inside", "interval.overlap")]
    assert pair_codes == [code for _, _, code in sorted(expected)]
    assert report.valid == (not any(a > b for a, b in pairs) and
                            not any(c == "interval.point_inside" or not ignore_overlap for _, _, c in expected))


# --- HDF5 masks ---------------------------------------------------------------------------------

def mask_file(tmp_path, name="m.hdf5", **blocks) -> str:
    path = str(tmp_path / name)
    with h5py.File(path, "w") as f:
        for start, shape in blocks.items():
            f.create_dataset(f"{start.removeprefix('b')}/masks", data=np.zeros(shape, np.uint8))
    return path


def mask(path, *, width=6, height=4, frame_count=20, max_elements=10**6) -> ValidationReport:
    report = ValidationReport()
    check_video_mask(report, path, probe="P1", width=width, height=height, frame_count=frame_count,
                     max_elements=max_elements, file="sys.csv", line=7)
    return report


def test_valid_mask(tmp_path):
    assert mask(mask_file(tmp_path, b0=(5, 4, 6), b15=(5, 4, 6))).findings == []
    assert mask(mask_file(tmp_path, "s.H5", masks=(20, 4, 6))).findings == []


def test_mask_extension(tmp_path):
    report = mask(mask_file(tmp_path, "m.png", b0=(1, 4, 6)))
    assert found(report) == [("video_mask.extension", E)]


@pytest.mark.parametrize("kind", ["missing", "noise", "huge"])
def test_unreadable_mask(tmp_path, kind):
    path = str(tmp_path / "m.hdf5")
    if kind == "noise":
        (tmp_path / "m.hdf5").write_bytes(b"\x89HDF junk" * 50)
    elif kind == "huge":
        path = mask_file(tmp_path, b0=(1000, 40, 60))
    report = mask(path)
    assert found(report) == [("video_mask.unreadable", E)]
    assert path in report.findings[0].message


def test_mask_dimensions(tmp_path):
    report = mask(mask_file(tmp_path, b0=(2, 4, 6), b5=(2, 6, 4), b9=(1, 6, 4)))
    assert found(report) == [("video_mask.dimensions", E)]
    assert "Expected dimensions 4,6" in report.findings[0].render()
    assert "got 6,4 in the block starting at frame 5 and 1 other blocks." in report.findings[0].message


def test_mask_frames(tmp_path):
    path = mask_file(tmp_path, b0=(5, 4, 6), b18=(2, 4, 6))
    assert mask(path, frame_count=20).findings == []
    report = mask(path, frame_count=19)
    assert found(report) == [("video_mask.frames", E)]
    assert "up to 0-indexed frame 19, but the video has 19 frames" in report.findings[0].message
    assert mask(path, frame_count=None).findings == []
