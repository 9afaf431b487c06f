"""``mfscore submit video-spatial --hdf5-frame-base 1`` carries the option to the workers: on masks whose
blocks are named from frame 1 (MediScore's convention, docs/video.md §B.2) the cluster writes what the embedded
command writes, and both equal the default run on the same masks named from 0."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from output_files import tree

from mfscore.cli.main import main
from mfscore.sample_data.video import sample_video_cases, write_video_dataset

pytestmark = pytest.mark.integration


def _dataset(root, base: int):
    """The demo's videos with block names counted from ``base``; the journal is the 0-based one (the
    generator derives its VideoFrame intervals reading names 0-based)."""
    cases = [replace(case, **{name: None if blocks is None else {start + base: data for start, data in blocks.items()}
                              for name, blocks in (("reference_blocks", case.reference_blocks),
                                                   ("system_blocks", case.system_blocks))})
             for case in sample_video_cases()]
    paths = write_video_dataset(root, cases)
    if base:
        zero = write_video_dataset(root / "zero", sample_video_cases())
        for suffix in ("-journalmask.csv", "-probejournaljoin.csv"):
            name = paths.reference.removesuffix(".csv") + suffix
            shutil.copyfile(zero.root / name, paths.root / name)
    return paths


def _reports(directory) -> dict[str, bytes]:
    return {name: data for name, data in tree(directory).items() if not name.endswith("_parameters.json")}


def test_the_cluster_reads_1_based_masks_with_the_option(local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    zero, one = _dataset(tmp_path / "zero", 0), _dataset(tmp_path / "one", 1)
    options = ["--eks", "3", "--dks", "3", "-c", "2", "--sbin", "128", "--precision", "6"]
    assert main(["video-spatial", *zero.cli_args(), *options, "-oR", str(tmp_path / "default" / "run")]) == 0
    arguments = [*one.cli_args(), *options, "--hdf5-frame-base", "1", "-oR", str(tmp_path / "out" / "run")]
    assert main(["video-spatial", *arguments]) == 0, capsys.readouterr().err
    embedded = tree(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "embedded")
    capsys.readouterr()
    assert main(["submit", "--cluster", str(cluster_file), "video-spatial", *arguments]) == 0, capsys.readouterr().err
    cluster = tree(tmp_path / "out")
    assert sorted(cluster) == sorted(embedded) and [name for name in embedded if embedded[name] != cluster[name]] == []
    assert _reports(tmp_path / "out") == _reports(tmp_path / "default")
