"""``--hdf5-frame-base``: HDF5 block names counted from 0 (the MFC2019 plan, default) or 1 (MediScore).

MediScore's ReadMe and mask generator name a block by its 1-based first frame (docs/video.md §B.2, frame
numbering); read as the plan's 0-indexed names, such a file is one frame late and a block
reaching the last frame runs past the video. The data set: 12 frames of 16x20, two probes, a box on
frames 4-9 in each reference (bit-plane 1), the system finding it, and a false alarm::

    frame      1  2  3  4  5  6  7  8  9 10 11 12
    reference  .  .  .  #  #  #  #  #  #  .  .  .     0-based block "3"; 1-based "4"
    P1 system  .  .  .  #  #  #  #  #  #  .  a  .     blocks "3", "10";  1-based "4", "11"
    P2 system  .  .  .  #  #  #  #  #  #  .  a  a     blocks "3", "10" (2 frames); 1-based "4", "11":
                                                      read 0-based, "11" covers frames 12-13 of 12

The same volumes are written twice, with 0-based and with 1-based block names (``one_based``); the
journal's VideoFrame intervals are given, not derived from the blocks (the generator reads names 0-based).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from output_files import tree

from mfscore import codec
from mfscore.cli.main import build_parser, main
from mfscore.errors import OptionError
from mfscore.formats.video_frames import video_frames
from mfscore.formats.video_masks import (
    MaskBlock,
    VideoMaskFramesError,
    frame_base_hint,
    read_video_mask_layout,
)
from mfscore.sample_data.video import (
    VideoCase,
    blocks_from_volume,
    rectangle_track,
    reference_codes,
    system_volume,
    write_mask_blocks,
    write_video_dataset,
)
from mfscore.tasks.video_spatial import Options
from mfscore.validation.options import ValidatorOptions
from mfscore.video.spatial_trials import VideoOptions

FC, H, W = 12, 16, 20
ZONES = ("--eks", "3", "--dks", "3", "--ntdks", "3")
TO_BASE_1 = "its blocks fit if numbered from 1 (MediScore's convention): try --hdf5-frame-base 1"
TO_BASE_0 = "its blocks fit if numbered from 0 (the MFC2019 plan's convention): try --hdf5-frame-base 0"


def one_based(blocks: dict) -> dict:
    """The same blocks named by their 1-based first frame, as MediScore's generator names them."""
    return {start + 1: data for start, data in blocks.items()}


def reference_blocks(k: int) -> dict:
    box = rectangle_track(FC, H, W, frames=(4, 9), box=(3 + k, 4, 8, 10))
    return blocks_from_volume(reference_codes({1: box}), background=0)


def system_blocks(k: int) -> dict:
    found = rectangle_track(FC, H, W, frames=(4, 9), box=(4 + k, 5, 8, 10))
    alarm = rectangle_track(FC, H, W, frames=(11, 11 + k), box=(0, 0, 2, 2))  # P2's reaches the last frame
    return blocks_from_volume(system_volume((FC, H, W), [(found, 30 + 40 * k), (alarm, 200)]), background=255)


def dataset(root: Path, base: int, **p2_changes):
    """P1 and P2 with block names counted from ``base``; P2 with ``p2_changes`` (blocks taken as given)."""
    shift = one_based if base == 1 else dict

    def case(k: int, **changes) -> VideoCase:
        fields = {"reference_blocks": shift(reference_blocks(k)), "system_blocks": shift(system_blocks(k)),
                  "journal": [("PasteSampled", 1, [(4, 9)])], "confidence": 0.3 + 0.2 * k} | changes
        return VideoCase(f"P{k + 1}", FC, H, W, **fields)

    return write_video_dataset(root, [case(0), case(1, **p2_changes)])


def score(paths, out: Path, *extra) -> int:
    return main(["video-spatial", *paths.cli_args(), "-oR", str(out / "run"), *ZONES, *extra])


def pervideo(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "run_pervideo.csv", sep="|", dtype=str, keep_default_na=False).set_index("ProbeFileID")


def reports(out: Path) -> dict[str, bytes]:
    """Every report file but ``_parameters.json`` (which records the command line)."""
    return {name: data for name, data in tree(out).items() if not name.endswith("_parameters.json")}


def probe_errors(err: str) -> dict[str, str]:
    prefix = "mfscore: ERROR: probe "
    return {line[len(prefix):].split(":", 1)[0]: line for line in err.splitlines() if line.startswith(prefix)}


@pytest.fixture(scope="module")
def zero_based(tmp_path_factory) -> Path:
    """The reports of the 0-based data set scored with the default."""
    root = tmp_path_factory.mktemp("zero_based")
    assert score(dataset(root / "data", 0), root / "out") == 0
    return root / "out"


# --------------------------------------------------------------------------------------------
# The scorer


def test_default_refuses_the_block_reaching_the_last_frame_and_suggests_base_1(tmp_path, capsys):
    status = score(dataset(tmp_path / "data", 1), tmp_path / "out", "--strict")
    captured = capsys.readouterr()
    assert status == 1, captured.err  # --strict: an unusable mask makes the run exit 1
    errors = probe_errors(captured.err)
    assert list(errors) == ["P2"], captured.err  # P1 fits either way: it is merely read one frame late
    assert "P2-mask.hdf5: the block starting at frame 12 runs past the video's 12 frames, but " + TO_BASE_1 + \
           "; scored as an all-white (empty) mask" in errors["P2"]
    assert "--truncate" not in errors["P2"]  # dropping the frame would keep the file one frame late


def test_base_1_scores_the_1_based_files_as_the_default_scores_the_0_based_ones(tmp_path, capsys, zero_based):
    status = score(dataset(tmp_path / "data", 1), tmp_path / "out", "--hdf5-frame-base", "1")
    captured = capsys.readouterr()
    assert status == 0 and "error" not in captured.err, captured.err
    got, expected = reports(tmp_path / "out"), reports(zero_based)
    assert sorted(got) == sorted(expected) and "run_thresholds/P2.csv" in got
    assert [name for name in expected if got[name] != expected[name]] == []
    assert float(pervideo(tmp_path / "out").loc["P2", "SpatialTemporalOptimumMCC"]) > 0.5
    assert json.loads((tmp_path / "out" / "run_parameters.json").read_text())["hdf5_frame_base"] == 1


def test_base_1_refuses_a_block_named_0_and_suggests_base_0(tmp_path, capsys):
    whole = system_volume((FC, H, W), [(rectangle_track(FC, H, W, frames=(4, 9), box=(4, 5, 8, 10)), 70)])
    status = score(dataset(tmp_path / "data", 1, system_blocks={0: whole}), tmp_path / "out", "--hdf5-frame-base", "1")
    captured = capsys.readouterr()
    assert status == 0, captured.err  # the reports are written: the mask is reported, not the run failed
    errors = probe_errors(captured.err)
    assert list(errors) == ["P2"], captured.err
    assert ("P2-mask.hdf5: the video mask is refused: the block '0' starts before the video's first frame "
            "(block names count from 1 with --hdf5-frame-base 1), but " + TO_BASE_0) in errors["P2"]
    assert errors["P2"].endswith("; scored as an all-white (empty) mask")


def test_no_hint_when_neither_numbering_fits(tmp_path, capsys):
    """P2's system has a block named 0 and one reaching past the last frame: wrong in both numberings."""
    tail = np.full((3, H, W), 255, np.uint8)
    blocks = {0: np.full((2, H, W), 255, np.uint8), 10: tail}
    for base in (0, 1):
        out = tmp_path / f"out{base}"
        assert score(dataset(tmp_path / f"data{base}", 1, system_blocks=blocks), out, "--hdf5-frame-base",
                     str(base)) == 0
        error = probe_errors(capsys.readouterr().err)["P2"]
        assert "fit if numbered" not in error and "try --hdf5-frame-base" not in error


def test_a_1_based_reference_reaching_the_last_frame_gets_the_hint(tmp_path, capsys):
    box = rectangle_track(FC, H, W, frames=(9, 12), box=(3, 4, 8, 10))
    reference = one_based(blocks_from_volume(reference_codes({1: box}), background=0))  # block "9", 4 frames
    status = score(dataset(tmp_path / "data", 1, reference_blocks=reference), tmp_path / "out")
    captured = capsys.readouterr()
    assert status == 0
    error = probe_errors(captured.err)["P2"]
    assert "P2-refmask.hdf5: the reference block starting at frame 10 runs past the video's 12 frames, but " \
           + TO_BASE_1 in error
    assert score(dataset(tmp_path / "data1", 1, reference_blocks=reference), tmp_path / "out1",
                 "--hdf5-frame-base", "1") == 0, capsys.readouterr().err


def test_a_bad_frame_base_is_an_argparse_error(tmp_path, capsys):
    paths = dataset(tmp_path / "data", 0)
    with pytest.raises(SystemExit) as exit_:
        score(paths, tmp_path / "out", "--hdf5-frame-base", "2")
    assert exit_.value.code == 2
    assert "--hdf5-frame-base: invalid choice: 2" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# The validator


def _validate(capsys, paths, *extra) -> tuple[int, list[dict]]:
    status = main(["validate", "-vt", "SSD-video", "-s", str(paths.system_dir / paths.system),
                   "-x", str(paths.root / paths.index), "--json", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, [f for f in json.loads(captured.out)["findings"] if f["severity"] == "error"]


def test_the_validator_suggests_base_1_and_passes_with_it(tmp_path, capsys):
    paths = dataset(tmp_path / "data", 1)
    status, errors = _validate(capsys, paths)
    assert status == 1 and [f["code"] for f in errors] == ["video_mask.frames"], errors
    assert errors[0]["message"].endswith("P2-mask.hdf5 for probe P2 has frames up to 0-indexed frame 12, but the "
                                         f"video has 12 frames; {TO_BASE_1}.")
    assert errors[0]["line"] == 3
    assert _validate(capsys, paths, "--hdf5-frame-base", "1") == (0, [])
    assert _validate(capsys, dataset(tmp_path / "zero", 0)) == (0, [])


def test_the_validator_suggests_base_0_for_a_block_named_0(tmp_path, capsys):
    paths = dataset(tmp_path / "data", 0, system_blocks={0: np.full((FC, H, W), 255, np.uint8)})
    assert _validate(capsys, paths) == (0, [])
    status, errors = _validate(capsys, paths, "--hdf5-frame-base", "1")
    assert status == 1 and [f["code"] for f in errors] == ["video_mask.frames"], errors
    assert errors[0]["message"].endswith("P2-mask.hdf5: the video mask is refused: the block '0' starts before the "
                                         "video's first frame (block names count from 1 with --hdf5-frame-base 1); "
                                         f"{TO_BASE_0}.")


def test_the_validator_refuses_a_bad_frame_base(tmp_path, capsys):
    paths = dataset(tmp_path / "data", 0)
    with pytest.raises(SystemExit) as exit_:
        _validate(capsys, paths, "--hdf5-frame-base", "2")
    assert exit_.value.code == 2
    assert "--hdf5-frame-base: invalid choice: 2" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# The reader, the options and the wire


def test_the_reader_places_blocks_by_the_frame_base(tmp_path):
    blocks = system_blocks(1)
    path = tmp_path / "one.hdf5"
    write_mask_blocks(path, one_based(blocks))
    layout = read_video_mask_layout(str(path), frame_base=1)
    assert layout == [MaskBlock(3, 6, H, W), MaskBlock(10, 2, H, W)]
    assert [b.group for b in layout] == ["4", "11"]
    zero = tmp_path / "zero.hdf5"
    write_mask_blocks(zero, blocks)
    frames = [None if f is None else f.tobytes() for f in video_frames(str(path), layout, FC)]
    assert frames == [None if f is None else f.tobytes()
                      for f in video_frames(str(zero), read_video_mask_layout(str(zero)), FC)]
    assert frames[2] is None and frames[3] is not None and frames[11] is not None


def test_the_single_block_form_starts_at_the_first_frame_in_either_numbering(tmp_path):
    import h5py

    path = tmp_path / "single.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset("masks/masks", data=np.zeros((FC, H, W), np.uint8))
    for base in (0, 1):
        assert read_video_mask_layout(str(path), frame_base=base) == [MaskBlock(0, FC, H, W)]
    assert frame_base_hint(str(path), frame_base=0, frame_count=FC - 1) == ""


def test_frame_base_hint(tmp_path):
    path = tmp_path / "one.hdf5"
    write_mask_blocks(path, one_based(system_blocks(1)))  # blocks "4" (6 frames) and "11" (2 frames)
    assert frame_base_hint(str(path), frame_base=0, frame_count=FC) == TO_BASE_1
    assert frame_base_hint(str(path), frame_base=0, frame_count=FC - 1) == ""  # too long either way
    assert frame_base_hint(str(path), frame_base=1, frame_count=FC) == ""      # base 0 runs past
    write_mask_blocks(path, {0: np.full((2, H, W), 255, np.uint8)})
    with pytest.raises(VideoMaskFramesError, match="the block '0' starts before the video's first frame"):
        read_video_mask_layout(str(path), frame_base=1)
    assert frame_base_hint(str(path), frame_base=1, frame_count=None) == TO_BASE_0


def test_the_options_refuse_other_bases():
    for make in (lambda: VideoOptions(hdf5_frame_base=2), lambda: ValidatorOptions(hdf5_frame_base=-1)):
        with pytest.raises(OptionError, match="block names count from 0 or 1"):
            make()


def test_the_frame_base_reaches_the_task_options_and_crosses_the_wire(tmp_path):
    """``mfscore submit`` parses the task's flags with the same parser and sends the options encoded."""
    paths = dataset(tmp_path / "data", 1)
    args = build_parser(["video-spatial"]).parse_args(
        ["video-spatial", *paths.cli_args(), "-oR", str(tmp_path / "out" / "run"), "--hdf5-frame-base", "1"])
    options = args.task_options(args).options
    assert options.scoring.hdf5_frame_base == 1
    assert codec.decode(Options, codec.encode(options)) == options
    from mfscore.tasks.video_spatial import TASK

    jobs = TASK.plan(options).jobs
    assert jobs and all(job.work.hdf5_frame_base == 1 for job in jobs)
    work = jobs[0].work
    assert codec.decode(type(work), codec.encode(work)) == work
