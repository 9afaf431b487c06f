"""What a figure shows, as plain data: built where the run scores, drawn by ``plots`` (maybe in the figure worker,
``mfscore.run.figure_process``, so building it must not import matplotlib). Tests read a figure's contents here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the arrays are the builders'; a module that only names them (provenance filtering) needs no numpy
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
    band: Band | None = None           # the bootstrap band (--ci)

    @property
    def eer_point(self) -> tuple[float, float] | None:
        """Where the EER is marked, as (false-alarm rate, detection rate): on the line FAR = miss rate."""
        if self.eer is None or self.eer != self.eer:
            return None
        return self.eer, 1.0 - self.eer


@dataclass(frozen=True)
class Band:
    """A pointwise band of detection rates over false-alarm rates ``far`` (``mfscore.detection.roc_band``)."""

    far: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float


@dataclass(frozen=True)
class CurveFigure:
    """A ROC or DET figure: its curves, its titles and the false-alarm rate it marks (``--farStop``)."""

    curves: list[Curve]
    kind: str = "roc"
    title: str = "Performance"
    subtitle: str = ""
    far_stop: float | None = None
    no_num: bool = False
    opt_out: bool = False


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


@dataclass(frozen=True)
class Series:
    """One labelled line or group of values: ``x`` and ``y`` for a curve, ``y`` alone for bars or a distribution."""

    label: str
    y: np.ndarray
    x: np.ndarray | None = None


@dataclass(frozen=True)
class RocFigure:
    """Averaged ROC curves (a mask run's pixel- and mask-average ROCs), their AUCs in their labels."""

    title: str
    curves: tuple[Series, ...]


@dataclass(frozen=True)
class BarFigure:
    """Grouped bars: one group per category along x, one bar per series in each group."""

    title: str
    categories: tuple[str, ...]
    series: tuple[Series, ...]
    xlabel: str
    ylabel: str
    limits: tuple[float, float] = (0.0, 1.0)


@dataclass(frozen=True)
class DistributionFigure:
    """Per-item values (e.g. each probe's MCC), one series per query: a histogram and a box per series."""

    title: str
    series: tuple[Series, ...]
    xlabel: str
    limits: tuple[float, float] = (-1.0, 1.0)
    bins: int = 20
    ylabel: str = "Probes"
