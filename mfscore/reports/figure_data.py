"""What a detection figure shows, as plain data: built where the run scores, drawn by ``plots`` (maybe in
the figure worker, ``mfscore.run.figure_process``, so building it must not import matplotlib)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Curve:
    """One curve to draw, with the figures shown next to it."""

    label: str            # legend label, e.g. the query text, or "" for a single unlabelled curve
    fpr: np.ndarray
    tpr: np.ndarray
    auc: float | None
    eer: float | None
    n_target: int
    n_nontarget: int
    trr: float | None = None           # shown when opt-out scoring (prefix "tr")
    auc_ci: tuple[float, float] | None = None
    dprime: tuple[float, float, float] | None = None  # (d', fpr, tpr)


@dataclass(frozen=True)
class OperatingMark:
    """A marked ROC point (rates in [0, 1]) and its legend text."""

    far: float
    pd: float
    text: str


@dataclass(frozen=True)
class SemaforPanel:
    """One subset's ROC with its θ* vertex and its pD@FAR points (``far`` is also the guide's x)."""

    title: str
    fpr: np.ndarray
    tpr: np.ndarray
    eer: OperatingMark
    at_far: tuple[OperatingMark, ...]
    note: str = ""   # why there is no curve, if there is none
