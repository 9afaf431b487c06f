"""The HTML report of a run: self-contained (images as data: URIs, nothing fetched), every file's text escaped,
long tables cut with a note, the headline the terminal's, the same bytes for the same inputs; --html on a scorer
writes what report-html writes."""

from __future__ import annotations

import html
import re
import shutil

import pytest

from mfscore.cli.main import main
from mfscore.reports import html_report
from mfscore.reports.summary_table import summary_lines
from mfscore.results import Results
from mfscore.sample_data.detection import generate_detection_dataset


@pytest.fixture(scope="module")
def detection_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    data = generate_detection_dataset(root / "data", 400)
    assert main(["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "-o", str(root / "out" / "run"), "--ci",
                 "-qm", "Purpose==['add']", "Purpose==['remove']", "Purpose==['none of them']", "--quiet",
                 "--html"]) == 0  # the last query selects no target: its undefined values read "-" as on the terminal
    return root / "out"


def test_the_page_is_self_contained_and_holds_the_run(detection_run):
    page = (detection_run / "run_mfscore_report.html").read_text()
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources and all(source.startswith("data:image/png;base64,") for source in sources)
    assert "default-src 'none'" in page and page.count("<script>") == 1
    assert not re.search(r"https?://", page)
    pngs = sorted(p.name for p in detection_run.glob("*.png"))
    assert pngs and all(f'alt="{name}"' in page for name in pngs)
    for table in sorted(detection_run.glob("*.csv")):
        assert f'data-file="{table.name}"' in page
    order = [page.index(f'<section id="{section}">') for section in ("headline", "plots", "tables", "glossary", "run")]
    assert order == sorted(order)  # the numbers first, where they came from last


def test_the_headline_is_the_terminal_summary(detection_run):
    results = Results.from_json((detection_run / "run_results.json").read_bytes())
    page = html_report.headline_table(results)
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>.*?</td>", page)]
    terminal = [line.split() for line in summary_lines(results)[2:]]  # the rows, after the title and header
    assert " ".join(cells).split() == [word for row in terminal for word in row]
    row = results.rows[0]
    assert f'data-metric="AUC" data-query="{html.escape(row.query)}" data-value="{row.values["AUC"]!r}"' in page


def test_the_same_run_gives_the_same_bytes_and_report_html_writes_them(detection_run, tmp_path):
    written = (detection_run / "run_mfscore_report.html").read_bytes()
    assert main(["report-html", str(detection_run), "-o", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == written


def test_untrusted_text_is_escaped_and_long_tables_are_cut(detection_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(detection_run, run)
    (run / "run_mfscore_report.html").unlink()
    rows = "\n".join(f"{i}|<img src=x onerror=alert({i})>" for i in range(html_report.MAX_ROWS + 7))
    (run / 'run_evil"<b>.csv').write_text("N|<script>alert(1)</script>\n" + rows + "\n")
    visuals = run / "run_visuals"
    visuals.mkdir()
    (visuals / "index.json").write_text('[{"ProbeFileID": "<i>p1</i>", "OptimumMCC": 0.5}]')
    shutil.copy(next(run.glob("*.png")), visuals / "p1.png")
    page = html_report.run_report(run / "run_results.json").decode()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(0)&gt;" in page
    assert 'data-file="run_evil&quot;&lt;b&gt;.csv"' in page
    assert f"The first {html_report.MAX_ROWS} of {html_report.MAX_ROWS + 7:,} rows" in page
    assert f"alert({html_report.MAX_ROWS})" not in page
    visuals_section = page[page.index('<section id="visuals">'):]
    assert "&lt;i&gt;p1&lt;/i&gt;" in visuals_section and 'alt="p1.png"' in visuals_section


def test_a_leaderboard_page_is_its_csv(detection_run, tmp_path):
    assert main(["leaderboard", str(detection_run), "--html", str(tmp_path / "board.html"),
                 "--csv", str(tmp_path / "board.csv")]) == 0
    page = (tmp_path / "board.html").read_text()
    rows = [[html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<t[hd][^>]*>.*?</t[hd]>", row)]
            for row in re.findall(r"<tr>.*?</tr>", page)]
    assert ["|".join(row) for row in rows] == (tmp_path / "board.csv").read_text().splitlines()
