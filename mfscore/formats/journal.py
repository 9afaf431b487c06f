"""Journal tables (``<ref>-probejournaljoin.csv``, ``<ref>-journalmask.csv``) and their join.

They describe, per probe, each manipulation operation of its journal (Operation, Purpose, Color,
BitPlane, ...), which is what ``-q``/``-qm`` queries usually select on (docs/detection.md §7.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mfscore.formats.tables import read_table

if TYPE_CHECKING:
    import pandas as pd


def journal_paths(ref_dir: str | Path, ref_name: str, *, mediscore_compat: bool = False) -> tuple[Path, Path]:
    """Where the journal tables of reference ``ref_name`` live.

    MediScore cuts the name at its *first* dot, so ``../x.y/ref.csv`` finds nothing; mfscore
    removes only the last extension unless ``mediscore_compat``.
    """
    if mediscore_compat:
        stem = ".".join(ref_name.split(".")[:-1])
    else:
        name = Path(ref_name)
        stem = str(name.with_suffix("")) if name.suffix else ref_name
    base = Path(ref_dir)
    return base / f"{stem}-probejournaljoin.csv", base / f"{stem}-journalmask.csv"


def read_journal(ref_dir: str | Path, ref_name: str, *, mediscore_compat: bool = False) -> pd.DataFrame | None:
    """The probe-journal join left-joined with the journal masks, or None if either is absent."""
    join_path, mask_path = journal_paths(ref_dir, ref_name, mediscore_compat=mediscore_compat)
    if not (join_path.is_file() and mask_path.is_file()):
        return None
    probe_journal = read_table(join_path, required=("ProbeFileID",))
    journal_mask = read_table(mask_path)
    common = [c for c in probe_journal.columns if c in journal_mask.columns]
    if not common:
        return probe_journal
    return probe_journal.merge(journal_mask, how="left", on=common, sort=False)


def join_journal(trials: pd.DataFrame, journal: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (trial, journal operation); trials without a journal keep one row with blanks."""
    if journal is None:
        return trials
    common = [c for c in trials.columns if c in journal.columns]
    if not common:
        return trials
    return trials.merge(journal, how="left", on=common, sort=False)
