"""A slow, obviously correct reference of video spatial-temporal localization scoring (mfscore's
default mode; docs/video.md §B), to check the streaming scorer against.

Written independently of ``mfscore.video`` and ``mfscore.masks`` (only the morphology of
``mfscore.masks.kernels`` is shared): whole volumes are loaded into numpy, and every count is taken
afresh from the pixels, one threshold and one frame at a time. Frames are numbered f = 1..FrameCount;
volume index f - 1 is frame f.

Per frame:
* ``region`` = pixels whose code has a *selected* bit-plane (the probe's journal bit-planes with
  Evaluated=Y; every non-zero pixel when the probe's journal has no bit-plane at all);
  ``distractors`` = pixels with a journal-but-unselected bit-plane, whether or not they also carry a
  selected one (docs/masks.md: every such pixel is dilated, then the eroded region is put back).
* A video whose region is empty in every frame (a blank reference) is not scored and is in no table.
* ``bns = ~(dilate(region, dks) & ~erode(region, eks))``; ``sns = ~dilate(distractors, ntdks) |
  erode(region, eks)``; ``pns = sys != nspx``; weight = bns & sns & pns (True = scored).
* A frame is reference-positive when some pixel is region & weight; the reference intervals are
  the runs of positive frames.

Frame roles, first match wins: *skipped* (``temporal_gt_only`` and no region pixel: adds nothing),
*opted out* (``video_opt_out`` and inside a VideoFrameOptOutSegments interval: every pixel to PNS),
*collared* (within ``collar`` frames of a reference interval endpoint: every pixel to BNS),
otherwise *scored*: its weights, counts and confusions are summed.

Temporal: at each threshold a frame is system-positive when its darkest pixel is <= θ. The range
[1, FC] is cut into unit segments [k, k+1]; a segment belongs to a set of intervals when its
midpoint lies inside one; segments in a collar or (``video_opt_out``) an opt-out interval are
not counted, the others are TP/FN/FP/TN.

The optimum threshold maximizes the spatial MCC (TemporalMCC with ``temporal_scoring_only``),
the lowest θ on ties, compared exactly (sign(MCC)·MCC² as a fraction); TemporalMCC and the
TemporalFrame counts are those at that θ. When the optimum has TP+FN = 0 or TN+FP = 0 its whole
row is NaN: threshold, MCC, NMM, BWL1, pixel confusions and (unless ``temporal_scoring_only``)
the temporal metrics; GWL1 and the PixelN/BNS/SNS/PNS counts do not depend on θ and stay.

ROC (docs/masks.md, docs/video.md): over the spatial thresholds {-1} ∪ the system values of the
volume, TPR = TP/(TP+FN) and FPR = FP/(FP+TN) (0 for an empty class); (0,0) added, points sorted by
FPR then TPR, AUC by trapezoids, EER = (FPR+FNR)/2 at the first point with the least |FPR − FNR|.
PixelAverageAUC: the ROC of the counts summed over the scored frames, MaskAverageAUC: of the per-frame
TPR and FPR averaged over the scored frames that have the class; both with (0,0) and (1,1) added and
undefined points dropped. All four are NaN for a video without scored positives or negatives.
Actual (``sbin``) and Maximum (``maximum_threshold`` over a dataset): the counts at that θ whatever
was scored, MCC (NaN when N = 0, 0 when a denominator factor is 0), NMM (NaN when TP+FN = 0), BWL1
(NaN when N = 0). ``mask_score_row``: each mean and sample deviation over the videos with an optimum
threshold.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from mfscore.masks.kernels import dilate, erode

NAN = math.nan
OPTIMUM_KEYS = ("OptimumThreshold", "OptimumMCC", "OptimumNMM", "OptimumBWL1",
                "OptimumPixelTP", "OptimumPixelTN", "OptimumPixelFP", "OptimumPixelFN")
TEMPORAL_KEYS = ("TemporalMCC", "TemporalFrameTP", "TemporalFrameTN", "TemporalFrameFP", "TemporalFrameFN")


@dataclass(frozen=True)
class Options:
    """The scoring options the reference knows (defaults = the scorer's defaults)."""

    eks: int = 15
    dks: int = 11
    ntdks: int = 15
    kernel: str = "box"
    nspx: int | None = None  # None or -1: no pixel no-score value
    collar: int | None = None
    video_opt_out: bool = False
    temporal_gt_only: bool = False
    temporal_scoring_only: bool = False
    sbin: int | None = None  # the Actual threshold


# --------------------------------------------------------------------------------------------
# Small pieces


def runs(flags) -> list[tuple[int, int]]:
    """1-based inclusive runs [a, b] of consecutive True frames."""
    out, start = [], None
    for i, flag in enumerate(list(flags) + [False], start=1):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def inside(intervals, point: float) -> bool:
    """Whether ``point`` lies in one of the continuous ranges [a, b]."""
    return any(a <= point <= b for a, b in intervals)


def mcc(tp: int, tn: int, fp: int, fn: int) -> float:
    """Matthews correlation; 0 when a factor of the denominator is 0, NaN without any pixel."""
    if tp + tn + fp + fn == 0:
        return NAN
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if den == 0 else (tp * tn - fp * fn) / math.sqrt(den)


def mcc_key(tp: int, tn: int, fp: int, fn: int) -> Fraction | None:
    """sign(MCC)·MCC² exactly (orders like MCC); None when MCC is NaN."""
    if tp + tn + fp + fn == 0:
        return None
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    num = tp * tn - fp * fn
    return Fraction(0) if den == 0 else Fraction(num * abs(num), den)


def temporal_mcc(tp: int, tn: int, fp: int, fn: int) -> float:
    """The temporal MCC: 0 whenever the denominator is 0."""
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if den == 0 else (tp * tn - fp * fn) / math.sqrt(den)


def best(keys: list) -> int:
    """Index of the largest key (None is smallest), the first one on ties."""
    best_i = 0
    for i, key in enumerate(keys):
        if key is not None and (keys[best_i] is None or key > keys[best_i]):
            best_i = i
    return best_i


def plane_map(codes: np.ndarray, planes) -> np.ndarray:
    """Boolean (frames, H, W): pixels carrying any of bit-planes ``planes``.

    ``codes`` is (frames, H, W) or (frames, H, W, layers); bit-plane b is bit (b-1) % 8 of layer
    (b-1) // 8; a bit-plane whose layer is not in the file is never set.
    """
    layered = codes if codes.ndim == 4 else codes[..., None]
    out = np.zeros(layered.shape[:3], bool)
    for b in planes:
        layer, bit = (b - 1) // 8, (b - 1) % 8
        if layer < layered.shape[3]:
            out |= ((layered[..., layer] >> bit) & 1).astype(bool)
    return out


# --------------------------------------------------------------------------------------------
# One video


def score_video(reference: np.ndarray, system: np.ndarray | None, *, journal_planes=(), selected_planes=(),
                opt_out=(), options: Options = Options()) -> dict:
    """Score one video from whole volumes.

    ``reference``: uint8 codes (FC, H, W[, layers]); ``system``: uint8 (FC, H, W) or None (all
    white); ``journal_planes``: all bit-planes of the probe's journal; ``selected_planes``: those
    evaluated; ``opt_out``: the VideoFrameOptOutSegments intervals.
    """
    o = options
    fc, height, width = reference.shape[:3]
    sys = np.full((fc, height, width), 255, np.uint8) if system is None else system
    assert sys.shape == (fc, height, width)
    journal_planes, selected_planes = set(journal_planes), set(selected_planes)
    if journal_planes:
        region = plane_map(reference, selected_planes)
        distractors = plane_map(reference, journal_planes - selected_planes)
    else:
        region = (reference != 0) if reference.ndim == 3 else (reference != 0).any(axis=3)
        distractors = np.zeros_like(region)
    if not region.any():
        return None  # a blank reference: not scored, in no table
    nspx = None if o.nspx is None or o.nspx < 0 else o.nspx

    # Per-frame no-score zones and weights.
    bns, sns, pns, weight = [], [], [], []
    for f in range(fc):
        r, d, s = region[f], distractors[f], sys[f]
        b = np.ones_like(r) if o.eks == 0 and o.dks == 0 else ~(dilate(r, o.kernel, o.dks) & ~erode(r, o.kernel, o.eks))
        n = ~dilate(d, o.kernel, o.ntdks) | erode(r, o.kernel, o.eks) if d.any() else np.ones_like(r)
        p = np.ones_like(r) if nspx is None else s != nspx
        bns.append(b)
        sns.append(n)
        pns.append(p)
        weight.append(b & n & p)

    reference_intervals = runs([(region[f] & weight[f]).any() for f in range(fc)])
    collars = []
    if o.collar:
        collars = [(max(1, x - o.collar), min(fc, x + o.collar)) for a, b in reference_intervals for x in (a, b)]
    opt_outs = [tuple(sorted(pair)) for pair in opt_out] if o.video_opt_out else []

    # Frame roles, first match wins.
    role = {}
    for frame in range(1, fc + 1):
        if o.temporal_gt_only and not region[frame - 1].any():
            role[frame] = "skipped"
        elif any(a <= frame <= b for a, b in opt_outs):
            role[frame] = "opt_out"
        elif any(a <= frame <= b for a, b in collars):
            role[frame] = "collar"
        else:
            role[frame] = "scored"
    scored = [frame for frame in range(1, fc + 1) if role[frame] == "scored"]

    pixel_n = sum(int(weight[f - 1].sum()) for f in scored)
    pixel_bns = sum(int((~bns[f - 1] & sns[f - 1]).sum()) for f in scored)
    pixel_bns += height * width * sum(role[f] == "collar" for f in role)
    pixel_sns = sum(int((~sns[f - 1]).sum()) for f in scored)
    pixel_pns = sum(int((~pns[f - 1]).sum()) for f in scored)
    pixel_pns += height * width * sum(role[f] == "opt_out" for f in role)

    grey = 0.0
    for f in scored:
        ref_value = np.where(region[f - 1], 0.0, 255.0)
        grey += float((np.abs(ref_value - sys[f - 1]) / 255.0)[weight[f - 1]].sum())
    gwl1 = grey / pixel_n if pixel_n else NAN

    thresholds = sorted({-1, 255} | {int(v) for v in np.unique(sys)})
    rows = []
    for theta in thresholds:
        tp = tn = fp = fn = 0
        for f in scored:
            predicted = sys[f - 1] <= theta
            r, w = region[f - 1], weight[f - 1]
            tp += int((w & r & predicted).sum())
            fn += int((w & r & ~predicted).sum())
            fp += int((w & ~r & predicted).sum())
            tn += int((w & ~r & ~predicted).sum())
        n = tp + tn + fp + fn
        rows.append({"Threshold": theta, "TP": tp, "TN": tn, "FP": fp, "FN": fn, "MCC": mcc(tp, tn, fp, fn),
                     "NMM": max(-1.0, (tp - fn - fp) / (tp + fn)) if tp + fn else NAN,
                     "BWL1": (fp + fn) / n if n else NAN,
                     **temporal_counts(sys, theta, reference_intervals, collars, opt_outs)})
    for row in rows:
        row["TemporalMCC"] = temporal_mcc(row["TemporalFrameTP"], row["TemporalFrameTN"],
                                          row["TemporalFrameFP"], row["TemporalFrameFN"])

    if o.temporal_scoring_only:
        keys = [mcc_key(r["TemporalFrameTP"], r["TemporalFrameTN"], r["TemporalFrameFP"], r["TemporalFrameFN"])
                or Fraction(0) for r in rows]
    else:
        keys = [mcc_key(r["TP"], r["TN"], r["FP"], r["FN"]) for r in rows]
    opt = rows[best(keys)]
    result = {"OptimumThreshold": opt["Threshold"], "OptimumMCC": opt["MCC"], "OptimumNMM": opt["NMM"],
              "OptimumBWL1": opt["BWL1"], "OptimumPixelTP": opt["TP"], "OptimumPixelTN": opt["TN"],
              "OptimumPixelFP": opt["FP"], "OptimumPixelFN": opt["FN"]}
    result.update({k: opt[k] for k in TEMPORAL_KEYS})
    if opt["TP"] + opt["FN"] == 0 or opt["TN"] + opt["FP"] == 0:
        # the whole optimum row is NaN (docs/video.md §B.5): the optimum row carries the temporal metrics
        # too, except when the optimum is chosen on them (temporal_scoring_only).
        result.update(dict.fromkeys(OPTIMUM_KEYS if o.temporal_scoring_only else OPTIMUM_KEYS + TEMPORAL_KEYS, NAN))
    result.update({"GWL1": gwl1, "PixelN": pixel_n, "PixelBNS": pixel_bns, "PixelSNS": pixel_sns,
                   "PixelPNS": pixel_pns, "ReferenceIntervals": reference_intervals, "FrameRoles": role,
                   "table": pd.DataFrame(rows)})

    def frame_counts(f: int, theta: int) -> tuple[int, int, int, int]:
        predicted = sys[f - 1] <= theta
        r, w = region[f - 1], weight[f - 1]
        return (int((w & r & predicted).sum()), int((w & ~r & ~predicted).sum()),
                int((w & ~r & predicted).sum()), int((w & r & ~predicted).sum()))

    def counts_at(theta: int) -> tuple[int, int, int, int]:
        per_frame = [frame_counts(f, theta) for f in scored]
        return tuple(sum(c[i] for c in per_frame) for i in range(4))

    has_roc = not o.temporal_scoring_only and not math.isnan(result["OptimumMCC"])
    spatial_thresholds = sorted({-1} | {int(v) for v in np.unique(sys)})
    result.update({"AUC": NAN, "EER": NAN, "PixelAverageAUC": NAN, "MaskAverageAUC": NAN})
    if has_roc:
        points = [rates(*counts_at(theta)) for theta in spatial_thresholds]
        result["AUC"], result["EER"] = roc_auc_eer(points)
        pixel_points, mask_points = [], []
        for theta in spatial_thresholds:
            per_frame = [frame_counts(f, theta) for f in scored]
            tp, tn, fp, fn = (sum(c[i] for c in per_frame) for i in range(4))
            pixel_points.append((fp / (fp + tn) if fp + tn else NAN, tp / (tp + fn) if tp + fn else NAN))
            tprs = [c[0] / (c[0] + c[3]) for c in per_frame if c[0] + c[3]]
            fprs = [c[2] / (c[2] + c[1]) for c in per_frame if c[2] + c[1]]
            mask_points.append((sum(fprs) / len(fprs) if fprs else NAN, sum(tprs) / len(tprs) if tprs else NAN))
        result["PixelAverageAUC"] = closed_auc(pixel_points)
        result["MaskAverageAUC"] = closed_auc(mask_points)
    result["SpatialThresholds"] = spatial_thresholds
    result["counts_at"] = counts_at
    if o.sbin is not None and not o.temporal_scoring_only:
        result.update(point_metrics("Actual", o.sbin, counts_at(o.sbin)))
    return result


def rates(tp: int, tn: int, fp: int, fn: int) -> tuple[float, float]:
    """(FPR, TPR), each 0 when its class is empty."""
    return (fp / (fp + tn) if fp + tn else 0.0), (tp / (tp + fn) if tp + fn else 0.0)


def trapezoids(points) -> float:
    ordered = sorted(points)  # by FPR, then TPR
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(ordered, ordered[1:]))


def roc_auc_eer(points) -> tuple[float, float]:
    """AUC and EER of ROC points (FPR, TPR) with (0, 0) added."""
    ordered = sorted(list(points) + [(0.0, 0.0)])
    gaps = [abs(fpr - (1 - tpr)) for fpr, tpr in ordered]
    fpr, tpr = ordered[gaps.index(min(gaps))]
    return trapezoids(ordered), (fpr + 1 - tpr) / 2


def closed_auc(points) -> float:
    """AUC of the defined points with (0, 0) and (1, 1) added."""
    kept = [p for p in points if not (math.isnan(p[0]) or math.isnan(p[1]))]
    return trapezoids(kept + [(0.0, 0.0), (1.0, 1.0)])


def point_metrics(name: str, theta: int, counts: tuple[int, int, int, int]) -> dict:
    """``<name>Threshold``, ``<name>MCC``/``NMM``/``BWL1`` and ``<name>PixelTP..FN`` at θ."""
    tp, tn, fp, fn = counts
    n = tp + tn + fp + fn
    return {f"{name}Threshold": theta, f"{name}MCC": mcc(tp, tn, fp, fn),
            f"{name}NMM": max(-1.0, (tp - fn - fp) / (tp + fn)) if tp + fn else NAN,
            f"{name}BWL1": (fp + fn) / n if n else NAN,
            f"{name}PixelTP": tp, f"{name}PixelTN": tn, f"{name}PixelFP": fp, f"{name}PixelFN": fn}


def add_maximum(results: dict[str, dict]) -> int | None:
    """The Maximum threshold of a dataset (the lowest θ of the largest sum of the videos' MCCs over the union
    of their thresholds, NaN MCCs left out), and each video's metrics at it; None without a spatial video."""
    spatial = [r for r in results.values() if "SpatialThresholds" in r]
    thresholds = sorted({t for r in spatial for t in r["SpatialThresholds"]})
    if not spatial or not thresholds:
        return None
    sums = [math.fsum(m for r in spatial if not math.isnan(m := mcc(*r["counts_at"](t)))) for t in thresholds]
    theta = thresholds[sums.index(max(sums))]
    for r in spatial:
        r.update(point_metrics("Maximum", theta, r["counts_at"](theta)))
    return theta


AVERAGED = ("OptimumThreshold", "OptimumNMM", "OptimumMCC", "OptimumBWL1", "GWL1", "AUC", "EER",
            "MaximumNMM", "MaximumMCC", "MaximumBWL1", "ActualNMM", "ActualMCC", "ActualBWL1", "TemporalMCC")


def mask_score_row(results: dict[str, dict], *, temporal_scoring_only: bool = False) -> dict:
    """Means and sample deviations over the videos with an optimum threshold (every video when only
    time is scored), and the number of videos (``totalTargets``) and of those with an OptimumMCC
    (``ScoreableTargets``)."""
    videos = [r for r in results.values() if temporal_scoring_only or not math.isnan(r["OptimumThreshold"])]
    row = {"totalTargets": len(results),
           "ScoreableTargets": sum(not math.isnan(r.get("OptimumMCC", NAN)) for r in results.values())}
    for key in AVERAGED:
        values = [r[key] for r in videos if key in r and not math.isnan(r[key])]
        mean = sum(values) / len(values) if values else NAN
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else NAN
        row[key] = float(int(mean)) if key.endswith("Threshold") and values else mean
        row[f"stddev_{key}"] = std
    return row


def temporal_counts(sys: np.ndarray, theta: int, reference_intervals, collars, opt_outs) -> dict:
    """TemporalFrameTP/TN/FP/FN at ``theta``, one unit segment [k, k+1] at a time."""
    fc = len(sys)
    system_intervals = runs([int(sys[f].min()) <= theta for f in range(fc)])
    counts = {"TemporalFrameTP": 0, "TemporalFrameTN": 0, "TemporalFrameFP": 0, "TemporalFrameFN": 0}
    for k in range(1, fc):
        middle = k + 0.5
        if inside(collars, middle) or inside(opt_outs, middle):
            continue
        in_ref, in_sys = inside(reference_intervals, middle), inside(system_intervals, middle)
        code = {(True, True): "TP", (True, False): "FN", (False, True): "FP", (False, False): "TN"}[in_ref, in_sys]
        counts[f"TemporalFrame{code}"] += 1
    return counts


# --------------------------------------------------------------------------------------------
# A dataset on disk


def read_volume(path: Path, frame_count: int, fill: int, shape: tuple[int, ...]) -> np.ndarray:
    """The whole mask of ``frame_count`` frames from its HDF5 blocks (``<start>/masks``, start
    0-indexed; ``masks/masks`` starts at 0); uncovered frames hold ``fill``, later frames are dropped."""
    with h5py.File(path, "r") as f:
        blocks = [(0 if name == "masks" else int(name), f[name]["masks"][()]) for name in f]
    if blocks:
        shape = blocks[0][1].shape[1:]
    volume = np.full((frame_count, *shape), fill, np.uint8)
    for start, data in blocks:
        for i in range(len(data)):
            if start + i < frame_count:
                volume[start + i] = data[i]
    return volume


def _table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


def score_dataset(ref_dir, reference: str, index: str, sys_dir, system: str, *, qm: str | None = None,
                  options: Options = Options()) -> dict[str, dict]:
    """Score every probe of a dataset written like ``write_video_dataset`` does: probe -> result.

    Probes scored: reference rows with an HDF5 mask that are in the index and the system output
    (any ProbeStatus); with ``qm`` (a pandas query on reference ⟕ journal), only the probes with a
    matching row, whose matching journal operations are the evaluated ones.
    """
    ref_dir, sys_dir = Path(ref_dir), Path(sys_dir)
    ref = _table(ref_dir / reference)
    idx = _table(ref_dir / index)
    sysout = _table(sys_dir / system)
    stem = str(ref_dir / reference).removesuffix(".csv")
    keys = ["JournalName", "StartNodeID", "EndNodeID"]
    journal = _table(Path(f"{stem}-probejournaljoin.csv")).merge(_table(Path(f"{stem}-journalmask.csv")), on=keys)
    kept, evaluated = None, None
    if qm:
        # the oracle evaluates the test's own constant query with pandas, independently of mfscore's parser
        matched = ref.merge(journal, on=["ProbeFileID", "JournalName"], how="left").query(qm)
        kept = set(matched["ProbeFileID"])
        evaluated = set(map(tuple, matched[keys].dropna().to_numpy().tolist()))

    results = {}
    for _, row in ref.merge(idx[["ProbeFileID", "FrameCount", "ProbeHeight", "ProbeWidth"]], on="ProbeFileID").iterrows():
        probe = row["ProbeFileID"]
        if not row["HDF5MaskFileName"] or probe not in set(sysout["ProbeFileID"]) or (kept is not None and probe not in kept):
            continue
        fc, shape = int(row["FrameCount"]), (int(row["ProbeHeight"]), int(row["ProbeWidth"]))
        sys_row = sysout[sysout["ProbeFileID"] == probe].iloc[0]
        ref_volume = read_volume(ref_dir / row["HDF5MaskFileName"], fc, 0, shape)
        sys_name = sys_row["OutputProbeMaskFileName"]
        sys_volume = read_volume((sys_dir / system).parent / sys_name, fc, 255, shape) if sys_name else None
        rows = journal[journal["ProbeFileID"] == probe]
        planes, selected = set(), set()
        for _, j in rows.iterrows():
            if j["BitPlane"] not in ("", "None"):
                planes.add(int(j["BitPlane"]))
                if evaluated is None or (j["JournalName"], j["StartNodeID"], j["EndNodeID"]) in evaluated:
                    selected.add(int(j["BitPlane"]))
        opt_out = [tuple(pair) for pair in json.loads(sys_row["VideoFrameOptOutSegments"] or "[]")]
        result = score_video(ref_volume, sys_volume, journal_planes=planes, selected_planes=selected,
                             opt_out=opt_out, options=options)
        if result is not None:  # a blank reference is in no table
            results[probe] = result
    return results
