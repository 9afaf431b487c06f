"""Detection metrics on arrays, in scikit-learn's order and conventions: ``f(y_true, y_score)``.

Naming contract: a ``*_score`` is higher-better, an ``*_error`` or ``*_loss`` lower-better. So
``roc_auc_score``, ``partial_auc_score``, ``cdr_at_far_score`` and ``pd_at_far_score`` grow with a
better detector, ``eer_error`` (the equal error rate), ``cllr_loss`` and ``min_cllr_loss`` shrink.

``y_true`` holds one binary label per trial; the positive label (a target, a manipulated probe) is
``True`` for booleans, ``1`` for 0/1 and -1/1 labels, ``"Y"`` for ``"Y"``/``"N"`` labels (MediScore's
``IsTarget``); any other two labels need ``pos_label=``. ``y_score`` is finite, higher meaning more
likely a target. Bad input (NaN or inf scores, labels that are not binary, arrays that are not 1-D
or differ in length, no trial, one class only) raises a ``ValueError`` naming the argument: these
functions never return a number for it. The checks are the ``_check_*`` helpers below, apart from
the maths, which is mfscore's own core (``mfscore.detection``): the same numbers as
``mfscore detection`` (docs/detection.md "Metrics").

``sample_weight`` (scikit-learn's: the weighted ROC of ``sklearn.metrics.roc_curve``) is taken by the metrics
read off the ROC: ``roc_auc_score``, ``eer_error``, ``partial_auc_score``, ``cdr_at_far_score``,
``pd_at_far_score`` and ``roc_curve``; the others take none (docs/api.md "Detection: weights, the ROC's points,
column vectors"). An ``(n, 1)`` column is read as 1-D with a ``DataConversionWarning``, as scikit-learn's
``column_or_1d`` does.

``DetectionScores`` accumulates trials shard by shard (``update``/``merge``/``compute``), as the
cluster folds its per-trial records.

Only numpy is imported with this module: SciPy (Cllr's PAV) is imported by the functions that use it.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from numbers import Real

import numpy as np

from mfscore.detection.bootstrap import bootstrap_intervals as _bootstrap_intervals
from mfscore.detection.metrics import detection_metrics as _detection_metrics
from mfscore.detection.options import LLR_BASES
from mfscore.detection.roc import Roc, drop_collinear
from mfscore.detection.roc import auc as _auc
from mfscore.detection.roc import cdr_at_far as _cdr_at_far
from mfscore.detection.roc import eer as _eer
from mfscore.detection.roc import partial_auc as _partial_auc
from mfscore.detection.roc import roc_curve as _roc
from mfscore.detection.semafor import PLAN_FARS, roc_all_thresholds, semafor_report
from mfscore.detection.semafor import pd_at_far as _pd_at_far

__all__ = [
    "roc_auc_score",
    "eer_error",
    "partial_auc_score",
    "cdr_at_far_score",
    "pd_at_far_score",
    "roc_curve",
    "bootstrap_intervals",
    "semafor_metrics",
    "cllr_loss",
    "min_cllr_loss",
    "DetectionIntervals",
    "DetectionResult",
    "DetectionScores",
    "DataConversionWarning",
]

_LABELS = "bool, 0/1, -1/1 or 'Y'/'N' labels, or two labels with pos_label="


class DataConversionWarning(UserWarning):
    """An input was converted to what the function takes: an ``(n, 1)`` column read as a 1-D array, as
    scikit-learn's ``column_or_1d`` does (its ``DataConversionWarning``).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     roc_auc_score([[0], [0], [1], [1]], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> caught[0].category.__name__, str(caught[0].message)[:41]
    ('DataConversionWarning', 'y_true is a column vector of shape (4, 1)')
    """


# ---- input checks -------------------------------------------------------------------------------

def _outside_this_module() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller point at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    return level


def _check_1d(values, name: str) -> np.ndarray:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array-like: {exc}") from None
    if array.ndim == 2 and array.shape[1] == 1:
        warnings.warn(f"{name} is a column vector of shape {array.shape}: read as 1-D (pass {name}.ravel() to say "
                      "so)", DataConversionWarning, stacklevel=_outside_this_module())
        array = array.ravel()
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {array.shape}")
    if array.dtype == object:  # e.g. a pandas object column: let numpy find the values' own type
        array = np.asarray(array.tolist())
    return array


def _check_scores(values, name: str) -> np.ndarray:
    scores = _check_1d(values, name)
    if scores.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got values of dtype {scores.dtype}")
    scores = scores.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"{name} must be finite: {name}[{bad[0]}] is {scores[bad[0]]}")
    return scores


def _preview(values: np.ndarray) -> str:
    shown = ", ".join(repr(v) for v in values[:5].tolist())
    return f"[{shown}{', ...' if values.size > 5 else ''}]"


def _check_labels(values, name: str, pos_label) -> np.ndarray:
    """1 for the positive label, 0 for the other (int64)."""
    labels = _check_1d(values, name)
    if labels.dtype.kind not in "biufUS":
        raise ValueError(f"{name} must hold {_LABELS}; got values of dtype {labels.dtype}")
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise ValueError(f"{name} must hold binary labels: {name}[{np.flatnonzero(np.isnan(labels))[0]}] is NaN")
    distinct = np.unique(labels)
    if distinct.size > 2:
        hint = (" (continuous values: are y_true and y_score swapped?)"
                if labels.dtype.kind == "f" and not np.all(distinct == np.round(distinct)) else "")
        raise ValueError(f"{name} must hold binary labels, got {distinct.size} distinct values "
                         f"{_preview(distinct)}{hint}")
    present = set(distinct.tolist())
    if pos_label is not None:
        if distinct.size == 2 and pos_label not in present:
            raise ValueError(f"pos_label={pos_label!r} is not one of the labels in {name}: {_preview(distinct)}")
        return (labels == pos_label).astype(np.int64)
    if labels.dtype.kind == "b":
        return labels.astype(np.int64)
    if labels.dtype.kind in "iuf" and (present <= {0, 1} or present <= {-1, 1}):
        return (labels == 1).astype(np.int64)
    if labels.dtype.kind in "US" and present <= {"Y", "N"}:
        return (labels == "Y").astype(np.int64)
    raise ValueError(f"{name} must hold {_LABELS}; got {_preview(distinct)}: pass pos_label= to say which is positive")


def _check_trials(y_true, y_score, *, pos_label=None, score_name: str = "y_score",
                  whole: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Float scores and 0/1 labels of equal length; ``whole``: not empty and both classes present."""
    _check_1d(y_true, "y_true")  # a y_true of the wrong shape is named before anything in y_score
    scores = _check_scores(y_score, score_name)
    labels = _check_labels(y_true, "y_true", pos_label)
    if labels.size != scores.size:
        raise ValueError(f"y_true and {score_name} differ in length: {labels.size} vs {scores.size}")
    if whole:
        _check_both_classes(labels, "y_true")
    return scores, labels


def _check_weighted_trials(y_true, y_score, pos_label, sample_weight):
    """``_check_trials``' scores and labels, and the checked ``sample_weight`` (None without)."""
    scores, labels = _check_trials(y_true, y_score, pos_label=pos_label)
    return scores, labels, _check_weights(sample_weight, labels)


def _check_both_classes(labels: np.ndarray, name: str) -> None:
    if labels.size == 0:
        raise ValueError(f"{name} is empty: there is no trial to score")
    n_pos = int(labels.sum())
    if n_pos == 0 or n_pos == labels.size:
        raise ValueError(f"{name} holds one class only ({n_pos} positive, {labels.size - n_pos} negative): "
                         "the metric needs both targets and non-targets")


def _check_weights(sample_weight, labels: np.ndarray) -> np.ndarray | None:
    """Finite non-negative float weights, one a trial, giving both classes some weight; None stays None."""
    if sample_weight is None:
        return None
    weights = _check_scores(sample_weight, "sample_weight")
    if weights.size != labels.size:
        raise ValueError(f"y_true and sample_weight differ in length: {labels.size} vs {weights.size}")
    negative = np.flatnonzero(weights < 0)
    if negative.size:
        raise ValueError(f"sample_weight must not be negative: sample_weight[{negative[0]}] is {weights[negative[0]]}")
    for label, kind in ((1, "targets"), (0, "non-targets")):
        if not weights[labels == label].sum() > 0:
            raise ValueError(f"sample_weight gives the {kind} no weight: the metric needs both classes")
    return weights


def _curve(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, *, drop: bool = True) -> Roc:
    """The ROC (``drop``: collinear points dropped; else a point per distinct score), weighted as scikit-learn's
    ``roc_curve`` is: trials of zero weight left out, (fps, tps) the cumulative weights of the non-targets and
    targets in descending score order (ties in input order, as its stable sort keeps them), so the same floats."""
    if weights is None:
        return _roc(scores, labels) if drop else roc_all_thresholds(scores, labels)
    kept = weights != 0
    order = np.argsort(-scores[kept], kind="stable")
    ranked, target, weight = scores[kept][order], labels[kept][order].astype(np.float64), weights[kept][order]
    ends = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]
    tps = np.cumsum(target * weight)[ends]
    fps = np.cumsum((1 - target) * weight)[ends]
    thresholds = ranked[ends]
    if drop:
        keep = drop_collinear(fps, tps)
        fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    if fps[0] != 0:  # the origin, as the unweighted curve prepends it
        fps, tps, thresholds = np.r_[0.0, fps], np.r_[0.0, tps], np.r_[thresholds[0] + 1, thresholds]
    n_target = int(np.count_nonzero(target))
    return Roc(fps / fps[-1], tps / tps[-1], thresholds, n_target, target.size - n_target)


def _check_rate(value, name: str, *, open_ends: bool = False) -> float:
    """A rate in [0, 1] (``open_ends``: in (0, 1))."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    inside = 0.0 < value < 1.0 if open_ends else 0.0 <= value <= 1.0
    if not inside:
        raise ValueError(f"{name} must lie in {'(0, 1)' if open_ends else '[0, 1]'}, got {value!r}")
    return value


# ---- metrics ------------------------------------------------------------------------------------

def roc_auc_score(y_true, y_score, *, pos_label=None, sample_weight=None) -> float:
    """Area under the ROC curve (higher is better): the chance that a random target outscores a
    random non-target, ties counting half (docs/detection.md "Metrics").

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (see the module docstring for the accepted encodings).
    y_score : array-like of shape (n,)
        Finite confidence scores, higher meaning more likely a target.
    pos_label : optional
        The positive label, for labels other than bool, 0/1, -1/1 and "Y"/"N".
    sample_weight : array-like of shape (n,), optional
        Finite non-negative weight of each trial: the weighted ROC of scikit-learn's ``roc_curve``
        (each class's rates are shares of its weight); both classes need some weight.

    Returns
    -------
    float

    Examples
    --------
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc_score(["N", "N", "Y", "Y"], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], sample_weight=[1, 3, 1, 1])
    0.625
    """
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    return float(_auc(_curve(scores, labels, weights)))


def eer_error(y_true, y_score, *, pos_label=None, sample_weight=None) -> float:
    """Equal error rate (lower is better): ``(FPR + FNR) / 2`` at the ROC point where ``|FPR - FNR|``
    is smallest, the first such point on ties, MediScore's definition (docs/detection.md §6.4).

    The points are those of ``roc_curve`` (collinear points dropped), so no interpolation happens:
    the value can lie above the crossing of the interpolated curve.

    Examples
    --------
    >>> eer_error([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.5
    >>> eer_error([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4])
    0.0
    >>> eer_error([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], sample_weight=[1, 0, 1, 1])
    0.0
    """
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    return _eer(_curve(scores, labels, weights))


def partial_auc_score(y_true, y_score, *, max_far: float = 0.1, pos_label=None, sample_weight=None) -> float:
    """MediScore's ``AUC@FAR`` (higher is better): the area under the ROC up to its last point with
    FPR <= ``max_far``, not normalised, so at most ``max_far`` (docs/detection.md §6.3).

    The curve is not cut at ``max_far``: SemaFor's interpolated pAUC is ``semafor_metrics``'
    ``pAUC@0.1``.

    Examples
    --------
    >>> partial_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], max_far=0.5)
    0.25
    """
    max_far = _check_rate(max_far, "max_far")
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    return float(_partial_auc(_curve(scores, labels, weights), max_far))


def cdr_at_far_score(y_true, y_score, *, far: float = 0.1, pos_label=None, sample_weight=None) -> float:
    """MediScore's ``CDR@FAR`` (higher is better): the true positive rate at FPR = ``far``, linearly
    interpolated between the ROC points around it (docs/detection.md §6.5).

    Examples
    --------
    >>> cdr_at_far_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], far=0.1)
    0.5
    >>> cdr_at_far_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], far=0.75)
    1.0
    """
    far = _check_rate(far, "far")
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    return _cdr_at_far(_curve(scores, labels, weights), far)


def pd_at_far_score(y_true, y_score, *, far: float, method: str = "interpolate", pos_label=None,
                    sample_weight=None) -> float:
    """SemaFor's p(D) at a false-alarm rate (higher is better; docs/metrics.md §1.3).

    ``method="interpolate"`` reads the ROC linearly interpolated at ``far`` (the plan's choice (b),
    equal to ``cdr_at_far_score``); ``"step"`` takes the largest p(D) at a threshold whose FAR is at
    most ``far`` (choice (a), every threshold considered).

    Examples
    --------
    A target and a non-target tie at 0.5: the interpolated reading runs along their diagonal
    segment, the step reading stays at the vertex before it.

    >>> y_true, y_score = [0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.5, 0.5, 0.9]
    >>> round(pd_at_far_score(y_true, y_score, far=0.1), 4)
    0.7
    >>> pd_at_far_score(y_true, y_score, far=0.1, method="step")
    0.5
    """
    far = _check_rate(far, "far")
    if method not in ("interpolate", "step"):
        raise ValueError(f"method must be 'interpolate' or 'step', got {method!r}")
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    return _pd_at_far(_curve(scores, labels, weights, drop=method == "interpolate"), far, method=method)


def roc_curve(y_true, y_score, *, pos_label=None, sample_weight=None,
              drop_intermediate: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MediScore's ROC points, as ``--dump`` writes them: ``(fpr, tpr, thresholds)``.

    One point per distinct score (ties form one point), in order of non-decreasing FPR; with
    ``drop_intermediate`` (the default, as in scikit-learn and MediScore) the points scikit-learn's
    ``drop_intermediate=True`` drops are dropped (a point whose FP and TP counts both have a zero
    second difference). The origin is prepended only when the highest score has a false alarm, with
    the threshold ``max(y_score) + 1`` (scikit-learn 0.19, the version MediScore's checkfiles hold;
    today's scikit-learn always prepends it, at ``inf``). A trial is positive at a threshold when its
    score is at least the threshold. ``sample_weight`` as in ``roc_auc_score``.

    Examples
    --------
    >>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr.tolist(), tpr.tolist(), thresholds.tolist()
    ([0.0, 0.5, 0.5, 1.0], [0.5, 0.5, 1.0, 1.0], [0.8, 0.4, 0.35, 0.1])
    >>> fpr, tpr, thresholds = roc_curve([0, 1, 1, 1], [0.1, 0.2, 0.3, 0.4], drop_intermediate=False)
    >>> tpr.tolist(), thresholds.tolist()
    ([0.3333333333333333, 0.6666666666666666, 1.0, 1.0], [0.4, 0.3, 0.2, 0.1])
    """
    if not isinstance(drop_intermediate, (bool, np.bool_)):
        raise ValueError(f"drop_intermediate must be True or False, got {drop_intermediate!r}")
    scores, labels, weights = _check_weighted_trials(y_true, y_score, pos_label, sample_weight)
    roc = _curve(scores, labels, weights, drop=bool(drop_intermediate))
    return roc.fpr, roc.tpr, roc.thresholds


@dataclass(frozen=True)
class DetectionIntervals:
    """Percentile bootstrap intervals ``(low, high)`` at ``ci_level`` of AUC, ``AUC@FAR`` and
    ``CDR@FAR`` (the report's ``*_CI_LOWER``/``*_CI_UPPER`` columns).

    Examples
    --------
    >>> DetectionIntervals(auc=(0.7, 0.8), partial_auc=(0.02, 0.04), cdr=(0.3, 0.5), ci_level=0.9).auc
    (0.7, 0.8)
    """

    auc: tuple[float, float]
    partial_auc: tuple[float, float]
    cdr: tuple[float, float]
    ci_level: float


def _intervals(found, ci_level: float) -> DetectionIntervals:
    def pair(interval):
        return float(interval.lower), float(interval.upper)

    return DetectionIntervals(pair(found.auc), pair(found.partial_auc), pair(found.cdr), ci_level)


def bootstrap_intervals(y_true, y_score, *, far_stop: float = 0.1, ci_level: float = 0.9,
                        pos_label=None) -> DetectionIntervals:
    """Bootstrap intervals of AUC, ``AUC@FAR`` and ``CDR@FAR`` at ``far_stop``, the draws of
    ``mfscore detection --ci`` (docs/detection.md §6.6): 500 resamples of the trials drawn with
    ``numpy.random.RandomState(77)``, percentile bounds at ``ci_level``; a resample that drew a
    single class is left out.

    The draws follow the order of the trials: resample ``i`` takes the trials at positions
    ``RandomState(77)``'s ``randint(0, n, n)`` gives, so the same trials in another order give other
    (equally valid) intervals. To reproduce the command line, pass the trials in its order, the
    rows of the reference file (those with a system score). To get intervals independent of input
    order, sort by score, then label, first: trials with equal score and label are
    interchangeable, so every order sorted that way gives the same intervals::

        order = np.lexsort((y_true, y_score))
        y_true, y_score = np.asarray(y_true)[order], np.asarray(y_score)[order]

    ``mfscore detection --ci`` computes the same replicates by the same code (``replicate_slice``, in
    slices it joins), so it gives the same intervals in about the same time; the time grows with the
    number of distinct scores (docs/api.md, its paragraph "Bootstrap time").

    Parameters
    ----------
    far_stop : float
        The FAR of ``AUC@FAR`` and ``CDR@FAR`` (``--farStop``).
    ci_level : float
        In (0, 1) (the command line accepts (0.8, 0.99), as MediScore does).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y_true = rng.random(200) < 0.5
    >>> y_score = y_true + rng.normal(size=200)
    >>> found = bootstrap_intervals(y_true, y_score)
    >>> [round(bound, 4) for bound in found.auc]
    [0.7348, 0.8414]

    Sorted by score, then label, two orders of the same trials give the same intervals:

    >>> def by_score_then_label(y_true, y_score):
    ...     order = np.lexsort((y_true, y_score))
    ...     return bootstrap_intervals(y_true[order], y_score[order])
    >>> shuffled = rng.permutation(200)
    >>> by_score_then_label(y_true, y_score) == by_score_then_label(y_true[shuffled], y_score[shuffled])
    True
    """
    far_stop = _check_rate(far_stop, "far_stop")
    ci_level = _check_rate(ci_level, "ci_level", open_ends=True)
    scores, labels = _check_trials(y_true, y_score, pos_label=pos_label)
    return _intervals(_bootstrap_intervals(scores, labels, far_stop, ci_level), ci_level)


def semafor_metrics(y_true, y_score, *, fars=PLAN_FARS, base: str = "e", pos_label=None) -> dict:
    """The SemaFor detection metrics of one competition, under the columns and in the order of the
    ``--semafor`` report (docs/detection.md "SemaFor extension"), without the run's own columns
    (``QUERY``, ``TRR``, ``THRESHOLD_SET``, ``LLR_BASE``).

    ``y_score`` is read as LLRs in ``base`` (``"e"``, ``"10"`` or ``"2"``) for ``Cllr``. Which way
    is better: ``pD``, ``bACC`` and ``pAUC`` higher, ``EER``, ``FAR``, ``Cllr`` and ``minCllr``
    lower; θ* (``THRESHOLD_EER``) is the score of the EER vertex.

    Examples
    --------
    >>> found = semafor_metrics([0, 0, 0, 0, 1, 1], [-2.0, -1.0, 0.5, 1.0, 0.2, 3.0])
    >>> list(found)[:4]
    ['pD@FAR0.08', 'pD_step@FAR0.08', 'pD@FAR0.1', 'pD_step@FAR0.1']
    >>> found["THRESHOLD_EER"], found["pD@EER"], found["FAR@EER"], found["N_TARGET"]
    (0.5, 0.5, 0.5, 2)
    """
    fars = tuple(_check_rate(f, "fars") for f in np.atleast_1d(np.asarray(fars, dtype=object)).tolist())
    factor = _check_base(base)
    scores, labels = _check_trials(y_true, y_score, pos_label=pos_label)
    from mfscore.detection.calibration import cllr as _cllr
    from mfscore.detection.calibration import min_cllr as _min_cllr

    found = dict(semafor_report(scores, labels, fars=fars))
    found["Cllr"] = _cllr(scores * factor, labels)
    found["minCllr"] = _min_cllr(scores, labels)
    return found


def _check_base(base) -> float:
    if str(base) not in LLR_BASES:
        raise ValueError(f"base must be one of {', '.join(map(repr, LLR_BASES))}, got {base!r}")
    return LLR_BASES[str(base)]


def cllr_loss(y_true, llr, *, base: str = "e", pos_label=None) -> float:
    """Cllr (lower is better): the cost of the scores read as log-likelihood ratios in ``base``
    (``"e"``, ``"10"`` or ``"2"``), in bits; 1 for a system that always says ``llr = 0``, 0 for a
    perfect one. Not part of the SemaFor plan (docs/metrics.md §1.8).

    Examples
    --------
    >>> round(cllr_loss([0, 0, 1, 1], [-2.0, 0.5, 1.0, 3.0]), 4)
    0.5276
    >>> cllr_loss([0, 1], [0.0, 0.0])
    1.0
    """
    from mfscore.detection.calibration import cllr as _cllr

    factor = _check_base(base)
    scores, labels = _check_trials(y_true, llr, pos_label=pos_label, score_name="llr")
    return _cllr(scores * factor, labels)


def min_cllr_loss(y_true, llr, *, pos_label=None) -> float:
    """minCllr (lower is better): Cllr after the best monotone recalibration of ``llr`` (PAV), the
    part of Cllr that calibration cannot remove; it does not depend on the logarithms' base.

    Examples
    --------
    >>> min_cllr_loss([0, 0, 1, 1], [-2.0, 0.5, 1.0, 3.0])
    0.0
    >>> round(min_cllr_loss([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 4)
    0.5
    """
    from mfscore.detection.calibration import min_cllr as _min_cllr

    scores, labels = _check_trials(y_true, llr, pos_label=pos_label, score_name="llr")
    return _min_cllr(scores, labels)


# ---- mergeable state ----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DetectionResult:
    """What ``DetectionScores.compute`` gives: the report's metrics at ``far_stop``, the ROC points
    ``(fpr, tpr, thresholds)`` of ``roc_curve``, and the intervals when asked (else None).

    Examples
    --------
    >>> result = DetectionScores().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).compute()
    >>> result.n_target, result.auc, result.eer, result.intervals is None
    (2, 0.75, 0.5, True)
    """

    n_target: int
    n_nontarget: int
    auc: float
    eer: float
    partial_auc: float
    cdr: float
    far_stop: float
    intervals: DetectionIntervals | None
    roc: tuple[np.ndarray, np.ndarray, np.ndarray]


class DetectionScores:
    """Detection trials accumulated shard by shard, scored once: torchmetrics' ``update`` /
    ``merge`` / ``compute``. The state is the trials themselves, in the order they were added
    (first ``self``'s, then ``other``'s on ``merge``), as the cluster's records are: scoring shards
    and merging them gives what scoring all their trials at once gives, the bootstrap intervals
    included when the shards are merged in the trials' order (see ``bootstrap_intervals``).

    A shard may be empty or hold one class; ``compute`` needs both classes overall.

    Examples
    --------
    >>> left = DetectionScores().update([0, 1], [0.1, 0.35])
    >>> right = DetectionScores().update(["N", "Y"], [0.4, 0.8])
    >>> both = left.merge(right)
    >>> both.n_trials, both.compute().auc
    (4, 0.75)
    """

    def __init__(self) -> None:
        self._scores: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        self._shards = 1

    def __repr__(self) -> str:
        """How many trials, targets and non-targets it holds, from how many ``update`` calls and merged shards.

        Examples
        --------
        >>> left = DetectionScores().update([0, 1], [0.1, 0.35]).update([1], [0.9])
        >>> left
        DetectionScores(n_trials=3, n_target=2, n_nontarget=1, n_updates=2, n_shards=1)
        >>> left.merge(DetectionScores().update(["N"], [0.4]))
        DetectionScores(n_trials=4, n_target=2, n_nontarget=2, n_updates=3, n_shards=2)
        """
        n_target = int(sum(labels.sum() for labels in self._labels))
        return (f"DetectionScores(n_trials={self.n_trials}, n_target={n_target}, "
                f"n_nontarget={self.n_trials - n_target}, n_updates={len(self._scores)}, n_shards={self._shards})")

    @property
    def n_trials(self) -> int:
        """Trials accumulated so far.

        Examples
        --------
        >>> DetectionScores().update([True, False, True], [3.0, 1.0, 2.0]).n_trials
        3
        """
        return sum(s.size for s in self._scores)

    def update(self, y_true, y_score, *, pos_label=None) -> "DetectionScores":
        """Add trials (checked as the functions check them; one class or none is allowed here) and
        return ``self``.

        Examples
        --------
        >>> scores = DetectionScores()
        >>> scores.update([1, 1], [0.9, 0.7]) is scores
        True
        """
        scores, labels = _check_trials(y_true, y_score, pos_label=pos_label, whole=False)
        self._scores.append(scores)
        self._labels.append(labels)
        return self

    def merge(self, other: "DetectionScores") -> "DetectionScores":
        """A new object holding ``self``'s trials, then ``other``'s; neither is changed.

        Examples
        --------
        >>> a = DetectionScores().update([0, 1], [0.2, 0.9])
        >>> b = DetectionScores().update([0], [0.5])
        >>> a.merge(b).n_trials, a.n_trials
        (3, 2)
        """
        if not isinstance(other, DetectionScores):
            raise TypeError(f"can merge only a DetectionScores, got {type(other).__name__}")
        merged = DetectionScores()
        merged._scores = self._scores + other._scores
        merged._labels = self._labels + other._labels
        merged._shards = self._shards + other._shards
        return merged

    def _trials(self) -> tuple[np.ndarray, np.ndarray]:
        scores = np.concatenate(self._scores) if self._scores else np.zeros(0)
        labels = np.concatenate(self._labels) if self._labels else np.zeros(0, dtype=np.int64)
        return scores, labels

    def compute(self, *, far_stop: float = 0.1, ci: bool = False, ci_level: float = 0.9) -> DetectionResult:
        """AUC, EER, ``AUC@FAR`` and ``CDR@FAR`` at ``far_stop``, the ROC and, with ``ci``, the
        intervals of ``bootstrap_intervals`` over the trials in the order they were added.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> y_true = rng.random(100) < 0.5
        >>> y_score = y_true + rng.normal(size=100)
        >>> shards = DetectionScores().update(y_true[:60], y_score[:60]).update(y_true[60:], y_score[60:])
        >>> result = shards.compute(ci=True)
        >>> round(result.auc, 4), [round(bound, 4) for bound in result.intervals.auc]
        (0.7363, [0.651, 0.814])
        >>> result.intervals == bootstrap_intervals(y_true, y_score)
        True
        """
        far_stop = _check_rate(far_stop, "far_stop")
        ci_level = _check_rate(ci_level, "ci_level", open_ends=True)
        scores, labels = self._trials()
        _check_both_classes(labels, "y_true (all updates together)")
        found = _detection_metrics(scores, labels, far_stop=far_stop, ci=bool(ci), ci_level=ci_level)
        roc = found.roc
        return DetectionResult(found.n_target, found.n_nontarget, float(found.auc), float(found.eer),
                               float(found.partial_auc), float(found.cdr), far_stop,
                               _intervals(found.intervals, ci_level) if ci else None,
                               (roc.fpr, roc.tpr, roc.thresholds))
