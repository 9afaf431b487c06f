"""mfscore's public Python API: metrics on arrays, mergeable state, whole tasks (docs/api.md).

Stable names, in scikit-learn's and torchmetrics' conventions; the core (``mfscore.detection``, ``mfscore.masks``,
...) keeps its own internal signatures. ``*_score`` is higher-better, ``*_error``/``*_loss`` lower-better.

- Detection on arrays, ``f(y_true, y_score)``: ``roc_auc_score``, ``eer_error``, ``partial_auc_score``,
  ``cdr_at_far_score``, ``pd_at_far_score``, ``roc_curve``, ``bootstrap_intervals``, ``semafor_metrics``,
  ``cllr_loss``, ``min_cllr_loss``; shards with ``DetectionScores`` (``update``/``merge``/``compute``).
- Masks on arrays: ``mask_metrics`` (one probe); a run's averages with ``MaskScores``.
- Whole tasks: ``score(task, **options)`` returns the results model (``Results``), writing the reports if asked.
"""

from mfscore.api.detection import (
    DetectionIntervals,
    DetectionResult,
    DetectionScores,
    bootstrap_intervals,
    cdr_at_far_score,
    cllr_loss,
    eer_error,
    min_cllr_loss,
    partial_auc_score,
    pd_at_far_score,
    roc_auc_score,
    roc_curve,
    semafor_metrics,
)
from mfscore.api.masks import MaskMetrics, MaskRunMetrics, MaskScores, UndefinedMaskMetricWarning, mask_metrics
from mfscore.api.scoring import score

__all__ = [
    "roc_auc_score", "eer_error", "partial_auc_score", "cdr_at_far_score", "pd_at_far_score", "roc_curve",
    "bootstrap_intervals", "semafor_metrics", "cllr_loss", "min_cllr_loss",
    "DetectionIntervals", "DetectionResult", "DetectionScores",
    "mask_metrics", "MaskMetrics", "MaskRunMetrics", "MaskScores", "UndefinedMaskMetricWarning",
    "score",
]
