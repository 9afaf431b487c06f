"""The task registry: every scorer, by name. A task's module is imported only when the task is used."""

from __future__ import annotations

import importlib

from mfscore.errors import OptionError

# name -> the module whose TASK it is: one line per task
REGISTRY = {
    "detection": "mfscore.tasks.detection",
    "mask": "mfscore.tasks.mask",
    "video-temporal": "mfscore.tasks.video_temporal",
    "video-spatial": "mfscore.tasks.video_spatial",
    "provenance-filtering": "mfscore.tasks.provenance_filtering",
    "provenance-graph": "mfscore.tasks.provenance_graph",
}


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str):
    """The registered task ``name``; an unknown name raises ``OptionError``."""
    module = REGISTRY.get(name)
    if module is None:
        raise OptionError(f"there is no task {name!r}; the tasks are {', '.join(REGISTRY)}")
    return importlib.import_module(module).TASK


def load_all() -> list:
    """Every task, imported now (a service does it at start, so no run pays for the imports)."""
    return [get(name) for name in REGISTRY]
