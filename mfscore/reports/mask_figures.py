"""What a mask run's ``--plots`` figure shows: the pixel-average and the mask-average ROC of a query's scored masks
(docs/masks.md §6.5), the curves whose areas are ``PixelAverageAUC`` and ``MaskAverageAUC``."""

from __future__ import annotations

import math

from mfscore.masks.run_metrics import average_rocs
from mfscore.masks.scorer import RoleResult
from mfscore.reports.figure_data import RocFigure, Series


def average_roc_figure(role: RoleResult, title: str) -> RocFigure:
    """The two average ROCs of one role, each labelled with the AUC the report writes."""
    (pixel_fpr, pixel_tpr), (mask_fpr, mask_tpr) = average_rocs([r for r in role.records if r.scored])
    return RocFigure(title, (
        Series(f"pixel-weighted average ROC (AUC {_auc(role.pixel_average_auc)})", pixel_tpr, pixel_fpr),
        Series(f"mask-weighted average ROC (AUC {_auc(role.mask_average_auc)})", mask_tpr, mask_fpr)))


def _auc(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"
