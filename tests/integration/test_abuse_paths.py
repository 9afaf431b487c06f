"""Names in a client's tables cannot reach the aggregator's file system (issue 41): a ProbeFileID aimed outside the
run writes its video's threshold table inside the run's reports, and a JournalFileName aimed at the aggregator's
files fails the run with a sentence that neither shows a server path nor tells an existing file from a missing one.
The client submits as ``mfscore submit`` does, through a local cluster."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from mfscore.cli.main import main
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import sample_video_dataset
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration
State = runs_pb2.RunState


def _replace_cells(root: Path, column: str, old: str, new: str) -> None:
    """``new`` in place of ``old`` in ``column`` of every table under ``root``."""
    for table in root.rglob("*.csv"):
        lines = table.read_text().split("\n")
        header = lines[0].split("|")
        if column in header:
            at = header.index(column)
            rows = [line.split("|") for line in lines[1:]]
            lines[1:] = ["|".join(cells[:at] + [new] + cells[at + 1:]) if len(cells) == len(header) and cells[at] == old
                         else "|".join(cells) for cells in rows]
            table.write_text("\n".join(lines))


def _files_named(name: str, *roots: Path) -> list[Path]:
    return [Path(d) / f for root in roots for d, _, files in os.walk(root) for f in files if f == name]


def _last_run(config: ClusterConfig) -> runs_pb2.RunStatus:
    with config.channel() as channel:
        runs = services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=10).runs
    return max(runs, key=lambda run: run.submitted_at.ToNanoseconds())


def test_a_probe_id_aimed_outside_the_run_writes_inside_it(local_cluster, tmp_path, capsys):
    path, config = local_cluster
    data = sample_video_dataset(tmp_path / "data")
    marker = f"abuse-{uuid.uuid4().hex[:12]}"
    hostile = "../" * 16 + f"tmp/{marker}/written"  # from <work>/<run>/out/x_thresholds/: the file system's root
    _replace_cells(tmp_path / "data", "ProbeFileID", "vid0001processed", hostile)
    out = tmp_path / "out"
    try:
        status = main(["submit", "--cluster", str(path), "video-spatial", *data.cli_args(), "--eks", "3", "--dks", "3",
                       "-oR", str(out / "run")])
        assert status == 0, capsys.readouterr().err
        assert not os.path.exists(f"/tmp/{marker}")
    finally:
        shutil.rmtree(f"/tmp/{marker}", ignore_errors=True)  # what the aggregator would have written there
    state_dir = Path(config.state_dir)
    assert _files_named("written.csv", state_dir, tmp_path, Path("/tmp") / marker) == []
    encoded = "%2E.%2F" + "..%2F" * 15 + f"tmp%2F{marker}%2Fwritten.csv"
    assert (out / "run_thresholds" / encoded).is_file()
    assert _files_named(encoded, state_dir) == []  # the aggregator's scratch copy went with the run


def test_a_journal_name_aimed_at_the_aggregator_fails_alike_whatever_is_there(local_cluster, tmp_path, capsys):
    """Existing and missing files, a directory, absolute or through '..': the same sentence, no server path."""
    path, config = local_cluster
    work = Path(config.state_dir)
    said = []
    for k, name in enumerate([str(Path(path).resolve()), str(work / "missing.json"), str(work), "/etc/passwd",
                              "../" * 12 + "etc/passwd", "../" * 12 + "etc/missing.json", "../" * 12 + "etc"]):
        root = tmp_path / str(k)
        data = generate_provenance_dataset(root, 4)
        _replace_cells(root, "JournalFileName", "journals/J0000.json", name)
        capsys.readouterr()
        status = main(["submit", "--cluster", str(path), "provenance-filtering", *data.options("system.csv"),
                       "-o", f"{root / 'out'}/"])
        assert status == 1, capsys.readouterr()
        run = _last_run(config)
        assert run.state == State.RUN_STATE_FAILED, run
        assert str(work) not in run.message.replace(name, "<name>") and str(tmp_path) not in run.message
        assert not re.search(r"exist|regular|JSON|directory\b(?! through)(?!$)", run.message.replace(name, "")), \
            run.message
        said.append(run.message.replace(name, "<name>"))
        assert not (root / "out").exists() or not any((root / "out").iterdir())
    assert len(set(said)) == 2, said  # one sentence for the absolute names, one for the '..' names
