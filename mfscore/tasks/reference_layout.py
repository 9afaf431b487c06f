"""MediScore's ``--refDir -r -x --sysDir -s`` layout, shared by the detection, mask and video-spatial tasks.

Light to import (what ``reference_inputs`` uses is imported on use): the command line makes its flags from
these fields.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mfscore.options import option, validate

if TYPE_CHECKING:
    from mfscore.tasks.base import Inputs


@dataclass(frozen=True)
class ReferenceLayout:
    """Where a run's tables are; a task's options extend it."""

    ref_dir: str = field(metadata=option(
        "--refDir", path=True, help="directory the reference and index paths are relative to"))
    reference: str = field(metadata=option("-r/--inRef", help="reference CSV (relative to --refDir)"))
    index: str = field(metadata=option("-x/--inIndex", help="index CSV (relative to --refDir)"))
    system: str = field(metadata=option("-s/--inSys", path=True))  # the system CSV; its masks are relative to its directory

    def __post_init__(self):
        validate(self)

    @property
    def system_dir(self) -> str:
        return os.path.dirname(self.system) or "."


def reference_inputs(layout: ReferenceLayout, *, mediscore_compat: bool) -> Inputs:
    """The reference side under ``ref`` (with the journal tables beside the reference that exist), the
    system side under ``sys``."""
    from mfscore.formats.journal import journal_paths
    from mfscore.tasks.base import Inputs

    journals = [str(p) for p in journal_paths(layout.ref_dir, layout.reference, mediscore_compat=mediscore_compat)
                if p.is_file()]
    return Inputs(roots={"ref": layout.ref_dir, "sys": layout.system_dir},
                  tables=(os.path.join(layout.ref_dir, layout.reference), os.path.join(layout.ref_dir, layout.index),
                          layout.system, *journals))
