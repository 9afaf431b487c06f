"""``mfscore video-temporal`` on good and bad input, end to end through ``mfscore.cli.main.main``.

Each test builds a three-probe data set in ``tmp_path`` (docs/video.md §A.2 columns), FrameCount 100::

    probe  journal row (VideoFrame)        system (VideoFrameSegments)   opt-out
    P1     J1 PasteFrames [[10,20]]        [[10,25]]                     []
    P2     J2 Blur        [[30,60]]        [[30,50]]                     [[70,80]]
    P3     J3 PasteFrames [[1,40]]         []                            []

Bad input (a malformed interval cell, a selected probe missing from the system output, a query
outside the grammar or naming an unknown column, an interval past FrameCount without
``--truncate``, ``-c 0``) exits 1 with exactly one stderr line ``mfscore: error: …`` naming the
file (and line), and leaves nothing in the output directory or the working directory.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from output_files import assert_failed_cleanly, beside_reports, everything_under

from mfscore.cli.main import main

INDEX = ["TaskID|ProbeFileID|ProbeFileName|FrameCount|FrameRate",
         *(f"manipulation|{p}|probe/{p}.mp4|100|30.0" for p in ("P1", "P2", "P3"))]
JOURNAL = ["JournalName|StartNodeID|EndNodeID|Operation|Purpose|VideoFrame",
           "J1|a|b|PasteFrames|add|[[10,20]]",
           "J2|a|b|Blur||[[30,60]]",
           "J3|a|b|PasteFrames|add|[[1,40]]"]
PROBE_JOIN = ["ProbeFileID|JournalName|StartNodeID|EndNodeID|Sequence|BitPlane",
              "P1|J1|a|b|1|", "P2|J2|a|b|1|", "P3|J3|a|b|1|"]
SYSTEM_HEADER = "ProbeFileID|ConfidenceScore|ProbeStatus|VideoFrameSegments|AudioSampleSegments|VideoFrameOptOutSegments"
SYSTEM = {"P1": "P1|0.5|Processed|[[10,25]]|[]|[]",
          "P2": "P2|0.5|Processed|[[30,50]]|[]|[[70,80]]",
          "P3": "P3|0.5|Processed|[]|[]|[]"}


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def system(**rows: str) -> list[str]:
    """The system table with some rows replaced (a value of "" drops that probe's row)."""
    chosen = SYSTEM | rows
    return [SYSTEM_HEADER, *(row for row in chosen.values() if row)]


@pytest.fixture
def env(tmp_path, monkeypatch):
    ref = tmp_path / "ref"
    write(ref / "index.csv", INDEX)
    write(ref / "ref-journalmask.csv", JOURNAL)
    write(ref / "ref-probejournaljoin.csv", PROBE_JOIN)
    write(ref / "ref.csv", ["TaskID|ProbeFileID|IsTarget", "manipulation|P1|Y"])
    write(tmp_path / "sys" / "sys.csv", system())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"ref": ref, "sys": tmp_path / "sys" / "sys.csv", "out": tmp_path / "out", "cwd": cwd}


def run(env, *extra) -> int:
    ref = env["ref"]
    return main(["video-temporal", "-o", str(env["out"]), "-r", str(ref / "ref.csv"), "-i", str(ref / "index.csv"),
                 "-j", str(ref / "ref-journalmask.csv"), "-p", str(ref / "ref-probejournaljoin.csv"),
                 "-s", str(env["sys"]), *extra])


def read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


# --------------------------------------------------------------------------------------------------
# A valid run


def test_valid_run(env, capsys):
    assert run(env, "-q", "*", "Operation == 'PasteFrames'") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[lines.index("video-temporal: primary metric MCC (higher is better)") - 1] == "Done."
    assert sorted(p.name for p in env["out"].iterdir()) == sorted(["query_table_join.csv", "scores.csv",
                                                                   "scores_probes.csv", *beside_reports("")])
    probes = read(env["out"] / "scores_probes.csv")
    assert probes.columns.tolist() == ["query", "ProbeFileID", "MCC"]
    assert probes[["query", "ProbeFileID"]].values.tolist() == [["0", "P1"], ["0", "P2"], ["0", "P3"],
                                                                 ["1", "P1"], ["1", "P3"]]
    # P1: ref [10,20], sys [10,25]: TP 10, FP 5, FN 0, TN 99 - 15 = 84 (continuous lengths over [1, 100])
    # P2: the opt-out [70,80] is not counted: TP 20, FN 10, FP 0, TN 99 - 30 - 10 = 59
    # P3: empty system: MCC 0
    p1 = (10 * 84) / math.sqrt(15 * 10 * 89 * 84)
    p2 = (20 * 59) / math.sqrt(20 * 30 * 59 * 69)
    assert probes["MCC"].tolist() == [repr(round(p1, 12)), repr(round(p2, 12)), "0.0",
                                      repr(round(p1, 12)), "0.0"]
    scores = read(env["out"] / "scores.csv")
    assert scores.values.tolist() == [["0", repr(round((p1 + p2) / 3, 12))], ["1", repr(round(p1 / 2, 12))]]
    assert read(env["out"] / "query_table_join.csv").values.tolist() == [["0", "*"], ["1", "Operation == 'PasteFrames'"]]
    assert everything_under(env["cwd"]) == []


def test_opt_out_and_video_opt_out(env, capsys):
    write(env["sys"], system(P3="P3|0.5|OptOutLocalization|[]|[]|[]"))
    assert run(env, "-d", "--dump_dataframe_file_name", "records.json") == 0
    records = json.loads((env["out"] / "records.json").read_text())
    assert [r["ProbeFileID"] for r in records] == ["P1", "P2"]             # P3 opted out
    assert records[1] | {"MCC": None} == {"query": 0, "ordinal": 1, "ProbeFileID": "P2", "TP": 20, "TN": 59, "FP": 0,
                                           "FN": 10, "MCC": None}          # [70,80] not counted
    assert run(env, "-d", "--dump_dataframe_file_name", "records.json", "--no_opt_out", "--no_video_opt_out") == 0
    records = json.loads((env["out"] / "records.json").read_text())
    assert [r["ProbeFileID"] for r in records] == ["P1", "P2", "P3"]
    assert records[1]["TN"] == 69


def test_query_selecting_no_probe_gives_an_empty_mean(env, capsys):
    assert run(env, "-q", "*", "Operation == 'Nothing'") == 0
    err = capsys.readouterr().err
    assert "query 1 (Operation == 'Nothing') scores no probe" in err
    assert (env["out"] / "scores.csv").read_text().splitlines()[2] == "1|"


def test_extras(env, capsys):
    assert run(env, "-d", "-l", "-R", "-T") == 0
    assert "instead of the pickle" not in capsys.readouterr().err
    written = everything_under(env["out"])
    assert {"df_scores_probes.csv", "log.txt", "scores_probes.html", "plots/timeline_P1_0.png"} <= set(written)
    probes = read(env["out"] / "scores_probes.csv")
    assert probes["Timeline"].tolist() == [f"plots/timeline_P{i}_0.png" for i in (1, 2, 3)]
    dump = read(env["out"] / "df_scores_probes.csv")
    assert dump.columns.tolist() == ["query", "ordinal", "ProbeFileID", "TP", "TN", "FP", "FN", "MCC"]
    assert 'href="plots/timeline_P1_0.png"' in (env["out"] / "scores_probes.html").read_text()
    assert (env["out"] / "plots" / "timeline_P1_0.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a pickle name becomes .csv: mfscore never writes a pickle
    assert run(env, "-d", "--dump_dataframe_file_name", "df.pkl") == 0
    assert "writes df.csv" in capsys.readouterr().err
    assert (env["out"] / "df.csv").exists() and not (env["out"] / "df.pkl").exists()


def test_existing_files_in_the_output_directory_are_kept(env, capsys):
    write(env["out"] / "notes.txt", ["mine"])
    assert run(env) == 0
    write(env["sys"], system(P1="P1|0.5|Processed|[[10,25]|[]|[]"))
    status = run(env)
    captured = capsys.readouterr()
    assert status == 1 and "Traceback" not in captured.err
    assert sorted(everything_under(env["out"])) == sorted(["notes.txt", "query_table_join.csv", "scores.csv",
                                                           "scores_probes.csv", *beside_reports("")])


# --------------------------------------------------------------------------------------------------
# Bad input: exit 1, one sentence, nothing written


@pytest.mark.parametrize("cell", ["[[10,25]", "[(10,25)]", "[[10,25.0]]", "[[10]]", "10,25", ""])
def test_malformed_system_interval_cell(env, capsys, cell):
    write(env["sys"], system(P1=f"P1|0.5|Processed|{cell}|[]|[]"))
    line = assert_failed_cleanly(run(env), capsys, env, f"{env['sys']}, line 2:", "VideoFrameSegments", "probe P1")
    assert line.count(". ") == 0


def test_malformed_opt_out_cell(env, capsys):
    write(env["sys"], system(P2="P2|0.5|Processed|[[30,50]]|[]|[[70,80],]"))
    assert_failed_cleanly(run(env), capsys, env, f"{env['sys']}, line 3:", "VideoFrameOptOutSegments", "probe P2")


def test_malformed_reference_cell(env, capsys):
    write(env["ref"] / "ref-journalmask.csv", [*JOURNAL[:2], "J2|a|b|Blur||[[30,sixty]]", JOURNAL[3]])
    assert_failed_cleanly(run(env), capsys, env, f"{env['ref'] / 'ref-journalmask.csv'}, line 3:", "VideoFrame",
                          "probe P2")


def test_opted_out_probe_cells_are_not_read(env, capsys):
    write(env["sys"], system(P2="P2|0.5|NonProcessed|||"))
    assert run(env) == 0


def test_probe_missing_from_system_output(env, capsys):
    write(env["sys"], system(P2=""))
    assert_failed_cleanly(run(env), capsys, env, str(env["sys"]), "probe P2", "missing from the system output")


@pytest.mark.parametrize("query, needle", [
    ("IsTarget == 'Y'", "unknown column 'IsTarget'"),                   # a reference-file column
    ("Operation.str.len() > 3", "attribute access"),
    ("__import__('os').system('true')", "'__'"),
    ("@x == 1", "local variables"),
    ("Operation == 'a'; Operation", "semicolons"),
])
def test_bad_query(env, capsys, query, needle):
    line = assert_failed_cleanly(run(env, "-q", "*", query), capsys, env, needle)
    if "unknown column" in needle:
        assert str(env["ref"] / "ref-journalmask.csv") in line


def test_interval_past_frame_count_needs_truncate(env, capsys):
    write(env["sys"], system(P2="P2|0.5|Processed|[[30,50]]|[]|[[70,120]]", P3="P3|0.5|Processed|[[90,101]]|[]|[]"))
    assert_failed_cleanly(run(env), capsys, env, f"{env['sys']}, line 3:", "probe P2", "[70, 120]",
                          "VideoFrameOptOutSegments", "FrameCount 100", "2 row(s)", "--truncate")
    # with --no_video_opt_out the opt-out column is not read, so only P3's row is past the end
    assert_failed_cleanly(run(env, "--no_video_opt_out"), capsys, env, f"{env['sys']}, line 4:", "1 row(s)")
    assert run(env, "--truncate") == 0
    assert run(env, "--mediscore-compat") == 0


def test_interval_before_frame_one_is_refused_even_with_truncate(env, capsys):
    write(env["sys"], system(P1="P1|0.5|Processed|[[0,25]]|[]|[]"))
    line = assert_failed_cleanly(run(env, "--truncate"), capsys, env, f"{env['sys']}, line 2:", "[0, 25]",
                                 "starts before frame 1")
    assert "--truncate" not in line


def test_reference_outside_the_video(env, capsys):
    write(env["ref"] / "index.csv", [INDEX[0], INDEX[1], INDEX[2], "manipulation|P3|probe/P3.mp4|30|30.0"])
    assert_failed_cleanly(run(env, "--truncate"), capsys, env, f"{env['ref'] / 'ref-journalmask.csv'}, line 4:",
                          "[1, 40]", "probe P3")


@pytest.mark.parametrize("collar", ["0", "-1"])
def test_collar_must_be_positive(env, capsys, collar):
    assert_failed_cleanly(run(env, "-c", collar), capsys, env, "-c/--collars", "positive")


def test_bad_frame_count(env, capsys):
    write(env["ref"] / "index.csv", [INDEX[0], "manipulation|P1|probe/P1.mp4|many|30.0", *INDEX[2:]])
    assert_failed_cleanly(run(env), capsys, env, f"{env['ref'] / 'index.csv'}, line 2:", "FrameCount", "P1")


def test_two_different_system_rows_for_a_probe(env, capsys):
    write(env["sys"], [*system(), "P1|0.5|Processed|[[1,5]]|[]|[]"])
    assert_failed_cleanly(run(env), capsys, env, f"{env['sys']}, line 5:", "probe P1", "lines 2, 5")


def test_a_journal_mask_naming_probes_is_refused(env, capsys):
    write(env["ref"] / "ref-journalmask.csv", [JOURNAL[0] + "|ProbeFileID", *(row + "|P1" for row in JOURNAL[1:])])
    assert_failed_cleanly(run(env), capsys, env, str(env["ref"] / "ref-journalmask.csv"), "ProbeFileID column")


def test_a_line_repeated_verbatim_is_harmless(env, capsys):
    write(env["sys"], [*system(), SYSTEM["P1"]])
    assert run(env) == 0


def test_missing_column(env, capsys):
    write(env["sys"], [SYSTEM_HEADER.replace("|VideoFrameOptOutSegments", ""),
                       *(row.rsplit("|", 1)[0] for row in SYSTEM.values())])
    assert_failed_cleanly(run(env), capsys, env, str(env["sys"]), "VideoFrameOptOutSegments")
    assert run(env, "--no_video_opt_out") == 0


def test_missing_file(env, capsys):
    assert_failed_cleanly(run(env, "-i", str(env["ref"] / "nope.csv")), capsys, env, "nope.csv", "not found")


def test_dump_name_must_stay_in_the_output_directory(env, capsys):
    assert_failed_cleanly(run(env, "-d", "--dump_dataframe_file_name", "../x.csv"), capsys, env,
                          "--dump_dataframe_file_name")
