"""A small generated run of every registered task: its command-line arguments on fresh sample data.

A task's example is the function of this module named as the task's module (``mfscore.tasks.module_name``:
``video_temporal`` for ``video-temporal``); it generates the data under ``directory`` and returns
``(arguments, [output flag, output name])``: the arguments of ``mfscore <task>`` but the output, and the flag
naming the output with the name under the output directory (``["-oR", "run"]`` for a prefix DIR/run,
``["-o", ""]`` for a directory). The registry-driven tests (``tests/unit/test_tasks_common.py``,
``tests/integration/test_tasks_cluster.py``) run every task through its example without naming it; a task
without one fails them. An example should plan more than one job, and reach the task's queries (several
``-qm`` queries: several job groups), so that folding shards and orders is tested on it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mfscore import tasks
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import sample_temporal_dataset, sample_video_dataset


def detection(directory: Path) -> tuple[list[str], list[str]]:
    data = generate_detection_dataset(directory, 2500)
    return (["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
             "-s", data.system, "--ci", "--semafor", "-qm", "Purpose==['add']", "Purpose==['remove']"], ["-o", "run"])


def mask(directory: Path) -> tuple[list[str], list[str]]:
    data = generate_mask_dataset(directory, 12, width=96, height=72, bitplanes=True, jpeg2000=True)
    return (["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
             "-s", str(data.directory / data.system), "--jpeg2000", "--sbin", "128", "--precision", "6",
             "-qm", "Purpose==['add']", "Purpose==['remove','clone','heal']"], ["-oR", "run"])


def video_temporal(directory: Path) -> tuple[list[str], list[str]]:
    data = sample_temporal_dataset(directory)
    return [*data.cli_args(), "-c", "2", "-d", "--query", "*", "Operation == 'PasteSampled'"], ["-o", ""]


def video_spatial(directory: Path) -> tuple[list[str], list[str]]:
    data = sample_video_dataset(directory, compression="gzip")
    return ([*data.cli_args(), "--eks", "3", "--dks", "3", "-c", "2", "--video_opt_out", "--sbin", "128",
             "--precision", "6"], ["-oR", "run"])


def _provenance(directory: Path, extra: list[str]) -> tuple[list[str], list[str]]:
    data = generate_provenance_dataset(directory, 24)
    return [*data.options("system.csv"), *extra], ["-o", ""]


def provenance_filtering(directory: Path) -> tuple[list[str], list[str]]:
    return _provenance(directory, ["--nodetype", "all"])


def provenance_graph(directory: Path) -> tuple[list[str], list[str]]:
    return _provenance(directory, ["-c", "-d"])


def example(task: str) -> Callable[[Path], tuple[list[str], list[str]]]:
    """The example of the registered task ``task``: this module's function named as the task's module."""
    found = globals().get(tasks.module_name(task))
    if not callable(found) or getattr(found, "__module__", None) != __name__:
        raise LookupError(f"the task {task!r} has no example: define {tasks.module_name(task)}(directory) "
                          f"in {__name__}")
    return found


def example_arguments(task: str, data_dir: str | Path, out_dir: str | Path) -> list[str]:
    """``mfscore <task> ARGS`` for a small generated run writing its reports under ``out_dir``."""
    arguments, (flag, name) = example(task)(Path(data_dir))
    out = Path(out_dir)
    return [*arguments, flag, str(out / name) if name else str(out) + "/"]
