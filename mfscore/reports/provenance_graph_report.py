"""ProvenanceGraphBuildingScorer's report files (docs/provenance.md §3.6), computed from ``GraphRecord``s only.

Trial values are ``round(x, 12)`` and means are of the unrounded values, NaN skipped, then rounded;
NaN is an empty field. A confidence column prints ``1`` when every value in the *file* is an
integer and ``1.0`` as soon as one is a float or empty (pandas' column dtype in MediScore).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from urllib.parse import quote

from mfscore.formats.file_names import output_name
from mfscore.formats.tables import SEPARATOR, TextTable, write_lines, write_text_table
from mfscore.provenance.graph_similarity import (
    CORRECT,
    FALSE_ALARM,
    MISSING,
    GraphRecord,
)

TRIAL_LABELS = ["JournalName", "ProvenanceProbeFileID", "Direct", "ProvenanceOutputFileName"]
TRIAL_COLUMNS = TRIAL_LABELS + [
    "NumSysNodes", "NumSysLinks", "NumRefNodes", "NumRefLinks", "NumCorrectNodes", "NumMissingNodes",
    "NumFalseAlarmNodes", "NumCorrectLinks", "NumMissingLinks", "NumFalseAlarmLinks",
    "SimNLO", "SimNO", "SimLO", "NodeRecall"]
METRICS = ["SimNLO", "SimNO", "SimLO", "NodeRecall"]
SCORE_COLUMNS = ["Direct"] + [f"Mean{m}" for m in METRICS]
NODE_COLUMNS = TRIAL_LABELS + ["WorldFileID", "NodeConfidence", "Mapping"]
LINK_COLUMNS = TRIAL_LABELS + ["SourceWorldFileID", "TargetWorldFileID", "LinkConfidence", "Mapping"]

# (file name, what MediScore's -v line calls it), in the order MediScore writes them
TABLES = (("trial_scores.csv", "Trial Scores"), ("scores.csv", "Aggregate Scores"),
          ("node_mapping.csv", "Node Mapping"), ("link_mapping.csv", "Link Mapping"))

COLOURS = {CORRECT: "#009E73", FALSE_ALARM: "#D55E00", MISSING: "#999999"}  # Okabe-Ito, as mfscore.reports.style


def _value(x: float) -> str:
    x = round(float(x), 12)
    return "" if math.isnan(x) else repr(x)


def _metric_values(record: GraphRecord) -> list[float]:
    return [record.sim_nlo, record.sim_no, record.sim_lo, record.node_recall]


def _labels(record: GraphRecord) -> list[str]:
    return [record.journal_name, record.probe, str(record.direct), record.output_file]


def trial_scores(records: list[GraphRecord]) -> TextTable:
    rows = []
    for r in records:
        counts = [r.sys_nodes, r.sys_links, r.ref_nodes, r.ref_links,
                  r.correct_nodes, r.ref_nodes - r.correct_nodes, r.sys_nodes - r.correct_nodes,
                  r.correct_links, r.ref_links - r.correct_links, r.sys_links - r.correct_links]
        rows.append(_labels(r) + [str(c) for c in counts] + [_value(v) for v in _metric_values(r)])
    return TextTable(TRIAL_COLUMNS, rows)


def mean_scores(records: list[GraphRecord]) -> dict[str, float]:
    """``scores.csv``'s means as numbers (``Mean<metric>``): the unrounded trial values' means, NaN skipped."""
    values = [_metric_values(r) for r in records]
    return {f"Mean{m}": _nanmean([row[i] for row in values]) for i, m in enumerate(METRICS)}


def _nanmean(values: list[float]) -> float:
    """``Series.mean()`` as pandas computes it: NaN read as 0 in a numpy sum, divided by the count of the others."""
    count = sum(not math.isnan(v) for v in values)
    return numpy_sum([0.0 if math.isnan(v) else v for v in values]) / count if count else math.nan


def numpy_sum(values: list[float]) -> float:
    """numpy's sum of float64 ``values``, to the last bit, without importing numpy for four means (a tenth of a
    run's CPU): its identity 0.0 plus the values' pairwise sum (``_pairwise_sum``)."""
    return 0.0 + _pairwise_sum(values)


def _pairwise_sum(values: list[float]) -> float:
    """numpy's summation order: halves cut at a multiple of 8 down to blocks of at most 128, a block summed in eight
    running sums (its last ``len % 8`` values added in turn), fewer than 8 values summed in turn."""
    n = len(values)
    if n < 8:
        total = 0.0
        for value in values:
            total += value
        return total
    if n > 128:
        half = n // 2 - n // 2 % 8
        return _pairwise_sum(values[:half]) + _pairwise_sum(values[half:])
    sums = values[:8]
    whole = n - n % 8
    for start in range(8, whole, 8):
        sums = [total + value for total, value in zip(sums, values[start:start + 8])]
    total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
    for value in values[whole:]:
        total += value
    return total


def aggregate_scores(records: list[GraphRecord], direct: bool) -> TextTable:
    return TextTable(SCORE_COLUMNS, [[str(direct)] + [_value(mean) for mean in mean_scores(records).values()]])


def _as_float(values: Iterable) -> bool:
    """Whether a confidence column prints as floats: it has an empty cell or a float (pandas' column dtype)."""
    return any(v is None or isinstance(v, float) for v in values)


def _confidence_cells(values: list) -> list[str]:
    as_float = _as_float(values)
    return ["" if v is None else repr(float(v)) if as_float else str(v) for v in values]


def node_mapping(records: list[GraphRecord]) -> TextTable:
    cells = iter(_confidence_cells([row[1] for r in records for row in r.node_rows]))
    return TextTable(NODE_COLUMNS, [(*_labels(r), world_id, next(cells), mapping)
                                    for r in records for world_id, _, mapping in r.node_rows])


def link_mapping(records: list[GraphRecord]) -> TextTable:
    cells = iter(_confidence_cells([row[2] for r in records for row in r.link_rows]))
    return TextTable(LINK_COLUMNS, [(*_labels(r), source, target, next(cells), mapping)
                                    for r in records for source, target, _, mapping in r.link_rows])


def report_tables(records: list[GraphRecord], direct: bool) -> dict[str, TextTable]:
    """The four report tables by file name, from records in trial order, every cell text."""
    return {"trial_scores.csv": trial_scores(records), "scores.csv": aggregate_scores(records, direct),
            "node_mapping.csv": node_mapping(records), "link_mapping.csv": link_mapping(records)}


def node_lines(records: list[GraphRecord]) -> list[str]:
    """``node_mapping``'s rows, each joined by the separator (``|``): a trial's labels are joined once for its rows,
    and no row is a tuple of cells (writing the table from its cells takes twice as long)."""
    as_float = _as_float(row[1] for r in records for row in r.node_rows)
    lines = []
    for r in records:
        head = SEPARATOR.join(_labels(r))
        if as_float:
            lines += [f"{head}|{w}|{'' if c is None else repr(float(c))}|{m}" for w, c, m in r.node_rows]
        else:
            lines += [f"{head}|{w}|{c}|{m}" for w, c, m in r.node_rows]
    return lines


def link_lines(records: list[GraphRecord]) -> list[str]:
    """``link_mapping``'s rows, each joined by the separator, as ``node_lines``."""
    as_float = _as_float(row[2] for r in records for row in r.link_rows)
    lines = []
    for r in records:
        head = SEPARATOR.join(_labels(r))
        if as_float:
            lines += [f"{head}|{a}|{b}|{'' if c is None else repr(float(c))}|{m}" for a, b, c, m in r.link_rows]
        else:
            lines += [f"{head}|{a}|{b}|{c}|{m}" for a, b, c, m in r.link_rows]
    return lines


MAPPINGS = {"node_mapping.csv": (NODE_COLUMNS, node_lines, node_mapping),
            "link_mapping.csv": (LINK_COLUMNS, link_lines, link_mapping)}


def write_report_tables(records: list[GraphRecord], direct: bool,
                        path_for: Callable[[str], Path]) -> dict[str, TextTable]:
    """Write the four tables (``TABLES``) where ``path_for(file name)`` says, byte for byte as ``report_tables`` and
    ``write_text_table`` write them; returns the two small ones (``report.html`` shows them). A mapping table is
    written from its lines, unless a cell needs quoting (a file name holding ``|``): then from its cells."""
    small = {"trial_scores.csv": trial_scores(records), "scores.csv": aggregate_scores(records, direct)}
    for name, _ in TABLES:
        if name in small:
            write_text_table(small[name], path_for(name))
            continue
        columns, lines, cells = MAPPINGS[name]
        write_lines(columns, lines(records), partial(cells, records), path_for(name))
    return small


def figure_name(probe: str) -> str:
    """``<probe>.png``, the ID made a file name by ``output_name`` (it cannot leave the figures directory)."""
    return output_name(probe) + ".png"


def write_figure(record: GraphRecord, path: Path) -> None:
    """The mapped graph: green correct, red false alarm, gray missing (nodes and links)."""
    import networkx as nx

    from mfscore.reports import style
    from mfscore.reports.plots import plt, save_figure

    graph = nx.DiGraph()
    for world_id, _, mapping in record.node_rows:
        graph.add_node(world_id, colour=COLOURS[mapping])
    for source, target, _, mapping in record.link_rows:
        graph.add_edge(source, target, colour=COLOURS[mapping])
    if nx.is_directed_acyclic_graph(graph) and graph.number_of_nodes():
        layers = {layer: sorted(nodes, key=str) for layer, nodes in enumerate(nx.topological_generations(graph))}
        position = nx.multipartite_layout(graph, subset_key=layers, align="horizontal", scale=-1)  # ordered: no hash seed
    else:
        position = nx.spring_layout(graph, seed=0)
    size = max(4.0, min(20.0, 1.2 * graph.number_of_nodes() ** 0.5 + 3))
    with style.figure_style():
        fig, ax = plt.subplots(figsize=(size, size), dpi=100)
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.96)  # no constrained layout: one draw, not two
        try:
            nx.draw_networkx(graph, position, ax=ax, node_size=300, font_size=7, arrows=True,
                             node_color=[graph.nodes[n].get("colour", COLOURS[MISSING]) for n in graph.nodes],
                             edge_color=[graph.edges[e]["colour"] for e in graph.edges],
                             labels={n: n[:8] for n in graph.nodes})
            ax.set_title(f"{record.probe} ({record.output_file})", fontsize=style.SMALL_SIZE)
            ax.set_axis_off()
            save_figure(fig, [path])
        finally:
            plt.close(fig)


def html_report(tables: dict[str, TextTable], figures: Iterable[str]) -> str:
    """``report.html``: the "Scores Mean" and "Trial Scores" tables, then the figures."""
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>Provenance graph building</title></head>",
             "<body>", "<h2>Scores Mean</h2>", tables["scores.csv"].frame().to_html(index=False),
             "<h2>Trial Scores</h2>", tables["trial_scores.csv"].frame().to_html(index=False)]
    parts += [f"<h3>{html.escape(name)}</h3><img src='figures/{quote(name)}' alt='{html.escape(name)}'>"
              for name in figures]
    return "\n".join(parts + ["</body></html>", ""])
