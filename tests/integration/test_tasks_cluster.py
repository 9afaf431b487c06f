"""Every registered task, on a cluster (real nats-server, real S3 server, every service a process), writes the
same files byte for byte and prints the same lines as the embedded command, without this file naming a task.

Both runs write to the same output path (the embedded run's files are moved aside first), so files that
record their own parameters (video-spatial's ``_parameters.json``) compare too.
"""

from __future__ import annotations

import pytest

from mfscore import tasks
from mfscore.cli.main import main
from mfscore.sample_data.examples import example_arguments
from output_files import tree

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", tasks.names())
def test_the_local_and_the_cluster_runner_write_the_same_files(name, local_cluster, tmp_path, capsys):
    cluster_file, _ = local_cluster
    arguments = example_arguments(name, tmp_path / "data", tmp_path / "out")
    capsys.readouterr()
    embedded_status = main([name, *arguments])
    embedded_said = capsys.readouterr()
    embedded = tree(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "embedded")
    cluster_status = main(["submit", "--cluster", str(cluster_file), name, *arguments])
    cluster_said = capsys.readouterr()
    assert cluster_status == embedded_status == 0, cluster_said.err
    cluster = tree(tmp_path / "out")
    assert sorted(cluster) == sorted(embedded) and embedded
    assert [file for file in embedded if embedded[file] != cluster[file]] == []
    assert (cluster_said.out, cluster_said.err) == (embedded_said.out, embedded_said.err)
