"""Image mask metrics on arrays: MediScore's per-mask and averaged metrics, and mfscore's extras.

Conventions (the file scorer's, docs/masks.md §4–§6, said once here):

* ``reference`` is the **manipulated region**: a 2-D boolean or 0/1 array, True (1) = manipulated.
  This is *not* MediScore's file convention, where a reference mask is black (0) = manipulated; a
  MediScore reference read as grey converts with ``reference = grey == 0``, and a colour reference
  with the colours of its selected operations (``mfscore.masks.reference_selection``). Any other
  value (a 0/255 mask, NaN) is refused rather than guessed.
* ``system`` is an 8-bit grey mask as MediScore takes it: integers 0..255, 0 = manipulated …
  255 = not. At threshold θ a pixel is predicted manipulated when its value is ``<= θ``; θ = -1
  predicts nothing. Floats are refused, so that a probability map is never read as grey levels by
  mistake: ``np.round(255 * (1 - p)).astype(np.uint8)`` converts one.
* The **no-score zone** is on by default, as in MediScore: ``erode_size=15``, ``dilate_size=11`` leave
  the boundary zone ``dilate(R, dilate_size) \\ erode(R, erode_size)`` out of MediScore's metrics (MCC,
  NMM, BWL1, GWL1, AUC, EER), while the extras (IoU, F1, soft) count every pixel unless
  ``extras_pixels="scored"``; ``erode_size=0, dilate_size=0`` scores every pixel. ``mfscore mask`` has
  the same defaults (``--eks 15 --dks 11``); a ``MaskMetrics``' repr says which pixels were counted.
* ``no_score`` (optional, True = left out) removes pixels from MediScore's metrics in addition to
  the boundary zone and, with ``distractors`` (the probe's other manipulations), the distraction zone
  ``dilate(D, distraction_size)`` minus the eroded region (docs/masks.md §5). Its pixels are counted
  in ``pixel_pns``, as MediScore counts its pixel zone; MediScore's ``--nspx V`` is
  ``no_score=system == V``.
* ``threshold`` is MediScore's actual threshold (``--sbin``): with it come the ``actual_*`` metrics.

Every metric is read off the same per-mask record (``MaskRecord``) as ``mfscore mask`` builds
from files, by the same functions (``noscore_zones``, ``histogram_record``, ``trial_cells``,
``extra_cells``, ``average_aucs``, ``maximum_threshold``, ``extra_summary``): the numbers are those
of its ``_mask_scores_perimage.csv``, ``_mask_extra.csv``, ``_mask_score.csv`` and
``_mask_extra_summary.csv`` (tests/unit/test_api_masks.py compares them on MediScore's test masks).

Names are the report columns in snake_case (``OptimumMCC`` is ``optimum_mcc``); which column a field
is and which way is better are in each field's metadata (``column``, ``better``) and in the tables of
``MaskMetrics`` and ``MaskRunMetrics``. Masks' primary metric is ``optimum_mcc`` (higher is better).
An undefined value is NaN: a reference without a manipulated pixel is not scored (MediScore's
``Scored = N``), and no-score zones covering the image leave no pixel to score; ``mask_metrics`` then
warns with ``UndefinedMaskMetricWarning``, saying why. Bad input raises a ``ValueError`` whose message
starts with the argument's name, and so does ``compute`` on a ``MaskScores`` holding no mask, as on an
empty ``DetectionScores``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

import numpy as np

from mfscore.errors import OptionError
from mfscore.masks.extra_metrics import EXTRA_COLUMNS, IMAGE, SCORED_PIXELS, SUMMARIZED, extra_cells, extra_summary
from mfscore.masks.mask_record import BINS, NOT_SCOREABLE, SCORED, UNREADABLE, MaskRecord, histogram_record
from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.masks.noscore_zones import noscore_counts, noscore_zones
from mfscore.masks.run_metrics import average_aucs, maximum_threshold
from mfscore.masks.trial_metrics import trial_cells
from mfscore.options import check_field
from mfscore.reports.significant_digits import round_significant

# MaskRecord, imported here, is the core's (mfscore.masks.mask_record): mfscore.api exports it, so the reference
# documents it once
__all__ = ["mask_metrics", "MaskMetrics", "MaskRunMetrics", "MaskScores", "UndefinedMaskMetricWarning"]

NAN = math.nan
HIGHER, LOWER, NEITHER = "higher", "lower", ""
PERIMAGE, EXTRA = "_mask_scores_perimage.csv", "_mask_extra.csv"
AVERAGED, EXTRA_SUMMARY = "_mask_score.csv", "_mask_extra_summary.csv"
MEDISCORE_METRICS = "MCC, NMM, BWL1, GWL1, AUC, EER"  # the metrics the no-score zones leave pixels out of
EXTRA_METRICS = "IoU, F1, soft"


class UndefinedMaskMetricWarning(UserWarning):
    """A mask's metrics are undefined (NaN): its reference has no manipulated pixel, or no pixel is scored.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = mask_metrics(np.zeros((2, 2), bool), np.zeros((2, 2), np.uint8))
    >>> result.scored, caught[0].category.__name__
    (False, 'UndefinedMaskMetricWarning')
    """


def _metric(column: str, better: str, file: str = PERIMAGE):
    """A result field: the report column it is, the file holding that column, and which way is better."""
    return field(metadata={"column": column, "file": file, "better": better})


@dataclass(frozen=True)
class MaskMetrics:
    """The metrics of one mask: a row of ``_mask_scores_perimage.csv`` and of ``_mask_extra.csv``.

    ==========================  ===========================  ======  ===============================================
    Field                       Column (file)                Better  What
    ==========================  ===========================  ======  ===============================================
    ``scored``                  ``Scored`` (perimage)                False: no manipulated pixel, everything NaN
    ``optimum_threshold``       ``OptimumThreshold``                 θ* of the largest MCC, lowest on ties
    ``optimum_nmm``             ``OptimumNMM``               higher  Nimble mask metric at θ*, in [-1, 1]
    ``optimum_mcc``             ``OptimumMCC``               higher  Matthews correlation at θ* (primary metric)
    ``optimum_bwl1``            ``OptimumBWL1``              lower   (FP + FN) / N at θ*
    ``gwl1``                    ``GWL1``                     lower   mean absolute ref − sys / 255, no threshold
    ``auc``                     ``AUC``                      higher  area under the mask's pixel ROC
    ``eer``                     ``EER``                      lower   equal error rate of that ROC
    ``pixel_n``                 ``PixelN``                           scored pixels
    ``optimum_pixel_tp`` …      ``OptimumPixelTP/TN/FP/FN``          confusion counts at θ*
    ``pixel_bns``               ``PixelBNS``                         pixels of the boundary zone outside the SNS
    ``pixel_sns``               ``PixelSNS``                         pixels of the distraction zone
    ``pixel_pns``               ``PixelPNS``                         pixels of ``no_score``, whatever the zones
    ``actual_threshold``        ``ActualThreshold``                  ``threshold`` (a column of the averaged table)
    ``actual_nmm``              ``ActualNMM``                higher  NMM at ``threshold``
    ``actual_mcc``              ``ActualMCC``                higher  MCC at ``threshold``
    ``actual_bwl1``             ``ActualBWL1``               lower   BWL1 at ``threshold``
    ``actual_pixel_tp`` …       ``ActualPixelTP/TN/FP/FN``           confusion counts at ``threshold``
    ``optimum_iou``             ``OptimumIoU`` (extra)       higher  best IoU over the mask's thresholds (oracle)
    ``optimum_f1``              ``OptimumF1``                higher  best F1 over the mask's thresholds (oracle)
    ``actual_iou``              ``ActualIoU``                higher  IoU at ``threshold``
    ``actual_f1``               ``ActualF1``                 higher  F1 at ``threshold``
    ``soft_mcc``                ``SoftMCC``                  higher  MCC of the soft confusion (y = 1 − S/255)
    ``soft_iou``                ``SoftIoU``                  higher  IoU of the soft confusion
    ``soft_f1``                 ``SoftF1``                   higher  F1 of the soft confusion
    ``reference_pixels``        ``ReferencePixels``                  manipulated pixels of ``reference``
    ==========================  ===========================  ======  ===============================================

    Definitions: docs/masks.md §6.1–§6.4 and docs/metrics.md "Masks". MediScore's metrics count the
    scored pixels only; the extras count every pixel of the image (Bammey et al.'s definition), or
    the scored ones with ``extras_pixels="scored"``; the repr's last line says which pixels each metric
    counted and how many the no-score zone left out. Without ``threshold`` every ``actual_*`` field
    is None; a mask that is not scored has NaN in every other number. ``sqrt_reference_pixels``
    (``SqrtReferencePixels``) is a property.

    Examples
    --------
    >>> reference = np.array([[0, 0, 0, 0, 0],
    ...                       [0, 1, 1, 0, 0],
    ...                       [0, 1, 1, 0, 0],
    ...                       [0, 0, 0, 0, 0],
    ...                       [0, 0, 0, 0, 0]], dtype=bool)
    >>> system = np.full((5, 5), 255, np.uint8)
    >>> system[1:3, 1:3] = 0
    >>> m = mask_metrics(reference, system, erode_size=0, dilate_size=0)
    >>> m.optimum_mcc, m.optimum_iou, m.auc, m.better("optimum_bwl1")
    (1.0, 1.0, 1.0, 'lower')
    """

    scored: bool = _metric("Scored", NEITHER)
    optimum_threshold: float = _metric("OptimumThreshold", NEITHER)
    optimum_nmm: float = _metric("OptimumNMM", HIGHER)
    optimum_mcc: float = _metric("OptimumMCC", HIGHER)
    optimum_bwl1: float = _metric("OptimumBWL1", LOWER)
    gwl1: float = _metric("GWL1", LOWER)
    auc: float = _metric("AUC", HIGHER)
    eer: float = _metric("EER", LOWER)
    pixel_n: int | float = _metric("PixelN", NEITHER)
    optimum_pixel_tp: int | float = _metric("OptimumPixelTP", NEITHER)
    optimum_pixel_tn: int | float = _metric("OptimumPixelTN", NEITHER)
    optimum_pixel_fp: int | float = _metric("OptimumPixelFP", NEITHER)
    optimum_pixel_fn: int | float = _metric("OptimumPixelFN", NEITHER)
    pixel_bns: int | float = _metric("PixelBNS", NEITHER)
    pixel_sns: int | float = _metric("PixelSNS", NEITHER)
    pixel_pns: int | float = _metric("PixelPNS", NEITHER)
    actual_threshold: int | None = _metric("ActualThreshold", NEITHER, AVERAGED)
    actual_nmm: float | None = _metric("ActualNMM", HIGHER)
    actual_mcc: float | None = _metric("ActualMCC", HIGHER)
    actual_bwl1: float | None = _metric("ActualBWL1", LOWER)
    actual_pixel_tp: int | float | None = _metric("ActualPixelTP", NEITHER)
    actual_pixel_tn: int | float | None = _metric("ActualPixelTN", NEITHER)
    actual_pixel_fp: int | float | None = _metric("ActualPixelFP", NEITHER)
    actual_pixel_fn: int | float | None = _metric("ActualPixelFN", NEITHER)
    optimum_iou: float = _metric("OptimumIoU", HIGHER, EXTRA)
    optimum_f1: float = _metric("OptimumF1", HIGHER, EXTRA)
    actual_iou: float | None = _metric("ActualIoU", HIGHER, EXTRA)
    actual_f1: float | None = _metric("ActualF1", HIGHER, EXTRA)
    soft_mcc: float = _metric("SoftMCC", HIGHER, EXTRA)
    soft_iou: float = _metric("SoftIoU", HIGHER, EXTRA)
    soft_f1: float = _metric("SoftF1", HIGHER, EXTRA)
    reference_pixels: int | float = _metric("ReferencePixels", NEITHER, EXTRA)

    def __repr__(self) -> str:
        values = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return f"MaskMetrics({values})\n  {self._pixels_counted()}"

    def _pixels_counted(self) -> str:
        """Which pixels each metric counted, in words (the repr's second line)."""
        if not self.scored:
            return "not scored: the reference has no manipulated pixel, so every metric is NaN"
        counted = getattr(self, "_counted", None)  # set by mask_metrics; a hand-made MaskMetrics has none
        if counted is None:
            return f"{MEDISCORE_METRICS}: the {self.pixel_n:,} pixels outside the no-score zone"
        extras = "every pixel" if counted.extras_pixels == IMAGE else "the same pixels"
        return (f"{MEDISCORE_METRICS}: pixels outside the no-score zone ({counted.zones}: "
                f"{counted.excluded:,} of {counted.image_pixels:,} pixels excluded); {EXTRA_METRICS}: {extras}")

    @property
    def sqrt_reference_pixels(self) -> float:
        """√``reference_pixels``, the paper's size axis (``SqrtReferencePixels``).

        Examples
        --------
        >>> mask_metrics(np.eye(4, dtype=bool), np.zeros((4, 4), np.uint8), erode_size=0,
        ...              dilate_size=0).sqrt_reference_pixels
        2.0
        """
        return math.sqrt(self.reference_pixels)

    @classmethod
    def better(cls, name: str) -> str:
        """Which way field ``name`` is better: ``"higher"``, ``"lower"``, or ``""`` (a count, a threshold).

        Examples
        --------
        >>> MaskMetrics.better("optimum_mcc"), MaskMetrics.better("eer"), MaskMetrics.better("pixel_n")
        ('higher', 'lower', '')
        """
        return _field(cls, name).metadata["better"]

    @classmethod
    def column(cls, name: str) -> str:
        """The report column field ``name`` is.

        Examples
        --------
        >>> MaskMetrics.column("optimum_mcc"), MaskMetrics.column("soft_mcc")
        ('OptimumMCC', 'SoftMCC')
        """
        return _field(cls, name).metadata["column"]


@dataclass(frozen=True)
class MaskRunMetrics:
    """A run's averaged metrics: the row of ``_mask_score.csv`` and the means of ``_mask_extra_summary.csv``.

    Definitions: docs/masks.md §6.5 and §8. Means are over the scored masks (``Scored = Y``), NaN
    left out, of the per-mask values rounded to 16 significant digits, as MediScore's averaged table
    takes them; each mean ``x`` has ``stddev_x`` beside it: the sample standard deviation (n − 1, NaN
    with fewer than two values) for MediScore's columns, the population one (÷ n) for the extras, as
    their files do.

    ========================  =======================================  ======  =====================================
    Field                     Column (file)                            Better  What
    ========================  =======================================  ======  =====================================
    ``optimum_threshold``     ``OptimumThreshold`` (averaged)                  mean θ*, truncated to an integer
    ``optimum_nmm``           ``OptimumNMM``                           higher  mean of the masks' values
    ``optimum_mcc``           ``OptimumMCC``                           higher  mean (primary metric)
    ``optimum_bwl1``          ``OptimumBWL1``                          lower
    ``gwl1``                  ``GWL1``                                 lower
    ``auc``                   ``AUC``                                  higher  mean of the masks' AUCs
    ``eer``                   ``EER``                                  lower
    ``maximum_nmm``           ``MaximumNMM``                           higher  at the run's ``maximum_threshold``
    ``maximum_mcc``           ``MaximumMCC``                           higher
    ``maximum_bwl1``          ``MaximumBWL1``                          lower
    ``actual_nmm``            ``ActualNMM``                            higher  at ``threshold``
    ``actual_mcc``            ``ActualMCC``                            higher
    ``actual_bwl1``           ``ActualBWL1``                           lower
    ``pixel_average_auc``     ``PixelAverageAUC``                      higher  AUC of the pooled pixel counts' ROC
    ``mask_average_auc``      ``MaskAverageAUC``                       higher  AUC of the masks' mean ROC
    ``maximum_threshold``     ``MaximumThreshold``                             θ of the largest summed MCC
    ``actual_threshold``      ``ActualThreshold``                              ``threshold``
    ``total_trials``          ``totalTrials``                                  masks updated
    ``scoreable_trials``      ``ScoreableTrials``                              masks scored
    ``optimum_iou`` …         ``OptimumIoU`` … ``SoftF1`` (summary)    higher  means of the seven extras
    ========================  =======================================  ======  =====================================

    The extras are ``optimum_iou``, ``optimum_f1``, ``actual_iou``, ``actual_f1``, ``soft_mcc``,
    ``soft_iou`` and ``soft_f1``, over the masks that have a value. Without a threshold every
    ``actual_*`` field (and its ``stddev_``) is None. MediScore writes the Maximum
    columns and ``MaximumThreshold`` only with ``--sbin``; here they are always given (they do not
    depend on the threshold). ``maximum_threshold`` is None without a scored mask.

    Examples
    --------
    >>> scores = MaskScores()
    >>> scores.update(np.eye(3, dtype=bool), np.array([[0, 255, 255],
    ...                                                [255, 0, 255],
    ...                                                [0, 255, 0]], np.uint8), erode_size=0, dilate_size=0)
    MaskScores(1 masks)
    >>> run = scores.compute(threshold=0)
    >>> round(run.optimum_mcc, 4), run.actual_threshold, run.scoreable_trials, run.stddev_optimum_mcc
    (0.7906, 0, 1, nan)
    """

    optimum_threshold: float = _metric("OptimumThreshold", NEITHER, AVERAGED)
    stddev_optimum_threshold: float = _metric("stddev_OptimumThreshold", NEITHER, AVERAGED)
    optimum_nmm: float = _metric("OptimumNMM", HIGHER, AVERAGED)
    stddev_optimum_nmm: float = _metric("stddev_OptimumNMM", NEITHER, AVERAGED)
    optimum_mcc: float = _metric("OptimumMCC", HIGHER, AVERAGED)
    stddev_optimum_mcc: float = _metric("stddev_OptimumMCC", NEITHER, AVERAGED)
    optimum_bwl1: float = _metric("OptimumBWL1", LOWER, AVERAGED)
    stddev_optimum_bwl1: float = _metric("stddev_OptimumBWL1", NEITHER, AVERAGED)
    gwl1: float = _metric("GWL1", LOWER, AVERAGED)
    stddev_gwl1: float = _metric("stddev_GWL1", NEITHER, AVERAGED)
    auc: float = _metric("AUC", HIGHER, AVERAGED)
    stddev_auc: float = _metric("stddev_AUC", NEITHER, AVERAGED)
    eer: float = _metric("EER", LOWER, AVERAGED)
    stddev_eer: float = _metric("stddev_EER", NEITHER, AVERAGED)
    maximum_nmm: float = _metric("MaximumNMM", HIGHER, AVERAGED)
    stddev_maximum_nmm: float = _metric("stddev_MaximumNMM", NEITHER, AVERAGED)
    maximum_mcc: float = _metric("MaximumMCC", HIGHER, AVERAGED)
    stddev_maximum_mcc: float = _metric("stddev_MaximumMCC", NEITHER, AVERAGED)
    maximum_bwl1: float = _metric("MaximumBWL1", LOWER, AVERAGED)
    stddev_maximum_bwl1: float = _metric("stddev_MaximumBWL1", NEITHER, AVERAGED)
    actual_nmm: float | None = _metric("ActualNMM", HIGHER, AVERAGED)
    stddev_actual_nmm: float | None = _metric("stddev_ActualNMM", NEITHER, AVERAGED)
    actual_mcc: float | None = _metric("ActualMCC", HIGHER, AVERAGED)
    stddev_actual_mcc: float | None = _metric("stddev_ActualMCC", NEITHER, AVERAGED)
    actual_bwl1: float | None = _metric("ActualBWL1", LOWER, AVERAGED)
    stddev_actual_bwl1: float | None = _metric("stddev_ActualBWL1", NEITHER, AVERAGED)
    pixel_average_auc: float = _metric("PixelAverageAUC", HIGHER, AVERAGED)
    mask_average_auc: float = _metric("MaskAverageAUC", HIGHER, AVERAGED)
    maximum_threshold: int | None = _metric("MaximumThreshold", NEITHER, AVERAGED)
    actual_threshold: int | None = _metric("ActualThreshold", NEITHER, AVERAGED)
    total_trials: int = _metric("totalTrials", NEITHER, AVERAGED)
    scoreable_trials: int = _metric("ScoreableTrials", NEITHER, AVERAGED)
    optimum_iou: float = _metric("OptimumIoU", HIGHER, EXTRA_SUMMARY)
    stddev_optimum_iou: float = _metric("OptimumIoU", NEITHER, EXTRA_SUMMARY)
    optimum_f1: float = _metric("OptimumF1", HIGHER, EXTRA_SUMMARY)
    stddev_optimum_f1: float = _metric("OptimumF1", NEITHER, EXTRA_SUMMARY)
    actual_iou: float | None = _metric("ActualIoU", HIGHER, EXTRA_SUMMARY)
    stddev_actual_iou: float | None = _metric("ActualIoU", NEITHER, EXTRA_SUMMARY)
    actual_f1: float | None = _metric("ActualF1", HIGHER, EXTRA_SUMMARY)
    stddev_actual_f1: float | None = _metric("ActualF1", NEITHER, EXTRA_SUMMARY)
    soft_mcc: float = _metric("SoftMCC", HIGHER, EXTRA_SUMMARY)
    stddev_soft_mcc: float = _metric("SoftMCC", NEITHER, EXTRA_SUMMARY)
    soft_iou: float = _metric("SoftIoU", HIGHER, EXTRA_SUMMARY)
    stddev_soft_iou: float = _metric("SoftIoU", NEITHER, EXTRA_SUMMARY)
    soft_f1: float = _metric("SoftF1", HIGHER, EXTRA_SUMMARY)
    stddev_soft_f1: float = _metric("SoftF1", NEITHER, EXTRA_SUMMARY)

    @classmethod
    def better(cls, name: str) -> str:
        """Which way field ``name`` is better: ``"higher"``, ``"lower"``, or ``""`` (a count, a spread).

        Examples
        --------
        >>> MaskRunMetrics.better("eer"), MaskRunMetrics.better("pixel_average_auc")
        ('lower', 'higher')
        """
        return _field(cls, name).metadata["better"]

    @classmethod
    def column(cls, name: str) -> str:
        """The report column field ``name`` is (for a ``stddev_`` extra: the summary row's ``Metric``,
        whose ``StdDev`` it is).

        Examples
        --------
        >>> MaskRunMetrics.column("stddev_optimum_mcc"), MaskRunMetrics.column("stddev_soft_mcc")
        ('stddev_OptimumMCC', 'SoftMCC')
        """
        return _field(cls, name).metadata["column"]


def _field(kind: type, name: str):
    for f in fields(kind):
        if f.name == name:
            return f
    raise ValueError(f"name: {kind.__name__} has no field {name!r}")


# ---- input checks -------------------------------------------------------------------------------

def _check_2d(value, name: str, shape: tuple[int, int] | None) -> np.ndarray:
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 2-D array: {exc}") from None
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x columns), got {array.ndim} dimension(s), "
                         f"shape {array.shape}")
    if shape is None and array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape}): there is no pixel to score")
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape} but reference has shape {shape}")
    return array


def _check_map(value, name: str, shape: tuple[int, int] | None = None, hint: str = "") -> np.ndarray:
    """A boolean map from booleans or 0/1 numbers."""
    array = _check_2d(value, name, shape)
    if array.dtype.kind == "b":
        return np.ascontiguousarray(array)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold booleans or 0/1, got values of dtype {array.dtype}")
    if array.dtype.kind == "f" and np.isnan(array).any():
        raise ValueError(f"{name} contains NaN")
    if not np.isin(array, (0, 1)).all():
        others = np.unique(array[~np.isin(array, (0, 1))])[:5].tolist()
        raise ValueError(f"{name} must hold booleans or 0/1, got also {others}{hint}")
    return np.ascontiguousarray(array != 0)


def _check_reference(reference) -> np.ndarray:
    return _check_map(reference, "reference", hint=(
        " (True/1 = manipulated; a MediScore reference mask is black = manipulated: pass mask == 0)"))


def _check_system(system, shape: tuple[int, int]) -> np.ndarray:
    array = _check_2d(system, "system", shape)
    kind = array.dtype.kind
    if kind == "b":
        raise ValueError("system must hold 8-bit grey values 0..255 (0 = manipulated), not booleans: "
                         "pass np.where(mask, 0, 255).astype(np.uint8)")
    if kind == "f" and np.isnan(array).any():
        raise ValueError("system contains NaN")
    if kind not in "iu":
        raise ValueError(f"system must be an integer array of 8-bit grey values 0..255 (0 = manipulated), "
                         f"got dtype {array.dtype}; a probability map p converts as "
                         f"np.round(255 * (1 - p)).astype(np.uint8)")
    if array.dtype != np.uint8:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high > 255:
            raise ValueError(f"system must hold values 0..255, got values from {low} to {high}")
    return np.ascontiguousarray(array, dtype=np.uint8)


def _check_threshold(threshold) -> int | None:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Integral) or not -1 <= threshold <= 255:
        raise ValueError(f"threshold must be None or an integer from -1 to 255 (MediScore's --sbin), "
                         f"got {threshold!r}")
    return int(threshold)


def _check_zones(erode_size, dilate_size, distraction_size, kernel) -> ZoneOptions:
    """The zone options, checked by the command line's own checks (``ZoneOptions``), as ``ValueError``."""
    values = {"erode_size": erode_size, "dilate_size": dilate_size, "distraction_size": distraction_size,
              "kernel": kernel}
    for name, value in values.items():
        try:
            check_field(ZoneOptions, name, value)
        except OptionError as error:
            raise ValueError(f"{name} = {value!r}: {error.reason}") from None
    return ZoneOptions(**{name: int(v) if name != "kernel" else v for name, v in values.items()})


def _check_extras_pixels(extras_pixels) -> str:
    if extras_pixels not in (IMAGE, SCORED_PIXELS):
        raise ValueError(f"extras_pixels must be {IMAGE!r} (every pixel, the paper's definition) or "
                         f"{SCORED_PIXELS!r} (MediScore's scored pixels), got {extras_pixels!r}")
    return extras_pixels


# ---- the record, then the metrics ---------------------------------------------------------------

def _record(reference, system, no_score, distractors, erode_size, dilate_size, distraction_size,
            kernel) -> MaskRecord:
    """The mask's record, built as ``score_mask`` builds it from decoded files (zones, counts, histograms)."""
    zones = _check_zones(erode_size, dilate_size, distraction_size, kernel)
    region = _check_reference(reference)
    grey = _check_system(system, region.shape)
    left_out = None if no_score is None else _check_map(no_score, "no_score", region.shape)
    others = np.zeros(region.shape, bool) if distractors is None else _check_map(distractors, "distractors",
                                                                                region.shape)
    if not region.any():
        return MaskRecord(status=NOT_SCOREABLE)  # docs/masks.md §6.6
    maps = noscore_zones(region, others, grey, erode_size=zones.erode_size, dilate_size=zones.dilate_size,
                         distraction_size=zones.distraction_size, kernel=zones.kernel, pixel_value=None)
    if left_out is not None:
        maps = replace(maps, pns=~left_out)
    counts = noscore_counts(maps)
    return histogram_record(region, maps.weight, grey, pixel_bns=counts["PixelBNS"],
                            pixel_sns=counts["PixelSNS"], pixel_pns=counts["PixelPNS"])


_PERIMAGE_FIELDS = {f.metadata["column"]: f.name for f in fields(MaskMetrics)}


class _Counted(NamedTuple):
    """What ``mask_metrics`` left out of MediScore's metrics, for ``MaskMetrics``' repr."""

    zones: str  # the zones asked for, in words: "erode 15, dilate 11"
    excluded: int
    image_pixels: int
    extras_pixels: str


def _zone_words(zones: ZoneOptions, distractors: bool, no_score: bool) -> str:
    words = [f"erode {zones.erode_size}", f"dilate {zones.dilate_size}"]
    if distractors:
        words.append(f"distraction {zones.distraction_size}")
    if no_score:
        words.append("no_score")
    return ", ".join(words)


def _nothing_scored(record: MaskRecord, zones: ZoneOptions, shape: tuple[int, int], distractors: bool,
                    no_score: bool) -> str:
    """Why a scored mask has no pixel left for MediScore's metrics, and how to keep some."""
    size = f"{shape[0]}x{shape[1]}"
    if record.pixel_pns == shape[0] * shape[1]:
        return f"no_score is True at every pixel of the {size} mask: MediScore's metrics ({MEDISCORE_METRICS}) are NaN"
    sizes = {"erode_size": zones.erode_size, "dilate_size": zones.dilate_size,
             "distraction_size": zones.distraction_size if distractors else 0}
    off = ", ".join(f"{name}=0" for name, value in sizes.items() if value)
    hint = f"; pass {off} to score every pixel" if off else ""
    return (f"the no-score zone ({_zone_words(zones, distractors, no_score)}) covers the whole {size} mask: "
            f"MediScore's metrics ({MEDISCORE_METRICS}) are NaN{hint}")


def _mask_result(record: MaskRecord, threshold: int | None, extras_pixels: str) -> MaskMetrics:
    actual = None if threshold is None else float(threshold)
    cells = {c: NAN for c in _PERIMAGE_FIELDS}
    cells.update(trial_cells(record, actual=actual, maximum=None))
    cells.update(extra_cells(record, actual, extras_pixels))
    cells["Scored"] = record.scored
    cells["ActualThreshold"] = threshold
    if threshold is None:
        cells.update({c: None for c in _PERIMAGE_FIELDS if c.startswith("Actual")})
    return MaskMetrics(**{_PERIMAGE_FIELDS[c]: cells[c] for c in _PERIMAGE_FIELDS})


def mask_metrics(reference, system, *, no_score=None, distractors=None, threshold=None, erode_size=15,
                 dilate_size=11, distraction_size=15, kernel="box", extras_pixels="image") -> MaskMetrics:
    """MediScore's metrics of one mask and mfscore's extras (IoU, F1, soft MCC/IoU/F1), from arrays.

    By default MediScore's no-score zone is on, as ``mfscore mask`` has it: ``erode_size=15``,
    ``dilate_size=11`` leave the pixels around the reference's boundary out of MediScore's metrics
    (MCC, NMM, BWL1, GWL1, AUC, EER), while IoU, F1 and the soft metrics count every pixel. Pass
    ``erode_size=0, dilate_size=0`` to score every pixel. The result's repr says which pixels each
    metric counted; a mask the zone covers whole (a 5x5 one) has NaN for MediScore's metrics, with an
    ``UndefinedMaskMetricWarning`` saying so.

    ``reference``: True = manipulated. ``system``: 8-bit grey, 0 = manipulated … 255 = not.
    ``no_score``: pixels left out (True), besides the boundary zone of ``erode_size``/``dilate_size``
    and the distraction zone of ``distractors``/``distraction_size`` (``kernel``: box, disc, diamond,
    gaussian or line; a size of 0 skips that operation; MediScore's defaults). ``threshold``: the
    actual threshold (``--sbin``), giving the ``actual_*`` metrics. ``extras_pixels``: the pixels the
    extras sum over, ``"image"`` (the paper's definition) or ``"scored"``. The same numbers as
    ``mfscore mask`` gives for the same masks.

    Examples
    --------
    A 32x32 probe with a perfect system mask: by default the boundary zone leaves 672 pixels out of
    MediScore's metrics; the IoU counts every pixel.

    >>> square = np.zeros((32, 32), bool)
    >>> square[8:24, 8:24] = True
    >>> perfect = np.where(square, 0, 255).astype(np.uint8)
    >>> mask_metrics(square, perfect)  # doctest: +ELLIPSIS
    MaskMetrics(scored=True, optimum_threshold=0.0, optimum_nmm=1.0, optimum_mcc=1.0, ...)
      MCC, NMM, BWL1, GWL1, AUC, EER: pixels outside the no-score zone (erode 15, dilate 11: 672 of 1,024 pixels
      excluded); IoU, F1, soft: every pixel

    A 5x5 probe: the system marks the manipulated square 0 but for one pixel at 100, and one
    authentic pixel 50 (a false alarm at any threshold that finds the whole square). No zones, so
    that every pixel is scored.

    >>> reference = np.array([[0, 0, 0, 0, 0],
    ...                       [0, 1, 1, 0, 0],
    ...                       [0, 1, 1, 0, 0],
    ...                       [0, 0, 0, 0, 0],
    ...                       [0, 0, 0, 0, 0]], dtype=bool)
    >>> system = np.array([[255, 255, 255, 255, 255],
    ...                    [255,   0,   0, 255, 255],
    ...                    [255,   0, 100, 255, 255],
    ...                    [255, 255, 255,  50, 255],
    ...                    [255, 255, 255, 255, 255]], dtype=np.uint8)
    >>> m = mask_metrics(reference, system, erode_size=0, dilate_size=0, threshold=128)
    >>> m.optimum_threshold, round(m.optimum_mcc, 4), m.pixel_n
    (100.0, 0.8729, 25)
    >>> m.actual_pixel_tp, m.actual_pixel_fp, m.actual_iou
    (4, 1, 0.8)
    >>> round(m.soft_mcc, 4), round(m.auc, 4), m.better("auc")
    (0.8306, 0.9881, 'higher')

    Leaving the false alarm out with ``no_score``: MediScore's metrics ignore it (the extras still
    count the whole image unless ``extras_pixels="scored"``).

    >>> no_score = system == 50
    >>> m = mask_metrics(reference, system, no_score=no_score, erode_size=0, dilate_size=0, threshold=128)
    >>> m.actual_mcc, m.pixel_pns, m.actual_iou
    (1.0, 1, 0.8)
    """
    threshold = _check_threshold(threshold)
    extras_pixels = _check_extras_pixels(extras_pixels)
    record = _record(reference, system, no_score, distractors, erode_size, dilate_size, distraction_size, kernel)
    result = _mask_result(record, threshold, extras_pixels)
    if not result.scored:
        warnings.warn("reference has no manipulated pixel: the mask is not scored (MediScore's Scored = N) "
                      "and its metrics are NaN", UndefinedMaskMetricWarning, stacklevel=2)
        return result
    zones = _check_zones(erode_size, dilate_size, distraction_size, kernel)
    image_pixels = int(record.image_positive.sum() + record.image_negative.sum())
    counted = _Counted(_zone_words(zones, distractors is not None, no_score is not None),
                       image_pixels - record.pixel_n, image_pixels, extras_pixels)
    object.__setattr__(result, "_counted", counted)  # not a field: the fields are the report's columns
    if result.pixel_n == 0:
        warnings.warn(_nothing_scored(record, zones, np.shape(reference), distractors is not None,
                                      no_score is not None), UndefinedMaskMetricWarning, stacklevel=2)
    return result


# ---- a run, shard by shard ----------------------------------------------------------------------

_AVERAGED = ("OptimumThreshold", "OptimumNMM", "OptimumMCC", "OptimumBWL1", "GWL1", "AUC", "EER",
             "MaximumNMM", "MaximumMCC", "MaximumBWL1", "ActualNMM", "ActualMCC", "ActualBWL1")


def _mean_std(values: list) -> tuple[float, float]:
    """Mean and sample standard deviation, NaN left out, with the averaged table's own arithmetic."""
    import pandas as pd

    numbers_ = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").dropna().astype(float)
    if numbers_.empty:
        return NAN, NAN
    return float(numbers_.mean()), float(numbers_.std(ddof=1)) if len(numbers_) >= 2 else NAN


def _as_record(value, name: str) -> MaskRecord:
    """A ``MaskRecord``, or one from its JSON form (``MaskRecord.to_dict``), checked enough to score."""
    if isinstance(value, MaskRecord):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a MaskRecord or its dict (MaskRecord.to_dict), got {type(value).__name__}")
    try:
        record = MaskRecord.from_dict(value)
    except KeyError as exc:
        raise ValueError(f"{name} lacks the key {exc} of a MaskRecord's dict (MaskRecord.to_dict)") from None
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"{name} is not a MaskRecord's dict (MaskRecord.to_dict): {exc}") from None
    if record.status not in (SCORED, NOT_SCOREABLE, UNREADABLE):
        raise ValueError(f"{name} has status {record.status!r}, not one of {SCORED!r}, {NOT_SCOREABLE!r}, "
                         f"{UNREADABLE!r}")
    for part in ("positive", "negative", "image_positive", "image_negative"):
        counts = getattr(record, part)
        if counts is not None and (counts.shape != (BINS,) or (counts < 0).any()):
            raise ValueError(f"{name}[{part!r}] must hold {BINS} counts of 0 or more, got shape {counts.shape}")
    return record


_RUN_FIELDS = {f.metadata["column"]: f.name for f in fields(MaskRunMetrics) if not f.name.startswith("stddev_")}


class MaskScores:
    """Masks accumulated shard by shard, scored once: torchmetrics' ``update`` / ``merge`` / ``compute``.

    The state is one ``MaskRecord`` per mask (two 256-bin histograms and a few counts), in the order
    the masks were added (``self``'s, then ``other``'s on ``merge``), exactly the records the cluster
    folds: scoring shards and merging them in order gives what scoring all the masks at once gives.
    ``records`` exposes them (``MaskRecord.to_dict`` is their JSON form) and ``MaskScores(records=…)``
    starts from them, as ``MaskRecord`` values or as those dicts. The actual threshold and the extras'
    pixels are chosen at ``compute``, since the records do not depend on them. A shard may be empty;
    ``compute`` needs a mask overall (unscored ones count: their run has NaN means, as MediScore's).

    Examples
    --------
    >>> square = np.zeros((5, 5), bool)
    >>> square[1:4, 1:4] = True
    >>> good = np.where(square, 0, 255).astype(np.uint8)
    >>> poor = np.full((5, 5), 128, np.uint8)
    >>> left = MaskScores().update(square, good, erode_size=0, dilate_size=0)
    >>> right = MaskScores().update(square, poor, erode_size=0, dilate_size=0)
    >>> both = left.merge(right)
    >>> len(both), both.compute().optimum_mcc, both.compute().scoreable_trials
    (2, 0.5, 2)

    The state as JSON, and back:

    >>> import json
    >>> state = json.dumps([record.to_dict() for record in both.records])
    >>> MaskScores(records=json.loads(state)).compute() == both.compute()
    True
    """

    def __init__(self, *, records=()) -> None:
        try:
            records = tuple(records)
        except TypeError:
            raise ValueError(f"records must be an iterable of MaskRecord values or their dicts, "
                             f"got {type(records).__name__}") from None
        self._records = tuple(_as_record(record, f"records[{i}]") for i, record in enumerate(records))

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"MaskScores({len(self._records)} masks)"

    @property
    def records(self) -> tuple[MaskRecord, ...]:
        """The state: one record per mask, in the order added.

        Examples
        --------
        >>> scores = MaskScores().update(np.eye(2, dtype=bool), np.zeros((2, 2), np.uint8), erode_size=0,
        ...                              dilate_size=0)
        >>> [int(n) for n in scores.records[0].positive[:2]], scores.records[0].status
        ([2, 0], 'scored')
        """
        return self._records

    def update(self, reference, system, *, no_score=None, distractors=None, erode_size=15, dilate_size=11,
               distraction_size=15, kernel="box") -> "MaskScores":
        """Add one mask (arguments as for ``mask_metrics``) and return ``self``. A reference without a
        manipulated pixel is recorded as not scored, as MediScore counts it (``total_trials``).

        Examples
        --------
        >>> scores = MaskScores()
        >>> scores.update(np.eye(2, dtype=bool), np.eye(2, dtype=np.uint8)) is scores
        True
        """
        record = _record(reference, system, no_score, distractors, erode_size, dilate_size, distraction_size, kernel)
        self._records = self._records + (record,)
        return self

    def merge(self, other: "MaskScores") -> "MaskScores":
        """A new object holding ``self``'s masks, then ``other``'s; neither is changed.

        Examples
        --------
        >>> a = MaskScores().update(np.eye(2, dtype=bool), np.eye(2, dtype=np.uint8))
        >>> len(a.merge(a)), len(a)
        (2, 1)
        """
        if not isinstance(other, MaskScores):
            raise TypeError(f"can merge only a MaskScores, got {type(other).__name__}")
        return MaskScores(records=self._records + other._records)

    def compute(self, *, threshold=None, extras_pixels="image") -> MaskRunMetrics:
        """The run's averaged metrics (``MaskRunMetrics``); ``threshold`` is the run's actual threshold
        (``--sbin``) and ``extras_pixels`` as for ``mask_metrics``.

        Examples
        --------
        >>> scores = MaskScores().update(np.eye(3, dtype=bool), np.full((3, 3), 7, np.uint8), erode_size=0,
        ...                              dilate_size=0)
        >>> run = scores.compute(threshold=10)
        >>> run.optimum_mcc, run.actual_bwl1, run.maximum_threshold
        (0.0, 0.6666666666666666, -1)
        """
        threshold = _check_threshold(threshold)
        extras_pixels = _check_extras_pixels(extras_pixels)
        if not self._records:
            raise ValueError("masks (all updates together) is empty: there is no mask to score")
        actual = None if threshold is None else float(threshold)
        scored = [r for r in self._records if r.scored]
        pixel_auc, mask_auc = average_aucs(scored)  # as the scorer's _role_result (mfscore/masks/scorer.py)
        maximum = maximum_threshold(scored)
        maximum = None if math.isnan(maximum) else maximum
        cells = [trial_cells(r, actual=actual, maximum=maximum) for r in scored]
        values = {}
        for column in _AVERAGED:  # the averaged table's row (mfscore/reports/mask_report.py averaged_row)
            mean, std = _mean_std([round_significant(c.get(column, NAN), 16) for c in cells])
            if column.endswith("Threshold") and not math.isnan(mean):
                mean = int(mean)
            name = _RUN_FIELDS[column]
            values[name], values[f"stddev_{name}"] = mean, std
        import pandas as pd

        extras = pd.DataFrame([extra_cells(r, actual, extras_pixels) for r in self._records],
                              columns=list(EXTRA_COLUMNS))
        for row in extra_summary(extras, SUMMARIZED, extras_pixels).itertuples():
            name = _RUN_FIELDS[row.Metric]
            values[name], values[f"stddev_{name}"] = row.Mean, row.StdDev
        if threshold is None:
            values.update({name: None for name in values if "actual_" in name})
        return MaskRunMetrics(**values, pixel_average_auc=round_significant(pixel_auc, 16),
                              mask_average_auc=round_significant(mask_auc, 16),
                              maximum_threshold=None if maximum is None else int(maximum),
                              actual_threshold=threshold, total_trials=len(self._records),
                              scoreable_trials=len(scored))
