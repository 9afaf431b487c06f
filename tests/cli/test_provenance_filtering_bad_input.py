"""``mfscore provenance-filtering`` on bad input, end to end through ``mfscore.cli.main.main``.

Each test builds a three-probe data set in ``tmp_path`` (docs/provenance.md §1 columns): ``ref/`` holds
the index, reference, node and world tables and ``ref/journals/J.json`` (nodes n0 base, n1 donor,
n2 interim, n3 final; P1, P2 and P3 are n3's file in turn, and, as in MediScore's data, not in the
world index, so they count only as the probe); ``sys/`` holds ``sys.csv`` and
``sys/json/P*.json`` (the probe, two reference files and a distractor).

Two kinds of bad input:

* one trial's system JSON is unusable (not JSON, fails the schema, a link end outside ``nodes``,
  nested too deeply, larger than ``--max-json-bytes``): exit status 0, one stderr ``ERROR`` line
  naming the probe, that trial missing from the tables, the others scored;
* a problem with the run as a whole (a JSON path leaving ``-S``, an index probe missing from the
  system output, a missing file, an absent ``--nodetype``): exit status 1, exactly one stderr line
  ``mfscore: error: …``, and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from output_files import assert_failed_cleanly, beside_reports, everything_under

from mfscore.cli.main import main

PROBES = ("P1", "P2", "P3")


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def system_json(probe: str) -> dict:
    files = [f"world/{probe}.jpg", "world/n0.jpg", "world/n1.jpg", "world/other.jpg"]
    return {"directed": True,
            "nodes": [{"id": str(k), "file": f, "nodeConfidenceScore": 1 - k / 10} for k, f in enumerate(files)],
            "links": [{"source": 1, "target": 0}]}


def system_rows(names: dict[str, str] | None = None, probes=PROBES) -> list[str]:
    names = {p: f"json/{p}.json" for p in PROBES} | (names or {})
    return ["ProvenanceProbeFileID|ProvenanceOutputFileName|IsOptOut", *(f"{p}|{names[p]}|Processed" for p in probes)]


@pytest.fixture
def env(tmp_path, monkeypatch):
    ref, sys_dir = tmp_path / "ref", tmp_path / "sys"
    write(ref / "index.csv", ["TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|ProvenanceProbeWidth|ProvenanceProbeHeight",
                              *(f"provenancefiltering|{p}|world/{p}.jpg|10|10" for p in PROBES)])
    write(ref / "ref.csv", [("TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|BaseFileName|BaseBrowserFileName|"
                             "JournalName|JournalFileName|JournalMD5"),
                            *(f"provenancefiltering|{p}|world/{p}.jpg|world/n0.jpg|n0.jpg|J|journals/J.json|0"
                              for p in PROBES)])
    node_rows = [(p, f"n{k}", f"world/n{k}.jpg", f"n{k}") for p in PROBES for k in range(3)]
    node_rows += [(p, p, f"world/{p}.jpg", "n3") for p in PROBES]
    write(ref / "node.csv", ["ProvenanceProbeFileID|WorldFileID|WorldFileName|JournalNodeID",
                             *("|".join(row) for row in node_rows)])
    write(ref / "world.csv", ["TaskID|WorldFileID|WorldFileName|WorldWidth|WorldHeight",
                              *(f"provenancefiltering|n{k}|world/n{k}.jpg|10|10" for k in range(3))])
    journal = {"nodes": [{"id": f"n{k}", "file": f"n{k}.jpg", "nodetype": kind}
                         for k, kind in enumerate(("base", "donor", "interim", "final"))],
               "links": [{"source": 0, "target": 2, "op": "Resize"}]}
    write(ref / "journals" / "J.json", [json.dumps(journal)])
    for p in PROBES:
        write(sys_dir / "json" / f"{p}.json", [json.dumps(system_json(p))])
    write(sys_dir / "sys.csv", system_rows())
    write(tmp_path / "outside.json", [json.dumps(system_json("P1"))])
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"root": tmp_path, "ref": ref, "sys": sys_dir, "out": tmp_path / "out", "cwd": cwd}


def run(env, *extra) -> int:
    ref = env["ref"]
    return main(["provenance-filtering", "-o", str(env["out"]), "-x", str(ref / "index.csv"), "-r", str(ref / "ref.csv"),
                 "-n", str(ref / "node.csv"), "-w", str(ref / "world.csv"), "-R", str(ref),
                 "-s", str(env["sys"] / "sys.csv"), "-S", str(env["sys"]), *extra])


def trial_scores(env) -> pd.DataFrame:
    return pd.read_csv(env["out"] / "trial_scores.csv", sep="|", dtype=str, keep_default_na=False)


def assert_trial_left_out(status, capsys, env, probe: str, *needles) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert status == 0, captured.err
    errors = [line for line in captured.err.splitlines() if "ERROR" in line]
    assert len(errors) == 1, captured.err
    for needle in (f"probe {probe}", *needles):
        assert needle in errors[0], (needle, errors[0])
    assert trial_scores(env)["ProvenanceProbeFileID"].tolist() == [p for p in PROBES if p != probe]
    mapping = pd.read_csv(env["out"] / "node_mapping.csv", sep="|", dtype=str)
    assert probe not in set(mapping["ProvenanceProbeFileID"])
    return errors[0]


# --------------------------------------------------------------------------------------------
# A valid run


def test_valid_run_writes_the_three_tables(env, capsys):
    status = run(env, "--nodetype", "donor", "base")
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.err == ""
    assert sorted(everything_under(env["out"])) == sorted(["node_mapping.csv", "scores.csv", "trial_scores.csv",
                                                           *beside_reports("")])
    table = trial_scores(env)
    assert table["ProvenanceProbeFileID"].tolist() == [p for p in PROBES for _ in range(3)]
    assert table["NodeType"].tolist() == ["All", "donor", "base"] * 3
    # reference: n0 (base), n1 (donor), n2 (interim), the probe; the system finds n0, n1 and the probe
    assert table["NumRefNodes"].tolist() == ["4", "1", "1"] * 3
    assert table["NodeRecallAt50"].tolist() == ["0.75", "1.0", "1.0"] * 3
    scores = pd.read_csv(env["out"] / "scores.csv", sep="|", dtype=str)
    assert scores["NodeType"].tolist() == ["All", "base", "donor"]
    assert everything_under(env["cwd"]) == []


def test_html_report_is_accepted_and_writes_no_html(env, capsys):
    status = run(env, "-H")
    captured = capsys.readouterr()
    assert status == 0 and "report.html" in captured.err
    assert not (env["out"] / "report.html").exists()


# --------------------------------------------------------------------------------------------
# One unusable system JSON: that trial is left out, the run goes on


def test_json_that_is_not_json(env, capsys):
    write(env["sys"] / "json" / "P2.json", ['{"nodes": [{"id": "0", '])
    assert_trial_left_out(run(env), capsys, env, "P2", "P2.json", "not valid JSON")


def test_json_failing_the_schema(env, capsys):
    document = system_json("P1")
    document["nodes"][1]["nodeConfidenceScore"] = "high"
    write(env["sys"] / "json" / "P1.json", [json.dumps(document)])
    assert_trial_left_out(run(env), capsys, env, "P1", "P1.json", "schema", "nodeConfidenceScore")


def test_json_without_nodes(env, capsys):
    write(env["sys"] / "json" / "P3.json", ['{"links": []}'])
    assert_trial_left_out(run(env), capsys, env, "P3", "P3.json", "nodes")


def test_link_out_of_range(env, capsys):
    document = system_json("P3")
    document["links"].append({"source": 0, "target": 99})
    write(env["sys"] / "json" / "P3.json", [json.dumps(document)])
    assert_trial_left_out(run(env), capsys, env, "P3", "P3.json", "links[1].target")


def test_json_nested_100000_deep(env, capsys):
    write(env["sys"] / "json" / "P2.json", ['{"nodes": ' + "[" * 100_000 + "]" * 100_000 + "}"])
    assert_trial_left_out(run(env), capsys, env, "P2", "P2.json", "nested too deeply")


def test_json_larger_than_the_limit(env, capsys):
    document = system_json("P1")
    document["padding"] = "x" * 5000
    write(env["sys"] / "json" / "P1.json", [json.dumps(document)])
    assert_trial_left_out(run(env, "--max-json-bytes", "2000"), capsys, env, "P1", "P1.json", "2000")


def test_missing_json_file(env, capsys):
    (env["sys"] / "json" / "P2.json").unlink()
    assert_trial_left_out(run(env), capsys, env, "P2", "P2.json", "does not exist")


def test_every_trial_unusable_still_writes_headers(env, capsys):
    for p in PROBES:
        write(env["sys"] / "json" / f"{p}.json", ["not json"])
    status = run(env)
    captured = capsys.readouterr()
    assert status == 0 and len([line for line in captured.err.splitlines() if "ERROR" in line]) == 3
    assert trial_scores(env).empty
    assert (env["out"] / "scores.csv").read_text() == "NodeType|NodeRecallAt50|NodeRecallAt100|NodeRecallAt200|NodeRecallAt300\n"


# --------------------------------------------------------------------------------------------
# Problems with the run as a whole: exit 1, nothing written


def test_dotdot_json_path(env, capsys):
    write(env["sys"] / "sys.csv", system_rows({"P2": "../outside.json"}))
    assert_failed_cleanly(run(env), capsys, env, "../outside.json")


def test_absolute_json_path(env, capsys):
    absolute = str(env["root"] / "outside.json")
    write(env["sys"] / "sys.csv", system_rows({"P1": absolute}))
    assert_failed_cleanly(run(env), capsys, env, absolute, "absolute")


def test_index_probe_missing_from_the_system_output(env, capsys):
    write(env["sys"] / "sys.csv", system_rows(probes=("P1", "P3")))
    assert_failed_cleanly(run(env), capsys, env, "P2", "sys.csv")


def test_extraneous_system_probe_needs_t(env, capsys):
    lines = system_rows() + ["P9|json/P1.json|Processed"]
    write(env["sys"] / "sys.csv", lines)
    assert_failed_cleanly(run(env), capsys, env, "P9", "-t")
    status = run(env, "-t")
    captured = capsys.readouterr()
    assert status == 0 and captured.err == ""  # the warning is shown only with -v
    assert trial_scores(env)["ProvenanceProbeFileID"].tolist() == list(PROBES)


def test_missing_column(env, capsys):
    write(env["ref"] / "node.csv", ["ProvenanceProbeFileID|WorldFileID|WorldFileName", "P1|n0|world/n0.jpg"])
    assert_failed_cleanly(run(env), capsys, env, "node.csv", "JournalNodeID")


def test_missing_journal(env, capsys):
    (env["ref"] / "journals" / "J.json").unlink()
    assert_failed_cleanly(run(env), capsys, env, "J.json")


def test_requested_node_type_absent_from_a_reference(env, capsys):
    assert_failed_cleanly(run(env, "--nodetype", "all"), capsys, env, "final", "P1")
