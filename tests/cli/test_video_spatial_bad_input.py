"""``mfscore video-spatial`` on bad input, end to end through ``mfscore.cli.main.main``.

Each test writes a three-probe data set with the fixture generator (``mfscore.sample_data.video``)
in ``tmp_path``: 12 frames of 16x20, a box on frames 4-9 in each reference (bit-plane 1, journal
``PasteSampled``), the system finding it with grey level 30 / 70 / 110 (P1 / P2 / P3).

Two kinds of bad input (docs/video.md §B.5, mfscore/cli/video_spatial.py):

* a problem with one probe's masks: the run goes on, writes every table (``_pervideo.csv``,
  ``_mask_score.csv``, ``_journalResults.csv``) and exits 0; stderr has one
  ``mfscore: ERROR: probe <id>: …`` line naming the file, and a last line counting them. An unusable *system* mask is scored as
  an all-white (missing) mask, so the probe's row equals its row when the system cell is empty;
  an unusable *reference* mask gives the minimum-score row;
* a problem with the run as a whole (a mask path leaving ``--sysDir``, a missing column, a repeated
  probe, a malformed opt-out cell, a bad option value): exit 1, exactly one ``mfscore: error: …``
  sentence naming the culprit, and nothing written.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from output_files import assert_failed_cleanly, everything_under

from mfscore.cli.main import main
from mfscore.reports.video_spatial_report import METRIC_COLUMNS
from mfscore.sample_data.video import (
    VideoCase,
    blocks_from_volume,
    rectangle_track,
    reference_codes,
    system_volume,
    write_video_dataset,
)

FC, H, W = 12, 16, 20
PROBES = ("P1", "P2", "P3")
TABLES = ("_pervideo.csv", "_mask_score.csv", "_journalResults.csv")
ROW = ["Scored", *METRIC_COLUMNS]  # every metric cell of a per-video row
ZONES = ("--eks", "3", "--dks", "3", "--ntdks", "3")


def reference_blocks(k: int) -> dict:
    box = rectangle_track(FC, H, W, frames=(4, 9), box=(3 + k, 4, 8, 10))
    return blocks_from_volume(reference_codes({1: box}), background=0)


def system_blocks(k: int) -> dict:
    found = rectangle_track(FC, H, W, frames=(4, 9), box=(4 + k, 5, 8, 10))
    alarm = rectangle_track(FC, H, W, frames=(11, 11), box=(0, 0, 2, 2))
    return blocks_from_volume(system_volume((FC, H, W), [(found, 30 + 40 * k), (alarm, 200)]), background=255)


def case(k: int, **changes) -> VideoCase:
    fields = {"reference_blocks": reference_blocks(k), "system_blocks": system_blocks(k),
              "journal": [("PasteSampled", 1)], "confidence": 0.3 + 0.2 * k} | changes
    return VideoCase(PROBES[k], FC, H, W, **fields)


def dataset(root: Path, **p2_changes):
    """The three probes, P2 with ``p2_changes``; returns the paths (``.cli_args()``)."""
    return write_video_dataset(root, [case(0), case(1, **p2_changes), case(2)])


@pytest.fixture
def env(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"root": tmp_path, "out": tmp_path / "out", "cwd": cwd}


def run(env, paths, *extra) -> int:
    return main(["video-spatial", *paths.cli_args(), "-oR", str(env["out"] / "run"), *ZONES, *extra])


def pervideo(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "run_pervideo.csv", sep="|", dtype=str, keep_default_na=False).set_index("ProbeFileID")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> pd.DataFrame:
    """Per-video rows when P2's system mask cell is empty (scored as all white)."""
    root = tmp_path_factory.mktemp("baseline")
    paths = dataset(root / "data", system_blocks=None)
    assert main(["video-spatial", *paths.cli_args(), "-oR", str(root / "out" / "run"), *ZONES]) == 0
    return pervideo(root / "out")


@pytest.fixture(scope="module")
def normal(tmp_path_factory) -> pd.DataFrame:
    """Per-video rows of the good data set."""
    root = tmp_path_factory.mktemp("normal")
    paths = dataset(root / "data")
    assert main(["video-spatial", *paths.cli_args(), "-oR", str(root / "out" / "run"), *ZONES]) == 0
    return pervideo(root / "out")


def assert_probe_errors(status, capsys, env, bad: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """Exit 0, the three tables written, one ``ERROR: probe <id>:`` line per bad probe with its needles, then
    their count."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    assert status == 0, captured.err
    assert captured.err.splitlines()[-1].startswith(f"mfscore: {len(bad)} mask(s) could not be used; "), captured.err
    for suffix in TABLES:
        assert (env["out"] / f"run{suffix}").is_file(), suffix
    assert not [n for n in everything_under(env["out"]) if "staging" in n]
    assert everything_under(env["cwd"]) == []
    errors = [line for line in captured.err.splitlines() if "error:" in line.lower()]
    assert len(errors) == len(bad), captured.err
    for probe, needles in bad.items():
        mine = [line for line in errors if line.startswith(f"mfscore: ERROR: probe {probe}: ")]
        assert len(mine) == 1, (probe, captured.err)
        for needle in needles:
            assert needle in mine[0], (needle, mine[0])
    return pervideo(env["out"])


def assert_scored_as_missing(table: pd.DataFrame, baseline: pd.DataFrame, normal: pd.DataFrame) -> None:
    assert table.loc["P2", ROW].to_dict() == baseline.loc["P2", ROW].to_dict()
    assert table.loc["P2", "Scored"] == "Y" and float(table.loc["P2", "SpatialTemporalOptimumMCC"] or 0) <= 0
    for probe in ("P1", "P3"):  # the good probes keep their scores
        assert table.loc[probe, ROW].to_dict() == normal.loc[probe, ROW].to_dict()
        assert float(table.loc[probe, "SpatialTemporalOptimumMCC"]) > 0.5


# --------------------------------------------------------------------------------------------
# A valid run


def test_valid_run(env, capsys, normal, baseline):
    status = run(env, dataset(env["root"] / "data"))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "error" not in captured.err
    for suffix in TABLES:
        assert (env["out"] / f"run{suffix}").is_file()
    table = pervideo(env["out"])
    assert table.index.tolist() == list(PROBES) and (table["Scored"] == "Y").all()
    assert table[ROW].equals(normal[ROW])
    # the white baseline really differs from the scored system
    assert float(normal.loc["P2", "SpatialTemporalOptimumMCC"]) > 0.5
    assert baseline.loc["P2", "SpatialTemporalOptimumMCC"] != normal.loc["P2", "SpatialTemporalOptimumMCC"]
    assert baseline.loc["P2", "SpatialTemporalAUC"] == "0.5"


# --------------------------------------------------------------------------------------------
# One bad system mask: scored as all white, the run goes on, exit 1


def test_system_mask_that_is_not_hdf5(env, capsys, baseline, normal):
    paths = dataset(env["root"] / "data")
    (paths.system_dir / "mask" / "P2-mask.hdf5").write_text("ProbeFileID|this is not HDF5\n")
    table = assert_probe_errors(run(env, paths), capsys, env,
                                {"P2": ("P2-mask.hdf5", "not a readable HDF5 file", "all-white")})
    assert_scored_as_missing(table, baseline, normal)


def test_system_hdf5_without_masks_dataset(env, capsys, baseline, normal):
    paths = dataset(env["root"] / "data")
    with h5py.File(paths.system_dir / "mask" / "P2-mask.hdf5", "w") as f:
        f.create_dataset("3/frames", data=np.zeros((6, H, W), np.uint8))
    table = assert_probe_errors(run(env, paths), capsys, env, {"P2": ("P2-mask.hdf5", "no dataset 'masks'")})
    assert_scored_as_missing(table, baseline, normal)


def past_the_end() -> dict:
    """P2's system: its detection (grey 70), then a false alarm (70) on frames 11-14 of a 12-frame video."""
    blocks = {start: data for start, data in system_blocks(1).items() if start < 8}
    tail = np.full((4, H, W), 255, np.uint8)
    tail[:, 2:6, 2:6] = 70
    return blocks | {10: tail}


def test_system_block_past_frame_count(env, capsys, baseline, normal):
    paths = dataset(env["root"] / "data", system_blocks=past_the_end())
    table = assert_probe_errors(run(env, paths), capsys, env,
                                {"P2": ("P2-mask.hdf5", "frame 11", "12 frames", "--truncate")})
    assert_scored_as_missing(table, baseline, normal)


def test_system_block_past_frame_count_with_truncate(env, capsys, tmp_path):
    """--truncate drops frames 13-14: the same scores as the block cut by hand, exit 0, no error."""
    status = run(env, dataset(env["root"] / "data", system_blocks=past_the_end()), "--truncate")
    captured = capsys.readouterr()
    assert status == 0 and "error" not in captured.err, captured.err
    truncated = pervideo(env["out"])
    by_hand = past_the_end()
    by_hand[10] = by_hand[10][:2]
    paths = dataset(tmp_path / "by_hand", system_blocks=by_hand)
    assert main(["video-spatial", *paths.cli_args(), "-oR", str(tmp_path / "by_hand_out" / "run"), *ZONES]) == 0
    assert truncated[ROW].equals(pervideo(tmp_path / "by_hand_out")[ROW])
    assert truncated.loc["P2", "TemporalFrameFP"] == "1.0"  # the kept frames 11-12 count: [11, 12], length 1


@pytest.mark.parametrize("shape", [(H, W + 1), (H - 2, W), (W, H)])
def test_system_frames_of_another_size(env, capsys, baseline, normal, shape):
    frames = np.full((6, *shape), 255, np.uint8)
    frames[:, 4:10, 5:12] = 70
    paths = dataset(env["root"] / "data", system_blocks={3: frames})
    table = assert_probe_errors(run(env, paths), capsys, env,
                                {"P2": ("P2-mask.hdf5", f"{shape[1]}x{shape[0]}", f"{W}x{H}")})
    assert_scored_as_missing(table, baseline, normal)


def test_system_mask_declaring_more_than_max_elements(env, capsys, baseline, normal):
    """References and P1/P3's systems declare 6 frames (1,920 pixels); P2's system all 12 (3,840)."""
    whole = system_volume((FC, H, W), [(rectangle_track(FC, H, W, frames=(4, 9), box=(5, 5, 8, 10)), 70)])
    paths = dataset(env["root"] / "data", system_blocks={0: whole})
    table = assert_probe_errors(run(env, paths, "--max-elements", "3000"), capsys, env,
                                {"P2": ("P2-mask.hdf5", "more than 3000")})
    assert_scored_as_missing(table, baseline, normal)


def test_two_bad_system_masks(env, capsys, baseline):
    tiny = {3: np.zeros((6, 2, 2), np.uint8)}
    paths = write_video_dataset(env["root"] / "data", [case(0), case(1), case(2, system_blocks=tiny)])
    (paths.system_dir / "mask" / "P2-mask.hdf5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 40)
    table = assert_probe_errors(run(env, paths), capsys, env, {"P2": ("P2-mask.hdf5",), "P3": ("P3-mask.hdf5", "2x2")})
    assert table.loc["P2", ROW].to_dict() == baseline.loc["P2", ROW].to_dict()
    assert float(table.loc["P1", "SpatialTemporalOptimumMCC"]) > 0.5


# --------------------------------------------------------------------------------------------
# One bad reference mask: the minimum-score row, exit 1


MINIMUM_ROW = {"Scored": "N", "SpatialTemporalOptimumMCC": "0.0", "SpatialTemporalOptimumNMM": "-1.0",
               "SpatialTemporalOptimumBWL1": "1.0", "SpatialTemporalGWL1": "1.0", "SpatialTemporalAUC": "0.0",
               "SpatialTemporalEER": "1.0", "TemporalMCC": "0.0"}


@pytest.mark.parametrize("problem", ["not-hdf5", "missing"])
def test_bad_reference_mask(env, capsys, normal, problem):
    paths = dataset(env["root"] / "data")
    mask = paths.root / "reference" / "manipulation-video" / "mask" / "P2-refmask.hdf5"
    if problem == "missing":
        mask.unlink()
    else:
        mask.write_bytes(b"\x00\x01 definitely not HDF5 " * 10)
    table = assert_probe_errors(run(env, paths), capsys, env,
                                {"P2": ("P2-refmask.hdf5", "does not exist" if problem == "missing" else "HDF5")})
    assert {k: table.loc["P2", k] for k in MINIMUM_ROW} == MINIMUM_ROW
    others = [c for c in ROW if c not in MINIMUM_ROW]
    assert (table.loc["P2", others] == "").all(), table.loc["P2", others][table.loc["P2", others] != ""]
    for probe in ("P1", "P3"):
        assert table.loc[probe, ROW].to_dict() == normal.loc[probe, ROW].to_dict()
    averaged = pd.read_csv(env["out"] / "run_mask_score.csv", sep="|", dtype=str, keep_default_na=False)
    assert averaged.loc[0, "totalTargets"] == "3" and averaged.loc[0, "ScoreableTargets"] == "2"


# --------------------------------------------------------------------------------------------
# Run-level errors: one sentence, nothing written


def edit_table(path: Path, change) -> None:
    table = pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)
    change(table).to_csv(path, sep="|", index=False)


def set_cell(path: Path, probe: str, column: str, value: str) -> None:
    def change(table):
        table.loc[table["ProbeFileID"] == probe, column] = value
        return table
    edit_table(path, change)


def test_system_mask_path_with_dotdot(env, capsys):
    paths = dataset(env["root"] / "data")
    set_cell(paths.system_dir / paths.system, "P2", "OutputProbeMaskFileName", "../x.hdf5")
    assert_failed_cleanly(run(env, paths), capsys, env, "../x.hdf5", "..")


def test_absolute_system_mask_path(env, capsys):
    paths = dataset(env["root"] / "data")
    absolute = str(paths.system_dir / "mask" / "P1-mask.hdf5")  # even one inside --sysDir
    set_cell(paths.system_dir / paths.system, "P3", "OutputProbeMaskFileName", absolute)
    assert_failed_cleanly(run(env, paths), capsys, env, absolute, "absolute")


def test_reference_without_hdf5_column(env, capsys):
    paths = dataset(env["root"] / "data")
    edit_table(paths.root / paths.reference, lambda t: t.drop(columns="HDF5MaskFileName"))
    assert_failed_cleanly(run(env, paths), capsys, env, paths.reference, "HDF5MaskFileName")


def test_system_without_probe_status(env, capsys):
    paths = dataset(env["root"] / "data")
    edit_table(paths.system_dir / paths.system, lambda t: t.drop(columns="ProbeStatus"))
    assert_failed_cleanly(run(env, paths), capsys, env, paths.system, "ProbeStatus")


def test_repeated_probe_in_system(env, capsys):
    paths = dataset(env["root"] / "data")
    edit_table(paths.system_dir / paths.system, lambda t: pd.concat([t, t.iloc[[1]]]))
    assert_failed_cleanly(run(env, paths), capsys, env, paths.system, "line 5", "P2")


@pytest.mark.parametrize("cell", ["[[1,", "[[3,x]]", "nonsense"])
def test_malformed_opt_out_segments(env, capsys, cell):
    paths = dataset(env["root"] / "data")
    set_cell(paths.system_dir / paths.system, "P3", "VideoFrameOptOutSegments", cell)
    assert_failed_cleanly(run(env, paths, "--video_opt_out"), capsys, env, paths.system, "line 4",
                          "VideoFrameOptOutSegments", "P3")


def test_malformed_opt_out_segments_unused_without_the_option(env, capsys):
    paths = dataset(env["root"] / "data")
    set_cell(paths.system_dir / paths.system, "P3", "VideoFrameOptOutSegments", "[[1,")
    assert run(env, paths) == 0, capsys.readouterr().err


@pytest.mark.parametrize("option, needles", [
    (("-c", "0"), ("-c 0", "collar")),
    (("-c", "-3"), ("-c -3",)),
    (("--nspx", "300"), ("--nspx 300",)),
    (("--nspx", "-2"), ("--nspx -2",)),
    pytest.param(("-t", "splice"), ("-t splice", "manipulation")),
])
def test_bad_option_values(env, capsys, option, needles):
    paths = dataset(env["root"] / "data")
    assert_failed_cleanly(run(env, paths, *option), capsys, env, *needles)
