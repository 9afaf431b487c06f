"""The detection scorer: a scored table and options in, one result per subset out (no file I/O).

A subset's result is made of parts that can be computed apart and put together (``subset_result``): its
point metrics (``point_metrics``: its rows of the reports but the intervals) and its bootstrap replicates,
whole or in slices (``mfscore.detection.bootstrap.replicate_slice``). ``score_subset`` computes them in
one go; the detection task computes them as jobs (``mfscore.tasks.detection``), with the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mfscore.detection import semafor
from mfscore.detection import subsets as subsets_mod
from mfscore.detection.bootstrap import (
    N_RESAMPLES,
    Interval,
    Replicates,
    SemaforDraws,
    intervals,
    replicate_slice,
    roc_band,
    semafor_names,
)
from mfscore.detection.metrics import DetectionMetrics
from mfscore.detection.options import LLR_BASES, DetectionOptions
from mfscore.detection.roc import SortedTrials, auc, cdr_at_far, eer, partial_auc, roc_from_counts
from mfscore.detection.roc_band import RocBand
from mfscore.detection.trials import ScoredTable, scores_and_labels, trial_response_rate

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class SubsetResult:
    subset: subsets_mod.Subset
    metrics: DetectionMetrics
    trr: float
    semafor: dict = field(default_factory=dict)        # SemaFor column -> value, in report order
    semafor_ci: dict = field(default_factory=dict)     # SemaFor column -> bootstrap Interval (--ci)
    band: RocBand | None = None                         # the ROC's bootstrap band (--ci, when figures are drawn)


def build_subsets(table: ScoredTable, journal: pd.DataFrame | None, options: DetectionOptions) -> list[subsets_mod.Subset]:
    if options.query_mode is None:
        return subsets_mod.whole_set(table.rows)
    frame = subsets_mod.query_frame(table.trials, journal)
    keys = table.sys_ref_keys
    if options.query_mode == "qp":
        return subsets_mod.partition_subsets(frame, options.queries[0], keys)
    return subsets_mod.query_subsets(frame, list(options.queries), keys, targets_only=options.query_mode == "qm",
                                     mediscore_compat=options.mediscore_compat)


@dataclass(frozen=True)
class PointMetrics:
    """A subset's metrics but its intervals (docs/detection.md §6.2-§6.5, and the SemaFor columns with ``--semafor``
    in report order): its cells of the reports, as plain Python values."""

    n_target: int
    n_nontarget: int
    auc: float | int
    eer: float
    partial_auc: float | int    # AUC@FAR
    cdr: float                  # CDR@FAR
    semafor: tuple[tuple[str, Any], ...] = ()


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def semafor_draws(options: DetectionOptions, competition_threshold: float | None) -> SemaforDraws | None:
    """The SemaFor metrics the replicates compute (``--semafor``), at a ``-qp`` bucket's θ* when given."""
    return SemaforDraws(options.semafor_fars, threshold=competition_threshold) if options.semafor else None


def point_metrics(trials: SortedTrials, options: DetectionOptions, competition_threshold: float | None) -> PointMetrics:
    """AUC, EER, AUC@FAR, CDR@FAR and the SemaFor columns of one subset's trials (sorted once, ``SortedTrials``)."""
    n_target = int(trials.labels.sum())
    n_nontarget = int(trials.labels.size - n_target)
    semafor = ()
    if options.semafor:
        scores, labels = in_subset_order(trials)
        semafor = tuple((name, _plain(value))
                        for name, value in semafor_columns(scores, labels, options, competition_threshold).items())
    if trials.labels.size == 0:
        nan = float("nan")
        return PointMetrics(0, 0, nan, nan, nan, nan, semafor)
    roc = roc_from_counts(*trials.counts())
    return PointMetrics(n_target, n_nontarget, auc(roc), eer(roc), partial_auc(roc, options.far_stop),
                        cdr_at_far(roc, options.far_stop), semafor)


def in_subset_order(trials: SortedTrials) -> tuple[np.ndarray, np.ndarray]:
    """The (scores, labels) ``SortedTrials.from_arrays`` was given, in their order, bit for bit."""
    scores, labels = np.empty_like(trials.scores), np.empty_like(trials.labels)
    scores[trials.order], labels[trials.order] = trials.scores, trials.labels
    return scores, labels


def subset_result(subset: subsets_mod.Subset, total_num: int, trials: SortedTrials, point: PointMetrics,
                  replicates: Replicates | None, options: DetectionOptions) -> SubsetResult:
    """One subset's result from its parts: its point metrics and, with ``--ci``, all its replicates (``joined``;
    None for an empty subset, which has none)."""
    roc = roc_from_counts(*trials.counts()) if trials.labels.size else None
    bootstrap = (intervals(replicates, options.ci_level, mediscore_compat=options.mediscore_compat)
                 if options.ci and replicates is not None else None)
    metrics = DetectionMetrics(point.n_target, point.n_nontarget, roc, point.auc, point.eer, point.partial_auc,
                               point.cdr, bootstrap)
    result = SubsetResult(subset, metrics, trial_response_rate(metrics.n_trials, total_num))
    if options.ci and replicates is not None:
        result.band = roc_band(replicates, options.ci_level)
    if options.semafor:
        result.semafor = dict(point.semafor)
        if options.ci:  # an empty subset has no replicates: its intervals are empty, column by column
            result.semafor_ci = (bootstrap.semafor if bootstrap is not None else
                                 {name: Interval(float("nan"), float("nan"))
                                  for name in semafor_names(SemaforDraws(options.semafor_fars))})
    return result


def score_subset(subset: subsets_mod.Subset, total_num: int, options: DetectionOptions,
                 competition_threshold: float | None = None, *, band: bool = False) -> SubsetResult:
    """Metrics of one subset; with ``competition_threshold`` (a ``-qp`` bucket) the SemaFor
    rates at θ* are read at that threshold rather than at the subset's own θ*; with ``band`` (and ``--ci``)
    the ROC's bootstrap band too."""
    trials = SortedTrials.from_arrays(*scores_and_labels(subset.rows))
    replicates = (replicate_slice(trials, options.far_stop, semafor_draws(options, competition_threshold), 0,
                                  N_RESAMPLES, band=band) if options.ci and trials.labels.size else None)
    return subset_result(subset, total_num, trials, point_metrics(trials, options, competition_threshold),
                         replicates, options)


def semafor_columns(scores: np.ndarray, labels: np.ndarray, options: DetectionOptions,
                    competition_threshold: float | None) -> dict:
    """The SemaFor report columns of one subset, in order (``THRESHOLD_SET`` says whose θ* it is)."""
    from mfscore.detection.calibration import cllr, min_cllr

    if competition_threshold is None:
        values, threshold_set = semafor.semafor_report(scores, labels, fars=options.semafor_fars), "own"
    else:
        values = semafor.bucket_report(scores, labels, competition_threshold, fars=options.semafor_fars)
        threshold_set = "all"
    out = {}
    for name, value in values.items():
        if name == "THRESHOLD_EER":
            out["THRESHOLD_SET"] = threshold_set
        out[name] = value
    out["LLR_BASE"] = options.llr_base
    out["Cllr"] = cllr(scores * LLR_BASES[options.llr_base], labels)
    out["minCllr"] = min_cllr(scores, labels)  # invariant to the (monotone) change of base
    return out


def competition_threshold(table: ScoredTable, options: DetectionOptions) -> float | None:
    """θ* of all scored trials for ``-qp`` buckets (plan Analysis Plan, Methods (3)); None otherwise:
    the whole set and each ``-q``/``-qm`` query are competitions with a θ* of their own."""
    if not options.semafor or options.query_mode != "qp":
        return None
    return semafor.dynamic_eer_threshold(*scores_and_labels(table.rows)).threshold


def score_detection(table: ScoredTable, journal: pd.DataFrame | None, options: DetectionOptions) -> list[SubsetResult]:
    """Score every subset the options ask for."""
    threshold = competition_threshold(table, options)
    return [score_subset(s, table.total_num, options, threshold) for s in build_subsets(table, journal, options)]
