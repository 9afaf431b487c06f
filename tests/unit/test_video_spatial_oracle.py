"""``mfscore video-spatial`` against the slow reference (tests/video_reference.py) on random small videos.

Three seeded datasets of ten probes each: one to three manipulations per probe (moving rectangles,
bit-planes 1-3, or 9-11 in a second layer), sometimes a mask-less journal operation, a stray bit-plane
outside the journal, or a journal without any bit-plane; the system finds each manipulation or not,
shifted in space and time, with false alarms, grey levels from a small palette (128 among them, for
``--nspx``), sometimes no mask at all; VideoFrameOptOutSegments on some probes. Each option set runs
the command once per dataset and compares every probe's ``SpatialTemporal*``, ``TemporalMCC`` and
``TemporalFrame*`` columns with the reference: metrics within 1e-9, counts and thresholds exactly,
NaN (an empty cell) where the reference gives NaN; and the ``_mask_score.csv`` means, deviations and
target counts with the reference's, every mean over the same videos (those with an optimum).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from video_reference import AVERAGED, Options, add_maximum, mask_score_row, score_dataset

from mfscore.cli.main import main
from mfscore.sample_data.video import (
    VideoCase,
    blocks_from_volume,
    rectangle_track,
    reference_codes,
    write_video_dataset,
)

TOL = 1e-9
SEEDS = (11, 12, 13)
PALETTE = (0, 10, 40, 90, 128, 200, 254)
METRICS = ("OptimumMCC", "OptimumNMM", "OptimumBWL1", "GWL1", "TemporalMCC", "AUC", "EER", "PixelAverageAUC",
           "MaskAverageAUC")
POINT_METRICS = ("MCC", "NMM", "BWL1")
POINT_COUNTS = ("Threshold", "PixelTP", "PixelTN", "PixelFP", "PixelFN")
COUNTS = ("OptimumThreshold", "OptimumPixelTP", "OptimumPixelTN", "OptimumPixelFP", "OptimumPixelFN",
          "PixelN", "PixelBNS", "PixelSNS", "PixelPNS",
          "TemporalFrameTP", "TemporalFrameTN", "TemporalFrameFP", "TemporalFrameFN")
TEMPORAL = {"TemporalMCC", "TemporalFrameTP", "TemporalFrameTN", "TemporalFrameFP", "TemporalFrameFN"}
SELECT = "Operation == 'X'"

# name -> (command-line options, reference options, -qm query)
OPTION_SETS = {
    "defaults": ([], Options(), None),
    "no-boundary": (["--eks", "0", "--dks", "0"], Options(eks=0, dks=0), None),
    "collar": (["-c", "2"], Options(collar=2), None),
    "video-opt-out": (["--video_opt_out"], Options(video_opt_out=True), None),
    "gt-only": (["--temporal_gt_only", "1"], Options(temporal_gt_only=True), None),
    "nspx": (["--nspx", "128"], Options(nspx=128), None),
    "selective": (["-qm", SELECT], Options(), SELECT),
    "mixed": (["-c", "1", "--video_opt_out", "--nspx", "128", "--temporal_gt_only", "1",
               "--eks", "3", "--dks", "5", "--ntdks", "7", "-k", "disc", "-qm", SELECT],
              Options(collar=1, video_opt_out=True, nspx=128, temporal_gt_only=True, eks=3, dks=5, ntdks=7,
                      kernel="disc"), SELECT),
    "temporal-only": (["--temporal_scoring_only", "1"], Options(temporal_scoring_only=True), None),
    "sbin": (["--sbin", "90"], Options(sbin=90), None),
    "sbin-mixed": (["--sbin", "128", "-c", "2", "--nspx", "128", "-qm", SELECT], Options(sbin=128, collar=2, nspx=128),
                   SELECT),
}


def column(key: str) -> str:
    """The per-video column of a reference key."""
    return key if key in TEMPORAL else f"SpatialTemporal{key}"


# --------------------------------------------------------------------------------------------
# Random videos


def _track(rng, fc, h, w, frames=None, box=None):
    """A random moving rectangle: bool (fc, h, w)."""
    if frames is None:  # mostly long enough to outlast 2-frame collars
        a = int(rng.integers(1, fc - 4))
        frames = (a, min(fc, a + int(rng.integers(0 if rng.random() < 0.15 else 5, fc))))
    if box is None:  # mostly large enough to keep a core after a 15-pixel erosion
        low = 6 if rng.random() < 0.15 else 16
        bh, bw = int(rng.integers(low, 29)), int(rng.integers(low, 33))
        box = (int(rng.integers(-3, h - 8)), int(rng.integers(-3, w - 8)), bh, bw)
    step = (int(rng.integers(-1, 2)), int(rng.integers(-2, 3)))
    return rectangle_track(fc, h, w, frames=frames, box=box, step=step), frames, box


def random_case(rng: np.random.Generator, probe: str) -> VideoCase:
    fc, h, w = int(rng.integers(8, 21)), int(rng.integers(30, 45)), int(rng.integers(36, 61))
    first = 9 if rng.random() < 0.25 else 1
    planes, journal, marks = {}, [], []
    for k, op in enumerate(rng.choice(["X", "Y", "Z"], size=int(rng.integers(1, 4)), replace=False)):
        region, frames, (top, left, bh, bw) = _track(rng, fc, h, w)
        planes[first + k] = region
        journal.append((str(op), first + k))
        if rng.random() < 0.8:  # found, a little off in space and time
            shift = int(rng.integers(-1, 2))
            found, _, _ = _track(rng, fc, h, w, frames=(frames[0] + shift, frames[1] + shift),
                                 box=(top + int(rng.integers(-3, 4)), left + int(rng.integers(-3, 4)), bh, bw))
            marks.append((found, int(rng.choice(PALETTE[:-1]))))
    if rng.random() < 0.3:
        journal.insert(0, ("OutputAVI", None, []))
    if rng.random() < 0.15:  # a bit-plane no journal row names
        planes[7] = _track(rng, fc, h, w)[0]
    if rng.random() < 0.1:  # a journal without bit-planes: every non-zero pixel is the region
        journal = [("OutputAVI", None, [])]
    for _ in range(int(rng.integers(0, 3))):  # false alarms
        marks.append((_track(rng, fc, h, w)[0], int(rng.choice(PALETTE))))
    if rng.random() < 0.3:  # scattered no-score pixels
        marks.append((rng.random((fc, h, w)) < 0.05, 128))

    ref = reference_codes(planes)
    ref_blocks = {0: ref} if rng.random() < 0.3 else blocks_from_volume(ref, background=0, pad=int(rng.integers(0, 3)))
    sysv = np.full((fc, h, w), 255, np.uint8)
    for region, value in marks:
        sysv[region] = np.minimum(sysv[region], value)
    if rng.random() < 0.1:
        sys_blocks = None  # no system mask: scored as all white
    elif rng.random() < 0.3:
        sys_blocks = {0: sysv}
    else:
        sys_blocks = blocks_from_volume(sysv, background=255, pad=int(rng.integers(0, 3)))
    opt_out = []
    for _ in range(int(rng.integers(0, 3)) if rng.random() < 0.5 else 0):
        a = int(rng.integers(1, fc + 1))
        opt_out.append([a, min(fc, a + int(rng.integers(0, 4)))])
    return VideoCase(probe, fc, h, w, reference_blocks=ref_blocks, system_blocks=sys_blocks, journal=journal,
                     opt_out_segments=str(opt_out).replace(" ", ""), confidence=float(rng.random()))


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """seed -> written dataset paths."""
    out = {}
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        cases = [random_case(rng, f"v{seed}x{i:02d}") for i in range(10)]
        out[seed] = write_video_dataset(tmp_path_factory.mktemp(f"video{seed}"), cases, name=f"rand{seed}")
    return out


# --------------------------------------------------------------------------------------------
# The comparison


def run_scorer(paths, options: list[str], out) -> pd.DataFrame:
    return run_scorer_tables(paths, options, out)[0]


def run_scorer_tables(paths, options: list[str], out) -> tuple[pd.DataFrame, pd.Series]:
    """The per-video table (by ProbeFileID) and the one ``_mask_score.csv`` row."""
    argv = ["video-spatial", "-t", "manipulation", *paths.cli_args(), "-oR", str(out / "run"),
            "--precision", "16", *options]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse refusing the options
        status = exc.code
    assert status == 0, f"mfscore {' '.join(argv)} exited with {status}"
    pervideo = pd.read_csv(out / "run_pervideo.csv", sep="|", dtype={"ProbeFileID": str}).set_index("ProbeFileID")
    averaged = pd.read_csv(out / "run_mask_score.csv", sep="|")
    assert len(averaged) == 1
    return pervideo, averaged.iloc[0]


def mismatches(probe: str, expected: dict, row: pd.Series, keys, metrics=METRICS) -> list[str]:
    out = []
    for key in keys:
        want, got = expected[key], row.get(column(key), "(no column)")
        if isinstance(got, str):
            out.append(f"{probe} {column(key)}: {got}")
            continue
        if isinstance(want, float) and math.isnan(want) or pd.isna(got):
            if not (isinstance(want, float) and math.isnan(want) and pd.isna(got)):
                out.append(f"{probe} {column(key)}: expected {want}, got {got}")
        elif key in metrics and abs(float(got) - want) > TOL or key not in metrics and float(got) != want:
            out.append(f"{probe} {column(key)}: expected {want!r}, got {got!r}")
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(OPTION_SETS))
def test_scorer_matches_reference(datasets, tmp_path, name, seed):
    cli_options, options, qm = OPTION_SETS[name]
    paths = datasets[seed]
    expected = score_dataset(paths.root, paths.reference, paths.index, paths.system_dir, paths.system,
                             qm=qm, options=options)
    assert expected, "the dataset should have probes to score"
    scores, averaged = run_scorer_tables(paths, cli_options, tmp_path)
    assert sorted(scores.index) == sorted(expected)
    keys = sorted(TEMPORAL) if options.temporal_scoring_only else METRICS + COUNTS
    metrics = METRICS
    if options.sbin is not None:
        add_maximum(expected)
        points = [f"{k}{m}" for k in ("Maximum", "Actual") for m in POINT_METRICS]
        keys += tuple(points) + tuple(f"{k}{c}" for k in ("Maximum", "Actual") for c in POINT_COUNTS)
        metrics += tuple(points)
    problems = [m for probe, want in expected.items()
                for m in mismatches(probe, want, scores.loc[probe], keys, metrics)]
    # the run's means: each over the videos with an optimum, as the reference takes them
    row = mask_score_row(expected, temporal_scoring_only=options.temporal_scoring_only)
    averaged_keys = ["TemporalMCC"] if options.temporal_scoring_only else [
        k for k in AVERAGED if options.sbin is not None or not k.startswith(("Maximum", "Actual"))]
    for key in averaged_keys:
        for cell in (column(key), f"stddev_{column(key)}"):
            want = row[cell.replace("SpatialTemporal", "")]
            if cell.endswith("Threshold") and not math.isnan(want):
                want = float(int(want))  # thresholds and their deviation print as integers
            got = averaged[cell]
            if (math.isnan(want) != pd.isna(got)) or not math.isnan(want) and abs(float(got) - want) > TOL:
                problems.append(f"_mask_score.csv {cell}: expected {want!r}, got {got!r}")
    for cell in ("totalTargets",) + (() if options.temporal_scoring_only else ("ScoreableTargets",)):
        if averaged[cell] != row[cell]:
            problems.append(f"_mask_score.csv {cell}: expected {row[cell]}, got {averaged[cell]}")
    assert not problems, f"{len(problems)} mismatches ({name}, seed {seed}):\n" + "\n".join(problems[:25])


def test_random_datasets_exercise_the_cases(datasets):
    """The random data reaches the cases the comparison is meant to cover."""
    seen = {"nan optimum": 0, "sns": 0, "collar bns": 0, "opt-out pns": 0, "skipped": 0, "temporal fp": 0}
    for paths in datasets.values():
        args = (paths.root, paths.reference, paths.index, paths.system_dir, paths.system)
        for r in score_dataset(*args).values():
            seen["nan optimum"] += math.isnan(r["OptimumMCC"])
            seen["temporal fp"] += r["TemporalFrameFP"] > 0
        for r in score_dataset(*args, qm=SELECT).values():
            seen["sns"] += r["PixelSNS"] > 0
        for r in score_dataset(*args, options=Options(collar=2, video_opt_out=True, temporal_gt_only=True)).values():
            roles = list(r["FrameRoles"].values())
            seen["collar bns"] += "collar" in roles
            seen["opt-out pns"] += "opt_out" in roles
            seen["skipped"] += "skipped" in roles
    assert all(seen.values()), seen
