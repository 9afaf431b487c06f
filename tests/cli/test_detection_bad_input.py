"""``mfscore detection`` on bad input: one sentence on stderr, exit status 1, nothing written.

Every bad-input case checks that stderr is exactly one line ``mfscore: error: <path>[, line N]: …``
naming the file (and the 1-based file line, header = line 1, where the problem is on a line), and
that the output directory holds no file or directory at all afterwards (hidden staging directories
included), and that nothing was written into the working directory either. A few positive cases
check what a run does write. No numeric tolerance is involved except where stated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from output_files import beside_reports, everything_under
from sklearn.metrics import roc_auc_score

from mfscore.cli.main import main

INDEX = [
    "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight",
    *(f"manipulation|P{i}|probe/P{i}.jpg|{100 * i}|100" for i in range(1, 9)),
]
REFERENCE = [
    "TaskID|ProbeFileID|ProbeFileName|IsTarget",
    *(f"manipulation|P{i}|probe/P{i}.jpg|{'Y' if i % 2 else 'N'}" for i in range(1, 9)),
]
SCORES = {1: 0.9, 2: 0.35, 3: 0.7, 4: 0.5, 5: 0.2, 6: 0.1, 7: 0.6, 8: 0.35}
SYSTEM = [
    "ProbeFileID|ConfidenceScore|ProbeStatus",
    *(f"P{i}|{SCORES[i]}|Processed" for i in range(1, 9)),
]
REPORT_HEADER = ("TRR|SYS_RESPONSE|AUC|EER|FAR_STOP|AUC@FAR|CDR@FAR|CI_LEVEL|AUC_CI_LOWER|AUC_CI_UPPER|"
                 "AUC_CI_LOWER@FAR|AUC_CI_UPPER@FAR|CDR_CI_LOWER@FAR|CDR_CI_UPPER@FAR")


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Input dir with index.csv, ref.csv, sys.csv; an empty output dir path; an empty cwd."""
    d = tmp_path / "in"
    d.mkdir()
    write(d / "index.csv", INDEX)
    write(d / "ref.csv", REFERENCE)
    write(d / "sys.csv", SYSTEM)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"in": d, "out": tmp_path / "out", "cwd": cwd}


def run(env, *extra, ref="ref.csv", index="index.csv", system="sys.csv") -> int:
    d = str(env["in"])
    return main(["detection", "--refDir", d, "-r", ref, "-x", index, "--sysDir", d, "-s", system,
                 "-o", str(env["out"] / "run"), *extra])


def assert_failed_cleanly(status, capsys, env, *needles):
    captured = capsys.readouterr()
    assert status == 1
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("mfscore: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert everything_under(env["out"]) == []  # no report, no plot, no staging dir
    assert everything_under(env["cwd"]) == []
    assert sorted(p.name for p in env["in"].iterdir()) == sorted(
        p.name for p in env["in"].iterdir() if p.suffix == ".csv")  # nothing new beside the inputs
    return lines[0]


def replace_line(lines: list[str], number: int, text: str) -> list[str]:
    """``lines`` with file line ``number`` (1-based, header = 1) replaced."""
    out = list(lines)
    out[number - 1] = text
    return out


def where(env, name: str, line: int | None = None) -> str:
    """How the error sentence names a file (and line)."""
    path = str(env["in"] / name)
    return f"{path}, line {line}: " if line is not None else f"{path}: "


# --- bad input ------------------------------------------------------------------------------------

def test_missing_reference_file(env, capsys):
    status = run(env, ref="no-such-ref.csv")
    assert_failed_cleanly(status, capsys, env, where(env, "no-such-ref.csv"))


def test_empty_system_file(env, capsys):
    (env["in"] / "sys.csv").write_text("")
    assert_failed_cleanly(run(env), capsys, env, where(env, "sys.csv"))


def test_system_without_confidence_score_column(env, capsys):
    write(env["in"] / "sys.csv", [line.replace("ConfidenceScore", "Score") for line in SYSTEM])
    assert_failed_cleanly(run(env), capsys, env, where(env, "sys.csv"), "ConfidenceScore")


def test_reference_without_istarget(env, capsys):
    write(env["in"] / "ref.csv", ["|".join(line.split("|")[:3]) for line in REFERENCE])
    assert_failed_cleanly(run(env), capsys, env, where(env, "ref.csv"), "IsTarget")


@pytest.mark.parametrize("query", [None, "IsTarget==['Y','N']"])
def test_row_with_too_many_fields(env, capsys, query):
    write(env["in"] / "sys.csv", replace_line(SYSTEM, 4, "P3|0.7|Processed|extra"))
    extra = ["-q", query] if query else []
    assert_failed_cleanly(run(env, *extra), capsys, env, where(env, "sys.csv", 4))


def test_duplicate_system_key_with_different_scores(env, capsys):
    write(env["in"] / "sys.csv", SYSTEM + ["P2|0.99|Processed"])  # line 10 repeats P2 (line 3)
    assert_failed_cleanly(run(env), capsys, env, where(env, "sys.csv", 10), "P2")


@pytest.mark.parametrize("text, line", [("high", 3), ("nan", 5), ("NaN", 6), ("0.5x", 9)])
def test_non_numeric_score(env, capsys, text, line):
    i = line - 1
    write(env["in"] / "sys.csv", replace_line(SYSTEM, line, f"P{i}|{text}|Processed"))
    assert_failed_cleanly(run(env), capsys, env, where(env, "sys.csv", line), text)


def test_unknown_probe_status_with_opt_out(env, capsys):
    write(env["in"] / "sys.csv", replace_line(SYSTEM, 4, "P3|0.7|Bogus"))
    # the sentence names the file and the value (it gives no line number)
    assert_failed_cleanly(run(env, "--optOut"), capsys, env, where(env, "sys.csv"), "Bogus")


def test_opt_out_without_status_column(env, capsys):
    write(env["in"] / "sys.csv", ["|".join(line.split("|")[:2]) for line in SYSTEM])
    assert_failed_cleanly(run(env, "--optOut"), capsys, env, where(env, "sys.csv"), "--optOut")


@pytest.mark.parametrize("query, needle", [
    ("Purpose==", "Purpose=="),               # does not parse
    ("Nope==['x']", "unknown column 'Nope'"),  # unknown column
    ("__import__('os')", "__import__"),        # refused construct
])
def test_bad_query(env, capsys, query, needle):
    assert_failed_cleanly(run(env, "-q", query), capsys, env, needle)


def test_multifigs_without_query(env, capsys):
    assert_failed_cleanly(run(env, "--multiFigs"), capsys, env, "--multiFigs")


# --- positive checks ------------------------------------------------------------------------------

def read_report(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", keep_default_na=False, dtype=str)


def test_happy_path_writes_report_and_plots_only(env, capsys):
    assert run(env) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert everything_under(env["out"]) == sorted(["run_all_ROC.pdf", "run_all_ROC.png", "run_all_report.csv",
                                                   *beside_reports()])
    assert everything_under(env["cwd"]) == []
    text = (env["out"] / "run_all_report.csv").read_text().splitlines()
    assert text[0] == REPORT_HEADER and len(text) == 2
    row = read_report(env["out"] / "run_all_report.csv").iloc[0]
    labels = [i % 2 for i in range(1, 9)]
    scores = [SCORES[i] for i in range(1, 9)]
    # AUC is written rounded to 6 decimals: compare within half a unit of the 6th decimal
    assert abs(float(row["AUC"]) - roc_auc_score(labels, scores)) <= 5e-7
    assert (row["TRR"], row["SYS_RESPONSE"], row["FAR_STOP"], row["CI_LEVEL"]) == ("1.0", "all", "0.1", "0.9")
    assert counted(env, captured) == (4, 4)


def counted(env, captured) -> tuple[int, int]:
    """(targets, non-targets) of the whole run, as its results file says; the summary table printed says the same."""
    counts = json.loads((env["out"] / "run_results.json").read_text())["rows"][0]["counts"]
    row = captured.out.splitlines()[-1].split()
    assert row[:3] == ["all", str(counts["targets"]), str(counts["nontargets"])], captured.out
    return counts["targets"], counts["nontargets"]


def test_blank_score_drops_the_trial_with_a_warning(env, capsys):
    write(env["in"] / "sys.csv", replace_line(SYSTEM, 3, "P2||Processed"))  # P2 is a non-target
    assert run(env, "--noPlot") == 0
    captured = capsys.readouterr()
    warnings = captured.err.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("mfscore: warning: ")
    assert "no system score" in warnings[0] and "P2" in warnings[0]
    assert counted(env, captured) == (4, 3)
    assert read_report(env["out"] / "run_all_report.csv").iloc[0]["TRR"] == "1.0"  # dropped before TRR
    assert everything_under(env["out"]) == sorted(["run_all_report.csv", *beside_reports()])


def test_index_line_repeated_verbatim_is_scored_twice(env, capsys):
    write(env["in"] / "index.csv", INDEX + [INDEX[3]])  # P3 (a target) again, as line 10
    assert run(env, "--noPlot") == 0
    captured = capsys.readouterr()
    warnings = captured.err.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("mfscore: warning: ")
    assert str(env["in"] / "index.csv") in warnings[0] and "line 10" in warnings[0]
    assert counted(env, captured) == (5, 4)


def test_semafor_report(env, capsys):
    assert run(env, "--noPlot", "--semafor") == 0
    capsys.readouterr()
    assert everything_under(env["out"]) == sorted(["run_all_report.csv", "run_semafor_report.csv", *beside_reports()])
    columns = read_report(env["out"] / "run_semafor_report.csv").columns
    for name in ("pD@FAR0.08", "bACC@EER", "Cllr", "minCllr"):
        assert name in columns


def test_mediscore_compat_accepted(env, capsys):
    assert run(env, "--noPlot") == 0
    plain = (env["out"] / "run_all_report.csv").read_text()
    assert run(env, "--noPlot", "--mediscore-compat") == 0
    capsys.readouterr()
    # nothing in this run differs between the two modes (no CI, no query)
    assert (env["out"] / "run_all_report.csv").read_text() == plain


def test_query_partition_report_has_one_row_per_partition(env, capsys):
    collections = {1: "A", 2: "A", 3: "B", 4: "B", 5: "A", 6: "B", 7: "C", 8: "C"}
    write(env["in"] / "ref.csv", [REFERENCE[0] + "|Collection"]
          + [line + f"|{collections[i]}" for i, line in enumerate(REFERENCE[1:], start=1)])
    assert run(env, "--noPlot", "-qp", "Collection==['A','B'] & 300<=ProbeWidth") == 0
    capsys.readouterr()
    assert everything_under(env["out"]) == sorted(["run_qp_query_report.csv", *beside_reports()])
    report = read_report(env["out"] / "run_qp_query_report.csv")
    assert len(report) == 2
    assert list(report["Collection"]) == ["'A'", "'B'"]
    # A & width>=300: P5 (target) only -> 1/8; B & width>=300: P3, P4, P6 -> 3/8
    assert list(report["TRR"]) == ["0.13", "0.38"]


def test_query_partition_report_has_interval_columns_only_with_ci(env, capsys):
    """mfscore's own -qp table (MediScore's crashes) has no interval columns of zeros when none were computed."""
    collections = {1: "A", 2: "A", 3: "B", 4: "B", 5: "A", 6: "B", 7: "C", 8: "C"}
    write(env["in"] / "ref.csv", [REFERENCE[0] + "|Collection"]
          + [line + f"|{collections[i]}" for i, line in enumerate(REFERENCE[1:], start=1)])
    assert run(env, "--noPlot", "-qp", "Collection==['A','B']") == 0
    plain = list(read_report(env["out"] / "run_qp_query_report.csv").columns)
    assert plain == ["Collection", "TRR", "SYS_RESPONSE", "AUC", "EER", "FAR_STOP", "AUC@FAR", "CDR@FAR"]
    assert run(env, "--noPlot", "-qp", "Collection==['A','B']", "--ci") == 0
    capsys.readouterr()
    with_ci = list(read_report(env["out"] / "run_qp_query_report.csv").columns)
    assert with_ci[:len(plain)] == plain and with_ci[len(plain):] == [
        "CI_LEVEL", "AUC_CI_LOWER", "AUC_CI_UPPER", "AUC_CI_LOWER@FAR", "AUC_CI_UPPER@FAR",
        "CDR_CI_LOWER@FAR", "CDR_CI_UPPER@FAR"]
    # the other reports keep MediScore's columns, zeros included (its checkfiles have them)
    assert run(env, "--noPlot") == 0
    capsys.readouterr()
    assert "CI_LEVEL" in read_report(env["out"] / "run_all_report.csv").columns
