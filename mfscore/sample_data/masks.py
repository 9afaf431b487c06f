"""Generated MFC-style mask data: reference masks, journal tables, grey system masks.

Each target probe has one to three manipulations (ellipses and rectangles), marked in an
NC2017-style colour reference (one colour per operation) or an MFC18-style bit-plane reference
(one bit per operation, PNG or JPEG 2000). The system mask is grey: darker inside what it
"found", with noise, a miss now and then, and false alarms; so thresholds and ``-qm`` queries on
``Purpose`` give different scores. Used by ``make demo`` and ``bench/masks.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from mfscore.formats.tables import write_table

OPERATIONS = {  # operation -> (purpose, how visible it is to the system)
    "PasteSplice": ("add", 0.9),
    "PasteSampled": ("clone", 0.7),
    "FillContentAwareFill": ("remove", 0.5),
    "Blur": ("heal", 0.25),
}
COLOURS = ((255, 0, 0), (0, 200, 0), (0, 0, 255), (255, 0, 240), (0, 247, 250))


@dataclass(frozen=True)
class MaskDataset:
    directory: Path
    reference: str = "reference/manipulation/MFC-manipulation-ref.csv"
    index: str = "indexes/MFC-manipulation-index.csv"
    system: str = "system/mfscore-demo-mask-system.csv"


def _shape(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    region = np.zeros((height, width), np.uint8)
    cx, cy = int(rng.integers(width // 8, width * 7 // 8)), int(rng.integers(height // 8, height * 7 // 8))
    a, b = int(rng.integers(width // 20, width // 5)), int(rng.integers(height // 20, height // 5))
    if rng.random() < 0.5:
        cv2.ellipse(region, (cx, cy), (a, b), float(rng.uniform(0, 180)), 0, 360, 1, -1)
    else:
        cv2.rectangle(region, (cx - a, cy - b), (cx + a, cy + b), 1, -1)
    return region.astype(bool)


def _system_mask(rng: np.random.Generator, found: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Grey system output: 255 where nothing is suspected, darker where it is."""
    height, width = found.shape
    suspicion = np.where(found, strength, 0.0)
    false_alarm = _shape(rng, width, height) if rng.random() < 0.3 else np.zeros_like(found)
    suspicion = np.maximum(suspicion, false_alarm * rng.uniform(0.2, 0.6))
    suspicion = cv2.GaussianBlur(suspicion.astype(np.float32), (0, 0), sigmaX=max(2.0, width / 200))
    noise = rng.normal(0.0, 0.06, size=(height // 8 + 1, width // 8 + 1)).astype(np.float32)
    suspicion = suspicion + cv2.resize(noise, (width, height), interpolation=cv2.INTER_LINEAR)
    return np.clip(255.0 * (1.0 - suspicion), 0, 255).astype(np.uint8)


def generate_mask_dataset(directory: str | Path, n_probes: int = 40, *, width: int = 320, height: int = 240,
                          bitplanes: bool = False, jpeg2000: bool = False, non_target_share: float = 0.1,
                          seed: int = 2018) -> MaskDataset:
    """Write an MFC-style image manipulation localization dataset under ``directory``."""
    rng = np.random.default_rng(seed)
    data = MaskDataset(Path(directory))
    ref_dir = data.directory
    for sub in ("reference/manipulation/mask", "indexes", "system/mask"):
        (ref_dir / sub).mkdir(parents=True, exist_ok=True)
    names = list(OPERATIONS)
    references, index, joins, journal, system = [], [], [], [], []
    for i in range(n_probes):
        probe = f"{(i * 2654435761 + seed) % (1 << 32):08x}"
        target = rng.random() >= non_target_share
        journal_name = f"J{probe}" if target else ""
        ref_name = bit_name = ""
        found = np.zeros((height, width), bool)
        strength = np.zeros((height, width))
        if target:
            colour_mask = np.full((height, width, 3), 255, np.uint8)
            bit_mask = np.zeros((height, width), np.uint8)
            n_ops = int(rng.integers(1, 4))
            for seq, op in enumerate(rng.choice(names, size=n_ops, replace=False), start=1):
                purpose, visibility = OPERATIONS[op]
                region = _shape(rng, width, height)
                colour = COLOURS[seq - 1]
                colour_mask[region] = colour[::-1]
                bit_mask[region] |= np.uint8(1 << (seq - 1))
                if rng.random() < visibility + 0.1:
                    found |= region
                    strength = np.maximum(strength, np.where(region, rng.uniform(0.4, 0.95), 0.0))
                node = f"{probe}-{seq:02d}"
                joins.append({"ProbeFileID": probe, "JournalName": journal_name, "StartNodeID": node,
                              "EndNodeID": f"{node}-{op}", "Sequence": str(seq)})
                journal.append({"JournalName": journal_name, "StartNodeID": node, "EndNodeID": f"{node}-{op}",
                                "Operation": op, "Color": " ".join(map(str, colour)), "Purpose": purpose,
                                "OperationArgument": "", "BitPlane": str(seq)})
            ref_name = f"reference/manipulation/mask/{probe}.ccm.png"
            cv2.imwrite(str(ref_dir / ref_name), colour_mask)
            if bitplanes:
                suffix = ".bpm.jp2" if jpeg2000 else ".bpm.png"
                bit_name = f"reference/manipulation/mask/{probe}{suffix}"
                params = [cv2.IMWRITE_JPEG2000_COMPRESSION_X1000, 1000] if jpeg2000 else []
                cv2.imwrite(str(ref_dir / bit_name), bit_mask, params)
        references.append({"TaskID": "manipulation", "ProbeFileID": probe, "ProbeFileName": f"probe/{probe}.jpg",
                           "IsTarget": "Y" if target else "N", "ProbeMaskFileName": ref_name,
                           "ProbeBitPlaneMaskFileName": bit_name, "JournalName": journal_name,
                           "Collection": ("Nimble-SCI", "Nimble-WEB")[i % 2]})
        index.append({"TaskID": "manipulation", "ProbeFileID": probe, "ProbeFileName": f"probe/{probe}.jpg",
                      "ProbeWidth": str(width), "ProbeHeight": str(height)})
        mask_name = f"mask/{probe}.png"
        cv2.imwrite(str(ref_dir / "system" / mask_name), _system_mask(rng, found, strength))
        status = "OptOutLocalization" if rng.random() < 0.03 else "Processed"
        system.append({"ProbeFileID": probe, "ConfidenceScore": f"{rng.random():.4f}",
                       "OutputProbeMaskFileName": mask_name, "ProbeStatus": status,
                       "ProbeOptOutPixelValue": ""})
    stem = ref_dir / data.reference.removesuffix(".csv")
    write_table(pd.DataFrame(references), ref_dir / data.reference)
    write_table(pd.DataFrame(joins), f"{stem}-probejournaljoin.csv")
    write_table(pd.DataFrame(journal), f"{stem}-journalmask.csv")
    write_table(pd.DataFrame(index), ref_dir / data.index)
    write_table(pd.DataFrame(system), ref_dir / data.system)
    return data
