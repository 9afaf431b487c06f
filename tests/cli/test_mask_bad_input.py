"""``mfscore mask`` on bad input, end to end through ``mfscore.cli.main.main``.

Each test builds a tiny data set in ``tmp_path`` (docs/masks.md §3.1 columns):

* ``ref/reference/manipulation/X-ref.csv`` (+ ``-probejournaljoin.csv``, ``-journalmask.csv``),
  colour reference masks under ``ref/reference/manipulation/mask/``, ``ref/indexes/X-index.csv``;
* ``sys/sys.csv`` and grey system masks ``sys/mask/P*.png``.

Two kinds of bad input:

* a problem with the run as a whole (a system mask path leaving the system directory, missing journal
  tables, a bad status or score, a bad query): exit status 1, exactly one stderr line
  ``mfscore: error: …`` naming the culprit, and nothing left under the output directory;
* a problem with one mask (truncated, colour, wrong size, too many pixels): the run goes on
  (status 0), that probe has ``Scored = N``, and stderr has an ``ERROR`` line naming the file.

Option errors are argparse's: ``SystemExit(2)`` with the reason on stderr. No case may print a traceback.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from output_files import assert_failed_cleanly, everything_under

from mfscore.cli.main import main

SIDE = 48
PROBES = ("P1", "P2", "P3")
RED_BGR = (0, 0, 255)      # journal colour "255 0 0"
GREEN_BGR = (0, 255, 0)    # journal colour "0 255 0"
REF_DIR = "reference/manipulation"


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def reference_mask(k: int) -> np.ndarray:
    image = np.full((SIDE, SIDE, 3), 255, np.uint8)
    image[8 + k : 32 + k, 8:32] = RED_BGR
    image[36:44, 36:44] = GREEN_BGR  # a second operation of the probe: a distractor
    return image


def system_mask(k: int) -> np.ndarray:
    system = np.full((SIDE, SIDE), 255, np.uint8)
    system[10 + k : 30 + k, 6:30] = 40 + 50 * k
    system[0:4, 0:4] = 200
    return system


SYSTEM_HEADER = "ProbeFileID|ConfidenceScore|OutputProbeMaskFileName|IsOptOut"


def system_rows(names: dict[str, str] | None = None, scores=None, statuses=None) -> list[str]:
    names = {p: f"mask/{p}.png" for p in PROBES} | (names or {})
    scores = {"P1": "0.9", "P2": "0.5", "P3": "0.2"} | (scores or {})
    statuses = {p: "N" for p in PROBES} | (statuses or {})
    return [SYSTEM_HEADER, *(f"{p}|{scores[p]}|{names[p]}|{statuses[p]}" for p in PROBES)]


@pytest.fixture
def env(tmp_path, monkeypatch):
    ref = tmp_path / "ref"
    write(ref / REF_DIR / "X-ref.csv", [
        "TaskID|ProbeFileID|ProbeFileName|ProbeMaskFileName|IsTarget|JournalName",
        *(f"manipulation|{p}|probe/{p}.jpg|{REF_DIR}/mask/{p}.png|Y|J{p}" for p in PROBES),
        "manipulation|P4|probe/P4.jpg||N|",
    ])
    write(ref / REF_DIR / "X-ref-probejournaljoin.csv", [
        "ProbeFileID|JournalName|StartNodeID|EndNodeID",
        *(f"{p}|J{p}|n{i}|n{j}" for p in PROBES for i, j in ((1, 2), (2, 3))),
    ])
    write(ref / REF_DIR / "X-ref-journalmask.csv", [
        "JournalName|StartNodeID|EndNodeID|Operation|Color|Purpose|OperationArgument",
        *(line for p in PROBES for line in (f"J{p}|n1|n2|PasteSplice|255 0 0|add|a",
                                            f"J{p}|n2|n3|Blur|0 255 0|clone|b")),
    ])
    write(ref / "indexes" / "X-index.csv", [
        "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight",
        *(f"manipulation|{p}|probe/{p}.jpg|{SIDE}|{SIDE}" for p in (*PROBES, "P4")),
    ])
    (ref / REF_DIR / "mask").mkdir(parents=True)
    sys_dir = tmp_path / "sys"
    (sys_dir / "mask").mkdir(parents=True)
    for k, p in enumerate(PROBES):
        assert cv2.imwrite(str(ref / REF_DIR / "mask" / f"{p}.png"), reference_mask(k))
        assert cv2.imwrite(str(sys_dir / "mask" / f"{p}.png"), system_mask(k))
    write(sys_dir / "sys.csv", system_rows())
    assert cv2.imwrite(str(tmp_path / "outside.png"), system_mask(0))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"root": tmp_path, "ref": ref, "sys": sys_dir, "out": tmp_path / "out", "cwd": cwd}


def run(env, *extra, system: str = "sys.csv") -> int:
    return main(["mask", "--refDir", str(env["ref"]), "-r", f"{REF_DIR}/X-ref.csv", "-x", "indexes/X-index.csv",
                 "--sysDir", str(env["sys"]), "-s", system, "-oR", str(env["out"] / "run"),
                 "--eks", "3", "--dks", "3", "--ntdks", "3", *extra])


def perimage(env) -> pd.DataFrame:
    return pd.read_csv(env["out"] / "run_mask_scores_perimage.csv", sep="|", dtype=str, keep_default_na=False)


def assert_one_probe_unscored(status, capsys, env, probe: str, *needles) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert status == 0, captured.err
    errors = [line for line in captured.err.splitlines() if "ERROR" in line]
    assert len(errors) == 1, captured.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    table = perimage(env).set_index("ProbeFileID")
    assert table.loc[probe, "Scored"] == "N"
    assert table.loc[probe, "OptimumMCC"] == ""
    others = [p for p in PROBES if p != probe]
    assert (table.loc[others, "Scored"] == "Y").all()
    return errors[0]


# --------------------------------------------------------------------------------------------
# A valid run


def test_valid_run_writes_the_three_tables(env, capsys):
    status = run(env)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "Traceback" not in captured.err and "ERROR" not in captured.err
    for suffix in ("_mask_score.csv", "_mask_scores_perimage.csv", "_journalResults.csv"):
        assert (env["out"] / f"run{suffix}").is_file(), suffix
    assert not [name for name in everything_under(env["out"]) if name.startswith(".mfscore-staging")]
    table = perimage(env)
    assert table["ProbeFileID"].tolist() == list(PROBES)
    assert (table["Scored"] == "Y").all()
    assert all(float(v) > 0.5 for v in table["OptimumMCC"])
    journal = pd.read_csv(env["out"] / "run_journalResults.csv", sep="|", dtype=str)
    assert (journal["Evaluated"] == "Y").all() and len(journal) == 6
    averaged = pd.read_csv(env["out"] / "run_mask_score.csv", sep="|", dtype=str)
    assert averaged["ScoreableTrials"].tolist() == ["3"]
    assert everything_under(env["cwd"]) == []


# --------------------------------------------------------------------------------------------
# System mask paths that leave the system directory: the whole run is refused


def test_dotdot_system_mask_path(env, capsys):
    write(env["sys"] / "sys.csv", system_rows({"P2": "../outside.png"}))
    assert_failed_cleanly(run(env), capsys, env, "../outside.png", "..")


def test_absolute_system_mask_path(env, capsys):
    absolute = str(env["root"] / "outside.png")
    write(env["sys"] / "sys.csv", system_rows({"P1": absolute}))
    assert_failed_cleanly(run(env), capsys, env, absolute, "absolute")


def test_symlink_leaving_the_system_dir(env, capsys):
    os.symlink(env["root"] / "outside.png", env["sys"] / "mask" / "link.png")
    write(env["sys"] / "sys.csv", system_rows({"P3": "mask/link.png"}))
    assert_failed_cleanly(run(env), capsys, env, "mask/link.png", "symbolic link")


def test_symlink_inside_the_system_dir_is_fine(env, capsys):
    os.symlink(env["sys"] / "mask" / "P3.png", env["sys"] / "mask" / "link.png")
    write(env["sys"] / "sys.csv", system_rows({"P3": "mask/link.png"}))
    status = run(env)
    captured = capsys.readouterr()
    assert status == 0 and "Traceback" not in captured.err and "ERROR" not in captured.err
    assert (perimage(env)["Scored"] == "Y").all()


# --------------------------------------------------------------------------------------------
# One bad mask: that probe is unscored, the run goes on


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def huge_png() -> bytes:
    """A valid-looking PNG whose IHDR declares 100000×100000 8-bit grey pixels (tiny IDAT)."""
    ihdr = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0))
    idat = png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    return b"\x89PNG\r\n\x1a\n" + ihdr + idat + png_chunk(b"IEND", b"")


def test_png_declaring_too_many_pixels(env, capsys):
    (env["sys"] / "mask" / "huge.png").write_bytes(huge_png())
    write(env["sys"] / "sys.csv", system_rows({"P2": "mask/huge.png"}))
    line = assert_one_probe_unscored(run(env), capsys, env, "P2", "huge.png", "100000x100000",
                                     "limit of 100000000")
    assert "unreadable" in line


def test_max_pixels_option(env, capsys):
    status = run(env, "--max-pixels", "10")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert status == 0, captured.err
    errors = [line for line in captured.err.splitlines() if "ERROR" in line]
    assert len(errors) == len(PROBES), captured.err
    for p, line in zip(PROBES, errors):
        assert f"{p}.png" in line and "limit of 10" in line and f"{SIDE}x{SIDE}" in line, line
    assert (perimage(env)["Scored"] == "N").all()


def test_max_pixels_option_just_enough(env, capsys):
    assert run(env, "--max-pixels", str(SIDE * SIDE)) == 0
    captured = capsys.readouterr()
    assert "ERROR" not in captured.err and "Traceback" not in captured.err
    assert (perimage(env)["Scored"] == "Y").all()


def test_truncated_system_png(env, capsys):
    path = env["sys"] / "mask" / "P1.png"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert_one_probe_unscored(run(env), capsys, env, "P1", "mask/P1.png", "unreadable")


def test_colour_system_mask_with_differing_channels(env, capsys):
    colour = np.repeat(system_mask(1)[:, :, None], 3, axis=2)
    colour[20, 20] = (10, 20, 30)
    assert cv2.imwrite(str(env["sys"] / "mask" / "P2.png"), colour)
    assert_one_probe_unscored(run(env), capsys, env, "P2", "mask/P2.png", "channels")


def test_wrong_size_system_mask(env, capsys):
    assert cv2.imwrite(str(env["sys"] / "mask" / "P3.png"), np.full((SIDE, SIDE + 1), 255, np.uint8))
    assert_one_probe_unscored(run(env), capsys, env, "P3", "mask/P3.png", f"{SIDE + 1}x{SIDE}")


def test_missing_system_mask_file(env, capsys):
    (env["sys"] / "mask" / "P2.png").unlink()
    assert_one_probe_unscored(run(env), capsys, env, "P2", "mask/P2.png", "does not exist")


# --------------------------------------------------------------------------------------------
# Bad tables: the whole run is refused


@pytest.mark.parametrize("table, what", [("X-ref-probejournaljoin.csv", "probeJournalJoin"),
                                         ("X-ref-journalmask.csv", "journalMask")])
def test_missing_journal_tables(env, capsys, table, what):
    (env["ref"] / REF_DIR / table).unlink()
    assert_failed_cleanly(run(env), capsys, env, what, table)


def test_unknown_is_opt_out(env, capsys):
    write(env["sys"] / "sys.csv", system_rows(statuses={"P2": "Maybe"}))
    assert_failed_cleanly(run(env), capsys, env, "sys.csv, line 3", "IsOptOut", "'Maybe'")


@pytest.mark.parametrize("score", ["high", "nan", "0.5x"])
def test_non_numeric_confidence_score(env, capsys, score):
    write(env["sys"] / "sys.csv", system_rows(scores={"P3": score}))
    assert_failed_cleanly(run(env), capsys, env, "sys.csv, line 4", "ConfidenceScore", repr(score))


def test_pppns_without_pixel_value_column(env, capsys):
    assert_failed_cleanly(run(env, "-pppns"), capsys, env, "sys.csv", "ProbeOptOutPixelValue")


def test_pppns_with_bad_pixel_value(env, capsys):
    rows = system_rows()
    rows = [rows[0] + "|ProbeOptOutPixelValue"] + [row + ("|x" if row.startswith("P2") else "|") for row in rows[1:]]
    write(env["sys"] / "sys.csv", rows)
    assert_failed_cleanly(run(env, "-pppns"), capsys, env, "sys.csv, line 3", "ProbeOptOutPixelValue")


# --------------------------------------------------------------------------------------------
# Bad options: argparse refuses them (status 2)


def assert_usage_error(env, capsys, *args_and_needles, args) -> str:
    with pytest.raises(SystemExit) as exc:
        run(env, *args)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    for needle in args_and_needles:
        assert needle in captured.err, (needle, captured.err)
    assert not env["out"].exists()
    return captured.err


@pytest.mark.parametrize("option", ["--eks", "--dks", "--ntdks"])
def test_even_kernel_size(env, capsys, option):
    assert_usage_error(env, capsys, "odd", option, args=[option, "4"])


def test_unknown_task(env, capsys):
    err = assert_usage_error(env, capsys, "'foo'", args=["-t", "foo"])
    assert "manipulation" in err and "splice" in err


# --------------------------------------------------------------------------------------------
# -qm queries are parsed by a whitelist, never evaluated


@pytest.mark.parametrize("query", [
    "__import__('os').system('touch {marker}')",
    "__import__('os')",
    "open('{marker}', 'w')",
    "len(Operation) > 0",
    "Operation.startswith('Paste')",
])
def test_query_is_never_evaluated(env, capsys, query):
    marker = env["root"] / "marker"
    line = assert_failed_cleanly(run(env, "-qm", query.format(marker=marker)), capsys, env)
    assert "quer" in line.lower(), line
    assert not marker.exists()


def test_valid_query_still_works(env, capsys):
    assert run(env, "-qm", "Purpose == ['add']") == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "ERROR" not in captured.err
    journal = pd.read_csv(env["out"] / "run_journalResults.csv", sep="|", dtype=str)
    assert sorted(zip(journal["Purpose"], journal["Evaluated"])) == [("add", "Y")] * 3 + [("clone", "N")] * 3


def test_journal_colour_with_a_non_ascii_digit(env, capsys):
    """``'²'.isdigit()`` is true but ``int('²')`` fails: such a Color selects nothing, it does not crash."""
    lines = (env["ref"] / REF_DIR / "X-ref-journalmask.csv").read_text().splitlines()
    lines[1] = lines[1].replace("|255 0 0|", "|\u00b2 0 0|")  # JP1's selected operation
    write(env["ref"] / REF_DIR / "X-ref-journalmask.csv", lines)
    status = run(env)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    # P1 is scored on its other operation (green); its red patch is now an unselected colour
    assert (perimage(env)["Scored"] == "Y").all()
