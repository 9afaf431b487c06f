"""Per-probe mask visuals (docs/masks.md "Per-probe visuals"): for the N best and N worst masks of a query by
OptimumMCC, the reference and system masks as scored and an overlay of TP, FP, FN and the no-score zones, as PNG,
with an index (``index.json``) naming each mask's rank, metric and files, which an HTML report embeds.

The maps are the scorer's own (``mfscore.masks.mask_scoring.mask_maps``), read again at report time for these
masks alone, one at a time, so an overlay's TP, FP, FN and TN pixels are the confusion counts the per-image table
reports at the mask's optimum threshold; drawing holds one-byte maps and lookups, never index-sized arrays, so it
needs about what scoring the mask needs. The bytes depend on the pixels alone (OpenCV's PNG encoder, no metadata),
so every runner writes the same files.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import cv2
import numpy as np

from mfscore.masks.mask_record import MaskRecord, coded_histogram
from mfscore.masks.mask_scoring import MaskJob, MaskMaps, mask_maps
from mfscore.masks.threshold_metrics import PointMetrics, metrics_at, optimum_threshold

DIRECTORY = "_visuals"  # <prefix>_visuals/ beside the reports (in index_<q>/ for each -qm query)
INDEX = "index.json"
BEST, WORST = "best", "worst"

TN, FP, FN, TP, DISTRACTOR, BOUNDARY, OPT_OUT = range(7)  # TN to TP: 2 x reference-positive + marked
CLASSES = (  # (class code, name in the index, legend text, colour): Okabe and Ito's colour-blind-safe palette
    (TN, "TN", "TN: scored, correctly unmarked", "#FFFFFF"),              # white
    (TP, "TP", "TP: manipulated, marked", "#0072B2"),                     # blue
    (FP, "FP", "FP: not manipulated, marked", "#E69F00"),                 # orange
    (FN, "FN", "FN: manipulated, missed", "#CC79A7"),                     # reddish purple
    (DISTRACTOR, "distractor", "no-score: distractor/unselected", "#F0E442"),  # yellow
    (BOUNDARY, "boundary", "no-score: boundary", "#56B4E9"),              # sky blue
    (OPT_OUT, "opt_out_pixel", "no-score: system opt-out pixel", "#000000"),   # black
)
BACKGROUND = (221, 221, 221)  # BGR: the canvas around the mask and under the legend, so white TN pixels stand out
INK = (0, 0, 0)
LEGEND_ROW, SWATCH, FONT_SCALE = 14, 10, 0.35


@dataclass(frozen=True)
class Chosen:
    """A mask chosen for a visual: best or worst, its rank there (1 first), its job's position in the query's
    plan, its trial's ids and its metrics at its optimum threshold."""

    kind: str
    rank: int
    position: int
    trial: tuple[str, ...]
    point: PointMetrics


def choose(records: list[tuple[int, tuple[str, ...], MaskRecord]], n: int) -> list[Chosen]:
    """The ``n`` best and ``n`` worst of (position, trial ids, record) by OptimumMCC, best first then worst first.

    Only scored masks with an optimum threshold rank. Ties go to the smaller trial ids (then position) on both
    sides, so the choice is deterministic; a mask among the best is not among the worst.
    """
    ranked = []
    for position, trial, record in records:
        if not record.scored:
            continue
        threshold = optimum_threshold(record)
        if math.isnan(threshold):
            continue
        ranked.append((position, trial, metrics_at(record, threshold)))
    best = sorted(ranked, key=lambda item: (-item[2].mcc, item[1], item[0]))[:n]
    taken = {position for position, _, _ in best}
    worst = [item for item in sorted(ranked, key=lambda item: (item[2].mcc, item[1], item[0]))
             if item[0] not in taken][:n]
    return ([Chosen(BEST, rank, *item) for rank, item in enumerate(best, 1)]
            + [Chosen(WORST, rank, *item) for rank, item in enumerate(worst, 1)])


def class_colours() -> list[str]:
    """Each class's colour (``#RRGGBB``), indexed by class code."""
    by_code = {code: colour for code, _, _, colour in CLASSES}
    return [by_code[code] for code in range(len(CLASSES))]


def _bgr(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (5, 3, 1))


def pixel_classes(maps: MaskMaps, threshold: int) -> np.ndarray:
    """One class code per pixel (uint8): scored pixels by their confusion at ``threshold`` (predicted manipulated
    where the system value is at most it), no-score pixels by their zone, a distractor zone before the boundary
    before an opt-out pixel, as the scorer counts PixelSNS and PixelBNS."""
    zones = maps.zones
    classes = np.less_equal(maps.system, threshold).view(np.uint8)
    classes += maps.region.view(np.uint8)
    classes += maps.region.view(np.uint8)
    for zone, code in ((zones.pns, OPT_OUT), (zones.bns, BOUNDARY), (zones.sns, DISTRACTOR)):
        np.copyto(classes, code, where=~zone)
    return classes


def class_counts(classes: np.ndarray) -> dict[str, int]:
    """Pixels of each class, by its name in the index."""
    counts = coded_histogram(classes, len(CLASSES))
    return {name: int(counts[code]) for code, name, _, _ in CLASSES}


def overlay(classes: np.ndarray) -> np.ndarray:
    """The overlay as a BGR image: the classes in their colours, with a legend of the classes present below."""
    colours = [_bgr(colour) for colour in class_colours()]
    present = coded_histogram(classes, len(CLASSES)) > 0
    entries = [(text, colours[code]) for code, _, text, _ in CLASSES if present[code] or code in (TP, FP, FN)]
    font = cv2.FONT_HERSHEY_SIMPLEX
    width = max(SWATCH + 8 + cv2.getTextSize(text, font, FONT_SCALE, 1)[0][0] for text, _ in entries) + 4
    height, image_width = classes.shape
    canvas = np.full((height + 4 + LEGEND_ROW * len(entries), max(image_width, width), 3), BACKGROUND, np.uint8)
    table = np.zeros((256, 3), np.uint8)
    table[:len(colours)] = colours
    for channel in range(3):  # a one-byte lookup per channel: no index-sized temporaries
        canvas[:height, :image_width, channel] = cv2.LUT(classes, table[:, channel])
    for row, (text, bgr) in enumerate(entries):
        top = height + 4 + row * LEGEND_ROW
        cv2.rectangle(canvas, (2, top + 2), (2 + SWATCH - 1, top + 2 + SWATCH - 1), bgr, cv2.FILLED)
        cv2.rectangle(canvas, (2, top + 2), (2 + SWATCH - 1, top + 2 + SWATCH - 1), INK, 1)
        cv2.putText(canvas, text, (SWATCH + 6, top + SWATCH + 1), font, FONT_SCALE, INK, 1, cv2.LINE_8)
    return canvas


def png(image: np.ndarray) -> bytes:
    """PNG bytes of a grey or BGR image (no metadata: the same pixels give the same bytes)."""
    ok, data = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, 6])
    if not ok:
        raise ValueError("OpenCV could not encode a visual as PNG")
    return data.tobytes()


def black_on_white(marked: np.ndarray) -> np.ndarray:
    """A mask in MediScore's convention: black (0) where ``marked``, white (255) elsewhere."""
    return np.where(marked, np.uint8(0), np.uint8(255))


def write_visuals(stage, subdir: str, chosen: list[Chosen], jobs: list[MaskJob], *, trial_columns: tuple[str, ...],
                  query: str | None) -> list[str]:
    """Write the chosen masks' PNGs and the index under ``<prefix>_visuals/`` (in ``subdir``); the lines saying which
    masks could not be read again (left out of the index)."""
    width = len(str(max((c.rank for c in chosen), default=1)))
    entries, notes = [], []
    for item in chosen:
        maps = mask_maps(jobs[item.position])
        if isinstance(maps, MaskRecord):
            notes.append(f"the visuals leave out {', '.join(item.trial)}: {maps.message or maps.status}")
            continue
        threshold = int(item.point.threshold)
        stem = f"{item.kind}-{item.rank:0{width}d}"
        files = {"reference": f"{stem}-reference.png", "system": f"{stem}-system.png", "overlay": f"{stem}-overlay.png"}
        stage.path(f"{DIRECTORY}/{files['reference']}", subdir).write_bytes(png(black_on_white(maps.region)))
        stage.path(f"{DIRECTORY}/{files['system']}", subdir).write_bytes(png(black_on_white(maps.system <= threshold)))
        classes = pixel_classes(maps, threshold)
        del maps  # one mask's maps at a time: the overlay needs only the classes
        stage.path(f"{DIRECTORY}/{files['overlay']}", subdir).write_bytes(png(overlay(classes)))
        point = item.point
        entries.append({
            "kind": item.kind, "rank": item.rank, **dict(zip(trial_columns, item.trial)),
            "OptimumMCC": point.mcc, "OptimumThreshold": threshold,
            "OptimumPixelTP": point.tp, "OptimumPixelFP": point.fp, "OptimumPixelFN": point.fn,
            "OptimumPixelTN": point.tn, "pixels": class_counts(classes), "files": files,
        })
    colours = class_colours()
    index = {
        "metric": "OptimumMCC", "threshold": "optimum", "query": query,
        "classes": {name: {"colour": colours[code], "legend": text} for code, name, text, _ in CLASSES},
        "masks": entries,
    }
    stage.path(f"{DIRECTORY}/{INDEX}", subdir).write_bytes((json.dumps(index, indent=1) + "\n").encode())
    return notes
