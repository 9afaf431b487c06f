"""DetectionScorer-compatible report tables (docs/detection.md §8).

Values are rounded like ``DataFrame.round(6)`` (half-even on the scaled binary value) and written
as Python's ``repr``; NaN is an empty field; MediScore's integer ``0`` (an area over no segment,
an interval without ``--ci``) stays ``0``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mfscore.detection.metrics import DetectionMetrics
from mfscore.formats.tables import TextTable, write_text_table

METRIC_COLUMNS = [
    "TRR", "SYS_RESPONSE", "AUC", "EER", "FAR_STOP", "AUC@FAR", "CDR@FAR", "CI_LEVEL",
    "AUC_CI_LOWER", "AUC_CI_UPPER", "AUC_CI_LOWER@FAR", "AUC_CI_UPPER@FAR",
    "CDR_CI_LOWER@FAR", "CDR_CI_UPPER@FAR",
]
CI_COLUMNS = METRIC_COLUMNS[METRIC_COLUMNS.index("CI_LEVEL"):]  # the interval columns: MediScore's 0 without --ci


def format_value(value, digits: int = 6) -> str:
    """One report cell: str as is, int as is, float rounded and in repr form, NaN empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return ""
    scale = 10.0 ** digits
    return repr(float(np.rint(value * scale) / scale))


def metric_cells(metrics: DetectionMetrics, *, trr: float, opt_out: bool, far_stop: float, ci_level: float) -> dict:
    """The 14 metric columns of one report row, as values (formatting happens on write)."""
    iv = metrics.intervals
    ci = ([iv.auc.lower, iv.auc.upper, iv.partial_auc.lower, iv.partial_auc.upper, iv.cdr.lower, iv.cdr.upper]
          if iv is not None else [0] * 6)
    values = [trr, "tr" if opt_out else "all", metrics.auc, metrics.eer, far_stop, metrics.partial_auc,
              metrics.cdr, ci_level, *ci]
    return dict(zip(METRIC_COLUMNS, values))


def write_report(rows: list[dict], path: str | Path) -> None:
    """Write rows (dicts of column → value) with MediScore's formatting: the columns in the order the rows name them
    first, a cell a row lacks empty (as a ``DataFrame`` of the rows writes them)."""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    cells = [[format_value(row[name]) if name in row else "" for name in columns] for row in rows]
    write_text_table(TextTable(columns, cells), path)
