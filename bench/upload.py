"""Upload of a mask run's inputs to the cluster, run by hand: ``python bench/upload.py [--probes 2000] [--repeat 1]``.

Not a test. ``mfscore submit`` first uploads every file the run reads (the tables, each probe's
reference and system mask); on a large run that upload is a visible share of the whole command, and
the client holds no S3 key: it streams its files through the aggregator (``CreateRun``, then the
client-streaming ``UploadInputs``; ``mfscore.services.commands.upload.upload_run``), which checks and
stores them with the service's key. Before, the client put each file into S3 with a key of its own (8
threads of ``ObjectStore.put_file``), which is this benchmark's floor. This script says what going
through the aggregator costs, as whole figures against that floor measured in the same round.

It generates N (default 2,000) 1024×768 mask probes as bench/cluster.py does (cached under
``bench/.data/``, ignored by git, or ``--data DIR``), and in each round (``--repeat``, default 1):

1. runs the embedded ``mfscore mask`` as a whole command (a subprocess);
2. starts a fresh ``mfscore local-cluster`` (one mask scorer), puts one small object (untimed: the S3
   server's first request pays for its lazy start) and times, in this process, in an order rotated
   each round:
   - the **floor**: the run's files put straight into the bucket with the cluster's service S3 key
     (``<cluster file>-state/secrets/s3-service.json``), 8 threads, as the old ``submit`` did;
   - ``upload_run(config, files, threads=8)``: what ``submit`` does now;
3. runs ``mfscore submit mask`` with the same options as a whole command (a subprocess) and checks
   that its report files are byte-identical to the embedded command's.

Each measurement's objects are deleted (untimed) before the next, so none finds the bucket fuller.
It prints each round (with the load average at its start: the machine may be shared), then the
median and the spread (min-max) over the rounds: the file count and bytes, each upload in seconds,
MB/s and × floor, and the whole ``submit`` in seconds, × the embedded command and × the upload floor.
Ratios are medians of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mfscore.run.local import is_provenance
from mfscore.run.staged_outputs import files_under
from mfscore.sample_data.masks import MaskDataset, generate_mask_dataset
from mfscore.services.commands import local_cluster
from mfscore.services.commands.cluster_config import ClusterConfig, resolve
from mfscore.services.commands.upload import upload_run
from mfscore.services.common.object_store import ObjectStore

WIDTH, HEIGHT = 1024, 768
THREADS = 8
DATA = Path(__file__).resolve().parent / ".data"
FLOOR, UPLOAD_RUN = "floor", "upload_run"
SUBMIT, EMBEDDED = "submit", "embedded"
LABELS = {
    FLOOR: "floor: put_file, service S3 key, 8 threads",
    UPLOAD_RUN: "upload_run: CreateRun + UploadInputs, 8 threads",
}



def reports(directory: Path) -> dict[str, bytes]:
    """A run's files but its provenance, whose times differ from run to run."""
    return {name: data for name, data in files_under(directory).items() if not is_provenance(name)}

def parse_args(description: str = __doc__.splitlines()[0]) -> argparse.Namespace:
    """The options of this benchmark and of bench/datasets.py (the same probes)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--probes", type=int, default=2000, help="mask probes of 1024x768 (default 2000)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each on a fresh cluster (default 1)")
    parser.add_argument("--data", type=Path, help="where the generated data is kept (default bench/.data/upload-N)")
    return parser.parse_args()


def dataset(directory: Path, n_probes: int) -> MaskDataset:
    """The generated probes under ``directory``, generated there first unless a finished copy is there."""
    if not (directory / ".complete").exists():
        partial = directory.with_name(directory.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        started = time.perf_counter()
        generate_mask_dataset(partial, n_probes, width=WIDTH, height=HEIGHT, non_target_share=0.0)
        (partial / ".complete").touch()
        shutil.rmtree(directory, ignore_errors=True)
        partial.rename(directory)
        print(f"generated {n_probes} probes in {time.perf_counter() - started:.1f} s under {directory}")
    return MaskDataset(directory)


def mask_arguments(data: MaskDataset) -> list[str]:
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system, "--sbin", "128"]


def run_files(arguments: list[str]) -> list[tuple[str, str]]:
    """(local path, key) of every file ``mfscore submit mask ARGUMENTS`` uploads, planned as ``submit`` plans."""
    from mfscore import tasks
    from mfscore.cli.main import build_parser
    from mfscore.services.commands.submit import run_inputs

    args = build_parser().parse_args(["mask", *arguments, "-oR", os.devnull])
    files, _ = run_inputs(tasks.get(args.task_name), args.task_options(args).options)
    return files


def whole_command(argv: list[str]) -> float:
    """Wall seconds of ``mfscore <argv>`` as a whole command."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mfscore", *argv], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mfscore {' '.join(argv[:2])} failed: {done.stderr}")
    return wall


def service_store(config: ClusterConfig) -> ObjectStore:
    """The bucket with the service's S3 key, which the local cluster keeps out of the cluster file."""
    return ObjectStore(local_cluster.service_s3_settings(config))


def put_files(store: ObjectStore, files: list[tuple[str, str]]) -> tuple[float, str]:
    """(seconds, prefix): the files put under a fresh ``runs/<id>/inputs/`` as the old ``submit`` did."""
    prefix = f"runs/{uuid.uuid4().hex}/inputs/"
    started = time.perf_counter()
    store.ensure_bucket()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda f: store.put_file(prefix + f[1], f[0]), files))
    return time.perf_counter() - started, prefix


def timed_upload_run(path: Path, files: list[tuple[str, str]]) -> tuple[float, str]:
    """(seconds, the run's folder): ``upload_run`` on the cluster file as ``submit`` resolves it."""
    config = resolve(str(path))
    started = time.perf_counter()
    run_id = upload_run(config, files, threads=THREADS)
    return time.perf_counter() - started, f"runs/{run_id}/"


def warm(store: ObjectStore) -> None:
    """One small object put and deleted, untimed: the S3 server's first request pays for its lazy start."""
    store.ensure_bucket()
    store.put_bytes("warm/object", b"warm")
    store.delete_prefix("warm/")


def uploads(path: Path, files: list[tuple[str, str]], number: int) -> dict[str, float]:
    """Seconds of each way of uploading the files, on the running cluster at ``path``, in an order rotated
    each round (none always goes first); each one's objects are counted, then deleted (untimed)."""
    config = ClusterConfig.read(path)
    store = service_store(config)
    warm(store)
    ways = {FLOOR: lambda: put_files(store, files), UPLOAD_RUN: lambda: timed_upload_run(path, files)}
    names = list(ways)
    seconds = {}
    for name in names[number % len(names):] + names[:number % len(names)]:
        upload = ways[name]
        seconds[name], folder = upload()
        stored = len(store.list_keys(folder))
        if stored != len(files):
            print(f"  warning: {name} left {stored} objects under {folder}, not {len(files)}")
        store.delete_prefix(folder)
    return seconds


def one_round(root: Path, arguments: list[str], files: list[tuple[str, str]], number: int) -> dict[str, float]:
    """Every figure of one round: the embedded command, then a fresh cluster's uploads and whole submit."""
    work = root / f"round-{number}"
    load = os.getloadavg()[0]  # other work on the machine, which the figures share it with
    figures = {EMBEDDED: whole_command(["mask", *arguments, "-oR", str(work / "embedded" / "x")])}
    path = work / "cluster" / "cluster.json"
    local_cluster.up(path)
    try:
        figures |= uploads(path, files, number - 1)
        figures[SUBMIT] = whole_command(["submit", "--cluster", str(path), "mask", *arguments,
                                         "-oR", str(work / "submit" / "x")])
    finally:
        local_cluster.down(path)
    if reports(work / "submit") != reports(work / "embedded"):
        raise SystemExit(f"round {number}: the submit's reports differ from the embedded command's")
    print(f"round {number} (load average {load:.1f} at its start): "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in figures.items()), flush=True)
    return figures


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (f"{statistics.median(values):8.{digits}f}{unit} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def print_uploads(rounds: list[dict[str, float]], megabytes: float) -> None:
    print(f"\nUpload of the run's inputs (median of {len(rounds)} round(s), min-max)")
    for name, label in LABELS.items():
        seconds = [r[name] for r in rounds]
        line = (f"  {label:50}{spread(seconds, ' s')}  {spread([megabytes / s for s in seconds], ' MB/s', 1)}")
        if name != FLOOR:
            line += f"  {spread([r[name] / r[FLOOR] for r in rounds], 'x floor')}"
        print(line)


def print_commands(rounds: list[dict[str, float]]) -> None:
    print(f"\nWhole commands (median of {len(rounds)} round(s), min-max)")
    print(f"  {'mfscore mask (embedded)':50}{spread([r[EMBEDDED] for r in rounds], ' s')}")
    print(f"  {'mfscore submit mask (upload, validation, scoring)':50}{spread([r[SUBMIT] for r in rounds], ' s')}"
          f"  {spread([r[SUBMIT] / r[EMBEDDED] for r in rounds], 'x embedded')}"
          f"  {spread([r[SUBMIT] / r[FLOOR] for r in rounds], 'x upload floor')}")


def main_bench() -> None:
    options = parse_args()
    print(f"mfscore upload benchmark: {options.probes} mask probes of {WIDTH}x{HEIGHT}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{options.repeat} round(s)")
    data = dataset(options.data or DATA / f"upload-{options.probes}-{WIDTH}x{HEIGHT}", options.probes)
    arguments = mask_arguments(data)
    files = run_files(arguments)
    megabytes = sum(os.path.getsize(local) for local, _ in files) / 1e6
    print(f"the run's inputs: {len(files)} files, {megabytes:.1f} MB ({data.directory})")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-upload-") as tmp:
        rounds = [one_round(Path(tmp), arguments, files, i) for i in range(1, options.repeat + 1)]
    print_uploads(rounds, megabytes)
    print_commands(rounds)
    print("every submit's report files are byte-identical to the embedded command's")


if __name__ == "__main__":
    main_bench()
