"""One exit-status rule for masks that cannot be used, in ``mfscore mask`` and ``mfscore video-spatial``
(``mfscore.tasks.unusable_masks``; docs/masks.md and docs/video.md, "Bad input").

When the reports were written the run exits 0, with one ``mfscore: ERROR:`` line per unusable mask and a
last line counting them; ``--strict`` makes any unusable mask exit 1; ``--mediscore-compat`` keeps each
MediScore tool's rule: MaskScorer exits 1 from two failed trials, the video scorer from one.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from mfscore.cli.main import build_parser, main
from mfscore.sample_data.masks import MaskDataset, generate_mask_dataset
from mfscore.sample_data.video import sample_video_dataset
from mfscore.tasks import mask as mask_task
from mfscore.tasks import video_spatial as video_task


@pytest.fixture(scope="module")
def masks(tmp_path_factory) -> MaskDataset:
    return generate_mask_dataset(tmp_path_factory.mktemp("masks") / "data", 8, width=64, height=48, bitplanes=True)


def mask_arguments(data, out: Path) -> list[str]:
    return ["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "-s", str(data.directory / data.system), "-oR", str(out / "run")]


def break_system_masks(data, count: int) -> list[str]:
    """Truncate the first ``count`` system masks the system output names; their file names."""
    rows = (data.directory / data.system).read_text().splitlines()
    header = rows[0].split("|")
    column = header.index("OutputProbeMaskFileName")
    names = [row.split("|")[column] for row in rows[1:] if row.split("|")[column]][:count]
    for name in names:
        path = (data.directory / data.system).parent / name
        path.write_bytes(path.read_bytes()[:40])
    return names


def run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return status, err.splitlines()


@pytest.fixture
def broken(masks, tmp_path) -> MaskDataset:
    """A copy of the mask data set, for a test to break masks in."""
    data = dataclasses.replace(masks, directory=tmp_path / "data")
    shutil.copytree(masks.directory, data.directory)
    return data


@pytest.mark.parametrize("options, status", [
    ([], 0),
    (["--strict"], 1),
    (["--mediscore-compat"], 0),               # MaskScorer: one failed trial is not enough
    (["--strict", "--mediscore-compat"], 1),
])
def test_mask_one_unusable_mask(broken, tmp_path, capsys, options, status):
    names = break_system_masks(broken, 1)
    got, err = run(capsys, mask_arguments(broken, tmp_path / "out") + options)
    assert got == status, err
    errors = [line for line in err if line.startswith("mfscore: ERROR:")]
    assert len(errors) == 1 and names[0] in errors[0] and errors[0].endswith("; the trial is left unscored"), err
    assert err[-1].startswith("mfscore: 1 mask(s) could not be used; their trials are left unscored"), err
    assert err[-1].endswith("(exit status 1: --strict)") == ("--strict" in options), err
    assert (tmp_path / "out" / "run_mask_scores_perimage.csv").is_file()  # the reports are written either way


@pytest.mark.parametrize("options, status", [([], 0), (["--strict"], 1), (["--mediscore-compat"], 1)])
def test_mask_two_unusable_masks(broken, tmp_path, capsys, options, status):
    break_system_masks(broken, 2)
    got, err = run(capsys, mask_arguments(broken, tmp_path / "out") + options)
    assert got == status, err
    assert len([line for line in err if line.startswith("mfscore: ERROR:")]) == 2, err
    assert err[-1].startswith("mfscore: 2 mask(s) could not be used; "), err
    if options == ["--mediscore-compat"]:
        assert err[-1].endswith("(exit status 1: --mediscore-compat, as MaskScorer exits 1 from two failed trials)")


def test_mask_one_line_per_mask_whatever_the_queries(broken, tmp_path, capsys):
    """With several -qm queries a mask is scored once per query, and still said once."""
    break_system_masks(broken, 1)
    queries = ["-qm", "Purpose==['add','remove','clone','heal']", "Purpose!=['nothing']"]
    got, err = run(capsys, mask_arguments(broken, tmp_path / "out") + ["--jpeg2000", *queries])
    assert got == 0, err
    assert len([line for line in err if line.startswith("mfscore: ERROR:")]) == 1, err
    assert err[-1].startswith("mfscore: 1 mask(s) could not be used; "), err


def test_mask_no_line_when_every_mask_is_usable(masks, tmp_path, capsys):
    got, err = run(capsys, mask_arguments(masks, tmp_path / "out") + ["--strict"])
    assert got == 0 and not [line for line in err if "could not be used" in line or "ERROR" in line], err


@pytest.fixture
def video(tmp_path):
    """The demo's video data set with one system mask that is not HDF5."""
    data = sample_video_dataset(tmp_path / "video")
    (data.system_dir / "mask" / "vid0004distractor-mask.hdf5").write_text("not HDF5\n")
    return data


@pytest.mark.parametrize("options, status", [
    ([], 0),
    (["--strict"], 1),
    (["--mediscore-compat"], 1),               # MediScore's video scorer: one failed probe exits 1
])
def test_video_one_unusable_mask(video, tmp_path, capsys, options, status):
    got, err = run(capsys, ["video-spatial", *video.cli_args(), "-oR", str(tmp_path / "out" / "run"), *options])
    assert got == status, err
    errors = [line for line in err if line.startswith("mfscore: ERROR:")]
    assert len(errors) == 1 and errors[0].startswith("mfscore: ERROR: probe vid0004distractor: "), err
    assert "vid0004distractor-mask.hdf5" in errors[0] and errors[0].endswith("scored as an all-white (empty) mask")
    assert err[-1].startswith("mfscore: 1 mask(s) could not be used; an unusable system mask is scored as all white"), err
    assert (tmp_path / "out" / "run_pervideo.csv").is_file()


@pytest.mark.parametrize("task", [mask_task, video_task])
def test_strict_is_declared_on_the_options_type(task):
    """The option is the task's (so it crosses the wire to a cluster), declared with its flag."""
    field = {f.name: f for f in dataclasses.fields(task.Options)}["strict"]
    assert field.default is False and field.metadata["flag"] == "--strict"


@pytest.mark.parametrize("command", ["mask", "video-spatial"])
def test_strict_flag_reaches_the_options(command, tmp_path):
    from mfscore.sample_data.examples import example_arguments

    args = build_parser().parse_args([command, *example_arguments(command, tmp_path / "data", tmp_path / "out"),
                                      "--strict"])
    assert args.task_options(args).options.strict is True
