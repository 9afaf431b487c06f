"""``mfscore validate --package DIR``: a whole submission package (name, layout, description, system output).

One generated package passes; each broken rule fails with exit 1 and one line naming its file; hostile packages
(missing, a file, unreadable, symbolic links out) are refused in one line, never with a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mfscore.cli.main import main
from mfscore.formats.tables import read_table, write_table
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.validation.system_description import SECTIONS

SUBID = "p-team_1"
DESCRIPTION = """Team: Example
Section 1 Submission Identifier(s)
p-team_1
Section 2 System Description
A generated system.
Section 3 OptOut Criteria
Trials are never opted out.
Section 4 System Hardware Description and Runtime Computation
One CPU core, one second.
Section 5 Training Data and Knowledge Sources
None beyond the provided corpora.
Section 6 References
None.
"""


def _make_package(root: Path, subid: str = SUBID) -> tuple[Path, Path]:
    data = generate_mask_dataset(root / "data", n_probes=4, width=32, height=24)
    package = data.directory / subid
    (data.directory / data.system).rename(data.directory / "system" / f"{subid}.csv")
    (data.directory / "system").rename(package)
    (package / f"{subid}.txt").write_text(DESCRIPTION)
    return package, data.directory / data.index


@pytest.fixture
def package(tmp_path):
    return _make_package(tmp_path)


def _validate(capsys, package, index, *extra) -> tuple[int, list[str]]:
    status = main(["validate", "-vt", "SSD", "--plan", "mfc2019", "--package", str(package), "-x", str(index),
                   *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out.splitlines()


def _errors(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("ERROR: ")]


def _renamed(package: Path, subid: str) -> Path:
    """The package renamed to ``subid``, its files with it."""
    for suffix in (".csv", ".txt"):
        (package / f"{package.name}{suffix}").rename(package / f"{subid}{suffix}")
    return package.rename(package.parent / subid)


def test_a_good_package_passes(package, capsys):
    status, lines = _validate(capsys, *package)
    assert status == 0, lines
    assert lines == ["The contents of your file have passed validation."]


def test_the_package_may_be_named_with_a_trailing_slash_or_dot(package, capsys, monkeypatch):
    directory, index = package
    assert _validate(capsys, f"{directory}{os.sep}", index)[0] == 0
    monkeypatch.chdir(directory)
    assert _validate(capsys, ".", index)[0] == 0


@pytest.mark.parametrize("subid, code, message", [
    ("x-team_1", "name.sys", "The system ID 'x-team' must be 'p-' (primary) or 'c-' (contrastive)"),
    ("team_1", "name.sys", "The system ID 'team' must be 'p-' (primary) or 'c-' (contrastive)"),
    ("p-te-am_1", "name.sys", "The system ID 'p-te-am' must be"),
    ("p-_1", "name.sys", "The system ID 'p-' must be"),
    ("p-team_0", "name.version", "The version '0' must be an integer starting at 1."),
    ("p-team_01", "name.version", "The version '01' must be an integer starting at 1."),
    ("p-team_v1", "name.version", "The version 'v1' must be an integer starting at 1."),
    ("p-team_1_", "name.optional", "The directory name p-team_1_ ends with '_'"),
    ("p-team", "name.fields", "The directory name p-team is not a SubID <SYS>_<VERSION>_[OPTIONAL]."),
])
def test_each_subid_rule(package, capsys, subid, code, message):
    directory, index = package
    renamed = _renamed(directory, subid)
    status, lines = _validate(capsys, renamed, index)
    errors = _errors(lines)
    assert status == 1 and len(errors) == 1, lines
    assert errors[0].startswith(f"ERROR: {message}") and errors[0].endswith(f" [{renamed}]"), errors


@pytest.mark.parametrize("subid", ["p-team_1_splice", "c-Contrast2_12", "p-team_3_any_thing"])
def test_valid_subids_pass(package, capsys, subid):
    directory, index = package
    assert _validate(capsys, _renamed(directory, subid), index)[0] == 0


def test_the_system_output_is_required(package, capsys):
    directory, index = package
    (directory / f"{SUBID}.csv").unlink()
    status, lines = _validate(capsys, directory, index)
    path = directory / f"{SUBID}.csv"
    assert status == 1 and _errors(lines) == [
        f"ERROR: Expected system output file {path}, but it does not exist. [{path}]"], lines


def test_the_description_is_required(package, capsys):
    directory, index = package
    (directory / f"{SUBID}.txt").unlink()
    status, lines = _validate(capsys, directory, index)
    path = directory / f"{SUBID}.txt"
    assert status == 1 and _errors(lines) == [
        f"ERROR: The package has no system description {SUBID}.txt. [{path}]"], lines


def test_the_mask_directory_is_required_once_a_mask_is_named(package, capsys):
    directory, index = package
    shutil.rmtree(directory / "mask")
    status, lines = _validate(capsys, directory, index, "--json")
    report = json.loads("\n".join(lines))
    package_errors = [f for f in report["findings"] if f["code"].startswith("package.")]
    assert status == 1 and package_errors == [{
        "code": "package.mask_directory", "severity": "error", "line": None, "file": str(directory / "mask"),
        "message": "The system output names 4 masks, but the package has no mask/ directory."}]


def test_no_mask_directory_is_needed_without_masks(package, capsys):
    directory, index = package
    shutil.rmtree(directory / "mask")
    system = directory / f"{SUBID}.csv"
    table = read_table(system, raw_text=True).fillna("")
    table["OutputProbeMaskFileName"] = ""
    write_table(table, system)
    assert _validate(capsys, directory, index)[0] == 0
    assert _validate(capsys, directory, index, "-nm")[0] == 0


def test_a_named_mask_lies_in_the_mask_directory(package, capsys):
    directory, index = package
    system = directory / f"{SUBID}.csv"
    table = read_table(system, raw_text=True).fillna("")
    moved = table.loc[0, "OutputProbeMaskFileName"].replace("mask/", "elsewhere/")
    (directory / "elsewhere").mkdir()
    (directory / table.loc[0, "OutputProbeMaskFileName"]).rename(directory / moved)
    table.loc[0, "OutputProbeMaskFileName"] = moved
    write_table(table, system)
    status, lines = _validate(capsys, directory, index)
    assert status == 1 and _errors(lines) == [
        f"ERROR: The mask {moved} is not in the package's mask/ directory. [{system}, line 2]"], lines


def test_a_mask_entry_that_is_a_file_is_refused(package, capsys):
    directory, index = package
    shutil.rmtree(directory / "mask")
    (directory / "mask").write_text("not a directory")
    status, lines = _validate(capsys, directory, index)
    assert status == 1
    assert f"ERROR: The package's mask entry is not a directory. [{directory / 'mask'}]" in _errors(lines)


def _description_without(section_number: int, *, keep_heading: bool) -> str:
    lines = DESCRIPTION.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"Section {section_number} "))
    return "\n".join(lines[:at] + lines[at:at + 1] * keep_heading + lines[at + 2:]) + "\n"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.title)
def test_a_missing_section_fails(package, capsys, section):
    directory, index = package
    description = directory / f"{SUBID}.txt"
    description.write_text(_description_without(section.number, keep_heading=False))
    status, lines = _validate(capsys, directory, index)
    assert status == 1 and _errors(lines) == [
        f"ERROR: The system description has no section {section.number} '{section.title}'. [{description}]"]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.title)
def test_an_empty_section_fails(package, capsys, section):
    directory, index = package
    description = directory / f"{SUBID}.txt"
    text = _description_without(section.number, keep_heading=True)
    description.write_text(text)
    line = text.splitlines().index(next(x for x in text.splitlines() if x.startswith(f"Section {section.number} ")))
    status, lines = _validate(capsys, directory, index)
    assert status == 1 and _errors(lines) == [
        f"ERROR: Section {section.number} '{section.title}' of the system description is empty. "
        f"[{description}, line {line + 1}]"]


def test_the_system_outputs_own_findings_come_through(package, capsys):
    directory, index = package
    system = directory / f"{SUBID}.csv"
    table = read_table(system, raw_text=True).fillna("")
    table.loc[1, "ConfidenceScore"] = "1.5"
    table.loc[2, "ProbeStatus"] = "Maybe"
    write_table(table, system)
    (directory / f"{SUBID}.txt").write_text(_description_without(6, keep_heading=False))
    status, lines = _validate(capsys, directory, index, "--json")
    report = json.loads("\n".join(lines))
    assert status == 1
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == [
        "description.section_missing", "score.range", "status.unknown"]
    status, lines = _validate(capsys, directory, index, "--max-findings", "1", "--json")
    report = json.loads("\n".join(lines))
    assert status == 1 and report["omitted"] == 2
    assert [f["code"] for f in report["findings"]] == ["description.section_missing", "report.truncated"]


def test_the_plan_chooses_the_name_rule(tmp_path, capsys):
    expid = "team_NC17_Data_Manipulation_ImgOnly_p-base_1"
    directory, index = _make_package(tmp_path, expid)
    status, lines = main(["validate", "-vt", "SSD", "--package", str(directory), "-x", str(index)]), \
        capsys.readouterr().out.splitlines()
    assert status == 0, lines
    assert _validate(capsys, directory, index)[0] == 1  # not a SubID under --plan mfc2019


@pytest.mark.parametrize("make, code_line", [
    (lambda d: shutil.rmtree(d), "The package directory does not exist."),
    (lambda d: (shutil.rmtree(d), d.write_text("x")), "The package is not a directory."),
])
def test_a_package_that_is_no_directory_is_one_line(package, capsys, make, code_line):
    directory, index = package
    make(directory)
    status, lines = _validate(capsys, directory, index)
    assert status == 1 and lines == [f"ERROR: {code_line} [{directory}]", "The contents of your file are not valid."]


def test_an_unreadable_package_is_one_line(package, capsys, monkeypatch):
    """As a package without read permission is (tests may run as root, who reads any directory: its check is asked
    of the process's access instead)."""
    from mfscore.validation import package as packages

    directory, index = package
    unreadable = str(directory)
    monkeypatch.setattr(packages.os, "access", lambda path, mode: os.fspath(path) != unreadable)
    status, lines = _validate(capsys, directory, index)
    assert status == 1 and lines == [f"ERROR: The package directory cannot be read. [{directory}]",
                                     "The contents of your file are not valid."]


@pytest.mark.parametrize("entry, what", [(f"{SUBID}.csv", "system output"), (f"{SUBID}.txt", "system description"),
                                         ("mask", "mask directory")])
def test_a_symbolic_link_out_of_the_package_is_refused(package, capsys, tmp_path, entry, what):
    directory, index = package
    outside = tmp_path / "outside"
    outside.mkdir()
    (directory / entry).rename(outside / entry)
    (directory / entry).symlink_to(outside / entry)
    status, lines = _validate(capsys, directory, index)
    assert status == 1
    assert (f"ERROR: Refused: the {what} file name is a symbolic link that leads outside its directory. "
            f"[{directory / entry}]") in _errors(lines), lines


def test_package_and_system_output_exclude_each_other(package, capsys):
    directory, index = package
    with pytest.raises(SystemExit) as done:
        main(["validate", "-vt", "SSD", "--package", str(directory), "-s", "x.csv", "-x", str(index)])
    assert done.value.code == 2
    with pytest.raises(SystemExit) as done:
        main(["validate", "-vt", "SSD", "-x", str(index)])
    assert done.value.code == 2
    capsys.readouterr()
