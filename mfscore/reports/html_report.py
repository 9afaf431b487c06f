"""One self-contained HTML page of a run's output directory (docs/results.md "HTML report").

``run_report(results_file)`` reads the run's results and provenance and every file of the run beside them: the
pipe-separated report tables, the PNG plots and the per-probe mask visuals (``<prefix>_visuals/``, shown
generically: its index tables and images). The page holds its images as ``data:`` URIs and its CSS and JavaScript
inline, and its Content-Security-Policy forbids any other source, so it opens anywhere without a network.
Every file's contents are untrusted: every text is escaped. A table longer than ``MAX_ROWS`` shows its first rows
and says so, a directory's images past ``MAX_IMAGES`` are named and not embedded; the same inputs give the same
bytes (files in path order, no time of building).

The building blocks (``page``, ``section``, ``table``, ``figure``, ``leaderboard_table``) make ``mfscore
compare``'s page too.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from mfscore.reports.summary_table import ARROW, MAX_METRICS
from mfscore.results import ALL, HIGHER, LOWER, Results

MAX_ROWS = 500            # rows of one table shown in full
MAX_IMAGES = 200          # images of one directory embedded
MAX_IMAGE_BYTES = 8 << 20  # a larger PNG is named, not embedded
MAX_JSON_CHARS = 20_000   # of a JSON file that is not a table
REPORT_FILE = "mfscore_report.html"  # <prefix>_mfscore_report.html (provenance-graph's -H writes report.html)
BETTER = {HIGHER: "higher is better", LOWER: "lower is better"}

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}h3{font-size:1em}
table{border-collapse:collapse;margin:.5em 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}table.sortable th{cursor:pointer}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
.scroll{overflow-x:auto}.note{color:#555;font-style:italic}
figure{display:inline-block;margin:.5em;vertical-align:top}figure img{max-width:560px;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}pre{background:#f7f7f7;padding:.5em;overflow-x:auto}
"""

# Click a header to sort its table by that column (numbers as numbers, the rest as text); again to reverse.
SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function(t){
 t.querySelectorAll("thead th").forEach(function(th,i){th.addEventListener("click",function(){
  var up=th.getAttribute("aria-sort")!=="ascending",b=t.tBodies[0],rows=Array.from(b.rows);
  var key=function(r){var c=r.cells[i];return c?c.textContent.trim():""};
  var num=rows.every(function(r){var k=key(r);return k===""||!isNaN(Number(k))});
  var value=function(k){return k===""?Infinity:Number(k)};
  rows.sort(function(x,y){var p=key(x),q=key(y),d=num?value(p)-value(q):p.localeCompare(q);return (up?d:-d)||0});
  t.querySelectorAll("thead th").forEach(function(h){h.removeAttribute("aria-sort")});
  th.setAttribute("aria-sort",up?"ascending":"descending");rows.forEach(function(r){b.appendChild(r)});
 })})});
"""

POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def escape(text) -> str:
    return html.escape(str(text), quote=True)


# ------------------------------------------------------------------------------------------ building blocks

def page(title: str, sections: Iterable[str]) -> bytes:
    """A whole HTML document: ``title`` (escaped here) and ``sections`` (HTML already escaped)."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>\n"
            + "\n".join(sections) + f"\n<script>{SCRIPT}</script></body></html>\n").encode("utf-8")


def section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{escape(anchor)}"><h2>{escape(title)}</h2>\n{body}</section>'


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, caption: str = "", sortable: bool = True,
          cell_attributes: Sequence[Sequence[dict[str, str]]] | None = None, max_rows: int = MAX_ROWS,
          attributes: dict[str, str] | None = None) -> str:
    """A table of text cells (escaped here), sortable by a click on a header; the first ``max_rows`` rows of a
    longer one, with a note. ``cell_attributes[i][j]`` are extra attributes of cell j of row i."""
    shown = rows[:max_rows]
    extra = "".join(f' {escape(k)}="{escape(v)}"' for k, v in (attributes or {}).items())
    out = [f'<div class="scroll"><table{" class=sortable" if sortable else ""}{extra}>']
    if caption:
        out.append(f"<caption>{escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr></thead><tbody>")
    for i, row in enumerate(shown):
        cells = []
        for j, cell in enumerate(row):
            attrs = cell_attributes[i][j] if cell_attributes is not None and j < len(cell_attributes[i]) else {}
            cells.append("<td" + "".join(f' {escape(k)}="{escape(v)}"' for k, v in attrs.items())
                         + f">{escape(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    if len(rows) > len(shown):
        out.append(f'<p class="note">The first {len(shown):,} of {len(rows):,} rows; the file holds them all.</p>')
    return "\n".join(out)


def png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure(data: bytes, caption: str) -> str:
    """A PNG image embedded as a ``data:`` URI, with its caption."""
    return (f'<figure><img src="{png_uri(data)}" alt="{escape(caption)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def pipe_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """A report table (``|``-separated, header first) as text cells."""
    text = path.read_text(encoding="utf-8", errors="replace")
    rows = list(csv.reader(io.StringIO(text), delimiter="|"))
    return (rows[0], rows[1:]) if rows else ([], [])


def leaderboard_table(board) -> str:
    """A leaderboard (``mfscore.leaderboard.Leaderboard``) as the table ``mfscore.leaderboard.to_csv`` writes: the
    one rendering of a board, on the terminal's CSV and on a page alike."""
    from mfscore.leaderboard import to_csv

    rows = list(csv.reader(io.StringIO(to_csv(board)), delimiter="|"))
    arrow = ARROW.get(board.better, "")
    return table(rows[0], rows[1:], caption=f"{board.metric} {arrow} ({board.better} is better); Query empty: the "
                 "whole run; OverlapsNext Y: not separable from the next line",
                 attributes={"data-table": "leaderboard"})


def leaderboard_page(board) -> bytes:
    """A leaderboard on a page of its own (``mfscore leaderboard --html``, local or a cluster's)."""
    return page(f"{board.task} leaderboard, dataset {board.dataset}: {board.metric}",
                [section("Leaderboard", leaderboard_table(board), "leaderboard")])


# ------------------------------------------------------------------------------------------ a run's page

def headline_table(results: Results) -> str:
    """The terminal summary's table (``summary_table.summary_lines``: the same metrics, the same 4-decimal
    numbers), each cell carrying its exact value in ``data-value`` ('' where undefined)."""
    shown = [results.primary] + [m.name for m in results.metrics if m.name != results.primary][:MAX_METRICS - 1]
    counts = list(dict.fromkeys(name for row in results.rows for name in row.counts))
    header = ["query", *counts, *(name + ARROW.get(results.spec(name).better, "") for name in shown)]
    rows, attributes = [], []
    for row in results.rows:
        cells = ["all" if row.query == ALL else row.query, *(str(row.counts.get(name, "")) for name in counts)]
        attrs = [{"data-query": row.query}, *({} for _ in counts)]
        for name in shown:
            value = row.values.get(name)
            cell = _number(value)
            if name in row.intervals:
                low, high = row.intervals[name]
                cell += f" [{_number(low)}, {_number(high)}]"
            cells.append(cell)
            attrs.append({"data-metric": name, "data-query": row.query,
                          "data-value": "" if value is None else repr(float(value))})
        rows.append(cells)
        attributes.append(attrs)
    primary = results.spec(results.primary)
    return table(header, rows, cell_attributes=attributes, max_rows=len(rows) or 1,
                 caption=f"{results.task}: primary metric {primary.name} ({primary.better} is better)",
                 attributes={"data-table": "headline"})


def _number(value) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"


def provenance_section(run: dict | None) -> str:
    if run is None:
        return '<p class="note">No provenance file (*run.json) beside the results.</p>'
    plain = [[key, str(run.get(key, ""))] for key in ("mfscore", "task", "runner", "started", "finished", "cpus")]
    tables = [[key, digest] for key, digest in sorted(run.get("tables", {}).items())]
    files = [[root, str(v.get("count", "")), str(v.get("sha256", ""))]
             for root, v in sorted(run.get("files", {}).items())]
    options = json.dumps(run.get("options", {}), indent=1, sort_keys=True, ensure_ascii=False)
    return "\n".join([
        table(["field", "value"], plain, sortable=False, attributes={"data-table": "provenance"}),
        "<h3>Tables read (SHA-256)</h3>", table(["table", "sha256"], tables),
        *(["<h3>Files the jobs read</h3>", table(["root", "files", "manifest sha256"], files)] if files else []),
        f"<details><summary>Options</summary><pre>{escape(options)}</pre></details>"])


def glossary(results: Results, columns: dict[str, list[str]]) -> str:
    """Every metric with its direction and description (the results' ``MetricSpec``s), then the other columns of
    the report tables with the files that hold them."""
    rows = [[m.name, BETTER.get(m.better, "neither (a count or a rate)"), m.description] for m in results.metrics]
    known = {m.name for m in results.metrics}
    others = [[name, "", "a column of " + ", ".join(files)] for name, files in sorted(columns.items())
              if name not in known]
    return table(["column", "better", "what it is"], rows + others, max_rows=len(rows) + len(others) + 1,
                 attributes={"data-table": "glossary"})


def run_files(directory: Path, prefix: str) -> list[Path]:
    """The run's files under ``directory`` in path order: with a prefix, those a path component of which starts
    with ``<prefix>_`` (another run may share the directory)."""
    found = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        parts = path.relative_to(directory).parts
        if not prefix or any(part.startswith(prefix + "_") for part in parts):
            found.append(path)
    return found


def _visuals(path: Path, directory: Path, prefix: str) -> bool:
    return any(part == f"{prefix}_visuals" or (not prefix and part == "visuals")
               for part in path.relative_to(directory).parts[:-1])


def _images(paths: list[Path], directory: Path) -> str:
    """Each directory's PNGs as captioned figures, the first ``MAX_IMAGES`` of a directory embedded."""
    out = []
    groups: dict[str, list[Path]] = {}
    for path in paths:
        groups.setdefault(str(path.parent.relative_to(directory)), []).append(path)
    for group, members in groups.items():
        out.append(f"<h3>{escape('(the output directory)' if group == '.' else group + '/')}</h3>")
        figures, skipped = [], []
        for path in members:
            data = path.read_bytes()
            if len(figures) >= MAX_IMAGES or len(data) > MAX_IMAGE_BYTES or not data.startswith(b"\x89PNG"):
                skipped.append(path.name)
            else:
                figures.append(figure(data, path.name))
        out.append("<div>" + "".join(figures) + "</div>")
        if skipped:
            out.append(f'<p class="note">Not embedded ({len(skipped):,}: past {MAX_IMAGES} images, over '
                       f"{MAX_IMAGE_BYTES >> 20} MiB or not a PNG): {escape(', '.join(skipped[:50]))}"
                       f"{' …' if len(skipped) > 50 else ''}</p>")
    return "\n".join(out)


def _tables(paths: list[Path], directory: Path, columns: dict[str, list[str]]) -> str:
    out = []
    for path in paths:
        name = str(path.relative_to(directory))
        if path.suffix == ".json":
            out.append(f"<h3>{escape(name)}</h3>\n{_json_block(path)}")
            continue
        header, rows = pipe_table(path)
        for column in header:
            columns.setdefault(column, []).append(path.name)
        out.append(f"<h3>{escape(name)}</h3>\n" + table(header, rows, attributes={"data-file": name}))
    return "\n".join(out)


def _json_block(path: Path) -> str:
    """A JSON file: a list of flat objects as a table; an object's such lists each as a table and its other
    fields as indented text; anything else as indented text (its first characters)."""
    try:
        data = json.loads(path.read_bytes())
    except ValueError:
        return '<p class="note">Not valid JSON.</p>'
    if _records(data):
        return _records_table(data)
    if isinstance(data, dict):
        lists = {key: value for key, value in data.items() if _records(value)}
        rest = {key: value for key, value in data.items() if key not in lists}
        return "\n".join([*([_text(rest)] if rest else []),
                          *(f"<h4>{escape(key)}</h4>\n{_records_table(value)}" for key, value in lists.items())])
    return _text(data)


def _records(data) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(item, dict) for item in data)


def _records_table(data: list[dict]) -> str:
    header = list(dict.fromkeys(key for item in data for key in item))
    return table(header, [[_cell(item.get(key)) for key in header] for item in data])


def _text(data) -> str:
    text = json.dumps(data, indent=1, ensure_ascii=False)
    cut = len(text) > MAX_JSON_CHARS
    return f"<pre>{escape(text[:MAX_JSON_CHARS])}{' …' if cut else ''}</pre>"


def _cell(value) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def run_report(results_file: str | Path) -> bytes:
    """The HTML page of the run whose results are ``results_file`` (``<prefix>_results.json``)."""
    from mfscore.errors import InputFileError

    results_file = Path(results_file)
    try:
        results = Results.from_json(results_file.read_bytes())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputFileError(f"not an mfscore results file ({exc})", path=str(results_file)) from None
    directory = results_file.parent
    prefix = results_file.name[:-len("results.json")].removesuffix("_")
    run_path = results_file.with_name(results_file.name[:-len("results.json")] + "run.json")
    run = json.loads(run_path.read_bytes()) if run_path.is_file() else None
    own = {results_file, run_path}
    files = [p for p in run_files(directory, prefix) if p not in own]
    visuals = [p for p in files if _visuals(p, directory, prefix)]
    reports = [p for p in files if p not in visuals]
    columns: dict[str, list[str]] = {}
    tables = _tables([p for p in reports if p.suffix == ".csv"], directory, columns)
    sections = [  # what a reader looks for first comes first; where the numbers came from last
        section("Headline results", headline_table(results), "headline"),
        section("Plots", _images([p for p in reports if p.suffix == ".png"], directory)
                or '<p class="note">No plots.</p>', "plots"),
    ]
    if visuals:
        sections.append(section("Per-probe mask visuals",
                                _tables([p for p in visuals if p.suffix in (".csv", ".json")], directory, columns)
                                + "\n" + _images([p for p in visuals if p.suffix == ".png"], directory), "visuals"))
    sections += [section("Report tables", tables or '<p class="note">No report tables.</p>', "tables"),
                 section("Glossary", glossary(results, columns), "glossary"),
                 section("Run", provenance_section(run), "run")]
    title = f"mfscore {results.task} report: {prefix or directory.resolve().name}"
    return page(title, sections)


def report_path(results_file: str | Path) -> Path:
    """Where a run's page goes: ``<prefix>_mfscore_report.html`` beside its results (``mfscore_report.html``
    without a prefix)."""
    results_file = Path(results_file)
    return results_file.with_name(results_file.name[:-len("results.json")] + REPORT_FILE)


def write_run_report(results_file: str | Path, out: str | Path | None = None) -> Path:
    """Write the run's page to ``out`` (default: ``report_path``) and return where."""
    target = Path(out) if out is not None else report_path(results_file)
    target.write_bytes(run_report(results_file))
    return target
