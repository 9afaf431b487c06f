"""``--plots`` figures on a cluster (real nats-server, real S3 server, every service a process): the aggregator draws
the summary figures from the same records and writes the embedded command's bytes."""

from __future__ import annotations

import pytest

from mfscore.cli.main import main
from mfscore.sample_data.examples import example_arguments
from output_files import tree

pytestmark = pytest.mark.integration

FIGURES = {"mask": ("index_0/run_mask_roc.png", "index_1/run_mask_roc.png"),
           "provenance-filtering": ("recall_at_k.png",),
           "video-temporal": ("mcc_distribution.png",),
           "video-spatial": ("run_mcc_distribution.png",)}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_runs_plots_on_the_cluster_are_the_embedded_bytes(name, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    arguments = [*example_arguments(name, tmp_path / "data", tmp_path / "out"), "--plots"]
    assert main([name, *arguments]) == 0
    embedded = tree(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "embedded")
    capsys.readouterr()
    status = main(["submit", "--cluster", str(cluster_file), name, *arguments])
    said = capsys.readouterr()
    assert status == 0, said.err
    cluster = tree(tmp_path / "out")
    assert set(FIGURES[name]) <= set(embedded), sorted(embedded)
    assert all(embedded[figure][:8] == b"\x89PNG\r\n\x1a\n" for figure in FIGURES[name])
    assert sorted(cluster) == sorted(embedded)
    assert [file for file in embedded if embedded[file] != cluster[file]] == []
