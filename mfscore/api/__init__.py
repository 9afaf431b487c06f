"""mfscore's public Python API: metrics on arrays, mergeable state, whole tasks (docs/api.md).

Stable names, in scikit-learn's and torchmetrics' conventions; the core (``mfscore.detection``, ``mfscore.masks``,
...) keeps its own internal signatures. ``*_score`` is higher-better, ``*_error``/``*_loss`` lower-better.

- Detection on arrays, ``f(y_true, y_score)``: ``roc_auc_score``, ``eer_error``, ``partial_auc_score``,
  ``cdr_at_far_score``, ``pd_at_far_score``, ``roc_curve``, ``bootstrap_intervals``, ``semafor_metrics``,
  ``cllr_loss``, ``min_cllr_loss``; shards with ``DetectionScores`` (``update``/``merge``/``compute``).
- Masks on arrays: ``mask_metrics`` (one probe); a run's averages with ``MaskScores``.
- Whole tasks: ``score(task, **options)`` returns the results model (``Results``), writing the reports if asked.

Importing ``mfscore.api`` imports none of its modules: each name is imported from its module on first use
(``EXPORTS``), so pandas, OpenCV and SciPy load only with the functions that need them.

Examples
--------
>>> import mfscore.api
>>> "roc_auc_score" in dir(mfscore.api)
True
>>> mfscore.api.roc_auc_score([0, 1], [0.2, 0.7])
1.0
"""

import importlib as _importlib

# module -> the public names it defines; a name added here is exported (``__all__``) and imported on first use
EXPORTS = {
    "mfscore.api.detection": (
        "roc_auc_score", "eer_error", "partial_auc_score", "cdr_at_far_score", "pd_at_far_score", "roc_curve",
        "bootstrap_intervals", "semafor_metrics", "cllr_loss", "min_cllr_loss",
        "DetectionIntervals", "DetectionResult", "DetectionScores", "DataConversionWarning",
    ),
    "mfscore.api.masks": ("mask_metrics", "MaskMetrics", "MaskRecord", "MaskRunMetrics", "MaskScores",
                          "UndefinedMaskMetricWarning"),
    "mfscore.api.scoring": ("score",),
}

__all__ = [name for names in EXPORTS.values() for name in names]
_MODULE_OF = {name: module for module, names in EXPORTS.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | {name for name in globals() if not name.startswith("_")})
