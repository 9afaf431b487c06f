"""Every registered task, on a cluster (real nats-server, real S3 server, every service a process), writes the
same files byte for byte and prints the same lines as the embedded command, without this file naming a task.

Both runs write to the same output path (the embedded run's files are moved aside first), so files that
record their own parameters (video-spatial's ``_parameters.json``) compare too. The results file is among them;
the run's provenance (``_run.json``, whose times differ) records the same options and digests, and the run's
status on the cluster carries it.
"""

from __future__ import annotations

import json

import pytest

from integration.equivalence import without_created
from mfscore import tasks
from mfscore.cli.main import main
from mfscore.run.local import is_provenance
from mfscore.sample_data.examples import example_arguments
from mfscore.services.commands.cluster_config import resolve
from mfscore.services.commands.report import Reconnecting, calling, list_runs
from mfscore.tasks.base import PLANNER
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
    assert (cluster_said.out, without_created(cluster_said.err)) == (embedded_said.out, embedded_said.err)

    embedded_record, cluster_record = provenance(tmp_path / "embedded"), provenance(tmp_path / "out")
    assert (embedded_record["runner"], cluster_record["runner"]) == ("embedded", "cluster")
    same = ("mfscore", "task", "options", "tables", "files")
    assert {k: cluster_record[k] for k in same} == {k: embedded_record[k] for k in same}
    assert embedded_record["tables"] and all(len(digest) == 64 for digest in embedded_record["tables"].values())
    if tasks.get(name).resource != PLANNER and not tasks.get(name).portable:  # a portable task's are its plan's
        assert embedded_record["files"] and all(f["count"] > 0 for f in embedded_record["files"].values())
    config = resolve(str(cluster_file))
    runs = calling(config, lambda stub: list(list_runs(stub)), Reconnecting(config.aggregator_address, "(listing)"))
    assert json.loads(runs[-1].provenance_json) == cluster_record


def test_a_mask_runs_visuals_on_the_cluster_are_the_embedded_bytes(local_cluster, tmp_path, capsys):
    """``--visuals 2`` (docs/masks.md "Per-probe visuals"): the aggregator fetches just the drawn probes' masks from
    the object store at report time (``Task.report_blobs``) and writes the PNGs and index the embedded run writes."""
    cluster_file, _ = local_cluster
    arguments = [*example_arguments("mask", tmp_path / "data", tmp_path / "out"), "--visuals", "2"]
    assert main(["mask", *arguments]) == 0
    embedded = tree(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "embedded")
    capsys.readouterr()
    status = main(["submit", "--cluster", str(cluster_file), "mask", *arguments])
    said = capsys.readouterr()
    assert status == 0, said.err
    assert "visuals leave out" not in said.err
    cluster = tree(tmp_path / "out")
    visuals = sorted(name for name in embedded if "_visuals/" in name)
    assert len(visuals) == 2 * (2 * 2 * 3 + 1)  # two -qm queries: 2 best and 2 worst, three PNGs each, the index
    assert sorted(cluster) == sorted(embedded)
    assert [name for name in embedded if embedded[name] != cluster[name]] == []


def provenance(directory) -> dict:
    """The run's provenance file under ``directory`` (there is one)."""
    (path,) = [p for p in directory.rglob("*.json") if is_provenance(p.relative_to(directory).as_posix())]
    return json.loads(path.read_text())
