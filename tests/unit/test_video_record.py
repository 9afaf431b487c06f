"""``VideoRecord`` (mfscore/video/video_record.py): its JSON form, the temporal step function, the
minimum row of an unusable reference, and ``--mediscore-compat``'s one-frame system shift (docs/video.md §B.9)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mfscore.masks.mask_record import SCORED, UNREADABLE, MaskRecord
from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.sample_data.video import write_mask_blocks
from mfscore.video.frame_tally import FrameRules
from mfscore.video.video_metrics import MINIMUM, video_cells
from mfscore.video.video_record import VideoRecord
from mfscore.video.video_scoring import VideoJob, score_video

NO_ZONES = FrameRules(every_bit=True, zones=ZoneOptions(0, 0, 0))


def same_record(a: VideoRecord, b: VideoRecord) -> None:
    assert (a.probe_id, a.status, a.frame_count, a.spatial_scored, a.temporal_scored, a.error) == \
        (b.probe_id, b.status, b.frame_count, b.spatial_scored, b.temporal_scored, b.error)
    assert np.array_equal(a.thresholds, b.thresholds) and a.thresholds.dtype == b.thresholds.dtype
    assert np.array_equal(a.temporal, b.temporal) and a.temporal.shape == b.temporal.shape
    for x, y in ((a.pixel_average_auc, b.pixel_average_auc), (a.mask_average_auc, b.mask_average_auc)):
        assert (math.isnan(x) and math.isnan(y)) or x == y
    s, t = a.spatial, b.spatial
    assert s.status == t.status
    assert np.array_equal(s.positive, t.positive) and np.array_equal(s.negative, t.negative)
    assert np.array_equal(s.present, t.present)
    assert (s.pixel_bns, s.pixel_sns, s.pixel_pns, s.region_pixels, s.missing_bitplanes, s.message) == \
        (t.pixel_bns, t.pixel_sns, t.pixel_pns, t.region_pixels, t.missing_bitplanes, t.message)


def round_trip(record: VideoRecord) -> VideoRecord:
    text = json.dumps(record.to_dict(), allow_nan=False)  # strict JSON: NaN travels as null
    return VideoRecord.from_dict(json.loads(text))


def video(tmp_path, frame_count=30, frames=(10, 20), system_value=0, shape=(12, 16), system_start=None):
    """A reference with a box on frames a..b (1-based) and a system mask finding it with ``system_value``."""
    a, b = frames
    region = np.zeros((b - a + 1, *shape), np.uint8)
    region[:, 3:9, 4:12] = 1
    write_mask_blocks(tmp_path / "ref.hdf5", {a - 1: region})
    system = np.where(region > 0, np.uint8(system_value), np.uint8(255))
    write_mask_blocks(tmp_path / "sys.hdf5", {(a - 1) if system_start is None else system_start: system})
    return str(tmp_path / "ref.hdf5"), str(tmp_path / "sys.hdf5")


# --------------------------------------------------------------------------------------------
# JSON


def test_round_trip_of_a_scored_video(tmp_path):
    ref, sys = video(tmp_path, system_value=40)
    record = score_video(VideoJob("P1", ref, sys, 30, rules=NO_ZONES, collar=2))
    assert record.status == SCORED and len(record.thresholds) == 3  # -1, 40, 255
    assert not math.isnan(record.pixel_average_auc)
    back = round_trip(record)
    same_record(record, back)
    assert video_cells(back, maximum=40, actual=40) == pytest.approx(video_cells(record, maximum=40, actual=40),
                                                                     nan_ok=True)


def test_round_trip_with_nan_aucs_and_flags():
    spatial = MaskRecord(status=SCORED, pixel_bns=5, pixel_sns=6, pixel_pns=7, region_pixels=8,
                         positive=np.arange(256, dtype=np.int64), negative=np.zeros(256, np.int64),
                         present=np.arange(256) % 3 == 0)
    record = VideoRecord("P9", SCORED, spatial=spatial, thresholds=np.array([-1, 0, 255]),
                         temporal=np.array([[0, 5, 0, 3], [2, 4, 1, 1], [3, 0, 5, 0]]), frame_count=8,
                         spatial_scored=False, temporal_scored=True, error="sys.hdf5: something; scored as white")
    assert math.isnan(record.pixel_average_auc) and math.isnan(record.mask_average_auc)
    data = record.to_dict()
    assert data["pixel_average_auc"] is None and data["mask_average_auc"] is None
    same_record(record, round_trip(record))


def test_round_trip_of_an_unreadable_record():
    record = VideoRecord("P2", UNREADABLE, error="ref.hdf5: the video mask does not exist")
    back = round_trip(record)
    same_record(record, back)
    assert back.temporal.shape == (0, 4) and not back.scored


# --------------------------------------------------------------------------------------------
# temporal_at: a step function of the threshold


def step_record(**kw) -> VideoRecord:
    return VideoRecord("P", SCORED, thresholds=np.array([-1, 10, 40, 255]),
                       temporal=np.array([[0, 20, 0, 10], [4, 18, 2, 6], [8, 15, 5, 2], [10, 0, 20, 0]]),
                       frame_count=30, **kw)


@pytest.mark.parametrize("threshold, row", [
    (-1, 0), (-0.5, 0), (0, 0), (9.99, 0),
    (10, 1), (10.5, 1), (39, 1),
    (40, 2), (254.9, 2),
    (255, 3), (300, 3),
    (-5, 0),  # below every threshold: the lowest row (nothing is positive there either)
])
def test_temporal_at_is_a_step_function(threshold, row):
    record = step_record()
    counts = record.temporal_at(threshold)
    assert (counts.tp, counts.tn, counts.fp, counts.fn) == tuple(int(x) for x in record.temporal[row])


def test_temporal_at_without_a_temporal_score():
    assert step_record().temporal_at(math.nan) is None
    assert step_record(temporal_scored=False).temporal_at(10) is None
    assert VideoRecord("P", SCORED).temporal_at(10) is None  # no threshold at all


# --------------------------------------------------------------------------------------------
# The minimum row


def test_unreadable_record_gets_the_minimum_row():
    record = VideoRecord("P", UNREADABLE, error="x")
    for kw in ({}, {"temporal_only": True}):
        cells = video_cells(record, maximum=None, actual=None, **kw)
        assert cells == {"Scored": "N", "OptimumMCC": 0.0, "OptimumNMM": -1.0, "OptimumBWL1": 1.0, "GWL1": 1.0,
                         "AUC": 0.0, "EER": 1.0, "TemporalMCC": 0.0}
    assert video_cells(record, maximum=10, actual=20) == MINIMUM


def test_neither_part_scored_gets_the_minimum_row(tmp_path):
    ref, sys = video(tmp_path)
    record = score_video(VideoJob("P", ref, sys, 30, rules=NO_ZONES, spatial=False, temporal=False))
    assert record.status == SCORED and not record.scored
    assert video_cells(record, maximum=None, actual=None) == MINIMUM


def test_missing_reference_is_unreadable(tmp_path):
    record = score_video(VideoJob("P", str(tmp_path / "nowhere.hdf5"), None, 30))
    assert record.status == UNREADABLE and "nowhere.hdf5" in record.error
    assert video_cells(record, maximum=None, actual=None) == MINIMUM


# --------------------------------------------------------------------------------------------
# --mediscore-compat: MediScore's system intervals are one frame late (docs/video.md §B.9)


def test_mediscore_compat_shifts_the_system_by_one_frame(tmp_path):
    """30 frames, manipulation on frames 10-20, the system mask equal to the reference."""
    ref, sys = video(tmp_path, frame_count=30, frames=(10, 20))
    default = score_video(VideoJob("P", ref, sys, 30, rules=NO_ZONES))
    compat = score_video(VideoJob("P", ref, sys, 30, rules=NO_ZONES, mediscore_compat=True))
    plain = video_cells(default, maximum=None, actual=None)
    shifted = video_cells(compat, maximum=None, actual=None)

    assert plain["OptimumThreshold"] == 0 and plain["OptimumMCC"] == 1.0
    assert plain["TemporalMCC"] == 1.0
    # continuous lengths (end - start): [10, 20] is 10 long, the video 29
    assert (plain["TemporalFrameTP"], plain["TemporalFrameTN"], plain["TemporalFrameFP"],
            plain["TemporalFrameFN"]) == (10, 19, 0, 0)

    # the system interval becomes [11, 21]: TP 9, TN 18, FP 1, FN 1
    assert (shifted["TemporalFrameTP"], shifted["TemporalFrameTN"], shifted["TemporalFrameFP"],
            shifted["TemporalFrameFN"]) == (9, 18, 1, 1)
    assert shifted["TemporalMCC"] == pytest.approx((9 * 18 - 1 * 1) / math.sqrt(10 * 10 * 19 * 19))
    assert shifted["TemporalMCC"] == pytest.approx(0.847, abs=5e-4)

    # the pixel metrics are not affected
    spatial = {k: v for k, v in plain.items() if not k.startswith("Temporal")}
    assert {k: v for k, v in shifted.items() if not k.startswith("Temporal")} == pytest.approx(spatial, nan_ok=True)


def test_mediscore_compat_clips_the_shift_at_the_last_frame(tmp_path):
    """A system detection on the last frame moves past the video and is dropped."""
    ref, sys = video(tmp_path, frame_count=30, frames=(25, 30))
    compat = score_video(VideoJob("P", ref, sys, 30, rules=NO_ZONES, mediscore_compat=True))
    cells = video_cells(compat, maximum=None, actual=None)
    assert (cells["TemporalFrameTP"], cells["TemporalFrameFP"], cells["TemporalFrameFN"]) == (4, 0, 1)
