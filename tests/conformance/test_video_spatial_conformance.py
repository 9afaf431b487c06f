"""MediScore VideoSpatialLocalizationScorer test cases run through ``mfscore video-spatial``.

MediScore's video test data comes without its HDF5 masks (docs/video.md §B.7), so each case checks what the
masks do not decide and counts the rest as not available:

(a) ``<name>_journalResults.csv`` byte-identical to the checkfile;
(b) ``<name>_mask_score.csv``: the same header, and the trial counts plus TaskID and Query equal;
(c) ``<name>_pervideo.csv``: the same column names (MediScore's order is Python 2 dict order, so by name),
    the same ProbeFileIDs, and every non-metric column equal;
(d) the run exits 1 with one error naming the missing reference mask: the honest result without masks.

Scoreboard (``SCOREBOARD["video-spatial"]``): (a) counts as a compared file, matched only when byte-identical;
(b) and (c) as compared files, matched when their checks pass; every case adds one "not available" for its
metric columns. ``err_test`` (a system mask of another frame size, exit 1) runs on generated data.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from output_files import everything_under

from conformance.compare import byte_identical, cells_match, compare_outputs, differences
from conformance.conftest import SCOREBOARD
from conformance.video_spatial_cases import (
    CASES,
    CHECKFILES,
    ERR_OPTIONS,
    ERR_TEST,
    MEDISCORE_METRIC_EXTRAS,
    REFERENCE_MASK,
    SCORED_PROBE,
    TRIAL_COLUMNS,
    VS,
)
from mfscore.cli.main import main
from mfscore.reports.video_spatial_report import METRIC_COLUMNS
from mfscore.sample_data.video import (
    VideoCase,
    blocks_from_volume,
    rectangle_track,
    reference_codes,
    system_volume,
    write_video_dataset,
)

pytestmark = pytest.mark.conformance

UNCHECKED_PERVIDEO = frozenset({"Scored", *METRIC_COLUMNS, *MEDISCORE_METRIC_EXTRAS})


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter="|"))


def mask_score_problems(expected: Path, actual: Path) -> list[str]:
    header = _rows(expected)[0]
    return differences(expected, actual, ignore=frozenset(header) - set(TRIAL_COLUMNS))


def column_name_problems(expected: Path, actual: Path) -> list[str]:
    e, a = set(_rows(expected)[0]), set(_rows(actual)[0])
    return [f"columns differ: MediScore only {sorted(e - a)}, mfscore only {sorted(a - e)}"] if e != a else []


def pervideo_problems(expected: Path, actual: Path) -> list[str]:
    """The per-video tables' ProbeFileIDs and non-metric cells, compared by column name."""
    if not actual.exists():
        return [f"{actual.name} was not written"]
    e, a = _rows(expected), _rows(actual)
    e_rows = [dict(zip(e[0], row)) for row in e[1:]]
    a_rows = [dict(zip(a[0], row)) for row in a[1:]]
    if [r["ProbeFileID"] for r in e_rows] != [r["ProbeFileID"] for r in a_rows]:
        return [f"ProbeFileIDs differ: {[r['ProbeFileID'] for r in e_rows]} vs {[r['ProbeFileID'] for r in a_rows]}"]
    problems = []
    for er, ar in zip(e_rows, a_rows):
        for column in sorted(er.keys() & ar.keys() - UNCHECKED_PERVIDEO):
            if not cells_match(er[column], ar[column]):
                problems.append(f"{er['ProbeFileID']}, column {column}: expected {er[column]!r}, got {ar[column]!r}")
    return problems


def run_case(case, conformance_root: Path, tmp_path: Path, monkeypatch) -> tuple[int, Path]:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / case.name
    args = [str(conformance_root / a) if a.startswith(VS) else a for a in case.args]
    return main(["video-spatial", *args, "-oR", str(out / case.name)]), out


def _exactly(expected: Path, actual: Path) -> list[str]:
    if byte_identical(expected, actual):
        return []
    return differences(expected, actual) or ["not byte-identical"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_video_spatial_case(case, conformance_root, tmp_path, monkeypatch, capsys):
    board = SCOREBOARD["video-spatial"]
    checkfiles = conformance_root / CHECKFILES
    tables = ("journalResults", "mask_score", "pervideo")
    assert all((checkfiles / case.expected(t)).is_file() for t in tables), f"{checkfiles}: checkfiles missing"
    assert not (conformance_root / VS / REFERENCE_MASK).exists(), \
        "the reference masks are present: compare the metric columns too"
    status, out = run_case(case, conformance_root, tmp_path, monkeypatch)
    board["not_available"] += 1  # every metric column needs the masks
    err = capsys.readouterr().err

    # (a) byte-identical journal table; (b) the averaged table's header and trial counts
    problems = compare_outputs(board, checkfiles, out, [case.expected("journalResults")], compare=_exactly)
    problems |= compare_outputs(board, checkfiles, out, [case.expected("mask_score")], compare=mask_score_problems)
    # (c) the per-video table's non-metric columns; counted as matched only if the column names agree too
    # (test_pervideo_column_names checks those on their own)
    name = case.expected("pervideo")
    board["compared"] += 1
    found = pervideo_problems(checkfiles / name, out / name)
    if found:
        problems[name] = found
    elif not column_name_problems(checkfiles / name, out / name):
        board["matched"] += 1
    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())

    # (d) the missing reference mask: one error naming it, the probe scored with the minimum row, exit 0 once
    # the reports are written (MediScore's exit 1 under --mediscore-compat: test_err_test)
    assert "Traceback" not in err and "internal error" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("mfscore: ERROR:")]
    assert len(errors) == 1, err
    assert errors[0].startswith(f"mfscore: ERROR: probe {SCORED_PROBE}: "), errors[0]
    assert REFERENCE_MASK in errors[0] and "does not exist" in errors[0], errors[0]
    assert err.splitlines()[-1].startswith("mfscore: 1 mask(s) could not be used; "), err
    assert status == 0
    rows = _rows(out / case.expected("pervideo"))
    row = dict(zip(rows[0], rows[1]))
    assert (row["Scored"], row["SpatialTemporalOptimumMCC"], row["SpatialTemporalOptimumNMM"], row["TemporalMCC"]) == \
        ("N", "0.0", "-1.0", "0.0")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_pervideo_column_names(case, conformance_root, tmp_path, monkeypatch, capsys):
    _, out = run_case(case, conformance_root, tmp_path, monkeypatch)
    capsys.readouterr()
    name = case.expected("pervideo")
    assert column_name_problems(conformance_root / CHECKFILES / name, out / name) == []


# --------------------------------------------------------------------------------------------------
# err_test: a system mask whose frames are another size than the reference's (exit status 1)


def test_err_test(tmp_path, monkeypatch, capsys):
    fc, h, w = 20, 48, 64
    box = rectangle_track(fc, h, w, frames=(5, 12), box=(8, 10, 30, 36))  # keeps a core inside the default zones
    reference = blocks_from_volume(reference_codes({1: box}), background=0)
    good = blocks_from_volume(system_volume((fc, h, w), [(box, 20)]), background=255)
    # gen_spatial_mask.py --shift_frames 8: the frames come out 8 pixels wider
    shifted = np.full((8, h, w + 8), 255, np.uint8)
    shifted[:, 8:38, 18:54] = 20
    journal = [("PasteSampled", 1)]
    cases = [VideoCase("P1good", fc, h, w, reference_blocks=reference, system_blocks=good, journal=journal),
             VideoCase("P2dims", fc, h, w, reference_blocks=reference, system_blocks={4: shifted}, journal=journal)]
    paths = write_video_dataset(tmp_path / ERR_TEST, cases)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "test_err"
    # MediScore's exit status 1 for a failed probe is the video scorer's rule under --mediscore-compat (by
    # default the run exits 0 once its reports are written; --strict exits 1)
    status = main(["video-spatial", *ERR_OPTIONS, *paths.cli_args(), "-oR", str(out / "test_err"), "--mediscore-compat"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert status == 1
    errors = [line for line in err.splitlines() if line.startswith("mfscore: ERROR:")]
    assert len(errors) == 1, err
    assert errors[0].startswith("mfscore: ERROR: probe P2dims: "), errors[0]
    assert "P2dims-mask.hdf5" in errors[0] and f"{w + 8}x{h}" in errors[0] and f"{w}x{h}" in errors[0], errors[0]
    assert everything_under(cwd) == []
    rows = _rows(out / "test_err_pervideo.csv")
    table = {row[rows[0].index("ProbeFileID")]: dict(zip(rows[0], row)) for row in rows[1:]}
    assert table["P1good"]["SpatialTemporalOptimumMCC"] == "1.0"  # the other probe is scored as usual
