"""``mfscore provenance-graph`` on hostile input, end to end through ``mfscore.cli.main.main``.

Each test builds a two-probe evaluation in ``tmp_path`` (one journal: base → p1, base → p2) and
spoils one system JSON. A JSON that cannot be scored costs its trial only (one ERROR line naming
the probe, exit 0); a cycle in a journal, a cycle in a system graph without ``-c``, or a path
leaving ``-S`` stops the run with exit 1 and leaves no output behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from output_files import everything_under

from mfscore.cli.main import main

GOOD = {"directed": True,
        "nodes": [{"id": "0", "file": "world/base.jpg", "nodeConfidenceScore": 1},
                  {"id": "1", "file": "world/P.jpg", "nodeConfidenceScore": 1}],
        "links": [{"source": 0, "target": 1, "relationshipConfidenceScore": 1}]}
JOURNAL = {"nodes": [{"id": "base"}, {"id": "p1"}, {"id": "p2"}],
           "links": [{"source": 0, "target": 1, "op": "Crop"}, {"source": 0, "target": 2, "op": "Blur"}]}


def system_json(probe: str) -> dict:
    document = json.loads(json.dumps(GOOD))
    document["nodes"][1]["file"] = f"world/{probe}.jpg"
    return document


def evaluation(tmp: Path, bad: str | bytes | dict | None = None, *, journal: dict = JOURNAL,
               bad_name: str = "jsons/P2.json") -> Path:
    (tmp / "ref" / "journals").mkdir(parents=True)
    (tmp / "sys" / "jsons").mkdir(parents=True)
    (tmp / "ref" / "journals" / "j.json").write_text(json.dumps(journal))
    (tmp / "ref" / "index.csv").write_text(
        "TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|ProvenanceProbeWidth|ProvenanceProbeHeight\n"
        "provenance|P1|world/P1.jpg|1|1\nprovenance|P2|world/P2.jpg|1|1\n")
    (tmp / "ref" / "ref.csv").write_text(
        "TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|BaseFileName|BaseBrowserFileName|JournalName|"
        "JournalFileName|JournalMD5\n"
        "provenance|P1|world/P1.jpg|world/base.jpg|base.jpg|J|journals/j.json|0\n"
        "provenance|P2|world/P2.jpg|world/base.jpg|base.jpg|J|journals/j.json|0\n")
    (tmp / "ref" / "node.csv").write_text(
        "ProvenanceProbeFileID|WorldFileID|WorldFileName|JournalNodeID\n"
        "P1|base|world/base.jpg|base\nP1|P1|world/P1.jpg|p1\nP2|base|world/base.jpg|base\nP2|P2|world/P2.jpg|p2\n")
    (tmp / "ref" / "world.csv").write_text("TaskID|WorldFileID|WorldFileName|WorldWidth|WorldHeight\n"
                                           "provenance|base|world/base.jpg|1|1\n")
    (tmp / "sys" / "jsons" / "P1.json").write_text(json.dumps(system_json("P1")))
    p2 = tmp / "sys" / "jsons" / "P2.json"
    if bad is None:
        p2.write_text(json.dumps(system_json("P2")))
    elif isinstance(bad, bytes):
        p2.write_bytes(bad)
    else:
        p2.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    (tmp / "sys" / "sys.csv").write_text(
        f"ProvenanceProbeFileID|ProvenanceOutputFileName\nP1|jsons/P1.json\nP2|{bad_name}\n")
    return tmp


def run(tmp: Path, capsys, *extra: str) -> tuple[int, str, str]:
    status = main(["provenance-graph", "-x", str(tmp / "ref" / "index.csv"), "-r", str(tmp / "ref" / "ref.csv"),
                   "-n", str(tmp / "ref" / "node.csv"), "-w", str(tmp / "ref" / "world.csv"),
                   "-R", str(tmp / "ref"), "-s", str(tmp / "sys" / "sys.csv"), "-S", str(tmp / "sys"),
                   "-o", str(tmp / "out"), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out, captured.err


def scored_probes(tmp: Path) -> list[str]:
    lines = (tmp / "out" / "trial_scores.csv").read_text().splitlines()[1:]
    return [line.split("|")[1] for line in lines]


def test_a_good_evaluation_scores_both_probes_perfectly(tmp_path, capsys):
    status, out, err = run(evaluation(tmp_path), capsys, "--quiet")
    assert (status, out, err) == (0, "", "")
    assert scored_probes(tmp_path) == ["P1", "P2"]
    assert (tmp_path / "out" / "scores.csv").read_text() == \
        "Direct|MeanSimNLO|MeanSimNO|MeanSimLO|MeanNodeRecall\nFalse|1.0|1.0|1.0|1.0\n"


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("bad, extra, reason", [
    ("{not json", (), "not valid JSON"),
    (b"\xff\xfe{}", (), "not UTF-8"),
    ("[]", (), "not an object"),
    ('{"nodes": [1e999], "links": []}', (), "too large"),
    ({"nodes": [{"id": "0", "file": "a.jpg"}], "links": []}, (), "nodeConfidenceScore"),
    ({"nodes": GOOD["nodes"]}, (), "links"),
    ({**GOOD, "links": [{"source": 0, "target": 7, "relationshipConfidenceScore": 1}]}, (), "not a position"),
    ({**GOOD, "links": [{"source": 0.5, "target": 1, "relationshipConfidenceScore": 1}]}, (), "not a position"),
    ({**system_json("P2"), "padding": "x" * 1000}, ("--max-json-bytes", "600"), "more than the limit"),
    ('{"nodes": ' + DEEP + "}", (), "nested too deeply"),
])
def test_an_unscoreable_system_json_costs_only_its_trial(tmp_path, capsys, bad, extra, reason):
    status, _, err = run(evaluation(tmp_path, bad), capsys, *extra)
    assert status == 0
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mfscore: ERROR: probe P2: ") and "P2.json" in lines[0]
    assert reason in lines[0]
    assert scored_probes(tmp_path) == ["P1"]


def test_a_missing_system_json_costs_only_its_trial(tmp_path, capsys):
    status, _, err = run(evaluation(tmp_path, bad_name="jsons/absent.json"), capsys)
    assert status == 0 and "ERROR: probe P2" in err and "does not exist" in err
    assert scored_probes(tmp_path) == ["P1"]


CYCLIC = {**GOOD, "links": GOOD["links"] + [{"source": 1, "target": 0, "relationshipConfidenceScore": 1}]}


def test_a_system_cycle_stops_the_run_and_names_the_json(tmp_path, capsys):
    status, _, err = run(evaluation(tmp_path, CYCLIC), capsys)
    assert status == 1 and "P2.json" in err and "cycle" in err and "-c" in err
    assert everything_under(tmp_path / "out") == []


def test_a_system_cycle_with_c_is_a_warning_shown_with_v(tmp_path, capsys):
    status, out, err = run(evaluation(tmp_path, CYCLIC), capsys, "-c", "--quiet")
    assert (status, out, err) == (0, "", "")
    assert scored_probes(tmp_path) == ["P1", "P2"]
    status, out, err = run(tmp_path, capsys, "-c", "-v", "--quiet")
    assert status == 0 and err == ""
    path = tmp_path / "sys" / "jsons" / "P2.json"
    assert f"Warning, detected cycle(s) for system output file '{path}'" in out.splitlines()
    assert out.splitlines()[0] == "Scoring 2 trials .."
    assert out.splitlines()[-1] == f"Writing Link Mapping to '{tmp_path / 'out' / 'link_mapping.csv'}'"


def test_a_journal_cycle_stops_the_run(tmp_path, capsys):
    journal = {**JOURNAL, "links": JOURNAL["links"] + [{"source": 1, "target": 0, "op": "Crop"}]}
    status, _, err = run(evaluation(tmp_path, journal=journal), capsys)
    assert status == 1 and "j.json" in err and "cycle" in err
    assert everything_under(tmp_path / "out") == []


def test_a_malformed_journal_stops_the_run(tmp_path, capsys):
    journal = {**JOURNAL, "links": [{"source": 0, "target": 9}]}
    status, _, err = run(evaluation(tmp_path, journal=journal), capsys)
    assert status == 1 and "j.json" in err and "positions in nodes" in err


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd"])
def test_a_path_leaving_the_system_dir_stops_the_run(tmp_path, capsys, name):
    evaluation(tmp_path, bad_name=name)
    (tmp_path / "escape.json").write_text(json.dumps(system_json("P2")))
    status, _, err = run(tmp_path, capsys)
    assert status == 1 and "mfscore: error:" in err
    assert everything_under(tmp_path / "out") == []


def test_disparity_is_an_error_unless_t(tmp_path, capsys):
    evaluation(tmp_path)
    with open(tmp_path / "sys" / "sys.csv", "a") as f:
        f.write("P1|jsons/P1.json\n")
    status, _, err = run(tmp_path, capsys)
    assert status == 1 and "repeated: P1" in err
    status, out, _ = run(tmp_path, capsys, "-t", "-v")
    assert status == 0 and out.startswith("Warning, ")
    assert scored_probes(tmp_path) == ["P1", "P1", "P2"]  # the join's order, as in MediScore


def test_figures_and_html_report(tmp_path, capsys):
    status, _, err = run(evaluation(tmp_path, json.dumps(system_json("P2"))), capsys, "-H", "-T", "thumbs")
    assert status == 0 and "-T is accepted and ignored" in err
    assert sorted(p.name for p in (tmp_path / "out" / "figures").iterdir()) == ["P1.png", "P2.png"]
    assert (tmp_path / "out" / "figures" / "P1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Scores Mean" in page and "Trial Scores" in page and "figures/P2.png" in page
