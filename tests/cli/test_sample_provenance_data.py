"""The generated provenance data (``make demo``, the task examples) scores with plain ``mfscore provenance-graph``:
its system graphs have no cycle, so no ``-c`` is needed; ``cycles=True`` (the benchmarks) makes them cyclic."""

from __future__ import annotations

from mfscore.cli.main import main
from mfscore.sample_data.provenance import generate_provenance_dataset


def test_the_generated_graphs_score_without_flags(tmp_path, capsys):
    data = generate_provenance_dataset(tmp_path / "data", 8)
    assert main(["provenance-graph", *data.options("system.csv"), "-o", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and (tmp_path / "out" / "scores.csv").is_file()


def test_cycles_on_request(tmp_path, capsys):
    data = generate_provenance_dataset(tmp_path / "data", 8, cycles=True)
    assert main(["provenance-graph", *data.options("system.csv"), "-o", str(tmp_path / "out")]) == 1
    assert "the system graph has a cycle (-c scores it anyway)" in capsys.readouterr().err
    assert main(["provenance-graph", *data.options("system.csv"), "-c", "-o", str(tmp_path / "out")]) == 0
