"""The video temporal scorer's output files, computed from ``ProbeRecord``s only (docs/video.md §A.7).

* ``scores_probes.csv``: ``query|ProbeFileID|MCC`` (plus ``Timeline`` with ``-T``), grouped by query,
  probes in MediScore's order, MCC rounded with ``round(x, 12)``.
* ``scores.csv``: ``query|MCC``, the mean of the *unrounded* per-probe MCCs, then rounded. A query
  that scores no probe gets an empty MCC (MediScore raises a KeyError when several queries are given).
* ``query_table_join.csv``: ``id|query``.

And the optional extras: the records dump (``-d``, CSV or JSON, never a pickle), a plain HTML table
of the per-probe scores (``-R``) and one timeline PNG per probe (``-T``).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from mfscore.formats.file_names import output_name
from mfscore.formats.tables import write_rows
from mfscore.video.temporal_confusion import (
    COLLAR,
    FN,
    FP,
    NO_SCORE,
    TN,
    TP,
    confusion_codes,
)
from mfscore.video.temporal_scorer import ProbeIntervals, ProbeRecord

if TYPE_CHECKING:
    from mfscore.reports.figure_data import DistributionFigure

DIGITS = 12  # docs/video.md §A.7: round(x, 12)
PROBE_COLUMNS = ["query", "ProbeFileID", "MCC"]
SCORE_COLUMNS = ["query", "MCC"]
QUERY_COLUMNS = ["id", "query"]
DUMP_COLUMNS = ["query", "ordinal", "ProbeFileID", "TP", "TN", "FP", "FN", "MCC"]


def _ordered(records: Iterable[ProbeRecord]) -> list[ProbeRecord]:
    return sorted(records, key=lambda r: (r.query, r.ordinal))


def _mean(values: list[float]) -> float:
    """A running sum then one division (MediScore's order of operations); NaN for no value."""
    total = 0.0
    for value in values:
        total += value
    return total / len(values) if values else math.nan


def probe_scores(records: Iterable[ProbeRecord],
                 timelines: dict[tuple[int, str], str] | None = None) -> tuple[list[str], list[dict]]:
    """``scores_probes.csv``'s columns and rows; ``timelines`` maps (query, probe) to the plot path."""
    rows = [{"query": r.query, "ProbeFileID": r.probe_id, "MCC": round(r.mcc, DIGITS)} for r in _ordered(records)]
    if timelines is None:
        return PROBE_COLUMNS, rows
    for row in rows:
        row["Timeline"] = timelines.get((row["query"], row["ProbeFileID"]), "")
    return PROBE_COLUMNS + ["Timeline"], rows


def _query_mccs(records: Iterable[ProbeRecord], queries: tuple[str, ...]) -> list[list[float]]:
    """Per query, the unrounded MCCs of its probes in MediScore's order."""
    by_query: list[list[float]] = [[] for _ in queries]
    for record in _ordered(records):
        by_query[record.query].append(record.mcc)
    return by_query


def query_means(records: Iterable[ProbeRecord], queries: tuple[str, ...]) -> list[float]:
    """Per query, the mean of the unrounded MCCs of its probes (unrounded); NaN for no probe."""
    return [_mean(values) for values in _query_mccs(records, queries)]


def query_scores(records: Iterable[ProbeRecord], queries: tuple[str, ...]) -> list[dict]:
    """``scores.csv``'s rows: per query, the mean of the unrounded MCCs, rounded; NaN (written empty) for no probe."""
    return [{"query": q, "MCC": round(mean, DIGITS)} for q, mean in enumerate(query_means(records, queries))]


def empty_queries(records: Iterable[ProbeRecord], queries: tuple[str, ...]) -> list[int]:
    """The queries with no scored probe (their MCC in ``scores.csv`` is empty)."""
    seen = {r.query for r in records}
    return [q for q in range(len(queries)) if q not in seen]


def write_scores(records: list[ProbeRecord], queries: tuple[str, ...], directory_path,
                 timelines: dict[tuple[int, str], str] | None = None) -> None:
    """Write the three MediScore files; ``directory_path(name)`` says where each goes (a staging path)."""
    write_rows(*probe_scores(records, timelines), directory_path("scores_probes.csv"))
    write_rows(SCORE_COLUMNS, query_scores(records, queries), directory_path("scores.csv"))
    write_rows(QUERY_COLUMNS, [{"id": q, "query": text} for q, text in enumerate(queries)],
               directory_path("query_table_join.csv"))


# --------------------------------------------------------------------------------------------------
# Extras


def write_records(records: list[ProbeRecord], path: Path) -> None:
    """The per-probe records (``-d``): JSON (a list of ``to_dict``) for a ``.json`` name, else ``|``-separated CSV.

    MediScore pickles a DataFrame here; a pickle runs code when loaded, so mfscore writes plain data.
    The MCC is unrounded (``repr``), so the file reproduces ``scores.csv`` exactly.
    """
    ordered = [r.to_dict() for r in _ordered(records)]
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(ordered, indent=1) + "\n")
    else:
        write_rows(DUMP_COLUMNS, ordered, path)


def write_html(table: tuple[list[str], list[dict]], path: Path,
               title: str = "Video temporal localization: per-probe scores") -> None:
    """A self-contained HTML page with the per-probe table (``-R``: ``probe_scores``); a Timeline cell links its
    plot."""
    columns, rows = table
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row[column]
            text = "" if isinstance(value, float) and math.isnan(value) else str(value)
            if column == "Timeline" and text:
                cells.append(f'<td><a href="{html.escape(quote(text), quote=True)}">{html.escape(text)}</a></td>')
            else:
                cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    path.write_text(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>\n<style>table{{border-collapse:collapse;font-family:sans-serif}}"
        "th,td{border:1px solid #bbb;padding:2px 8px}th{background:#eee}</style></head>\n<body>"
        f"<h1>{html.escape(title)}</h1>\n<table><tr>{head}</tr>\n" + "\n".join(body) + "\n</table></body></html>\n")


def timeline_name(probe_id: str, query: int) -> str:
    """``timeline_<ProbeFileID>_<query>.png``, the ID made a file name by ``output_name``."""
    return f"timeline_{output_name(probe_id)}_{query}.png"


MCC_FIGURE = "mcc_distribution.png"


def mcc_figure(records: list[ProbeRecord], queries: tuple[str, ...]) -> DistributionFigure:
    """``--plots``: each query's per-probe MCC (``scores_probes.csv``'s), as a histogram and a box."""
    import numpy as np  # a run without --plots imports neither: its tables are text

    from mfscore.reports.figure_data import DistributionFigure, Series

    series = tuple(Series("all probes" if text.strip() == "*" else text,
                          np.array([r.mcc for r in records if r.query == q], dtype=np.float64))
                   for q, text in enumerate(queries))
    return DistributionFigure("Temporal MCC per probe", series, "temporal MCC")


# Okabe-Ito (mfscore.reports.style): green right, vermillion false alarm, orange miss
_CODE_STYLE = {TP: ("TP", "#009E73"), TN: ("TN", "#d9d9d9"), FP: ("FP", "#D55E00"), FN: ("FN", "#E69F00"),
               COLLAR: ("collar", "#CC79A7"), NO_SCORE: ("opt-out", "#7f7f7f")}


def write_timeline(probe: ProbeIntervals, record: ProbeRecord, path: Path) -> None:
    """One probe's timeline (``-T``): reference, system, collars, opt-out and the confusion coding as bars."""
    from mfscore.reports import style
    from mfscore.reports.plots import plt

    with style.figure_style():
        fig = draw_timeline(probe, record)
        try:
            fig.savefig(path, format="png")
        finally:
            plt.close(fig)


def draw_timeline(probe: ProbeIntervals, record: ProbeRecord):
    """The timeline's figure; the caller closes it."""
    from matplotlib.patches import Patch

    from mfscore.reports import style
    from mfscore.reports.plots import plt

    segments, codes = confusion_codes((1, probe.frame_count), probe.reference, probe.system, collar=probe.collar,
                                      no_score=probe.no_score)
    lanes = [("Reference", probe.reference, style.colour(0)), ("System", probe.system, style.colour(5)),
             ("Collars", probe.collars, _CODE_STYLE[COLLAR][1]), ("Opt-out", probe.no_score, _CODE_STYLE[NO_SCORE][1])]
    fig, ax = plt.subplots(figsize=(10, 3.2), dpi=100)
    for y, (_, intervals, colour) in enumerate(reversed(lanes), start=1):
        ax.broken_barh([(a, b - a) for a, b in intervals], (y - 0.35, 0.7), facecolors=colour)
    ax.broken_barh([(a, b - a) for a, b in segments], (0 - 0.35, 0.7), facecolors=[_CODE_STYLE[c][1] for c in codes])
    ax.set_yticks(range(len(lanes) + 1), ["Scoring"] + [name for name, _, _ in reversed(lanes)])
    ax.set_xlim(1, max(probe.frame_count, 2))
    ax.set_xlabel("frame")
    ax.set_title(f"{probe.probe_id}, query {probe.query}: MCC {round(record.mcc, 6)} "
                 f"(TP {record.counts.tp}, TN {record.counts.tn}, FP {record.counts.fp}, FN {record.counts.fn})")
    ax.legend(handles=[Patch(color=colour, label=label) for label, colour in _CODE_STYLE.values()],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=6, frameon=False)
    fig.tight_layout()
    return fig
