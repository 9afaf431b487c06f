"""MediScore VideoTemporalLocalizationScorer test cases run through ``mfscore video-temporal``,
and the truncation decision (docs/video.md §A.6) on a copy of that data."""

from __future__ import annotations

import shutil

import pytest
from output_files import beside_reports, everything_under

from conformance.compare import compare_outputs, differences
from conformance.conftest import SCOREBOARD
from conformance.video_temporal_cases import CASES, EXPECTED, FILES, LOG, SYSTEM, VT
from mfscore.cli.main import main

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_video_temporal_case(case, conformance_root, tmp_path, monkeypatch):
    board = SCOREBOARD["video-temporal"]
    checkfiles = conformance_root / VT / "checkfiles" / case.name
    available = [name for name in case.expected if (checkfiles / name).exists()]
    if not available:
        board["not_available"] += 1
        return
    monkeypatch.chdir(tmp_path)
    out = tmp_path / case.name
    args = [a if not a.startswith(VT) else str(conformance_root / a) for a in case.args]
    status = main(["video-temporal", *args, "-o", str(out)])
    assert status == 0, f"mfscore exited with {status}"

    problems = compare_outputs(board, checkfiles, out, available)
    written = {p.name for p in out.iterdir()}
    extra = written - set(case.expected) - set(beside_reports("")) - ({LOG} if "-l" in case.args else set())
    assert not extra, f"files MediScore does not write: {sorted(extra)}"
    assert ("-l" in case.args) == (LOG in written)
    assert everything_under(tmp_path) == sorted([case.name, *(f"{case.name}/{n}" for n in written)])  # nothing in cwd
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())


# --------------------------------------------------------------------------------------------------
# Truncation: a copy of test_1_0's data where two system rows reach past FrameCount (1000).
#
#   7c29d2c8…  [[100,200]]                 -> [[100,200],[1000,1010]]   starts at FrameCount: dropped when clipped
#   dabab325…  [[100,250], [450, 700]]     -> [[100,250], [450, 700], [990, 1500]]   clipped to [990, 1000]

PAST_END = {"7c29d2c8f4ff99dc12f1d38a62f82e8b": ("[[100,200]]", "[[100,200],[1000,1010]]", "[[100,200]]"),
            "dabab325af0298021cfdb8168b1455ff": ("[[100,250], [450, 700]]",
                                                 "[[100,250], [450, 700], [990, 1500]]",
                                                 "[[100,250], [450, 700], [990, 1000]]")}


def _system_copy(conformance_root, path, which: int) -> None:
    text = (conformance_root / SYSTEM).read_text()
    for versions in PAST_END.values():
        assert versions[0] in text
        text = text.replace(versions[0], versions[which])
    path.write_text(text)


def _run(conformance_root, system, out, *flags) -> int:
    args = [a if not a.startswith(VT) else str(conformance_root / a) for a in FILES]
    return main(["video-temporal", *args, "-s", str(system), "-c", "5", "--query", "*", "Operation == 'PasteFrames'",
                 "-o", str(out), *flags])


def test_truncation_decision(conformance_root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    past, clipped = tmp_path / "past_end.csv", tmp_path / "clipped_by_hand.csv"
    _system_copy(conformance_root, past, 1)
    _system_copy(conformance_root, clipped, 2)

    # default: bad input, one sentence with the file, line, probe, interval, row count and the remedy
    assert _run(conformance_root, past, tmp_path / "default") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    for needle in (f"{past}, line 2:", "7c29d2c8f4ff99dc12f1d38a62f82e8b", "[1000, 1010]", "FrameCount 1000",
                   "2 row(s)", "--truncate"):
        assert needle in err, (needle, err)
    assert not (tmp_path / "default").exists() or everything_under(tmp_path / "default") == []

    # --truncate and --mediscore-compat clip at FrameCount: the same files as the system clipped by hand
    assert _run(conformance_root, clipped, tmp_path / "by_hand") == 0
    for flag in ("--truncate", "--mediscore-compat"):
        out = tmp_path / flag.strip("-")
        assert _run(conformance_root, past, out, flag) == 0
        assert sorted(p.name for p in out.iterdir()) == sorted([*EXPECTED, *beside_reports("")])
        for name in EXPECTED:
            assert differences(tmp_path / "by_hand" / name, out / name) == [], (flag, name)
            assert (out / name).read_bytes() == (tmp_path / "by_hand" / name).read_bytes()
    # and clipping changed something: dabab325… has 10 more frames of false alarm than in the checkfile
    assert (tmp_path / "truncate" / "scores.csv").read_text() != \
        (conformance_root / VT / "checkfiles" / "test_1_0" / "scores.csv").read_text()


def test_the_original_data_needs_no_truncation(conformance_root, tmp_path, monkeypatch):
    """The checkfile data ends within FrameCount, so --truncate changes nothing there."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(conformance_root / SYSTEM, tmp_path / "sys.csv")
    assert _run(conformance_root, tmp_path / "sys.csv", tmp_path / "plain") == 0
    assert _run(conformance_root, tmp_path / "sys.csv", tmp_path / "truncated", "--truncate") == 0
    for name in EXPECTED:
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "truncated" / name).read_bytes()
        assert (tmp_path / "plain" / name).read_bytes() == \
            (conformance_root / VT / "checkfiles" / "test_1_0" / name).read_bytes()
