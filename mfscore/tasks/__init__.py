"""The task registry: every scorer, by name, declared once. A task's module is imported only when the task is used.

``REGISTRY`` is the one list of tasks; everything else that names them derives from it: the command line's
sub-commands (``mfscore.cli.main``: the module ``mfscore.cli.<module_name>`` of each task), the examples
(``mfscore.sample_data.examples.<module_name>``), the job kinds of the cluster (``resources``), the
benchmarks' list of commands and the registry tests (``tests/unit/test_tasks_common.py``).
"""

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


def module_name(name: str) -> str:
    """The last part of the registered task's module name (``video_temporal``): its command-line module is
    ``mfscore.cli.<it>`` and its example the function ``mfscore.sample_data.examples.<it>``."""
    if name not in REGISTRY:
        get(name)  # raises, naming the tasks
    return REGISTRY[name].rpartition(".")[2]


def resources() -> tuple[str, ...]:
    """The resource classes worker pools score (every task's ``resource`` but ``PLANNER``), in registry order,
    each once: the cluster's job kinds. Imports every task."""
    from mfscore.tasks.base import PLANNER

    return tuple(dict.fromkeys(task.resource for task in load_all() if task.resource != PLANNER))


def decode_options(task, data: bytes):
    """The options of ``task`` in the canonical JSON ``data`` (``mfscore.codec.encode`` of them), checked as the
    options type checks them wherever they are made; ``OptionError`` (``.option``: the option's field name,
    ``.flag``: its command-line flag) for bytes that are not JSON, an unknown, missing or wrongly typed option,
    or a value out of range."""
    from mfscore.options import from_json

    return from_json(task.options_type, data)
