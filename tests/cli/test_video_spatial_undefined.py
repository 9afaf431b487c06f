"""``mfscore video-spatial`` on videos whose metrics are undefined, end to end, with hand-derived answers
(docs/video.md, "How a video is scored" and "Outputs").

Frames are 8×8, FC = 4, bit-plane 1 (PasteSampled), zones ``--eks 3 --dks 3`` (box): a 4×4 reference
block R (rows 2-5, cols 2-5) erodes to its 2×2 core (rows 3-4, cols 3-4) and dilates to rows 1-6,
cols 1-6, so 32 pixels of each frame holding R are boundary no-score and 32 are scored.

  perfect   R on frames 2-3; the system is 0 exactly on R.
            θ = 0: TP 2·4 = 8, FP 0, FN 0, TN 2·28 + 2·64 = 184: MCC 1; ROC thresholds {-1, 0, 255}:
            (0,0), (0,1), (1,1): AUC 1, EER 0; GWL1 0; temporal [2,3] = [2,3]: TemporalMCC 1.
  tiny      a one-pixel target (4,4) on frames 2-3, found by the system (0 there): erosion removes it
            and its 3×3 dilation is no-score, so no reference-positive pixel is scored. No ROC: the
            optimum row, AUC, EER, the average AUCs and TemporalMCC are empty; GWL1 is 0 (every scored
            pixel is 255 against a reference 255). MediScore reads AUC 0 and EER 1 off its rates
            (TPR 0 everywhere; FPR 0 at θ ≤ 0 since the only dark pixel is no-score, 1 at θ = 255).
  blank     the reference mask marks nothing (all zero) although the journal names bit-plane 1; the
            system has a false alarm (0 on rows 0-1, cols 0-1 of frame 2). MediScore drops such a
            video from _pervideo.csv (its placeholder row is Scored = N), so it is in no table.

Before the fix, the run's _mask_score.csv said mean MCC 1.0 but mean AUC 0.333 (1, 0, 0 of the three
videos). Now every mean is over the same videos, those with an optimum: only ``perfect``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mfscore.cli.main import main
from mfscore.sample_data.video import VideoCase, write_video_dataset

FC, H, W = 4, 8, 8
ZONES = ("--eks", "3", "--dks", "3")
ST = "SpatialTemporal"


def volume(frames, rows, cols, value: int, background: int) -> np.ndarray:
    out = np.full((FC, H, W), background, np.uint8)
    for f in frames:
        out[f - 1, rows, cols] = value
    return out


R = (slice(2, 6), slice(2, 6))
TINY = (slice(4, 5), slice(4, 5))


def video(probe: str, reference: np.ndarray, system: np.ndarray) -> VideoCase:
    return VideoCase(probe, FC, H, W, reference_blocks={0: reference}, system_blocks={0: system},
                     journal=[("PasteSampled", 1)])


def three_videos() -> list[VideoCase]:
    alarm = np.full((FC, H, W), 255, np.uint8)
    alarm[1, 0:2, 0:2] = 0
    return [video("perfect", volume((2, 3), *R, 1, 0), volume((2, 3), *R, 0, 255)),
            video("tiny", volume((2, 3), *TINY, 1, 0), volume((2, 3), *TINY, 0, 255)),
            video("blank", np.zeros((FC, H, W), np.uint8), alarm)]


def run(tmp_path, cases, *options: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    paths = write_video_dataset(tmp_path / "data", cases)
    out = tmp_path / "out"
    status = main(["video-spatial", "-t", "manipulation", *paths.cli_args(), "-oR", str(out / "run"),
                   "--precision", "12", *options])
    assert status == 0
    read = {"sep": "|", "dtype": str, "keep_default_na": False}
    return (pd.read_csv(out / "run_pervideo.csv", **read).set_index("ProbeFileID"),
            pd.read_csv(out / "run_mask_score.csv", **read))


def test_undefined_metrics_are_empty_and_every_mean_is_over_the_same_videos(tmp_path):
    pervideo, averaged = run(tmp_path, three_videos(), *ZONES)
    assert list(pervideo.index) == ["perfect", "tiny"]  # the blank reference is in no table
    perfect, tiny = pervideo.loc["perfect"], pervideo.loc["tiny"]
    assert (perfect[f"{ST}OptimumMCC"], perfect[f"{ST}AUC"], perfect[f"{ST}EER"], perfect["TemporalMCC"]) == \
        ("1.0", "1.0", "0.0", "1.0")
    assert (perfect[f"{ST}OptimumPixelTP"], perfect[f"{ST}OptimumPixelTN"], perfect[f"{ST}PixelBNS"]) == \
        ("8", "184", "64")
    assert tiny["Scored"] == "Y"
    for column in ("OptimumThreshold", "OptimumMCC", "OptimumNMM", "AUC", "EER", "PixelAverageAUC",
                   "MaskAverageAUC"):
        assert tiny[f"{ST}{column}"] == "", column
    assert tiny["TemporalMCC"] == "" and tiny[f"{ST}GWL1"] == "0.0"
    assert (tiny[f"{ST}PixelN"], tiny[f"{ST}PixelBNS"]) == ("238", "18")

    (row,) = averaged.to_dict("records")
    for column in ("OptimumMCC", "AUC", "GWL1", "OptimumBWL1", "OptimumNMM"):
        assert row[f"{ST}{column}"] == ("0.0" if column in ("GWL1", "OptimumBWL1") else "1.0"), column
        assert row[f"stddev_{ST}{column}"] == ""  # one video
    assert (row[f"{ST}EER"], row["TemporalMCC"]) == ("0.0", "1.0")
    assert (row["totalTargets"], row["ScoreableTargets"], row["ScoreableTrials"], row["totalTrials"]) == \
        ("2", "1", "2", "3")


def test_mediscore_compat_reads_auc_and_eer_off_the_rates(tmp_path):
    """--mediscore-compat: the tiny target has AUC 0 and EER 1 (MediScore's reading of rates of 0 for an
    empty class) and enters the means of the cells it has, as pandas' mean takes them."""
    pervideo, averaged = run(tmp_path, three_videos(), *ZONES, "--mediscore-compat")
    assert list(pervideo.index) == ["perfect", "tiny"]  # MediScore drops the blank reference too
    tiny = pervideo.loc["tiny"]
    assert (tiny[f"{ST}AUC"], tiny[f"{ST}EER"], tiny[f"{ST}OptimumMCC"]) == ("0.0", "1.0", "")
    (row,) = averaged.to_dict("records")
    assert (row[f"{ST}AUC"], row[f"{ST}EER"], row[f"{ST}OptimumMCC"], row[f"{ST}GWL1"]) == ("0.5", "0.5", "1.0", "0.0")


# --------------------------------------------------------------------------------------------
# Nothing scored: every frame collared, or every pixel declared no-score (--nspx)
#
#   collared  R on frames 2-3, the system 0 on R: the reference interval [2,3] with -c 2 collars
#             [1,4] around both ends, so every frame is boundary no-score (PixelBNS 4·64 = 256).
#   declared  R on frames 2-3, the system 128 everywhere: with --nspx 128 every pixel is pixel
#             no-score (PixelPNS 256, and PixelBNS 2·32 for the band it overlaps); no pixel is scored,
#             so there is no reference interval nor collar.
#
# Neither has a scored pixel: the optimum, GWL1, AUC, EER, average AUCs and TemporalMCC are empty, the
# same for both. --sbin 100: the Actual threshold is 100 with zero counts and empty MCC, NMM, BWL1
# (N = 0); the Maximum threshold (no video has an MCC) is the lowest, -1, likewise with zero counts.

ZONE_COLUMNS = {f"{ST}PixelN", f"{ST}PixelBNS", f"{ST}PixelSNS", f"{ST}PixelPNS"}


def test_nothing_scored_gives_the_same_answer_with_collars_and_pixel_zones(tmp_path):
    cases = [video("collared", volume((2, 3), *R, 1, 0), volume((2, 3), *R, 0, 255)),
             video("declared", volume((2, 3), *R, 1, 0), np.full((FC, H, W), 128, np.uint8))]
    pervideo, averaged = run(tmp_path, cases, *ZONES, "-c", "2", "--nspx", "128", "--sbin", "100")
    collared, declared = pervideo.loc["collared"], pervideo.loc["declared"]
    assert (collared[f"{ST}PixelN"], collared[f"{ST}PixelBNS"], collared[f"{ST}PixelPNS"]) == ("0", "256", "0")
    # PNS is counted regardless of the other zones, so the boundary band of frames 2-3 is counted too
    assert (declared[f"{ST}PixelN"], declared[f"{ST}PixelBNS"], declared[f"{ST}PixelPNS"]) == ("0", "64", "256")
    metrics = [c for c in pervideo.columns if (c.startswith(ST) or c.startswith("Temporal") or c in ("TPR", "FPR"))
               and c not in ZONE_COLUMNS]
    assert collared[metrics].to_dict() == declared[metrics].to_dict()
    for column in ("OptimumThreshold", "OptimumMCC", "GWL1", "AUC", "EER", "PixelAverageAUC", "MaskAverageAUC"):
        assert collared[f"{ST}{column}"] == "", column
    assert collared["TemporalMCC"] == ""
    for name, threshold in (("Actual", "100"), ("Maximum", "-1")):
        assert collared[f"{ST}{name}Threshold"] == threshold
        assert [collared[f"{ST}{name}Pixel{c}"] for c in ("TP", "TN", "FP", "FN")] == ["0"] * 4
        assert [collared[f"{ST}{name}{m}"] for m in ("MCC", "NMM", "BWL1")] == [""] * 3
    (row,) = averaged.to_dict("records")
    assert (row[f"{ST}ActualThreshold"], row[f"{ST}MaximumThreshold"]) == ("100", "-1")
    assert row[f"{ST}OptimumMCC"] == row[f"{ST}AUC"] == row["TemporalMCC"] == ""  # no video has an optimum
    assert (row["totalTargets"], row["ScoreableTargets"]) == ("2", "0")


@pytest.mark.parametrize("selected", ["PasteSampled", "Blur"])
def test_qm_dilates_every_pixel_carrying_an_unselected_bitplane(tmp_path, selected):
    """-qm: bit-planes 1 (PasteSampled) and 2 (Blur) cover the same 4×4 block on frames 2-3; --eks 0
    --dks 0 --ntdks 3. Selecting PasteSampled, every pixel of the block carries the unselected
    bit-plane 2, so the distraction zone is the block dilated by 3 (rows 1-6, cols 1-6) with the
    eroded region (eks 0: the block itself) put back: a ring of 36 − 16 = 20 pixels per frame, 40 in
    all. (Before, pixels carrying both bit-planes were not distractors and the zone was empty.)"""
    reference = volume((2, 3), *R, 0b11, 0)
    case = VideoCase("both", FC, H, W, reference_blocks={0: reference}, system_blocks={0: volume((2, 3), *R, 0, 255)},
                     journal=[("PasteSampled", 1), ("Blur", 2)])
    pervideo, _ = run(tmp_path, [case], "--eks", "0", "--dks", "0", "--ntdks", "3", "-qm", f"Operation == '{selected}'")
    row = pervideo.loc["both"]
    assert row[f"{ST}PixelSNS"] == "40"
    assert (row[f"{ST}PixelN"], row[f"{ST}OptimumMCC"]) == (str(4 * 64 - 40), "1.0")
    assert math.isclose(float(row[f"{ST}AUC"]), 1.0)
