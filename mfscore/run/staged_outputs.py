"""Writing a run's output files all-or-nothing.

Every file of a run is written into a private temporary directory beside its destination and
moved into place only when the whole run has succeeded; a failure removes the directory, so a
bad input never leaves a half-written report behind. A run that was killed (SIGKILL, power loss)
cannot remove its own: the next run writing to that directory does, when the process that made it
(named in the directory's name, with the host) is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mfscore.run import figure_process

STAGE_PREFIX = ".mfscore-staging-"
_HOST = socket.gethostname().replace(os.sep, "_")
_UNNAMED_STALE_SECONDS = 24 * 3600  # a stage named before processes were named in it


def remove_stale_stages(directory: Path) -> list[Path]:
    """Remove the stages in ``directory`` whose process on this host has exited (and unnamed ones a day
    old); returns what was removed."""
    removed = []
    for stage in directory.glob(STAGE_PREFIX + "*"):
        if stage.is_dir() and not stage.is_symlink() and _abandoned(stage):
            shutil.rmtree(stage, ignore_errors=True)
            removed.append(stage)
    return removed


def _abandoned(stage: Path) -> bool:
    host, _, rest = stage.name[len(STAGE_PREFIX):].rpartition("-")[0].rpartition("-")
    if rest.isdigit() and host:
        return host == _HOST and not _alive(int(rest))
    with contextlib.suppress(OSError):
        return time.time() - stage.stat().st_mtime > _UNNAMED_STALE_SECONDS
    return False


def _alive(pid: int) -> bool:
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StagedOutputs:
    """The ``Stage`` (``mfscore.reports.stage``) of a run: output paths ``<out_root><suffix>`` that land only on ``commit``."""

    def __init__(self, out_root: str):
        text = str(out_root)
        self.directory = Path(os.path.dirname(text) or ".")
        self.prefix = os.path.basename(text)
        self._created = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        remove_stale_stages(self.directory)
        self._stage = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{_HOST}-{os.getpid()}-", dir=self.directory))
        self._names: list[str] = []

    def path(self, suffix: str, subdir: str = "") -> Path:
        """Where to write the output ``<out_root><suffix>`` (or ``DIR/<subdir>/PREFIX<suffix>``) for now."""
        name = os.path.join(subdir, self.prefix + suffix)
        self._names.append(name)
        (self._stage / name).parent.mkdir(parents=True, exist_ok=True)
        return self._stage / name

    def final_path(self, suffix: str, subdir: str = "") -> Path:
        return self.directory / subdir / (self.prefix + suffix)

    def draw(self, target: str, *args, **kwargs) -> None:
        """A figure among the outputs: drawn by the figure worker when one runs, else here (``figure_process``)."""
        figure_process.draw(target, *args, **kwargs)

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
