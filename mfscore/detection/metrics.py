"""All detection metrics of one scored subset, from its (score, label) rows (docs/detection.md §6).

This is the aggregator's ``compute``: the rows are the per-trial records (mfscore.records), and
nothing here depends on where they came from or in which order shards arrived, except the
bootstrap, which follows the canonical trial order as MediScore does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mfscore.detection.bootstrap import BootstrapIntervals, SemaforDraws, bootstrap_intervals
from mfscore.detection.roc import Roc, auc, cdr_at_far, eer, partial_auc, roc_curve


@dataclass(frozen=True)
class DetectionMetrics:
    n_target: int
    n_nontarget: int
    roc: Roc | None              # None for an empty subset
    auc: float | int
    eer: float
    partial_auc: float | int     # AUC@FAR
    cdr: float                   # CDR@FAR
    intervals: BootstrapIntervals | None

    @property
    def n_trials(self) -> int:
        return self.n_target + self.n_nontarget


def detection_metrics(scores: np.ndarray, labels: np.ndarray, *, far_stop: float = 0.1,
                      ci: bool = False, ci_level: float = 0.9, mediscore_compat: bool = False,
                      semafor: SemaforDraws | None = None) -> DetectionMetrics:
    """AUC, EER, AUC@FAR, CDR@FAR and, with ``ci``, their bootstrap intervals (and, from the same
    replicates, those of the SemaFor metrics ``semafor`` names)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    n_target = int(labels.sum())
    n_nontarget = int(labels.size - n_target)
    if labels.size == 0:
        nan = float("nan")
        return DetectionMetrics(0, 0, None, nan, nan, nan, nan, None)
    roc = roc_curve(scores, labels)
    intervals = (bootstrap_intervals(scores, labels, far_stop, ci_level, mediscore_compat=mediscore_compat,
                                     semafor=semafor) if ci else None)
    return DetectionMetrics(n_target, n_nontarget, roc, auc(roc), eer(roc),
                            partial_auc(roc, far_stop), cdr_at_far(roc, far_stop), intervals)
