"""A small generated run of every registered task: its command-line arguments on fresh sample data.

The registry-driven tests (``tests/unit/test_tasks_common.py``, ``tests/integration/test_tasks_cluster.py``)
run every task through these without naming it; a task without an example fails them.
"""

from __future__ import annotations

from pathlib import Path

from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.sample_data.provenance import generate_provenance_dataset
from mfscore.sample_data.video import sample_temporal_dataset, sample_video_dataset


def _detection(directory: Path) -> tuple[list[str], list[str]]:
    data = generate_detection_dataset(directory, 2500)
    return (["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
             "-s", data.system, "--ci", "--semafor", "-qm", "Purpose==['add']", "Purpose==['remove']"], ["-o", "run"])


def _mask(directory: Path) -> tuple[list[str], list[str]]:
    data = generate_mask_dataset(directory, 12, width=96, height=72, bitplanes=True, jpeg2000=True)
    return (["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
             "-s", str(data.directory / data.system), "--jpeg2000", "--sbin", "128", "--precision", "6",
             "-qm", "Purpose==['add']", "Purpose==['remove','clone','heal']"], ["-oR", "run"])


def _video_temporal(directory: Path) -> tuple[list[str], list[str]]:
    data = sample_temporal_dataset(directory)
    return [*data.cli_args(), "-c", "2", "-d", "--query", "*", "Operation == 'PasteSampled'"], ["-o", ""]


def _video_spatial(directory: Path) -> tuple[list[str], list[str]]:
    data = sample_video_dataset(directory, compression="gzip")
    return ([*data.cli_args(), "--eks", "3", "--dks", "3", "-c", "2", "--video_opt_out", "--sbin", "128",
             "--precision", "6"], ["-oR", "run"])


def _provenance(extra: list[str]):
    def example(directory: Path) -> tuple[list[str], list[str]]:
        data = generate_provenance_dataset(directory, 24)
        return [*data.options("system.csv"), *extra], ["-o", ""]
    return example


EXAMPLES = {
    "detection": _detection,
    "mask": _mask,
    "video-temporal": _video_temporal,
    "video-spatial": _video_spatial,
    "provenance-filtering": _provenance(["--nodetype", "all"]),
    "provenance-graph": _provenance(["-c", "-d"]),
}


def example_arguments(task: str, data_dir: str | Path, out_dir: str | Path) -> list[str]:
    """``mfscore <task> ARGS`` for a small generated run writing its reports under ``out_dir``."""
    arguments, (flag, name) = EXAMPLES[task](Path(data_dir))
    out = Path(out_dir)
    return [*arguments, flag, str(out / name) if name else str(out) + "/"]
