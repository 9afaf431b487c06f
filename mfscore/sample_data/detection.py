"""Generated MFC-style detection data: index, reference with journal tables, system output.

Used by ``make demo`` and the benchmarks, so both run anywhere without downloading evaluation data.
Targets carry one to three journal operations; a system's score depends on how hard the
operations are, so queries on ``Purpose`` or ``Operation`` give visibly different curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.formats.tables import write_table

OPERATIONS = {  # operation -> (purpose, how easily a system detects it)
    "PasteSplice": ("add", 1.6),
    "PasteSampled": ("clone", 1.0),
    "FillContentAwareFill": ("remove", 0.6),
    "SelectRemove": ("remove", 0.8),
    "Blur": ("heal", 0.3),
}
COLLECTIONS = ("Nimble-SCI", "Nimble-WEB", "MFC-Eval")


@dataclass(frozen=True)
class DetectionDataset:
    directory: Path
    index: str = "MFC-manipulation-index.csv"
    reference: str = "MFC-manipulation-ref.csv"
    system: str = "system/mfscore-demo-system.csv"


def generate_detection_dataset(directory: str | Path, n_trials: int = 2000, *, target_share: float = 0.5,
                               opt_out_share: float = 0.03, seed: int = 2019) -> DetectionDataset:
    """Write an MFC-style manipulation detection dataset of ``n_trials`` probes under ``directory``."""
    rng = np.random.default_rng(seed)
    directory = Path(directory)
    (directory / "system").mkdir(parents=True, exist_ok=True)
    # Distinct, random-looking IDs: multiplication by an odd constant permutes 32-bit integers.
    probe_ids = np.char.mod("%08x", (np.arange(n_trials, dtype=np.uint64) * 2654435761 + seed) % (1 << 32))
    is_target = rng.random(n_trials) < target_share
    journal_names = np.where(is_target, np.char.add("J", probe_ids), "")

    index = pd.DataFrame({
        "TaskID": "manipulation",
        "ProbeFileID": probe_ids,
        "ProbeFileName": np.char.add(np.char.add("probe/", probe_ids), ".jpg"),
        "ProbeWidth": rng.choice([640, 1024, 1920, 3000, 4032], n_trials),
        "ProbeHeight": rng.choice([480, 768, 1080, 2000, 3024], n_trials),
    })
    reference = pd.DataFrame({
        "TaskID": "manipulation",
        "ProbeFileID": probe_ids,
        "ProbeFileName": index["ProbeFileName"],
        "IsTarget": np.where(is_target, "Y", "N"),
        "ProbeMaskFileName": np.where(is_target, np.char.add(np.char.add("reference/mask/", probe_ids), ".png"), ""),
        "BaseFileName": np.char.add(np.char.add("world/", probe_ids), ".jpg"),
        "JournalName": journal_names,
        "Collection": rng.choice(COLLECTIONS, n_trials),
    })

    names = list(OPERATIONS)
    target_pos = np.flatnonzero(is_target)
    n_ops = rng.integers(1, 4, target_pos.size)
    op_owner = np.repeat(target_pos, n_ops)
    op_kind = rng.integers(0, len(names), op_owner.size)
    step = np.arange(op_owner.size) - np.repeat(np.cumsum(n_ops) - n_ops, n_ops)
    start = np.char.add(np.char.add(journal_names[op_owner], "-"), (step * 2).astype(str))
    end = np.char.add(np.char.add(journal_names[op_owner], "-"), (step * 2 + 1).astype(str))
    probe_journal = pd.DataFrame({"ProbeFileID": probe_ids[op_owner], "JournalName": journal_names[op_owner],
                                  "StartNodeID": start, "EndNodeID": end})
    journal_mask = pd.DataFrame({
        "JournalName": journal_names[op_owner], "StartNodeID": start, "EndNodeID": end,
        "Operation": np.array(names)[op_kind],
        "Purpose": np.array([OPERATIONS[n][0] for n in names])[op_kind],
        "Color": np.array([f"{r} {g} {b}" for r, g, b in rng.integers(0, 256, (64, 3))])[rng.integers(0, 64, op_owner.size)],
        "OperationArgument": "",
    })

    ease = np.zeros(n_trials)
    np.maximum.at(ease, op_owner, np.array([OPERATIONS[n][1] for n in names])[op_kind])
    raw = rng.normal(0.0, 1.0, n_trials) + ease
    scores = np.round(1.0 / (1.0 + np.exp(-raw)), 4)
    status = np.where(rng.random(n_trials) < opt_out_share, "OptOutDetection", "Processed")
    system = pd.DataFrame({
        "ProbeFileID": probe_ids, "ConfidenceScore": scores,
        "OutputProbeMaskFileName": np.char.add(np.char.add("mask/", probe_ids), ".png"),
        "ProbeStatus": status,
    })

    dataset = DetectionDataset(directory)
    write_table(index, directory / dataset.index)
    write_table(reference, directory / dataset.reference)
    stem = dataset.reference.removesuffix(".csv")
    write_table(probe_journal, directory / f"{stem}-probejournaljoin.csv")
    write_table(journal_mask, directory / f"{stem}-journalmask.csv")
    write_table(system.sample(frac=1.0, random_state=seed), directory / dataset.system)
    return dataset
