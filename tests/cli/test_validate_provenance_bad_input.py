"""``mfscore validate-provenance`` on hostile input, end to end through ``mfscore.cli.main.main``.

Each test builds a one-probe submission in ``tmp_path``: ``idx/index.csv`` and ``sub/sub.csv``
naming a JSON file relative to ``sub/``. Every bad input must give exit status 1, a finding with a
stable code and a clear message on stdout, and no traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mfscore.cli.main import main
from mfscore.validation.provenance_submission import validate_provenance_submission

PROBE = "1fafdafac9df0956271b7119ff957546"
GOOD = {"directed": True, "links": [],
        "nodes": [{"id": "id0", "file": "world/a.jpg", "fileid": "a", "nodeConfidenceScore": 0.9}]}


def submission(tmp_path: Path, json_name: str = "jsons/p.json", document=GOOD, *, rows: list[str] | None = None) -> Path:
    index = tmp_path / "idx" / "index.csv"
    index.parent.mkdir()
    index.write_text("TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|ProvenanceProbeWidth|ProvenanceProbeHeight\n"
                     f"provenance|{PROBE}|world/{PROBE}.jpg|200|200\n")
    system = tmp_path / "sub" / "sub.csv"
    (system.parent / "jsons").mkdir(parents=True)
    if document is not None:
        text = document if isinstance(document, (str, bytes)) else json.dumps(document)
        target = system.parent / "jsons" / "p.json"
        target.write_bytes(text) if isinstance(text, bytes) else target.write_text(text)
    lines = rows if rows is not None else [f"{PROBE}|1|{json_name}|N"]
    system.write_text("ProvenanceProbeFileID|ConfidenceScore|ProvenanceOutputFileName|IsOptOut\n"
                      + "".join(line + "\n" for line in lines))
    return tmp_path


def run(tmp_path: Path, capsys, *extra: str) -> tuple[int, str]:
    status = main(["validate-provenance", "-x", str(tmp_path / "idx" / "index.csv"),
                   "-s", str(tmp_path / "sub" / "sub.csv"), "-t", "provenance", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out


def codes(tmp_path: Path, capsys, *extra: str) -> set[str]:
    status = main(["validate-provenance", "-x", str(tmp_path / "idx" / "index.csv"),
                   "-s", str(tmp_path / "sub" / "sub.csv"), "-t", "provenance", "--json", *extra])
    report = json.loads(capsys.readouterr().out)
    assert status == (0 if report["valid"] else 1)
    return {f["code"] for f in report["findings"] if f["severity"] == "error"}


def test_a_good_submission_passes(tmp_path, capsys):
    submission(tmp_path)
    assert run(tmp_path, capsys) == (0, "The contents of your file have passed validation.\n")


@pytest.mark.parametrize("name, phrase", [
    ("../../etc/passwd", "leaves"),
    ("/etc/passwd", "absolute"),
    ("jsons/../../idx/index.csv", "leaves"),
])
def test_json_paths_outside_the_submission_are_refused(tmp_path, capsys, name, phrase):
    submission(tmp_path, name)
    status, out = run(tmp_path, capsys)
    assert status == 1 and phrase in out and "is refused" in out
    assert out.endswith("The contents of your file are not valid.\n")
    assert codes(tmp_path, capsys) == {"json.path"}


def test_a_symlink_leading_out_of_the_submission_is_refused(tmp_path, capsys):
    submission(tmp_path, "jsons/evil.json")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(GOOD))
    os.symlink(outside, tmp_path / "sub" / "jsons" / "evil.json")
    status, out = run(tmp_path, capsys)
    assert status == 1 and "symbolic link" in out
    assert codes(tmp_path, capsys) == {"json.path"}


def test_a_json_over_the_size_limit(tmp_path, capsys):
    submission(tmp_path)
    report = validate_provenance_submission(tmp_path / "sub" / "sub.csv", tmp_path / "idx" / "index.csv",
                                            task="provenance", name_check=False, max_json_bytes=20)
    assert not report.valid and report.codes() == {"json.unreadable"}
    assert "more than the limit of 20" in report.errors[0].render()
    status, out = run(tmp_path, capsys, "--max-json-bytes", "20")
    assert status == 1 and "more than the limit of 20" in out


@pytest.mark.parametrize("document, phrase", [
    ("this is not JSON", "not valid JSON"),
    (b"{\"nodes\": [\"\xff\"]}", "not UTF-8"),
    ("[" * 100_000, "nested too deeply"),
    ("[]", "not an object"),
])
def test_a_json_that_cannot_be_read(tmp_path, capsys, document, phrase):
    submission(tmp_path, document=document)
    status, out = run(tmp_path, capsys)
    assert status == 1 and phrase in out and "'jsons/p.json'" in out
    assert codes(tmp_path, capsys) == {"json.unreadable"}


def test_a_missing_json_and_a_directory(tmp_path, capsys):
    submission(tmp_path, document=None, rows=[f"{PROBE}|1|jsons/p.json|N", f"{PROBE}|1|jsons|N"])
    status, out = run(tmp_path, capsys)
    assert status == 1 and "Expected JSON file 'jsons/p.json'" in out and "not a regular file" in out
    assert codes(tmp_path, capsys) == {"json.missing", "json.unreadable", "key.duplicate", "table.row_count"}


def test_an_empty_system_csv_is_a_finding(tmp_path, capsys):
    submission(tmp_path)
    (tmp_path / "sub" / "sub.csv").write_bytes(b"")
    status, out = run(tmp_path, capsys)
    assert status == 1 and "empty" in out
    assert codes(tmp_path, capsys) == {"table.empty"}


def test_a_system_csv_that_is_not_utf8(tmp_path, capsys):
    submission(tmp_path)
    (tmp_path / "sub" / "sub.csv").write_bytes(b"ProvenanceProbeFileID|ConfidenceScore|\xff|IsOptOut\n")
    assert codes(tmp_path, capsys) == {"table.encoding"}


def test_missing_files_are_reported_together(tmp_path, capsys):
    status = main(["validate-provenance", "-x", str(tmp_path / "i.csv"), "-s", str(tmp_path / "s.csv"), "-t",
                   "provenance"])
    out = capsys.readouterr().out
    assert status == 1 and "Expected system output" in out and "Expected index file" in out


def test_a_task_is_required_and_must_be_known(tmp_path, capsys):
    submission(tmp_path)
    args = ["validate-provenance", "-x", str(tmp_path / "idx" / "index.csv"), "-s", str(tmp_path / "sub" / "sub.csv")]
    assert main(args) == 1
    assert "Either the name check (-nc) or the task (-t) is required." in capsys.readouterr().out
    assert main([*args, "-t", "splice"]) == 1
    assert "Task 'splice' is unrecognized" in capsys.readouterr().out
    assert main([*args, "-t", "ProvenanceFiltering"]) == 0


def test_unknown_and_missing_ids_are_both_reported(tmp_path, capsys):
    submission(tmp_path, rows=["other|1|jsons/p.json|N"])
    assert codes(tmp_path, capsys) == {"key.unknown", "key.missing"}


def test_findings_are_capped(tmp_path, capsys):
    submission(tmp_path, rows=[f"id{i}|1|jsons/p.json|N" for i in range(200)])
    status, out = run(tmp_path, capsys)
    assert status == 1 and out.count("does not exist in the index file") == 100
    assert "... and 100 more 'key.unknown' findings" in out


def test_max_findings_lists_the_first_and_counts_the_others(tmp_path, capsys):
    submission(tmp_path, rows=[f"id{i}|1|jsons/p.json|N" for i in range(200)])
    status = main(["validate-provenance", "-x", str(tmp_path / "idx" / "index.csv"),
                   "-s", str(tmp_path / "sub" / "sub.csv"), "-t", "provenance", "--json", "--max-findings", "10"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1 and len(report["findings"]) == 11 and report["omitted"] == 192  # the row count, 200 unknown, 1 missing
    assert report["findings"][-1]["code"] == "report.truncated"
    status, out = run(tmp_path, capsys, "--max-findings", "0")
    assert status != 0 and "report.truncated" not in out


def test_opted_out_rows_skip_the_json_check_only_with_opt_out(tmp_path, capsys):
    submission(tmp_path, document=None, rows=[f"{PROBE}|0|jsons/p.json|Y"])
    assert codes(tmp_path, capsys) == {"json.missing"}
    assert codes(tmp_path, capsys, "--optOut") == set()


def test_verbosity(tmp_path, capsys):
    submission(tmp_path, rows=[f"{PROBE}|1||N"])
    assert run(tmp_path, capsys, "-v", "0") == (0, "")
    assert run(tmp_path, capsys) == (0, "The contents of your file have passed validation.\n")
    status, out = run(tmp_path, capsys, "-v", "1")
    assert status == 0 and "is blank; its JSON check is skipped" in out


def test_duplicate_rows_and_a_header_only_csv(tmp_path, capsys):
    submission(tmp_path, rows=[f"{PROBE}|1|jsons/p.json|N"] * 3)
    status, out = run(tmp_path, capsys)
    assert status == 1 and "duplicate rows: 3 rows are repeated, at data rows 0, 1, 2" in out
    assert codes(tmp_path, capsys) == {"table.duplicate_rows", "table.row_count"}
    (tmp_path / "sub" / "sub.csv").write_text("ProvenanceProbeFileID|ConfidenceScore|ProvenanceOutputFileName|IsOptOut\n")
    assert codes(tmp_path, capsys) == {"table.row_count", "key.missing"}


def test_name_check_empty_csv_and_ncid_mismatch(tmp_path, capsys):
    """An empty CSV that passes the name check is a finding (MediScore: pandas traceback)."""
    name = "T_NC18_Dev_Provenance_ImgOnly_p-x_1"
    submission(tmp_path)
    system = tmp_path / name / f"{name}.csv"
    system.parent.mkdir()
    system.write_bytes(b"")
    status = main(["validate-provenance", "-nc", "-x", str(tmp_path / "idx" / "index.csv"), "-s", str(system)])
    out = capsys.readouterr().out
    assert status == 1 and "Warning: NCID 'NC18'" in out and "ERROR: The file is empty" in out
    assert main(["validate-provenance", "-nc", "--ncid", "NC18", "-x", str(tmp_path / "idx" / "index.csv"),
                 "-s", str(system)]) == 1
    assert "NCID" not in capsys.readouterr().out
