"""Tables and the heat map of the extra mask metrics (docs/metrics.md §1.7, §2).

Floats are left unrounded; the caller rounds before writing if it wants to.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.masks.extra_metrics import EXTRA_COLUMNS, IMAGE, SIZE_EDGES, extra_cells
from mfscore.masks.mask_record import MaskRecord
from mfscore.reports.mask_heatmap import HeatMap, plot_heat_map

_PREFIXES = {"probe": ("p", "ProbeScored"), "donor": ("d", "DonorScored")}


def extra_table(keys: pd.DataFrame, roles: dict[str, list[MaskRecord]], actual: float | None,
                pixels: str = IMAGE) -> pd.DataFrame:
    """One row per trial: the key columns, then ``extra_cells`` per role and the Scored flags.

    With only a "probe" role (manipulation) the cells are unprefixed and the flag is ``Scored``;
    with "probe" and "donor" (splice) they are prefixed ``p``/``d`` with ``ProbeScored``/``DonorScored``.
    """
    splice = "donor" in roles
    names = ["probe", "donor"] if splice else ["probe"]
    metrics, flags = {}, {}
    for role in names:
        prefix, flag = _PREFIXES[role] if splice else ("", "Scored")
        records = roles[role]
        if len(records) != len(keys):
            raise ValueError(f"{role}: {len(records)} records for {len(keys)} trials")
        cells = [extra_cells(r, actual, pixels) for r in records]
        for column in EXTRA_COLUMNS:
            metrics[f"{prefix}{column}"] = [c[column] for c in cells]
        flags[flag] = ["Y" if r.scored else "N" for r in records]
    body = pd.DataFrame({**metrics, **flags}, index=keys.index)
    return pd.concat([keys, body], axis=1)


def heat_map(histogram: pd.DataFrame) -> HeatMap:
    """The cells of an ``mcc_size_histogram`` table as arrays: what ``mask_heatmap`` draws."""
    size_lows = np.unique(histogram["SizeBinLow"].to_numpy(dtype=float))
    mcc_edges = np.unique(np.concatenate([histogram["MCCBinLow"], histogram["MCCBinHigh"]]))
    shares, counts = (histogram.pivot_table(index="MCCBinLow", columns="SizeBinLow", values=value, aggfunc="sum")
                      .reindex(index=mcc_edges[:-1], columns=size_lows, fill_value=0).to_numpy(dtype=float)
                      for value in ("Share", "Count"))
    return HeatMap(size_lows, float(SIZE_EDGES[1] - SIZE_EDGES[0]), mcc_edges, shares, counts)


def mcc_histogram_plot(histogram: pd.DataFrame, path: str | Path, title: str) -> Path:
    """Heat map of an ``mcc_size_histogram`` table, written as one PNG at ``path`` (``mask_heatmap``)."""
    return plot_heat_map(heat_map(histogram), path, title)
