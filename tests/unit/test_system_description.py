"""The system description parser: which lines head which of the six sections, and what counts as empty."""

from __future__ import annotations

import pytest

from mfscore.validation.findings import ValidationReport
from mfscore.validation.system_description import SECTIONS, check_system_description, heading, section_bodies

GOOD = """Team Foo, MFC2019
1. Submission Identifier(s)
p-baseline_1
2. System Description
A CNN.
3. OptOut Criteria
None.
4. System Hardware Description and Runtime Computation
One GPU, 3 hours.
5. Training Data and Knowledge Sources
MFC18 dev.
6. References
None.
"""


@pytest.mark.parametrize("line, number", [
    ("1. Submission Identifier(s)", 1),
    ("Section 1 Submission Identifier(s)", 1),
    ("## Experiment Identifiers", 1),
    ("submission identifier:", 1),
    ("#### Section 2 System Description", 2),
    ("2) system description", 2),
    ("3: Opt-Out Criteria", 3),
    ("OPT OUT CRITERIA", 3),
    ("  4 System Hardware Description and Runtime Computation  ", 4),
    ("**5. Training Data and Knowledge Sources**", 5),
    ("Section6 References", 6),
])
def test_a_heading_names_its_section(line, number):
    section = heading(line)
    assert section is not None and section.number == number


@pytest.mark.parametrize("line", ["", "The detector is a small CNN.", "References to papers",
                                  "7. Results", "System", "p-baseline_1"])
def test_other_lines_are_not_headings(line):
    assert heading(line) is None


def test_sections_run_to_the_next_heading():
    bodies = section_bodies("intro\n# System Description\n\n  \n# References\nA paper\n")
    by_number = {section.number: body for section, body in bodies.items()}
    assert by_number == {2: (2, False), 6: (5, True)}


def _findings(tmp_path, text: str | bytes) -> list[tuple[str, str, int | None]]:
    path = tmp_path / "p-x_1.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    report = ValidationReport()
    check_system_description(report, str(path))
    assert all(f.file == str(path) for f in report.findings)
    return [(f.code, f.message, f.line) for f in report.findings]


def test_a_complete_description_passes(tmp_path):
    assert _findings(tmp_path, GOOD) == []
    assert _findings(tmp_path, "\ufeff" + GOOD.replace("\n", "\r\n")) == []


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: str(s.number))
def test_a_missing_section_is_named(tmp_path, section):
    lines = GOOD.splitlines()
    at = next(i for i, line in enumerate(lines) if heading(line) is section)
    text = "\n".join(lines[:at] + lines[at + 2:])
    assert _findings(tmp_path, text) == [
        ("description.section_missing", f"The system description has no section {section.number} "
                                        f"'{section.title}'.", None)]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: str(s.number))
def test_an_empty_section_is_named_with_its_line(tmp_path, section):
    lines = GOOD.splitlines()
    at = next(i for i, line in enumerate(lines) if heading(line) is section)
    text = "\n".join(lines[:at + 1] + ["   "] + lines[at + 2:])
    assert _findings(tmp_path, text) == [
        ("description.section_empty", f"Section {section.number} '{section.title}' of the system description is "
                                      "empty.", at + 1)]


def test_hostile_descriptions_are_one_finding(tmp_path):
    assert [code for code, _, _ in _findings(tmp_path, b"\xff\xfe\x00bad")] == ["description.encoding"]
    assert [code for code, _, _ in _findings(tmp_path, b"x" * ((1 << 20) + 1))] == ["description.too_large"]
    assert [code for code, _, _ in _findings(tmp_path, b"")] == ["description.section_missing"] * 6
