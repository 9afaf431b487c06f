"""A package's system description ``<SubID>.txt``: its six sections, each present and non-empty.

The MFC2019 and NC2017 plans (Appendix A-a) ask for six numbered sections; docs/validation.md "Packages" lists
them. A line heads a section when, of its letters and digits (lower-case, everything else dropped), what follows
an optional leading ``section`` and number is the section's title: so ``## 3. Opt-Out Criteria:``,
``Section 3 OptOut Criteria`` and ``**OPTOUT CRITERIA**`` all head section 3. A section runs from its heading to
the next heading; it is empty when no line in between holds anything but blanks. Text before the first heading is
free. A title heading two sections counts once, its bodies together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mfscore.limits import MAX_DESCRIPTION_BYTES
from mfscore.validation.findings import ValidationReport


@dataclass(frozen=True)
class Section:
    number: int
    title: str                  # as the plans print it
    spellings: frozenset[str]   # the title's letters and digits, lower-case, in each accepted wording


def _section(number: int, title: str, *others: str) -> Section:
    return Section(number, title, frozenset(_letters(t) for t in (title, *others)))


def _letters(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


SECTIONS = (
    # MFC2019 names the identifiers "Submission", NC2017 "Experiment"; both take one or several.
    _section(1, "Submission Identifier(s)", "Submission Identifier", "Submission Identifiers",
             "Experiment Identifier(s)", "Experiment Identifier", "Experiment Identifiers"),
    _section(2, "System Description"),
    _section(3, "OptOut Criteria"),
    _section(4, "System Hardware Description and Runtime Computation"),
    _section(5, "Training Data and Knowledge Sources"),
    _section(6, "References"),
)
_BY_SPELLING = {spelling: section for section in SECTIONS for spelling in section.spellings}
_NUMBERING = re.compile(r"(?:section)?[0-9]*")


def heading(line: str) -> Section | None:
    """The section ``line`` heads, or None when it is not a heading."""
    letters = _letters(line)
    return _BY_SPELLING.get(letters[_NUMBERING.match(letters).end():])


def section_bodies(text: str) -> dict[Section, tuple[int, bool]]:
    """Each section found: the line of its first heading and whether any of its lines holds text."""
    found: dict[Section, tuple[int, bool]] = {}
    current: Section | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        section = heading(line)
        if section is not None:
            current = section
            found.setdefault(section, (number, False))
        elif current is not None and line.strip():
            found[current] = (found[current][0], True)
    return found


def check_system_description(report: ValidationReport, path: str) -> None:
    """Errors in ``report`` for each section of the description at ``path`` that is missing or empty."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DESCRIPTION_BYTES + 1)
    except OSError as exc:
        report.error("description.unreadable", f"The system description cannot be read: {exc.strerror}.",
                     file=path)
        return
    if len(data) > MAX_DESCRIPTION_BYTES:
        report.error("description.too_large", f"The system description is larger than {MAX_DESCRIPTION_BYTES} "
                     "bytes.", file=path)
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        report.error("description.encoding", f"The system description is not UTF-8 text (byte {exc.start}).",
                     file=path)
        return
    found = section_bodies(text)
    for section in SECTIONS:
        if section not in found:
            report.error("description.section_missing", f"The system description has no section "
                         f"{section.number} '{section.title}'.", file=path)
        elif not found[section][1]:
            report.error("description.section_empty", f"Section {section.number} '{section.title}' of the system "
                         "description is empty.", file=path, line=found[section][0])
