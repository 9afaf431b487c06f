"""``mfscore validate`` on a valid generated submission and on hostile variants of it.

The valid one must pass (never fail a valid submission); each corruption must fail with its finding
code, exit 1, no traceback, and leave nothing written.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from mfscore.cli.main import main
from mfscore.formats.tables import read_table, write_table
from mfscore.sample_data.masks import generate_mask_dataset
from output_files import everything_under

WIDTH, HEIGHT = 32, 24


@pytest.fixture
def submission(tmp_path):
    data = generate_mask_dataset(tmp_path / "data", n_probes=6, width=WIDTH, height=HEIGHT)
    return data.directory / data.system, data.directory / data.index


def _validate(capsys, system, index, *extra) -> tuple[int, dict]:
    status = main(["validate", "-vt", "SSD", "-s", str(system), "-x", str(index), "--json", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, json.loads(captured.out)


def _codes(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"] if f["severity"] == "error"}


def _edit(system: Path, column: str, row: int, value: str) -> None:
    table = read_table(system, raw_text=True).fillna("")
    table.loc[row, column] = value
    write_table(table, system)


def _png_header_only(path: Path, width: int, height: int) -> None:
    """A PNG whose IHDR declares ``width`` x ``height`` grey pixels, with no image data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk)


def test_generated_submission_is_valid(submission, capsys):
    status, report = _validate(capsys, *submission)
    assert status == 0 and report["valid"], report


@pytest.mark.parametrize("column, value, code", [
    ("ConfidenceScore", "high", "score.not_numeric"),
    ("ConfidenceScore", "nan", "score.not_numeric"),
    ("ConfidenceScore", "inf", "score.not_numeric"),
    ("ConfidenceScore", "", "score.not_numeric"),
    ("ProbeStatus", "Maybe", "status.unknown"),
    ("ProbeStatus", "", "status.unknown"),
    ("ProbeOptOutPixelValue", "256", "pixel.value"),
    ("ProbeOptOutPixelValue", "-1", "pixel.value"),
    ("ProbeOptOutPixelValue", "12.5", "pixel.value"),
    ("ProbeFileID", "not-in-index", "key.unknown"),
    ("OutputProbeMaskFileName", "../../../../etc/passwd.png", "mask.path"),
    ("OutputProbeMaskFileName", "/etc/mask.png", "mask.path"),
    ("OutputProbeMaskFileName", "mask/absent.png", "mask.missing"),
    ("OutputProbeMaskFileName", "mask/x.jpg", "mask.not_png"),
])
def test_a_bad_value_is_an_error(submission, capsys, column, value, code):
    system, index = submission
    _edit(system, column, 1, value)
    status, report = _validate(capsys, system, index)
    assert status == 1 and code in _codes(report), report
    assert any(f["line"] == 3 for f in report["findings"] if f["code"] == code)


def test_nan_and_inf_scores_pass_only_in_mediscore_compat(submission, capsys):
    system, index = submission
    _edit(system, "ConfidenceScore", 0, "inf")
    assert _validate(capsys, system, index)[0] == 1
    assert _validate(capsys, system, index, "--mediscore-compat")[0] == 0


def test_scores_outside_unit_interval_fail_only_under_mfc2019(submission, capsys):
    system, index = submission
    _edit(system, "ConfidenceScore", 0, "6749")
    assert _validate(capsys, system, index)[0] == 0
    status, report = _validate(capsys, system, index, "--plan", "mfc2019")
    assert status == 1 and _codes(report) == {"score.range"}
    assert _validate(capsys, system, index, "--semafor")[0] == 0


def test_symlink_leading_out_is_refused(submission, capsys, tmp_path):
    system, index = submission
    outside = tmp_path / "outside.png"
    cv2.imwrite(str(outside), np.zeros((HEIGHT, WIDTH), np.uint8))
    os.symlink(outside, system.parent / "mask" / "link.png")
    _edit(system, "OutputProbeMaskFileName", 0, "mask/link.png")
    status, report = _validate(capsys, system, index)
    assert status == 1 and _codes(report) == {"mask.path"}


def test_huge_png_header_is_refused_without_decoding(submission, capsys):
    system, index = submission
    _png_header_only(system.parent / "mask" / "huge.png", 100_000, 100_000)
    _edit(system, "OutputProbeMaskFileName", 0, "mask/huge.png")
    status, report = _validate(capsys, system, index)
    assert status == 1 and {"mask.too_large", "mask.dimensions"} <= _codes(report)


@pytest.mark.parametrize("write, code", [
    (lambda p: cv2.imwrite(str(p), np.zeros((HEIGHT, WIDTH, 3), np.uint8)), "mask.channels"),
    (lambda p: cv2.imwrite(str(p), np.zeros((HEIGHT, WIDTH), np.uint16)), "mask.bit_depth"),
    (lambda p: cv2.imwrite(str(p), np.zeros((HEIGHT + 1, WIDTH), np.uint8)), "mask.dimensions"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n"), "mask.unreadable"),
    (lambda p: p.write_bytes(os.urandom(64)), "mask.unreadable"),
    (lambda p: p.write_bytes(cv2.imencode(".jpg", np.zeros((HEIGHT, WIDTH), np.uint8))[1].tobytes()),
     "mask.unreadable"),
])
def test_a_bad_mask_is_an_error(submission, capsys, write, code):
    system, index = submission
    write(system.parent / "mask" / "bad.png")
    _edit(system, "OutputProbeMaskFileName", 2, "mask/bad.png")
    status, report = _validate(capsys, system, index)
    assert status == 1 and code in _codes(report), report


def test_table_problems_are_reported_with_their_lines(submission, capsys):
    system, index = submission
    lines = system.read_text().splitlines()
    lines[2] += "|extra"
    lines.append(lines[1])
    system.write_text("\n".join(lines) + "\n")
    status, report = _validate(capsys, system, index)
    assert status == 1
    assert {"table.field_count", "table.duplicate_rows", "table.row_count"} <= _codes(report)
    assert [f["line"] for f in report["findings"] if f["code"] == "table.field_count"] == [3]


def test_missing_index_rows_and_non_utf8(submission, capsys):
    system, index = submission
    table = read_table(system, raw_text=True).fillna("")
    write_table(table.iloc[1:], system)
    status, report = _validate(capsys, system, index)
    assert status == 1 and {"key.missing", "table.row_count"} <= _codes(report)
    system.write_bytes(b"ProbeFileID|ConfidenceScore\n\xff\xfe|1\n")
    status, report = _validate(capsys, system, index)
    assert status == 1 and _codes(report) == {"table.encoding"}


def test_revised_output_is_a_file_name_beside_the_system(submission, capsys, tmp_path):
    system, index = submission
    cv2.imwrite(str(system.parent / "mask" / "small.png"), np.zeros((HEIGHT - 1, WIDTH), np.uint8))
    _edit(system, "OutputProbeMaskFileName", 0, "mask/small.png")
    before = everything_under(tmp_path)
    status = main(["validate", "-vt", "SSD", "-s", str(system), "-x", str(index), "--output_revised_system",
                   "../escape.csv"])
    captured = capsys.readouterr()
    assert status == 1 and "takes a file name" in captured.err and "Traceback" not in captured.err
    assert everything_under(tmp_path) == before
    status, _ = _validate(capsys, system, index, "--output_revised_system", "revised.csv")
    assert status == 1
    revised = read_table(system.parent / "revised.csv", raw_text=True).fillna("")
    assert revised.loc[0, "ProbeStatus"] == "FailedValidation"
    assert (revised.drop(index=0) == read_table(system, raw_text=True).fillna("").drop(index=0)).all().all()
    status, report = _validate(capsys, system.parent / "revised.csv", index)
    assert status == 0 and "status.failed_validation" in {f["code"] for f in report["findings"]}


def test_table_size_limit_comes_before_reading(submission):
    from mfscore.validation.options import ValidatorOptions
    from mfscore.validation.submission import validate_submission

    system, index = submission
    report = validate_submission(str(system), str(index), ValidatorOptions(max_table_bytes=10)).report
    assert not report.valid and report.codes() >= {"table.too_large"}


def test_unknown_columns_and_rows_report_not_crash(submission, capsys):
    system, index = submission
    table = read_table(system, raw_text=True).fillna("")
    write_table(table.drop(columns=["ConfidenceScore"]), system)
    status, report = _validate(capsys, system, index)
    assert status == 1 and _codes(report) == {"table.required_column"}
    write_table(pd.DataFrame({"ProbeFileID": ["a"]}), system)
    status, report = _validate(capsys, system, index)
    assert status == 1 and _codes(report) == {"table.columns"}


@pytest.fixture
def video_submission(tmp_path):
    """Two probes of 16x12 pixels and 30 frames; masks as HDF5 blocks named by their 0-indexed start frame."""
    import h5py

    (tmp_path / "sys" / "mask").mkdir(parents=True)
    write_table(pd.DataFrame({"TaskID": "manipulation", "ProbeFileID": ["v1", "v2"], "ProbeFileName": ["a.mp4", "b.mp4"],
                              "ProbeWidth": "16", "ProbeHeight": "12", "FrameCount": "30"}), tmp_path / "index.csv")
    with h5py.File(tmp_path / "sys" / "mask" / "v1.hdf5", "w") as f:
        f.create_dataset("4/masks", data=np.full((6, 12, 16), 255, np.uint8))
    system = pd.DataFrame({"ProbeFileID": ["v1", "v2"], "ConfidenceScore": ["0.9", "0.1"],
                           "ProbeStatus": ["Processed", "OptOutSpatial"], "VideoFrameSegments": ["[[5, 10]]", "[]"],
                           "AudioSampleSegments": ["[]", "[]"], "VideoFrameOptOutSegments": ["[[1, 2]]", "[]"],
                           "OutputProbeMaskFileName": ["mask/v1.hdf5", ""], "ProbeOptOutPixelValue": ["", ""]})
    write_table(system, tmp_path / "sys" / "sys.csv")
    return tmp_path / "sys" / "sys.csv", tmp_path / "index.csv"


def _validate_video(capsys, system, index, *extra) -> tuple[int, dict]:
    status = main(["validate", "-vt", "SSD-video", "-s", str(system), "-x", str(index), "--json", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, json.loads(captured.out)


def test_video_submission_valid_then_overlapping(video_submission, capsys):
    system, index = video_submission
    assert _validate_video(capsys, system, index)[0] == 0
    _edit(system, "VideoFrameSegments", 0, "[[5, 10], [10, 12]]")
    status, report = _validate_video(capsys, system, index)
    assert status == 1 and _codes(report) == {"interval.overlap"}
    status, report = _validate_video(capsys, system, index, "--ignore_overlap")
    assert status == 0 and "interval.overlap" in {f["code"] for f in report["findings"]}
    _edit(system, "VideoFrameSegments", 0, "[[5, 31]]")
    assert _codes(_validate_video(capsys, system, index)[1]) == {"interval.out_of_bounds"}
    assert _validate_video(capsys, system, index, "--ignore_eof")[0] == 0


def test_hdf5_mask_of_a_trillion_elements_is_refused_from_its_shape(video_submission, capsys):
    import h5py

    system, index = video_submission
    with h5py.File(system.parent / "mask" / "huge.hdf5", "w") as f:
        f.create_dataset("0/masks", shape=(10**6, 10**3, 10**3), dtype=np.uint8, chunks=(1, 100, 100))
    _edit(system, "OutputProbeMaskFileName", 1, "mask/huge.hdf5")
    status, report = _validate_video(capsys, system, index)
    assert status == 1 and _codes(report) == {"video_mask.unreadable"}
    (system.parent / "mask" / "junk.hdf5").write_bytes(b"\x89HDF\r\n\x1a\n" + os.urandom(100))
    _edit(system, "OutputProbeMaskFileName", 1, "mask/junk.hdf5")
    assert _codes(_validate_video(capsys, system, index)[1]) == {"video_mask.unreadable"}
    _edit(system, "OutputProbeMaskFileName", 1, "mask/v1.hdf5")
    _edit(system, "OutputProbeMaskFileName", 0, "../../index.csv")
    assert _codes(_validate_video(capsys, system, index)[1]) == {"mask.path"}
