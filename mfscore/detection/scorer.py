"""The detection scorer: a scored table and options in, one result per subset out (no file I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from mfscore.detection import subsets as subsets_mod
from mfscore.detection.metrics import DetectionMetrics, detection_metrics
from mfscore.detection.trials import ScoredTable, scores_and_labels, trial_response_rate


@dataclass(frozen=True)
class DetectionOptions:
    far_stop: float = 0.1
    ci: bool = False
    ci_level: float = 0.9
    opt_out: bool = False
    query_mode: str | None = None          # None, "q", "qm" or "qp"
    queries: tuple[str, ...] = ()
    semafor: bool = False
    semafor_fars: tuple[float, ...] = (0.08,)
    mediscore_compat: bool = False


@dataclass
class SubsetResult:
    subset: subsets_mod.Subset
    metrics: DetectionMetrics
    trr: float
    semafor: dict = field(default_factory=dict)


def build_subsets(table: ScoredTable, journal: pd.DataFrame | None, options: DetectionOptions) -> list[subsets_mod.Subset]:
    if options.query_mode is None:
        return subsets_mod.whole_set(table.trials)
    frame = subsets_mod.query_frame(table.trials, journal)
    keys = table.sys_ref_keys
    if options.query_mode == "qp":
        return subsets_mod.partition_subsets(frame, options.queries[0], keys)
    return subsets_mod.query_subsets(frame, list(options.queries), keys, targets_only=options.query_mode == "qm",
                                     mediscore_compat=options.mediscore_compat)


def score_subset(subset: subsets_mod.Subset, total_num: int, options: DetectionOptions) -> SubsetResult:
    scores, labels = scores_and_labels(subset.rows)
    metrics = detection_metrics(scores, labels, far_stop=options.far_stop, ci=options.ci,
                                ci_level=options.ci_level, mediscore_compat=options.mediscore_compat)
    result = SubsetResult(subset, metrics, trial_response_rate(metrics.n_trials, total_num))
    if options.semafor:
        from mfscore.detection.calibration import cllr, min_cllr
        from mfscore.detection.semafor import semafor_report

        result.semafor = dict(semafor_report(scores, labels, fars=options.semafor_fars, pauc_far=0.1))
        result.semafor["Cllr"] = cllr(scores, labels)
        result.semafor["minCllr"] = min_cllr(scores, labels)
    return result


def score_detection(table: ScoredTable, journal: pd.DataFrame | None, options: DetectionOptions) -> list[SubsetResult]:
    """Score every subset the options ask for."""
    return [score_subset(s, table.total_num, options) for s in build_subsets(table, journal, options)]
