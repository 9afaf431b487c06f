"""MediScore's ``--refDir -r -x --sysDir -s`` layout, shared by the detection, mask and video-spatial tasks."""

from __future__ import annotations

import os

from mfscore.formats.journal import journal_paths
from mfscore.tasks.base import Inputs


def reference_inputs(ref_dir: str, reference: str, index: str, system: str, system_dir: str, *,
                     mediscore_compat: bool) -> Inputs:
    """The reference side under ``ref`` (with the journal tables beside the reference that exist), the
    system side under ``sys``."""
    journals = [str(p) for p in journal_paths(ref_dir, reference, mediscore_compat=mediscore_compat) if p.is_file()]
    return Inputs(roots={"ref": ref_dir, "sys": system_dir},
                  tables=(os.path.join(ref_dir, reference), os.path.join(ref_dir, index), system, *journals))
