"""The video fixture generator writes what it says, and the slow reference scorer gives hand-derived
answers on tiny videos (4×4 or 8×8 pixels, a few frames).

Pictures: ``R`` = reference region (selected bit-plane), ``B`` = another bit-plane, ``#`` = system
pixel at 0 (manipulated), ``.`` = background (reference 0 / system 255). Frames are 1-based;
``frames 2-4`` means frames 2, 3 and 4. Temporal counts are unit segments [k, k+1], k = 1..FC-1.
"""

from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from video_reference import Options, read_volume, score_dataset

from mfscore.sample_data.video import (
    JournalEntry,
    VideoCase,
    assemble,
    blocks_from_volume,
    frame_intervals,
    interval_text,
    rectangle_track,
    reference_codes,
    sample_temporal_dataset,
    sample_video_cases,
    sample_video_dataset,
    system_volume,
    write_temporal_dataset,
    write_video_dataset,
)

NAN = math.nan


def table(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


def paint(fc: int, frames, rows, cols, value: int, background: int, size=(4, 4)) -> np.ndarray:
    """uint8 (fc, H, W) volume of ``background`` with ``value`` at [rows, cols] on 1-based ``frames``."""
    volume = np.full((fc, *size), background, np.uint8)
    for f in frames:
        volume[f - 1, rows, cols] = value
    return volume


def score_one(tmp_path, case: VideoCase, *, qm=None, **options) -> dict:
    """Write ``case`` as a one-probe dataset and score it with the slow reference."""
    paths = write_video_dataset(tmp_path, [case])
    results = score_dataset(paths.root, paths.reference, paths.index, paths.system_dir, paths.system,
                            qm=qm, options=Options(**options))
    return results[case.probe_id]


def check(result: dict, **expected) -> None:
    for key, value in expected.items():
        got = result[key]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got), (key, got)
        else:
            assert got == pytest.approx(value, abs=1e-12), (key, got, value)


# --------------------------------------------------------------------------------------------
# The generator


def test_helpers_draw_and_split():
    track = rectangle_track(5, 6, 8, frames=(2, 4), box=(1, 2, 2, 3), step=(0, 1))
    assert track.shape == (5, 6, 8) and track.dtype == bool
    assert not track[0].any() and not track[4].any()
    assert track[1, 1:3, 2:5].all() and track[1].sum() == 6
    assert track[3, 1:3, 4:7].all() and track[3].sum() == 6  # moved 2 pixels right by frame 4
    assert frame_intervals(track, background=0) == [(2, 4)]
    assert interval_text([(2, 4), (7, 7)]) == "[[2,4],[7,7]]" and interval_text([]) == "[]"

    codes = reference_codes({1: track, 3: track, 10: track})
    assert codes.shape == (5, 6, 8, 2)  # bit-plane 10 lives in layer 1
    assert codes[1, 1, 2, 0] == 0b101 and codes[1, 1, 2, 1] == 0b10
    assert reference_codes({2: track}).shape == (5, 6, 8)

    sysv = system_volume((5, 6, 8), [(track, 100), (track, 30), (track, 200)])
    assert sysv[1, 1, 2] == 30 and sysv[0].min() == 255  # the darkest value wins

    volume = np.zeros((10, 2, 2), np.uint8)
    volume[[2, 3, 7]] = 1
    blocks = blocks_from_volume(volume, background=0)
    assert sorted(blocks) == [2, 7] and len(blocks[2]) == 2 and len(blocks[7]) == 1
    assert sorted(blocks_from_volume(volume, background=0, pad=2)) == [0]  # [0,6) and [5,10) merge
    assert np.array_equal(assemble(blocks, 10, 0), volume)


def test_write_video_dataset_files(tmp_path):
    fc, h, w = 12, 6, 8
    paste = rectangle_track(fc, h, w, frames=(3, 6), box=(1, 1, 3, 3))
    blur = rectangle_track(fc, h, w, frames=(8, 11), box=(2, 4, 2, 3))
    ref = reference_codes({1: paste, 9: blur})
    sysv = system_volume((fc, h, w), [(paste, 10)])
    case = VideoCase("p1", fc, h, w, reference_blocks=blocks_from_volume(ref, background=0),
                     system_blocks=blocks_from_volume(sysv, background=255), status="Processed",
                     journal=[("OutputAVI", None, []), ("PasteSampled", 1), JournalEntry("Blur", 9, [(8, 12)])],
                     frame_segments="[[3,6]]", opt_out_segments="[[10,12]]", pixel_value="128",
                     reference_extra={"Collection": "demo"})
    bare = VideoCase("p2", 5, 4, 4, reference_blocks={0: np.zeros((5, 4, 4), np.uint8)}, status="OptOutLocalization")
    paths = write_video_dataset(tmp_path / "data", [case, bare], name="t", compression="gzip")
    root = tmp_path / "data"
    assert paths.cli_args() == ["--refDir", str(root), "-r", "reference/manipulation-video/t-ref.csv",
                                "-x", "indexes/t-index.csv", "--sysDir", str(root / "sys"), "-s", "t.csv"]

    ref_rows = table(root / paths.reference)
    assert list(ref_rows.columns[:8]) == ["TaskID", "ProbeFileID", "ProbeFileName", "IsTarget", "ProbeMaskFileName",
                                          "ProbeBitPlaneMaskFileName", "HDF5MaskFileName", "JournalName"]
    r1 = ref_rows.iloc[0]
    assert (r1.ProbeFileID, r1.IsTarget, r1.JournalName, r1.Collection) == ("p1", "Y", "Jp1", "demo")
    assert r1.HDF5MaskFileName == "reference/manipulation-video/mask/p1-refmask.hdf5"
    assert ref_rows.iloc[1].JournalName == "" and ref_rows.iloc[1].Collection == ""

    with h5py.File(root / r1.HDF5MaskFileName) as f:
        assert sorted(f, key=int) == ["2", "7"]  # frames 3-6 and 8-11, 0-indexed starts
        ds = f["2"]["masks"]
        assert ds.shape == (4, h, w, 2) and ds.dtype == np.uint8
        assert ds.compression == "gzip" and ds.chunks == (1, h, w, 2)
        assert np.array_equal(ds[()], ref[2:6])
    assert np.array_equal(read_volume(root / r1.HDF5MaskFileName, fc, 0, (h, w)), ref)

    joins = table(str(root / paths.reference).replace(".csv", "-probejournaljoin.csv"))
    assert list(joins.columns) == ["ProbeFileID", "JournalName", "StartNodeID", "EndNodeID", "Sequence", "BitPlane"]
    assert joins.BitPlane.tolist() == ["", "1", "9"] and set(joins.ProbeFileID) == {"p1"}
    journal = table(str(root / paths.reference).replace(".csv", "-journalmask.csv"))
    assert list(journal.columns) == ["JournalName", "StartNodeID", "EndNodeID", "Operation", "Color", "Purpose",
                                     "OperationArgument", "AutoDesignName", "VideoTime", "VideoFrame", "AudioTime",
                                     "AudioFrame"]
    assert journal.Operation.tolist() == ["OutputAVI", "PasteSampled", "Blur"]
    assert journal.VideoFrame.tolist() == ["[]", "[[3,6]]", "[[8,12]]"]  # derived from bit-plane 1; given for Blur
    assert journal.merge(joins).shape[0] == 3

    index = table(root / paths.index)
    assert index.iloc[0][["ProbeFileID", "ProbeWidth", "ProbeHeight", "FrameCount"]].tolist() == ["p1", "8", "6", "12"]
    assert "VideoTaskDesignation" in index.columns

    system = table(paths.system_dir / paths.system)
    assert list(system.columns) == ["ProbeFileID", "ConfidenceScore", "ProbeStatus", "OutputProbeMaskFileName",
                                    "VideoFrameSegments", "AudioSampleSegments", "VideoFrameOptOutSegments",
                                    "ProbeOptOutPixelValue"]
    s1, s2 = system.iloc[0], system.iloc[1]
    assert (s1.OutputProbeMaskFileName, s1.VideoFrameSegments, s1.VideoFrameOptOutSegments, s1.ProbeOptOutPixelValue) \
        == ("mask/p1-mask.hdf5", "[[3,6]]", "[[10,12]]", "128")
    assert (s2.OutputProbeMaskFileName, s2.ProbeStatus) == ("", "OptOutLocalization")
    with h5py.File(paths.system_dir / s1.OutputProbeMaskFileName) as f:
        assert list(f) == ["2"] and f["2"]["masks"].shape == (4, h, w)
    assert np.array_equal(read_volume(paths.system_dir / s1.OutputProbeMaskFileName, fc, 255, (h, w)), sysv)


def test_case_validation():
    with pytest.raises(ValueError, match="uint8"):
        VideoCase("p", 3, 2, 2, system_blocks={0: np.zeros((3, 2, 2), np.int32)})
    with pytest.raises(ValueError, match="dimensions"):
        VideoCase("p", 3, 2, 2, system_blocks={0: np.zeros((3, 2, 2, 1), np.uint8)})
    with pytest.raises(ValueError, match="share"):
        write_video_dataset("/nonexistent-never-written", [VideoCase("p", 1, 1, 1)] * 2)


def test_temporal_dataset_files(tmp_path):
    paths = write_temporal_dataset(tmp_path, sample_video_cases(), name="tl")
    args = paths.cli_args()
    assert args[::2] == ["-r", "-i", "-j", "-p", "-s"] and all(Path(p).is_file() for p in args[1::2])
    assert list(table(paths.system).columns) == ["ProbeFileID", "ConfidenceScore", "ProbeStatus", "VideoFrameSegments",
                                                 "AudioSampleSegments", "VideoFrameOptOutSegments"]
    index = table(paths.index)
    assert {"ProbeFileID", "FrameCount"} <= set(index.columns) and set(index.FrameCount) == {"40"}
    joined = table(paths.probe_journal_join).merge(table(paths.journal_mask))
    assert set(joined.ProbeFileID) == {c.probe_id for c in sample_video_cases()}
    assert joined[joined.Operation == "PasteSampled"].VideoFrame.tolist() == ["[[10,25]]", "[[8,28]]"]
    demo = sample_temporal_dataset(tmp_path / "demo")
    assert table(demo.system).set_index("ProbeFileID").loc["vid0004distractor"].VideoFrameOptOutSegments == "[[36,40]]"


def test_sample_video_dataset(tmp_path):
    paths = sample_video_dataset(tmp_path)
    system = table(paths.system_dir / paths.system).set_index("ProbeFileID")
    assert len(system) == 4
    assert system.loc["vid0002optout"].ProbeStatus == "OptOutLocalization"
    assert system.loc["vid0003nomask"].OutputProbeMaskFileName == ""
    assert system.loc["vid0004distractor"].VideoFrameOptOutSegments == "[[36,40]]"
    with h5py.File(tmp_path / table(tmp_path / paths.reference).set_index("ProbeFileID")
                   .loc["vid0004distractor"].HDF5MaskFileName) as f:
        assert next(iter(f.values()))["masks"].ndim == 4  # bit-plane 9: a second layer
    results = score_dataset(paths.root, paths.reference, paths.index, paths.system_dir, paths.system)
    assert set(results) == set(system.index)
    assert results["vid0001processed"]["OptimumMCC"] > 0.5  # found fairly well
    assert results["vid0003nomask"]["OptimumMCC"] == 0.0  # all white
    sel = score_dataset(paths.root, paths.reference, paths.index, paths.system_dir, paths.system,
                        qm="Operation == 'PasteSampled'")
    assert set(sel) == {"vid0001processed", "vid0004distractor"} and sel["vid0004distractor"]["PixelSNS"] > 0


# --------------------------------------------------------------------------------------------
# Hand-derived answers of the reference
#
# Most fixtures: FC = 6, 4×4 pixels, bit-plane 1 (PasteSampled) on the 2×2 block R below, frames 2-4:
#
#   reference frames 2-4     frames:  1 2 3 4 5 6
#     . . . .                ref      . R R R . .      reference interval [2,4]
#     . R R .
#     . R R .                96 pixels in all; 12 in R (3 frames × 4), 84 outside.
#     . . . .

R_ROWS, R_COLS = slice(1, 3), slice(1, 3)
NO_BOUNDARY = {"eks": 0, "dks": 0}


def base_case(system: np.ndarray | None, fc: int = 6, frames=(2, 3, 4), **fields) -> VideoCase:
    ref = paint(fc, frames, R_ROWS, R_COLS, 1, 0)
    blocks = None if system is None else blocks_from_volume(system, background=255)
    return VideoCase("p", fc, 4, 4, reference_blocks={0: ref}, system_blocks=blocks,
                     journal=[("PasteSampled", 1)], **fields)


def test_perfect_system(tmp_path):
    # System: 0 exactly on R, frames 2-4. Thresholds {-1, 0, 255}.
    #   θ=-1: TP 0, FN 12, FP 0, TN 84 -> MCC 0 (TP+FP = 0).   θ=255: TP 12, FP 84 -> MCC 0 (TN+FN = 0).
    #   θ=0:  TP 12, TN 84, FP 0, FN 0 -> MCC 1, NMM 12/12 = 1, BWL1 0/96 = 0; GWL1 0 (|0-0|, |255-255|).
    # Temporal at θ=0: system interval [2,4] = reference. Segments [1,2] TN, [2,3] TP, [3,4] TP, [4,5] TN,
    #   [5,6] TN -> TP 2, TN 3 -> MCC (2·3)/√(2·2·3·3) = 1.
    r = score_one(tmp_path, base_case(paint(6, (2, 3, 4), R_ROWS, R_COLS, 0, 255)), **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumNMM=1.0, OptimumBWL1=0.0, GWL1=0.0,
          OptimumPixelTP=12, OptimumPixelTN=84, OptimumPixelFP=0, OptimumPixelFN=0,
          PixelN=96, PixelBNS=0, PixelSNS=0, PixelPNS=0,
          TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3, TemporalFrameFP=0, TemporalFrameFN=0)
    assert r["table"]["Threshold"].tolist() == [-1, 0, 255]
    assert r["table"]["MCC"].tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("system", ["no mask", "empty file"])
def test_all_white_system(tmp_path, system):
    # No system mask (or an HDF5 file without blocks): every frame reads 255. Thresholds {-1, 255};
    #   both give MCC 0 (a zero factor), the tie goes to the lowest: θ = -1, TP 0, FN 12, FP 0, TN 84.
    #   TP+FN = 12 and TN+FP = 84 are not 0, so the optimum is reported: NMM max(-1, (0-12-0)/12) = -1,
    #   BWL1 12/96 = 0.125; GWL1: each R pixel |0-255|/255 = 1 -> 12/96 = 0.125.
    # Temporal at θ=-1: no system frame. [2,3], [3,4] FN; [1,2], [4,5], [5,6] TN -> MCC 0 (TP+FP = 0).
    case = base_case(None if system == "no mask" else np.full((6, 4, 4), 255, np.uint8))
    r = score_one(tmp_path, case, **NO_BOUNDARY)
    check(r, OptimumThreshold=-1, OptimumMCC=0.0, OptimumNMM=-1.0, OptimumBWL1=0.125, GWL1=0.125,
          OptimumPixelTP=0, OptimumPixelTN=84, OptimumPixelFP=0, OptimumPixelFN=12, PixelN=96,
          TemporalMCC=0.0, TemporalFrameTP=0, TemporalFrameTN=3, TemporalFrameFP=0, TemporalFrameFN=2)


def test_half_right_system(tmp_path):
    # System on frames 2-4: 100 on rows 1-2, cols 0-1 (the left half of R and the 2 pixels left of it);
    # frame 6: 200 on pixel (0,0), a false alarm.      frames 2-4      frame 6
    #                                                  . . . .         2 . . .   (2 = 200, # = 100)
    #                                                  # # R .         . . . .
    #                                                  # # R .
    #                                                  . . . .
    # Thresholds {-1, 100, 200, 255}.
    #   θ=100: TP 2·3 = 6, FN 6, FP 6, TN 84-6 = 78 -> MCC (6·78 - 6·6)/√(12·12·84·84) = 432/1008 = 3/7.
    #   θ=200: FP 7, TN 77 -> MCC (6·77 - 7·6)/√(13·12·84·83) = 420/√1087632 ≈ 0.4027 < 3/7.
    #   θ=-1 and θ=255: MCC 0.  Optimum θ = 100: NMM (6-6-6)/12 = -0.5, BWL1 (6+6)/96 = 0.125.
    # GWL1 = Σ|ref - sys|/255 over all 96 pixels: R at 100: 6·100; R at 255: 6·255; outside at 100:
    #   6·155; the false alarm: 55 -> (600 + 1530 + 930 + 55)/255/96 = 3115/24480.
    # Temporal at θ=100: frames 2-4 have a pixel <= 100, frame 6 (200) does not -> [2,4] = reference:
    #   TP 2, TN 3 -> TemporalMCC 1 (the temporal localization is right, the spatial one half).
    sysv = paint(6, (2, 3, 4), slice(1, 3), slice(0, 2), 100, 255)
    sysv[5, 0, 0] = 200
    r = score_one(tmp_path, base_case(sysv), **NO_BOUNDARY)
    check(r, OptimumThreshold=100, OptimumMCC=3 / 7, OptimumNMM=-0.5, OptimumBWL1=0.125, GWL1=3115 / 24480,
          OptimumPixelTP=6, OptimumPixelTN=78, OptimumPixelFP=6, OptimumPixelFN=6, PixelN=96,
          TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3, TemporalFrameFP=0, TemporalFrameFN=0)
    assert r["table"]["MCC"].iloc[2] == pytest.approx(420 / math.sqrt(13 * 12 * 84 * 83))


def test_collars(tmp_path):
    # FC = 10, R on frames 3-7; the system is one frame late: 0 on R on frames 4-8.
    #   frames  1 2 3 4 5 6 7 8 9 10
    #   ref     . . R R R R R . .  .      reference interval [3,7]
    #   sys     . . . # # # # # .  .      system interval [4,8] at θ = 0
    #   c=1     . X X X . X X X .  .      collars [2,4] and [6,8] around the endpoints 3 and 7
    case = base_case(paint(10, range(4, 9), R_ROWS, R_COLS, 0, 255), fc=10, frames=range(3, 8))
    # Without collars, θ = 0: frame 3 gives FN 4, frame 8 FP 4, frames 4-7 TP 16; TN 160-24 = 136.
    #   MCC (16·136 - 4·4)/√(20·20·140·140) = 2160/2800 = 27/35; NMM (16-4-4)/20 = 0.4; BWL1 8/160 = 0.05;
    #   GWL1: the 8 wrong pixels contribute 1 each -> 8/160 = 0.05.
    #   Temporal: [1,2] TN, [2,3] TN, [3,4] FN, [4,5] [5,6] [6,7] TP, [7,8] FP, [8,9] [9,10] TN
    #   -> TP 3, TN 4, FP 1, FN 1, MCC (12-1)/√(4·4·5·5) = 11/20.
    r = score_one(tmp_path / "none", case, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=27 / 35, OptimumNMM=0.4, OptimumBWL1=0.05, GWL1=0.05,
          OptimumPixelTP=16, OptimumPixelTN=136, OptimumPixelFP=4, OptimumPixelFN=4, PixelN=160, PixelBNS=0,
          TemporalMCC=11 / 20, TemporalFrameTP=3, TemporalFrameTN=4, TemporalFrameFP=1, TemporalFrameFN=1)
    # With -c 1: frames 2,3,4,6,7,8 are collared (6·16 = 96 pixels of BNS); scored frames 1, 5, 9, 10
    #   (64 pixels): frame 5 is TP 4, the rest TN 60 -> MCC 1, NMM 1, BWL1 0, GWL1 0.
    #   Temporal: [1,2] TN; [2,3] [3,4] collar; [4,5] [5,6] TP; [6,7] [7,8] collar; [8,9] [9,10] TN
    #   -> TP 2, TN 3 -> TemporalMCC 1: the collars forgive the one-frame lag.
    r = score_one(tmp_path / "c1", case, collar=1, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumNMM=1.0, OptimumBWL1=0.0, GWL1=0.0,
          OptimumPixelTP=4, OptimumPixelTN=60, OptimumPixelFP=0, OptimumPixelFN=0, PixelN=64, PixelBNS=96,
          PixelSNS=0, PixelPNS=0,
          TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3, TemporalFrameFP=0, TemporalFrameFN=0)


def test_opt_out_frames(tmp_path):
    # The perfect system of test_perfect_system plus a whole-frame false alarm (0) on frame 5, and
    # VideoFrameOptOutSegments [[5,6]].
    #   frames  1 2 3 4 5 6
    #   ref     . R R R . .
    #   sys     . # # # # .      at θ = 0: system interval [2,5]
    #   opt-out         Y Y
    sysv = paint(6, (2, 3, 4), R_ROWS, R_COLS, 0, 255)
    sysv[4] = 0
    case = base_case(sysv, opt_out_segments="[[5,6]]")
    # --video_opt_out: frames 5, 6 opted out: PNS 2·16 = 32, scored frames 1-4 (64 pixels):
    #   θ = 0: TP 12, TN 52 -> MCC 1, NMM 1, BWL1 0, GWL1 0.
    #   Temporal: [1,2] TN, [2,3] [3,4] TP, [4,5] FP (4.5 is not inside [5,6]), [5,6] opted out
    #   -> TP 2, TN 1, FP 1, FN 0: MCC (2·1)/√(3·2·2·1) = 1/√3.
    r = score_one(tmp_path / "oo", case, video_opt_out=True, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumNMM=1.0, OptimumBWL1=0.0, GWL1=0.0, OptimumPixelTP=12,
          OptimumPixelTN=52, OptimumPixelFP=0, OptimumPixelFN=0, PixelN=64, PixelBNS=0, PixelSNS=0, PixelPNS=32,
          TemporalMCC=1 / math.sqrt(3), TemporalFrameTP=2, TemporalFrameTN=1, TemporalFrameFP=1, TemporalFrameFN=0)
    # Without it: frame 5's 16 pixels are FP. θ = 0: TP 12, FP 16, TN 68, FN 0:
    #   MCC 12·68/√(28·12·84·68), NMM (12-16)/12 = -1/3, BWL1 16/96, GWL1 16/96.
    #   Temporal: [2,5] against [2,4]: [1,2] TN, [2,3] [3,4] TP, [4,5] FP, [5,6] TN -> MCC 2·2/√(3·2·3·2) = 2/3.
    r = score_one(tmp_path / "in", case, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=12 * 68 / math.sqrt(28 * 12 * 84 * 68), OptimumNMM=-1 / 3,
          OptimumBWL1=16 / 96, GWL1=16 / 96, OptimumPixelFP=16, PixelPNS=0,
          TemporalMCC=2 / 3, TemporalFrameTP=2, TemporalFrameTN=2, TemporalFrameFP=1, TemporalFrameFN=0)


def test_distractor_bitplane_and_selection(tmp_path):
    # Bit-plane 1 (PasteSampled) on R = rows 0-1, cols 0-1; bit-plane 2 (Blur) on B = rows 2-3,
    # cols 2-3; frames 2-4. The system finds R only (0 on R).
    #   reference frames 2-4     system frames 2-4     B dilated by ntdks 3 (S = selective no-score)
    #     R R . .                  # # . .               R R . .
    #     R R . .                  # # . .               R R S S      (1,1) is R: the core of R
    #     . . B B                  . . . .               . S S S      (eroded by eks 0 = R itself)
    #     . . B B                  . . . .               . S S S      is put back: 8 S pixels
    ref = np.zeros((6, 4, 4), np.uint8)
    ref[1:4, 0:2, 0:2] = 1
    ref[1:4, 2:4, 2:4] = 2
    sysv = paint(6, (2, 3, 4), slice(0, 2), slice(0, 2), 0, 255)
    case = VideoCase("p", 6, 4, 4, reference_blocks={0: ref}, system_blocks={0: sysv},
                     journal=[("PasteSampled", 1), ("Blur", 2)])
    opts = {"eks": 0, "dks": 0, "ntdks": 3}
    # No -qm: both bit-planes are the region (8 pixels × 3 frames = 24); the system misses B.
    #   θ = 0: TP 12, FN 12, FP 0, TN 72 -> MCC 12·72/√(12·24·72·84) = √(3/7); NMM (12-12)/24 = 0;
    #   BWL1 12/96; GWL1 12/96 (12 missed pixels at |0-255|/255 = 1). Temporal: [2,4] both -> 1.
    r = score_one(tmp_path / "all", case, **opts)
    check(r, OptimumThreshold=0, OptimumMCC=math.sqrt(3 / 7), OptimumNMM=0.0, OptimumBWL1=0.125, GWL1=0.125,
          OptimumPixelTP=12, OptimumPixelTN=72, OptimumPixelFN=12, PixelN=96, PixelSNS=0, TemporalMCC=1.0)
    # -qm "Operation == 'PasteSampled'": B becomes a distractor; the 8 S pixels of frames 2-4 are not
    #   scored (PixelSNS 24), so the miss is not counted: scored 8 per frame on 2-4 (R 4 + 4 others) and
    #   16 on 1, 5, 6 -> PixelN 72. θ = 0: TP 12, TN 60 -> MCC 1, NMM 1, BWL1 0, GWL1 0.
    r = score_one(tmp_path / "sel", case, qm="Operation == 'PasteSampled'", **opts)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumNMM=1.0, OptimumBWL1=0.0, GWL1=0.0, OptimumPixelTP=12,
          OptimumPixelTN=60, OptimumPixelFP=0, OptimumPixelFN=0, PixelN=72, PixelBNS=0, PixelSNS=24, PixelPNS=0,
          TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3)
    # -qm on an operation the probe does not have: the probe is not scored.
    paths = write_video_dataset(tmp_path / "none", [case])
    assert score_dataset(paths.root, paths.reference, paths.index, paths.system_dir, paths.system,
                         qm="Operation == 'Splice'", options=Options(**opts)) == {}


def test_temporal_gt_only(tmp_path):
    # The perfect system plus one false-alarm pixel (0) at (3,3) on frame 6, where the reference is empty.
    #   frames  1 2 3 4 5 6
    #   ref     . R R R . .
    #   sys     . # # # . #      at θ = 0: [2,4] and [6,6]
    sysv = paint(6, (2, 3, 4), R_ROWS, R_COLS, 0, 255)
    sysv[5, 3, 3] = 0
    case = base_case(sysv)
    # Default: θ = 0: TP 12, FP 1, TN 83, FN 0 -> MCC 12·83/√(13·12·84·83), NMM (12-1)/12, BWL1 1/96.
    # Temporal: the single-frame interval [6,6] covers no unit segment: [5,6] is TN -> TP 2, TN 3, MCC 1.
    r = score_one(tmp_path / "all", case, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=12 * 83 / math.sqrt(13 * 12 * 84 * 83), OptimumNMM=11 / 12,
          OptimumBWL1=1 / 96, GWL1=1 / 96, PixelN=96, TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3)
    # --temporal_gt_only 1: frames 1, 5, 6 have no R pixel and are skipped (they add nothing, not even
    #   to the no-score counts): PixelN 48; θ = 0: TP 12, TN 36 -> MCC 1, NMM 1, BWL1 0, GWL1 0.
    #   The temporal metrics do not change.
    r = score_one(tmp_path / "gt", case, temporal_gt_only=True, **NO_BOUNDARY)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumNMM=1.0, OptimumBWL1=0.0, GWL1=0.0, OptimumPixelTP=12,
          OptimumPixelTN=36, OptimumPixelFP=0, OptimumPixelFN=0, PixelN=48, PixelBNS=0, PixelSNS=0, PixelPNS=0,
          TemporalMCC=1.0, TemporalFrameTP=2, TemporalFrameTN=3)
    assert [r["FrameRoles"][f] for f in range(1, 7)] == ["skipped", "scored", "scored", "scored", "skipped", "skipped"]


def test_boundary_zone_and_pixel_no_score(tmp_path):
    # 8×8 pixels, FC = 2, R = rows 2-5, cols 2-5 on both frames; the system is 0 on R, and 128 on the
    # 2×2 block rows 6-7, cols 6-7.  eks = dks = 3 (box):
    #   erode(R) = rows 3-4, cols 3-4 (4 px); dilate(R) = rows 1-6, cols 1-6 (36 px); BNS = 32 px/frame.
    #   . . . . . . . .
    #   . b b b b b b .     b = BNS ring, C = scored core of R, p = system 128 (p at (6,6) is also b)
    #   . b b b b b b .
    #   . b b C C b b .
    #   . b b C C b b .
    #   . b b b b b b .
    #   . b b b b b p p
    #   . . . . . . p p
    # θ=0: TP 4·2 = 8; outside scored: 64-36 = 28 per frame; with no --nspx, 3 of them (p) are FP at
    #   θ=128 only, so θ=0 is the optimum: TN 56, MCC 1. PixelN 64, PixelBNS 64.
    #   GWL1: 6 scored p pixels at |255-128|/255 -> 6·127/255/64.
    sysv = paint(2, (1, 2), slice(2, 6), slice(2, 6), 0, 255, size=(8, 8))
    sysv[:, 6:8, 6:8] = 128
    ref = paint(2, (1, 2), slice(2, 6), slice(2, 6), 1, 0, size=(8, 8))
    case = VideoCase("p", 2, 8, 8, reference_blocks={0: ref}, system_blocks={0: sysv}, journal=[("PasteSampled", 1)])
    r = score_one(tmp_path / "a", case, eks=3, dks=3)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumPixelTP=8, OptimumPixelTN=56, OptimumPixelFP=0,
          OptimumPixelFN=0, PixelN=64, PixelBNS=64, PixelSNS=0, PixelPNS=0, GWL1=6 * 127 / 255 / 64,
          TemporalFrameTP=1, TemporalFrameTN=0, TemporalMCC=0.0)  # one segment, TP: MCC 0 (TN+FN = 0)
    # --nspx 128: PNS counts all 4 p pixels per frame (8, regardless of BNS); 3 per frame leave the
    #   scored set: PixelN 64 - 6 = 58, TN 50; GWL1 0.
    r = score_one(tmp_path / "b", case, eks=3, dks=3, nspx=128)
    check(r, OptimumThreshold=0, OptimumMCC=1.0, OptimumPixelTP=8, OptimumPixelTN=50, PixelN=58, PixelBNS=64,
          PixelPNS=8, GWL1=0.0)
    assert r["table"]["Threshold"].tolist() == [-1, 0, 128, 255]


def test_optimum_nan_when_region_unscored(tmp_path):
    # eks = 15 erodes the 2×2 R away and dks = 11 covers the whole 4×4 frame: every pixel of frames 2-4
    # is BNS, no R pixel is scored, so no frame is reference-positive and TP+FN = 0 at every θ:
    # the whole optimum row is NaN, temporal metrics included. Frames 1, 5, 6 (no R) are fully scored:
    # PixelN 48, BNS 48; GWL1 0 (all 255 against reference 255).
    r = score_one(tmp_path / "a", base_case(paint(6, (2, 3, 4), R_ROWS, R_COLS, 0, 255)))
    check(r, OptimumThreshold=NAN, OptimumMCC=NAN, OptimumNMM=NAN, OptimumBWL1=NAN, OptimumPixelTP=NAN,
          OptimumPixelTN=NAN, OptimumPixelFP=NAN, OptimumPixelFN=NAN, PixelN=48, PixelBNS=48, GWL1=0.0,
          TemporalMCC=NAN, TemporalFrameTP=NAN, TemporalFrameTN=NAN, TemporalFrameFP=NAN, TemporalFrameFN=NAN)
    # With --temporal_scoring_only 1 the optimum is chosen on TemporalMCC and reported: no reference
    # interval, so every θ has TemporalMCC 0 (TP+FN = 0) -> θ = -1: no system frame, TN 5.
    r = score_one(tmp_path / "b", base_case(paint(6, (2, 3, 4), R_ROWS, R_COLS, 0, 255)), temporal_scoring_only=True)
    check(r, TemporalMCC=0.0, TemporalFrameTP=0, TemporalFrameTN=5, TemporalFrameFP=0, TemporalFrameFN=0)
    assert r["ReferenceIntervals"] == []
