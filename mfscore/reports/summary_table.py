"""The terminal summary of a run: its headline metrics, a row per query, as plain text (docs/results.md)."""

from __future__ import annotations

import sys

from mfscore.results import ALL, HIGHER, LOWER, Results

MAX_QUERY = 40     # characters of a query shown before it is cut
MAX_METRICS = 6    # headline metrics shown; the results file has them all
ARROW = {HIGHER: "↑", LOWER: "↓"}


def summary_lines(results: Results) -> list[str]:
    """A title line (the task and its primary metric) and an aligned table: query, counts, metrics (with their
    intervals where the run has them); ↑ marks a higher-is-better metric, ↓ a lower-is-better one."""
    primary = results.spec(results.primary)
    title = f"{results.task}: primary metric {primary.name} ({primary.better} is better)"
    if not results.rows:
        return [title, "  no query selected anything to score"]
    shown = [results.primary] + [m.name for m in results.metrics if m.name != results.primary][:MAX_METRICS - 1]
    counts = list(dict.fromkeys(name for row in results.rows for name in row.counts))
    header = ["query", *counts, *(name + ARROW.get(results.spec(name).better, "") for name in shown)]
    body = []
    for row in results.rows:
        cells = [_query(row.query), *(str(row.counts.get(name, "")) for name in counts)]
        for name in shown:
            cell = _number(row.values.get(name))
            if name in row.intervals:
                low, high = row.intervals[name]
                cell += f" [{_number(low)}, {_number(high)}]"
            cells.append(cell)
        body.append(cells)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    return [title] + ["  " + "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                                       for i, (cell, width) in enumerate(zip(line, widths))).rstrip()
                      for line in [header, *body]]


def show_results(results, run: dict | None, *, json_output: bool, quiet: bool) -> None:
    """The results on stdout: as JSON (with the run's provenance ``run``), or as the summary table unless quiet."""
    if results is None:
        return
    if json_output:
        sys.stdout.buffer.write(results.to_json(run))
        sys.stdout.flush()
    elif not quiet:
        print("\n".join(summary_lines(results)))


def _query(text: str) -> str:
    if text == ALL:
        return "all"
    return text if len(text) <= MAX_QUERY else text[:MAX_QUERY - 1] + "…"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
