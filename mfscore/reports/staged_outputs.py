"""Writing a run's output files all-or-nothing.

Every file of a run is written into a private temporary directory beside its destination and
moved into place only when the whole run has succeeded; a failure removes the directory, so a
bad input never leaves a half-written report behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


class StagedOutputs:
    """Output paths ``<out_root><suffix>`` that land only on ``commit``."""

    def __init__(self, out_root: str):
        text = str(out_root)
        self.directory = Path(os.path.dirname(text) or ".")
        self.prefix = os.path.basename(text)
        self._created = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._stage = Path(tempfile.mkdtemp(prefix=".mfscore-staging-", dir=self.directory))
        self._names: list[str] = []

    def path(self, suffix: str, subdir: str = "") -> Path:
        """Where to write the output ``<out_root><suffix>`` (or ``DIR/<subdir>/PREFIX<suffix>``) for now."""
        name = os.path.join(subdir, self.prefix + suffix)
        self._names.append(name)
        (self._stage / name).parent.mkdir(parents=True, exist_ok=True)
        return self._stage / name

    def final_path(self, suffix: str, subdir: str = "") -> Path:
        return self.directory / subdir / (self.prefix + suffix)

    def commit(self) -> list[Path]:
        landed = []
        for name in dict.fromkeys(self._names):
            staged = self._stage / name
            if staged.exists():
                (self.directory / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, self.directory / name)
                landed.append(self.directory / name)
        shutil.rmtree(self._stage, ignore_errors=True)
        return landed

    def abort(self) -> None:
        """Discard everything, and the output directory too when this run created it and left it empty."""
        shutil.rmtree(self._stage, ignore_errors=True)
        if self._created:
            with contextlib.suppress(OSError):
                self.directory.rmdir()


@contextmanager
def staged_outputs(out_root: str):
    """Yield a ``StagedOutputs``; commit on success, discard everything on any exception."""
    stage = StagedOutputs(out_root)
    try:
        yield stage
    except BaseException:
        stage.abort()
        raise
    stage.commit()


def files_under(directory: str | os.PathLike) -> dict[str, bytes]:
    """Every file a run wrote under ``directory``: '/'-separated relative name → bytes, in name order."""
    root = Path(directory)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
