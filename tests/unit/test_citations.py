"""The repository stands alone: every document its text names is in it, and every section it cites exists.

Scanned: the text files of the code, tests, benchmarks, docs, deployment, proto and CI, and the top-level
files. Three rules:

* every ``*.md`` named anywhere exists, relative to the repository root, to the naming file's directory,
  or as ``docs/<name>``;
* no path into a directory beside the repository (``../shared``, ``shared/…``) appears;
* every cited section exists in the document named: ``§N``, ``§N.M``, ``§A.4``, ``§6a`` (and lists and
  ranges such as ``§6.1–§6.5, §6.8``) after the file's name; a heading anchor ``file.md#anchor`` (as
  GitHub makes them); a quoted heading ``file.md "Heading"`` (or ``file.md, "Heading"``; a heading's
  parenthesised ending may be left out: "Masks" names ``## Masks (`mfscore mask`)``). A ``§`` that
  follows no file name cites the document it is written in, so it is allowed only in a ``.md`` file,
  whose own sections it must name; the one exception is a section of the MFC2019 evaluation plan, a
  public NIST document (``MFC2019 plan §7``).

A section is a Markdown heading whose text starts with its number (``### 4.2 Colour references``,
``## A. MediScore's temporal scorer``, ``### 6a. The phrases …``).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()

ROOTS = ("mfscore", "services", "tests", "bench", "docs", "deploy", "proto", ".ci")
TOP_FILES = ("README.md", "pyproject.toml", "Makefile", "buf.yaml", "package.json")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", "node_modules", ".git", ".venv",
             ".data"}  # bench/.data: generated benchmark data, ignored by git
CONFORMANCE_DATA = REPO / "tests" / "conformance" / "data"
MAX_BYTES = 2 << 20

SECTION_ID = r"(?:[A-Z](?:\.\d+)*|\d+[a-z]?(?:\.\d+)*)"
SECTION_LIST = re.compile(rf"§(?P<first>{SECTION_ID})(?P<rest>(?:\s*(?:[-–,/]|and|or)\s*§?{SECTION_ID}(?![\w]))*)")
MD_NAME = re.compile(r"(?<![\w/.-])(?P<path>(?:\.{1,2}/)*(?:[\w.-]+/)*[\w-][\w.-]*\.md)(?![\w-])")
ANCHOR = re.compile(r"#(?P<anchor>[\w-]+)")
QUOTED = re.compile(r",?\s+[\"“](?P<heading>[A-Za-z`][^\"”\n]{0,100})[\"”]")
AFTER_NAME = re.compile(r"(?:,|\s+and)?\s*")  # between a file's name and its section list
SHARED = re.compile(r"(?<![\w-])(?:\.\./)*shared/|\.\./shared\b")
PLAN = re.compile(r"MFC2019\s+plan\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
HEADING_ID = re.compile(rf"^§?(?P<id>{SECTION_ID})\.?(?=\s|$)")


def text_files() -> list[Path]:
    """Every text file the rules apply to, this test excepted."""
    found = [REPO / name for name in TOP_FILES if (REPO / name).is_file()]
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            if not path.is_file() or SKIP_DIRS.intersection(path.relative_to(REPO).parts) or path == THIS:
                continue
            if path.is_relative_to(CONFORMANCE_DATA) and path != CONFORMANCE_DATA / "README.md":
                continue  # MediScore's data, byte for byte as it ships
            if path.stat().st_size <= MAX_BYTES and _text(path) is not None:
                found.append(path)
    return found


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _plain(heading: str) -> str:
    """A heading's or a quoted heading's text without Markdown emphasis and code marks."""
    return re.sub(r"[`*_]", "", heading).strip()


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = _plain(heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def headings(document: Path) -> tuple[frozenset, frozenset, frozenset]:
    """A Markdown document's section numbers, heading anchors and heading texts (outside code blocks)."""
    sections, anchors, texts, seen = set(), set(), set(), {}
    fenced = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if not match:
            continue
        text = match["text"]
        texts.add(_plain(text))
        if number := HEADING_ID.match(_plain(text)):
            sections.add(number["id"])
        slug = _slug(text)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return frozenset(sections), frozenset(anchors), frozenset(texts)


def resolve(name: str, citing: Path) -> Path | None:
    """The repository file a name means: from the root, from the citing file's directory, or in docs/."""
    for base in (REPO, citing.parent, REPO / "docs"):
        candidate = (base / name).resolve()
        if candidate.is_file() and candidate.is_relative_to(REPO):
            return candidate
    return None


def _is_heading(quoted: str, texts: frozenset) -> bool:
    """Whether a quoted heading is one of the texts: the whole heading, or all of it before a parenthesis."""
    return quoted in texts or any(text.startswith(quoted + " (") for text in texts)


def _section_ids(match: re.Match) -> list[str]:
    return [match["first"], *re.findall(SECTION_ID, re.sub(r"\b(?:and|or)\b", " ", match["rest"]))]


def problems(path: Path, text: str) -> list[str]:
    """What breaks the rules in ``text``, the contents of ``path``: one sentence each, with the line."""
    found: list[str] = []

    def where(offset: int) -> str:
        return f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}, line {text.count(chr(10), 0, offset) + 1}"

    for match in SHARED.finditer(text):
        found.append(f"{where(match.start())}: names a path outside the repository ({match.group()!r})")

    cited = set()  # offsets of the § consumed by a citation of a named file
    for match in MD_NAME.finditer(text):
        name, end = match["path"], match.end()
        if text[max(0, match.start() - 3):match.start()].endswith("://"):
            continue
        document = resolve(name, path)
        if document is None:
            found.append(f"{where(match.start())}: names {name}, which is not in the repository")
            continue
        sections, anchors, texts = headings(document) if document.suffix == ".md" else ((), (), ())
        if anchor := ANCHOR.match(text, end):
            if anchor["anchor"] not in anchors:
                found.append(f"{where(match.start())}: {name} has no heading with the anchor #{anchor['anchor']}")
            end = anchor.end()
        if quoted := QUOTED.match(text, end):
            if not _is_heading(_plain(quoted["heading"]), texts):
                found.append(f"{where(match.start())}: {name} has no heading \"{quoted['heading']}\"")
            continue
        gap = AFTER_NAME.match(text, end)
        if listed := SECTION_LIST.match(text, gap.end()):
            cited.add(listed.start())
            for section in _section_ids(listed):
                if section not in sections:
                    found.append(f"{where(match.start())}: {name} has no section §{section}")

    for listed in SECTION_LIST.finditer(text):
        if listed.start() in cited or PLAN.search(text[max(0, listed.start() - 40):listed.start()]):
            continue
        if path.suffix != ".md":
            found.append(f"{where(listed.start())}: {listed.group()} cites no document (name the file: "
                         f"docs/<page>.md {listed.group()})")
            continue
        sections = headings(path)[0]
        for section in _section_ids(listed):
            if section not in sections:
                found.append(f"{where(listed.start())}: §{section} is not a section of this document")
    return found


FILES = text_files()


def test_the_scan_covers_the_code_the_tests_and_the_docs():
    names = {p.relative_to(REPO).as_posix() for p in FILES}
    assert {"README.md", "docs/architecture.md", "mfscore/masks/noscore_zones.py", "services/__init__.py",
            "proto/mfscore/v1/records.proto", "tests/conformance/data/README.md", ".ci/run"} <= names
    assert not any(name.startswith("tests/conformance/data/") and name.endswith(".csv") for name in names)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_citation_points_into_the_repository(path):
    assert problems(path, _text(path)) == []


# --- the rules catch what they are meant to catch ---------------------------------------------------------

CITING = REPO / "mfscore" / "example.py"    # a made-up file: never read, only its name and directory matter
DOC = REPO / "docs" / "example.md"


@pytest.mark.parametrize("text", [
    "# docs/masks.md §4.2: colour references",
    "(docs/masks.md §5.2–§5.5)",
    "docs/detection.md §6.1-§6.5, §6.8",
    "docs/video.md §A.4 / §A.6",
    "(docs/video.md §B)",
    "docs/validation.md §6a",
    "docs/provenance.md §3.2 step 4",
    'docs/video.md "How a video is scored"',
    'docs/video.md, "How a video is scored" and "Outputs"',
    "[graph](docs/provenance.md#graph-building)",
    "see docs/metrics.md §1.4 and §2.1",
    "MFC2019 plan §5.1.1.3",
    "tests/conformance/data/README.md",
])
def test_real_citations_pass(text):
    assert problems(CITING, text) == []


@pytest.mark.parametrize("text, complaint", [
    ("# mask.md §4.2", "names mask.md, which is not in the repository"),
    ("(spec.md §B.4)", "names spec.md, which is not in the repository"),
    ("docs/video.md §B.10", "has no section §B.10"),
    ("docs/masks.md §12", "has no section §12"),
    ("docs/masks.md §4.9", "has no section §4.9"),
    ("docs/video.md §A.4–§A.9", "has no section §A.9"),
    ("docs/video.md §C.1", "has no section §C.1"),
    ("docs/detection.md §6.1, §6.12", "has no section §6.12"),
    ("docs/validation.md §6b", "has no section §6b"),
    ('docs/video.md "No such heading"', 'has no heading "No such heading"'),
    ("docs/provenance.md#no-such-anchor", "has no heading with the anchor #no-such-anchor"),
    ("see ../shared/spec/mask.md", "outside the repository"),
    ("(shared/DESIGN.md)", "outside the repository"),
    ("DESIGN.md's table", "names DESIGN.md, which is not in the repository"),
    ("semafor_and_paper.md §2.1", "not in the repository"),
    ("the spec (§6.6)", "cites no document"),
    ("SemaFor plan §1.4", "cites no document"),
])
def test_made_up_citations_fail(text, complaint):
    found = problems(CITING, text)
    assert found and any(complaint in problem for problem in found), found


def test_a_bare_section_in_a_document_cites_that_document():
    docs_masks = REPO / "docs" / "masks.md"
    assert problems(docs_masks, "as §5.3 says") == []
    assert any("§5.9 is not a section" in p for p in problems(docs_masks, "as §5.9 says"))
    assert any("§B.2 is not a section" in p for p in problems(docs_masks, "(§B.2)"))


def test_sections_are_read_from_headings_only():
    sections, anchors, texts = headings(REPO / "docs" / "masks.md")
    assert {"1", "4", "4.2", "5.5", "6.6", "10.1", "11"} <= sections
    assert "mediscores-maskscorer-section-by-section" in anchors
    assert "Bad input" in texts
    assert {"A", "A.3.4", "B", "B.9"} <= headings(REPO / "docs" / "video.md")[0]
    assert "6a" in headings(REPO / "docs" / "validation.md")[0]
