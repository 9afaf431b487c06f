"""d-prime of a ROC curve: the largest separation of the normal deviates of TPR and FPR.

Used only to mark a point on the ROC plot; it is never written to the report CSV.
"""

from __future__ import annotations

import numpy as np

from mfscore.detection.probit import probit

_CLIP = 1e-5


def dprime(roc_fpr, roc_tpr, d_level: float = 0.0) -> tuple[float, float, float] | None:
    """``(d', fpr, tpr)`` of the ROC point with the largest d', or ``None`` when none qualifies.

    Only points with ``d_level <= TPR <= 1 - d_level`` and ``d_level <= FPR <= 1 - d_level`` are
    considered; on ties the first point in curve order wins. NaN rates (a class is missing) give
    ``None``.
    """
    # docs/detection.md §6.7: d = probit(clip(TPR)) - probit(clip(FPR)), clipped to [1e-5, 1-1e-5], max in the band
    fpr = np.asarray(roc_fpr, dtype=np.float64).ravel()
    tpr = np.asarray(roc_tpr, dtype=np.float64).ravel()
    if fpr.shape != tpr.shape:
        raise ValueError(f"fpr and tpr differ in length ({fpr.size} vs {tpr.size})")
    if fpr.size == 0 or np.isnan(fpr).any() or np.isnan(tpr).any():
        return None
    lo, hi = d_level, 1.0 - d_level
    keep = (tpr >= lo) & (tpr <= hi) & (fpr >= lo) & (fpr <= hi)
    if not keep.any():
        return None
    f, t = fpr[keep], tpr[keep]
    d = probit(np.clip(t, _CLIP, 1.0 - _CLIP)) - probit(np.clip(f, _CLIP, 1.0 - _CLIP))
    j = int(np.argmax(d))
    return float(d[j]), float(f[j]), float(t[j])
