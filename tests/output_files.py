"""What a run left on disk: for tests that a failed run leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path


def everything_under(path: Path) -> list[str]:
    """All files and directories below ``path`` (hidden ones included), relative, sorted."""
    found = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            found.append(os.path.relpath(os.path.join(root, name), path))
    return sorted(found)
