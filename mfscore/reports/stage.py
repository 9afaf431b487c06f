"""What a report writes into: the ``Stage`` the runner hands a task's ``report`` (``mfscore.run.staged_outputs``
implements it). Declared here so the reports, below the runners, need nothing of them."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Stage(Protocol):
    prefix: str  # the PREFIX of -o DIR/PREFIX: every output's name starts with it

    def path(self, suffix: str, subdir: str = "") -> Path:
        """Where to write the output ``PREFIX<suffix>`` (in ``subdir``) for now: it lands only with the whole run."""

    def final_path(self, suffix: str, subdir: str = "") -> Path:
        """Where that output will be once the run lands (for links between outputs)."""

    def draw(self, target: str, *args, **kwargs) -> None:
        """Draw a figure: call ``target`` (``"module:function"``) with the arguments, maybe in another process."""
