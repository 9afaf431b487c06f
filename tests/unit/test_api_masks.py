"""The Python API for image masks on arrays (``mfscore.api.masks``), against files, scikit-learn and itself.

* **Arrays = files, on MediScore's test masks.** For every mask of six MaskScorer conformance cases (colour
  references with distractors and ``--nspx``, splice probe and donor sides with ``--sbin``, bit-plane JPEG 2000
  references with ``-pppns``), the test plans the run as ``mfscore mask`` does, decodes the reference and system
  masks itself (``mfscore.formats.images``), builds the reference region and distractors as the file path
  does (``colour_selection`` / ``bitplane_selection`` with the planned colours or bit-planes; the opt-out
  pixel value as ``no_score = system == value``) and calls the API. Two comparisons:
  the record is **exactly** ``score_mask``'s on the files (so every metric is the same number), and each
  metric written in MediScore's expected ``_mask_scores_perimage.csv`` and averaged ``_mask_score.csv`` is
  **exactly** the API's value rounded as the report rounds it (16 then 12 significant digits: the cases run
  with ``--precision 12``).
* **scikit-learn on random masks.** F1 and IoU (``f1_score``, ``jaccard_score`` on the masks binarised at the
  threshold, no-score pixels left out, or every pixel), MCC (``matthews_corrcoef``) at the threshold and as the
  best over thresholds, the soft MCC/IoU/F1 (the same with sample weights y and 1 − y), the pixel AUC
  (``roc_auc_score``): within 1e-12 absolute.
* **Bad inputs**: a table, each a ``ValueError`` whose message starts with the argument's name.
* **Merge invariance**: shards merged in order compute exactly what all the masks at once compute.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score, jaccard_score, matthews_corrcoef, roc_auc_score

from mfscore.api.masks import MaskMetrics, MaskRunMetrics, MaskScores, UndefinedMaskMetricWarning, mask_metrics
from mfscore.formats.images import read_colour, read_grey, read_layers
from mfscore.masks.extra_metrics import extra_cells
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.mask_scoring import score_mask
from mfscore.masks.reference_selection import bitplane_selection, colour_selection
from mfscore.masks.scorer import MaskOptions
from mfscore.masks.trial_metrics import trial_cells
from mfscore.reports.mask_outputs import ReportOptions
from mfscore.reports.significant_digits import round_significant
from mfscore.tasks.mask import TASK, Options

TOL = 1e-12
DATA = Path(__file__).resolve().parents[1] / "conformance" / "data"
MT = DATA / "maskScorerTests"
CHECKFILES = MT / "compcheckfiles"
PRECISION = 12  # every case below runs with --precision 12 (tests/conformance/mask_cases.py)


# --------------------------------------------------------------------------------------------
# Arrays = files, on MediScore's conformance masks


@dataclasses.dataclass(frozen=True)
class FileCase:
    name: str          # the checkfiles' stem: ref_maskreport_<name>-perimage.csv and ref_maskreport_<name>.csv
    task: str
    reference: str     # relative to maskScorerTests/
    index: str
    system: str
    scoring: dict = dataclasses.field(default_factory=dict)
    index_filter: bool = False


def _system(stem: str) -> str:
    return f"{stem}/{stem}.csv"


NC17_MANIP = ("reference/manipulation/NC2017-manipulation-ref.csv", "indexes/NC2017-manipulation-index.csv")
FILE_CASES = [
    FileCase("manip", "manipulation", "reference/manipulation/NC2016-manipulation-ref.csv",
             "indexes/NC2016-manipulation-index.csv", _system("B_NC2016_Unittest_Manipulation_ImgOnly_c-me2_1")),
    FileCase("all", "manipulation", *NC17_MANIP, _system("B_NC2017_Unittest_Manipulation_ImgOnly_c-me2_1"),
             {"pixel_value": 200}),
    FileCase("splice", "splice", "reference/splice/NC2017-splice-ref.csv", "indexes/NC2017-splice-index.csv",
             _system("B_NC2017_Unittest_Splice_ImgOnly_p-me_1")),
    FileCase("splicebin", "splice", "reference/splice/NC2017-splice-ref.csv", "indexes/NC2017-splice-index.csv",
             _system("C_NC2017_Unittest_Splice_ImgOnly_p-me_1"), {"sbin": 200, "jpeg2000": True}, index_filter=True),
    FileCase("bittest_1", "manipulation", "reference/manipulation-image/MFC18-manipulation-image-ref.csv",
             "indexes/MFC18-manipulation-image-index.csv", _system("B_MFC18_Unittest_Manipulation_ImgOnly_p-me_1"),
             {"jpeg2000": True}),
    FileCase("bittest_pixns", "manipulation", "reference/manipulation-image/MFC18-manipulation-image-ref.csv",
             "indexes/MFC18-manipulation-image-index.csv", _system("B_MFC18_Unittest_Manipulation_ImgOnly_p-me_1"),
             {"jpeg2000": True, "per_probe_pixel_value": True}),
]
ROLE_PREFIX = {"manipulation": {"probe": ""}, "splice": {"probe": "p", "donor": "d"}}
SCORED_COLUMN = {"": "Scored", "p": "ProbeScored", "d": "DonorScored"}


def _read_table(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


@dataclasses.dataclass
class Scored:
    """One planned mask of a case: the job, its trial's keys, and the API's and the file path's results."""

    role: str
    keys: tuple
    job: object
    arrays: dict | None         # the decoded inputs given to the API; None: no reference file (not scoreable)
    api_record: MaskRecord | None
    api: MaskMetrics | None
    file_record: MaskRecord


def _decoded(job) -> dict | None:
    """The API's inputs for a planned job, decoded here as the file path decodes them (mask_scoring.py)."""
    if not job.reference_path:
        return None
    if job.bitplanes:
        selection = bitplane_selection(read_layers(job.reference_path), list(job.selected_bitplanes),
                                       list(job.journal_bitplanes))
    else:
        selection = colour_selection(read_colour(job.reference_path, keep_grey=True), list(job.selected_colours),
                                     with_distractors=job.with_distractors)
    region = selection.region
    system = read_grey(job.system_path) if job.system_path else np.full(region.shape, 255, np.uint8)
    z = job.zones
    return {"reference": region, "system": system, "distractors": selection.distractors,
            "no_score": None if job.pixel_value is None else system == job.pixel_value,
            "erode_size": z.erode_size, "dilate_size": z.dilate_size, "distraction_size": z.distraction_size,
            "kernel": z.kernel}


def _averaged_table(case: FileCase) -> Path:
    """MediScore's expected averaged table of ``case`` (not every checkfile case has one)."""
    return CHECKFILES / f"ref_maskreport_{case.name}.csv"


@pytest.fixture(scope="module", params=FILE_CASES, ids=lambda c: c.name)
def file_case(request):
    return _scored_case(request.param)


@pytest.fixture(scope="module", params=[c for c in FILE_CASES if _averaged_table(c).exists()], ids=lambda c: c.name)
def averaged_case(request):
    return _scored_case(request.param)


def _scored_case(case: FileCase):
    """The case planned as ``mfscore mask`` plans it, each mask scored from arrays and from its files."""
    options = Options(ref_dir=str(MT), reference=case.reference, index=case.index, system=str(MT / case.system),
                      index_filter=case.index_filter, scoring=MaskOptions(task=case.task, **case.scoring),
                      report=ReportOptions(task=case.task, precision=PRECISION))
    plan = TASK.plan(options).prepared.plans[0]
    threshold = case.scoring.get("sbin")
    key_columns = ["ProbeFileID", "DonorFileID"] if case.task == "splice" else ["ProbeFileID"]
    keys = [tuple(row) for row in plan.trials[key_columns].to_numpy()]
    per_trial = len(ROLE_PREFIX[case.task])
    masks = []
    for position, (role, job) in enumerate(zip(plan.roles, plan.jobs)):
        arrays = _decoded(job)
        api_record = api = None
        if arrays is not None:
            api_record = MaskScores().update(**arrays).records[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMaskMetricWarning)
                api = mask_metrics(**arrays, threshold=threshold)
        masks.append(Scored(role, keys[position // per_trial], job, arrays, api_record, api, score_mask(job)))
    return case, threshold, masks


def _comparable(record: MaskRecord) -> dict:
    data = record.to_dict()
    data.pop("system_given")  # False on the file path for a missing system mask, scored as all white (the array)
    return data


def test_arrays_give_the_file_scorers_records(file_case):
    """Exact: the array path's record is score_mask's on the files, so every metric read off it is too."""
    case, threshold, masks = file_case
    compared = 0
    for mask in masks:
        if mask.arrays is None:
            assert not mask.file_record.scored
            continue
        assert _comparable(mask.api_record) == _comparable(mask.file_record), (case.name, mask.keys, mask.role)
        compared += 1
    assert compared >= 1


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, None to None."""
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def test_array_metrics_are_the_file_scorers_cells(file_case):
    """Exact: each MaskMetrics field is the file path's per-image (trial_cells) or extra (extra_cells) cell."""
    case, threshold, masks = file_case
    actual = None if threshold is None else float(threshold)
    for mask in masks:
        if mask.api is None:
            continue
        cells = {**trial_cells(mask.file_record, actual=actual, maximum=None),
                 **extra_cells(mask.file_record, actual)}
        for f in dataclasses.fields(MaskMetrics):
            column = f.metadata["column"]
            if threshold is None and column.startswith("Actual"):
                assert getattr(mask.api, f.name) is None  # not asked for (the file leaves the cells empty)
            elif column in cells and column != "Scored":
                assert _same(getattr(mask.api, f.name), cells[column]), (case.name, mask.keys, f.name)
        assert mask.api.scored == (cells["Scored"] == "Y")


def _as_written(value) -> str:
    """A value as the report writes it with --precision 12: 16 significant digits, then 12, shortest repr."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "Y" if value else "N"
    if isinstance(value, int):
        return str(value)
    return repr(round_significant(round_significant(float(value), 16), PRECISION))


def _written_cell(text: str, value) -> str:
    """The expected cell in comparable form: integers as integers, floats by shortest repr."""
    if text == "" or text in "YN":
        return text
    number = float(text)
    return str(int(number)) if isinstance(value, int) and not isinstance(value, bool) else repr(number)


def test_array_metrics_equal_mediscores_perimage_checkfile(file_case):
    """Every MaskMetrics field written in MediScore's expected per-image table (``_mask_scores_perimage.csv``:
    the Optimum, Actual, GWL1, AUC, EER, count and zone columns) equals the API's value as the report rounds it."""
    case, _, masks = file_case
    rows = _read_table(CHECKFILES / f"ref_maskreport_{case.name}-perimage.csv")
    key_columns = ["ProbeFileID", "DonorFileID"] if case.task == "splice" else ["ProbeFileID"]
    by_keys = {tuple(row[c] for c in key_columns): row for row in rows}
    compared = 0
    for mask in masks:
        row = by_keys[tuple(str(k) for k in mask.keys)]
        prefix = ROLE_PREFIX[case.task][mask.role]
        if mask.api is None:
            assert row[SCORED_COLUMN[prefix]] == "N"
            continue
        for f in dataclasses.fields(MaskMetrics):
            column = SCORED_COLUMN[prefix] if f.name == "scored" else prefix + f.metadata["column"]
            if f.metadata["file"] != "_mask_scores_perimage.csv" or column not in row:
                continue
            value = getattr(mask.api, f.name)
            assert _as_written(value) == _written_cell(row[column], value), (case.name, mask.keys, column)
            compared += 1
    assert compared >= 15


def test_accumulated_masks_equal_mediscores_averaged_checkfile(averaged_case):
    """MaskScores over the case's masks (in the run's order) gives MediScore's expected averaged table
    (``_mask_score.csv``): every mean, standard deviation, average AUC and threshold it writes, as the report
    rounds them. The Maximum columns are compared where the case has ``--sbin`` (MediScore writes them then)."""
    case, threshold, masks = averaged_case
    (row,) = _read_table(_averaged_table(case))
    compared = 0
    for role, prefix in ROLE_PREFIX[case.task].items():
        scores = MaskScores()
        for mask in masks:
            if mask.role == role:
                # a mask without a reference file is unscored, as an all-false reference records it
                arrays = mask.arrays or {"reference": np.zeros((1, 1), bool), "system": np.zeros((1, 1), np.uint8)}
                scores.update(**arrays)
        run = scores.compute(threshold=threshold)
        for f in dataclasses.fields(MaskRunMetrics):
            if f.metadata["file"] != "_mask_score.csv":
                continue
            column = f.metadata["column"]
            column = (f"stddev_{prefix}{column[7:]}" if column.startswith("stddev_") else prefix + column)
            if column not in row or f.name in ("total_trials", "scoreable_trials"):
                continue  # the run's trial counts cover non-targets and opted-out trials the API never sees
            if threshold is None and "maximum" in f.name:
                continue  # MediScore leaves them empty without --sbin; the API always gives them
            value = getattr(run, f.name)
            assert _as_written(value) == _written_cell(row[column], value), (case.name, role, column)
            compared += 1
    assert compared >= 16


# --------------------------------------------------------------------------------------------
# scikit-learn on random masks


def random_case(seed: int) -> dict:
    """A random mask: a blob-free random reference, a system mask with few grey levels (ties) or all 256,
    a random no-score map, and a threshold among the present values or anywhere in [-1, 255]."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(3, 24, size=2))
    reference = rng.random(shape) < rng.uniform(0.05, 0.6)
    reference.flat[rng.integers(reference.size)] = True
    if seed % 2:
        levels = rng.integers(0, 256, size=rng.integers(1, 6))
        system = rng.choice(levels, size=shape).astype(np.uint8)
    else:
        system = rng.integers(0, 256, size=shape).astype(np.uint8)
    # the system leans the right way, so that the metrics are not all near 0
    system = np.where(reference & (rng.random(shape) < 0.5), system // 3, system).astype(np.uint8)
    no_score = rng.random(shape) < 0.2
    no_score.flat[0] = False
    threshold = int(rng.choice(system.ravel())) if seed % 3 else int(rng.integers(-1, 256))
    return {"reference": reference, "system": system, "no_score": no_score, "threshold": threshold}


SEEDS = range(24)


def _thresholds(system: np.ndarray) -> list[int]:
    return [-1, *np.unique(system).tolist()]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("extras_pixels", ["scored", "image"])
def test_iou_and_f1_match_scikit_learn(seed, extras_pixels):
    """IoU and F1 of the mask binarised at the threshold (and their best over thresholds) are scikit-learn's
    ``jaccard_score`` and ``f1_score`` over the no-score-free pixels (``extras_pixels="scored"``) or every pixel
    (``"image"``); both empty counts 1, the documented convention, so ``zero_division=1.0``."""
    case = random_case(seed)
    m = mask_metrics(**case, erode_size=0, dilate_size=0, extras_pixels=extras_pixels)
    keep = ~case["no_score"] if extras_pixels == "scored" else np.ones_like(case["reference"])
    y_true, system = case["reference"][keep], case["system"][keep]
    y_pred = system <= case["threshold"]
    assert m.actual_iou == pytest.approx(jaccard_score(y_true, y_pred, zero_division=1.0), abs=TOL, rel=0)
    assert m.actual_f1 == pytest.approx(f1_score(y_true, y_pred, zero_division=1.0), abs=TOL, rel=0)
    # the best over the mask's thresholds: -1 and every value of the whole system mask
    best_iou = max(jaccard_score(y_true, system <= t, zero_division=1.0) for t in _thresholds(case["system"]))
    best_f1 = max(f1_score(y_true, system <= t, zero_division=1.0) for t in _thresholds(case["system"]))
    assert m.optimum_iou == pytest.approx(best_iou, abs=TOL, rel=0)
    assert m.optimum_f1 == pytest.approx(best_f1, abs=TOL, rel=0)


@pytest.mark.parametrize("seed", SEEDS)
def test_mcc_auc_and_gwl1_match_scikit_learn(seed):
    """MediScore's metrics over the scored pixels (outside ``no_score``; no boundary zone): the actual MCC is
    ``matthews_corrcoef`` (both give 0 when a factor of the denominator is 0), the optimum MCC the best over
    thresholds and the MCC at ``optimum_threshold``, AUC ``roc_auc_score`` of −system, GWL1 a numpy mean."""
    case = random_case(seed)
    m = mask_metrics(**case, erode_size=0, dilate_size=0)
    keep = ~case["no_score"]
    y_true, system = case["reference"][keep], case["system"][keep]
    assert m.pixel_n == keep.sum() and m.pixel_pns == case["no_score"].sum()
    assert m.actual_mcc == pytest.approx(matthews_corrcoef(y_true, system <= case["threshold"]), abs=TOL, rel=0)
    mccs = {t: matthews_corrcoef(y_true, system <= t) for t in _thresholds(case["system"])}
    assert m.optimum_mcc == pytest.approx(max(mccs.values()), abs=TOL, rel=0)
    assert mccs[int(m.optimum_threshold)] == pytest.approx(max(mccs.values()), abs=TOL, rel=0)
    if 0 < y_true.sum() < y_true.size:
        assert m.auc == pytest.approx(roc_auc_score(y_true, -system.astype(float)), abs=TOL, rel=0)
    assert m.gwl1 == pytest.approx(np.mean(np.abs(np.where(y_true, 0, 255) - system.astype(float))) / 255,
                                   abs=TOL, rel=0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("extras_pixels", ["scored", "image"])
def test_soft_metrics_match_scikit_learn_with_sample_weights(seed, extras_pixels):
    """Soft MCC, IoU and F1 (y = 1 − S/255): each pixel counts as a positive prediction with weight y and a
    negative one with weight 1 − y, scikit-learn's metrics with those sample weights."""
    case = random_case(seed)
    m = mask_metrics(**case, erode_size=0, dilate_size=0, extras_pixels=extras_pixels)
    keep = ~case["no_score"] if extras_pixels == "scored" else np.ones_like(case["reference"])
    y_true, y = case["reference"][keep], 1 - case["system"][keep] / 255
    truth = np.concatenate([y_true, y_true])
    predicted = np.concatenate([np.ones(y.size, bool), np.zeros(y.size, bool)])
    weights = np.concatenate([y, 1 - y])
    assert m.soft_mcc == pytest.approx(matthews_corrcoef(truth, predicted, sample_weight=weights), abs=TOL, rel=0)
    assert m.soft_iou == pytest.approx(jaccard_score(truth, predicted, sample_weight=weights, zero_division=1.0),
                                       abs=TOL, rel=0)
    assert m.soft_f1 == pytest.approx(f1_score(truth, predicted, sample_weight=weights, zero_division=1.0),
                                      abs=TOL, rel=0)


# --------------------------------------------------------------------------------------------
# Bad inputs: a ValueError naming the argument


REFERENCE = np.array([[0, 0, 0, 0, 0],
                      [0, 1, 1, 0, 0],
                      [0, 1, 1, 0, 0],
                      [0, 0, 0, 0, 0]], dtype=bool)
SYSTEM = np.where(REFERENCE, 0, 255).astype(np.uint8)
NAN_MAP = np.where(REFERENCE, np.nan, 0.0)

BAD_INPUTS = [
    # (argument named, the bad keyword arguments)
    ("reference", {"reference": REFERENCE[0]}),                                  # 1-D
    ("reference", {"reference": REFERENCE[None]}),                               # 3-D
    ("reference", {"reference": np.zeros((0, 0), bool), "system": np.zeros((0, 0), np.uint8)}),  # empty
    ("reference", {"reference": NAN_MAP}),                                       # NaN
    ("reference", {"reference": np.where(REFERENCE, 0, 255)}),                   # MediScore's 0/255
    ("reference", {"reference": REFERENCE.astype(float) * 0.5}),                 # not 0/1
    ("reference", {"reference": np.where(REFERENCE, "Y", "N")}),                 # text
    ("system", {"system": SYSTEM.astype(float)}),                                # float dtype
    ("system", {"system": np.where(REFERENCE, np.nan, 255.0)}),                  # NaN
    ("system", {"system": SYSTEM.astype(np.int16) + 1}),                         # 256
    ("system", {"system": SYSTEM.astype(np.int16) - 1}),                         # -1
    ("system", {"system": REFERENCE}),                                           # booleans
    ("system", {"system": SYSTEM[:, :4]}),                                       # shape mismatch
    ("system", {"system": SYSTEM.T}),                                            # transposed
    ("system", {"system": np.stack([SYSTEM] * 3, axis=-1)}),                     # colour
    ("system", {"system": np.where(REFERENCE, "0", "255")}),                     # text
    ("no_score", {"no_score": np.zeros((4, 4), bool)}),                          # shape mismatch
    ("no_score", {"no_score": NAN_MAP}),                                         # NaN
    ("no_score", {"no_score": np.full((4, 5), 2)}),                              # not 0/1
    ("no_score", {"no_score": np.zeros(20, bool)}),                              # 1-D
    ("distractors", {"distractors": np.zeros((5, 4), bool)}),                    # shape mismatch
    ("distractors", {"distractors": NAN_MAP}),                                   # NaN
    ("threshold", {"threshold": 256}),
    ("threshold", {"threshold": -2}),
    ("threshold", {"threshold": 0.5}),
    ("threshold", {"threshold": math.nan}),
    ("threshold", {"threshold": True}),
    ("threshold", {"threshold": "128"}),
    ("erode_size", {"erode_size": 4}),
    ("erode_size", {"erode_size": -1}),
    ("erode_size", {"erode_size": 3.0}),
    ("dilate_size", {"dilate_size": 2}),
    ("distraction_size", {"distraction_size": 6}),
    ("kernel", {"kernel": "square"}),
    ("extras_pixels", {"extras_pixels": "all"}),
]
COMPUTE_ARGUMENTS = ("threshold", "extras_pixels")


@pytest.mark.parametrize(("name", "bad"), BAD_INPUTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_INPUTS)])
def test_bad_input_raises_a_value_error_naming_the_argument(name, bad):
    arguments = {"reference": REFERENCE, "system": SYSTEM, **bad}
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        mask_metrics(**arguments)
    scores = MaskScores()
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        if name in COMPUTE_ARGUMENTS:
            scores.update(REFERENCE, SYSTEM).compute(**bad)
        else:
            scores.update(**arguments)
    assert len(scores) == (1 if name in COMPUTE_ARGUMENTS else 0)  # a refused mask is not recorded


def test_undefined_metrics_are_nan_with_a_warning():
    """A reference without a manipulated pixel is not scored; zones covering every pixel leave none to score."""
    with pytest.warns(UndefinedMaskMetricWarning, match="no manipulated pixel"):
        m = mask_metrics(np.zeros((4, 5), bool), SYSTEM, threshold=3)
    assert not m.scored and math.isnan(m.optimum_mcc) and math.isnan(m.actual_mcc)
    with pytest.warns(UndefinedMaskMetricWarning, match="covers the whole 4x5 mask"):
        m = mask_metrics(REFERENCE, SYSTEM)  # MediScore's default zones swallow a 4x5 image
    assert m.scored and m.pixel_n == 0 and math.isnan(m.optimum_mcc) and m.pixel_bns == 20
    assert not math.isnan(m.soft_mcc)  # the extras count the whole image


def test_merging_refuses_what_is_not_mask_scores():
    with pytest.raises(TypeError):
        MaskScores().merge([MaskRecord(status="scored")])
    with pytest.raises(ValueError, match="^records"):
        MaskScores(records=[{"status": "scored"}])


# --------------------------------------------------------------------------------------------
# Merge invariance


def _values(result) -> tuple:
    """A result's fields, NaN made comparable."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in dataclasses.astuple(result))


def _run_masks(seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    masks = []
    for i in range(9):
        case = random_case(1000 * seed + i)
        del case["threshold"]
        if i == 4:
            case["reference"] = np.zeros_like(case["reference"])  # not scoreable: in total_trials only
        case["erode_size"], case["dilate_size"] = (int(rng.choice([0, 1, 3])), int(rng.choice([0, 3, 5])))
        masks.append(case)
    return masks


@pytest.mark.parametrize("seed", range(6))
def test_shards_merged_in_order_equal_all_masks_at_once(seed):
    masks = _run_masks(seed)
    whole = MaskScores()
    for mask in masks:
        whole.update(**mask)
    cuts = sorted(np.random.default_rng(seed).choice(np.arange(1, len(masks)), size=2, replace=False).tolist())
    shards = []
    for lo, hi in zip([0, *cuts], [*cuts, len(masks)]):
        shard = MaskScores()
        for mask in masks[lo:hi]:
            shard.update(**mask)
        shards.append(shard)
    merged = shards[0].merge(shards[1]).merge(shards[2])
    assert [len(s) for s in shards] == [cuts[0], cuts[1] - cuts[0], len(masks) - cuts[1]]  # operands unchanged
    assert [r.to_dict() for r in merged.records] == [r.to_dict() for r in whole.records]
    for options in ({}, {"threshold": 100}, {"threshold": 100, "extras_pixels": "scored"}):
        assert _values(merged.compute(**options)) == _values(whole.compute(**options))
    again = MaskScores(records=[MaskRecord.from_dict(r.to_dict()) for r in merged.records])  # the JSON form
    assert _values(again.compute(threshold=7)) == _values(whole.compute(threshold=7))
    assert whole.compute().total_trials == 9 and whole.compute().scoreable_trials == 8
