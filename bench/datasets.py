"""What a run uploads before and after its reference set is a registered dataset, run by hand:
``python bench/datasets.py [--probes 2000] [--repeat 1]``.

Not a test. Without a dataset, ``mfscore submit`` declares every file the run reads and uploads those the caller
has not uploaded before: on a cluster new to the caller, the reference set and the system output. With the
reference set registered once (``mfscore dataset register``) and the run naming it (``mfscore submit --dataset``),
only the system output travels (docs/datasets.md). This script times whole commands, each a subprocess:

It generates N (default 2,000) 1024×768 mask probes as bench/upload.py does (cached under ``bench/.data/``), laid
out as a reference directory (tables and masks) and a system directory (table and masks), hard links of the cached
files. In each round (``--repeat``) it starts a fresh ``mfscore local-cluster`` with three callers of its own and
runs, each a whole command, reading the aggregator's ``mfscore_uploaded_bytes_total`` before and after:

1. ``mfscore mask`` embedded;
2. **before**: ``mfscore submit mask`` by a client new to the cluster, no dataset: the whole upload;
3. ``mfscore dataset register NAME@1 REF --shared`` by the operator (once per cluster), and again (nothing
   uploaded);
4. **after**: ``mfscore submit --dataset NAME@1 mask`` by another client new to the cluster: its system output only;
5. the same submit again by that client: a resubmission, nothing uploaded.

Every submit's reports are checked byte-identical to the embedded command's. The upload's own seconds are timed
in this process, on the same cluster, as ``submit`` uploads (``upload_run``: hashing, declaring, streaming what is
missing) by two more callers new to it: one without the dataset (before), one naming it (after).
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from upload import DATA, HEIGHT, WIDTH, dataset, parse_args, run_files  # noqa: E402  (bench/upload.py: the same probes and options)

from mfscore.run.local import is_provenance  # noqa: E402
from mfscore.run.staged_outputs import files_under  # noqa: E402
from mfscore.services.commands import local_cluster  # noqa: E402
from mfscore.services.commands.cluster_config import ClusterConfig  # noqa: E402
from mfscore.services.commands.upload import upload_run  # noqa: E402

NAME = "bench-ref@1"
STEPS = ("embedded", "before", "register", "register again", "after", "resubmit")


def split(source: Path, target: Path) -> tuple[Path, Path]:
    """(reference directory, system directory) under ``target``: hard links of ``source``'s files."""
    ref, system = target / "ref", target / "sys"
    if not (target / ".complete").exists():
        for part, into in (("reference", ref), ("indexes", ref), ("system", system)):
            for path in sorted((source / part).rglob("*")):
                if path.is_file():
                    link = into / path.relative_to(source)
                    link.parent.mkdir(parents=True, exist_ok=True)
                    if not link.exists():
                        os.link(path, link)
        (target / ".complete").touch()
    return ref, system


def arguments(ref: Path, system: Path) -> list[str]:
    return ["--refDir", str(ref), "-r", "reference/manipulation/MFC-manipulation-ref.csv",
            "-x", "indexes/MFC-manipulation-index.csv", "--sysDir", str(system),
            "-s", "system/mfscore-demo-mask-system.csv", "--sbin", "128"]


def uploaded_bytes(config: ClusterConfig) -> int:
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == "aggregator")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(r"^mfscore_uploaded_bytes_total (\S+)$", text, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


def whole(argv: list[str], config: ClusterConfig | None) -> dict[str, float]:
    """A whole ``mfscore ARGV``: wall seconds and the bytes the aggregator received meanwhile."""
    before = uploaded_bytes(config) if config else 0
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mfscore", *argv], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mfscore {' '.join(argv[:3])} failed: {done.stderr}")
    return {"wall": wall, "bytes": (uploaded_bytes(config) - before) if config else 0}


def timed_upload(config: ClusterConfig, caller: Path, files, dataset: str = "") -> float:
    """Seconds of ``upload_run`` (what ``submit`` does before submitting) by the caller of the file ``caller``."""
    started = time.perf_counter()
    upload_run(ClusterConfig.read(caller), files, dataset=dataset)
    return time.perf_counter() - started


def one_round(work: Path, ref: Path, system: Path, number: int) -> dict[str, dict[str, float]]:
    load = os.getloadavg()[0]
    args = arguments(ref, system)
    files = run_files(args)
    figures = {"embedded": whole(["mask", *args, "-oR", str(work / "embedded" / "x")], None)}
    path = work / "cluster" / "cluster.json"
    config = local_cluster.up(path)
    try:
        callers = {}
        for name in ("before", "after", "upload-before", "upload-after"):
            callers[name] = work / f"{name}.json"
            local_cluster.add_caller(config, f"bench-{name}", "client", out=callers[name])
        time.sleep(1.5)  # the services read the tokens file again within a second
        figures["before"] = whole(["submit", "--cluster", str(callers["before"]), "mask", *args,
                                   "-oR", str(work / "before" / "x")], config)
        figures["before"]["upload"] = timed_upload(config, callers["upload-before"], files)
        for step in ("register", "register again"):
            figures[step] = whole(["dataset", "register", NAME, str(ref), "--shared", "--release", "open",
                                   "--cluster", str(path)], config)
        for step in ("after", "resubmit"):
            figures[step] = whole(["submit", "--cluster", str(callers["after"]), "--dataset", NAME, "mask", *args,
                                   "-oR", str(work / step / "x")], config)
        figures["after"]["upload"] = timed_upload(config, callers["upload-after"], files, NAME)
        figures["resubmit"]["upload"] = timed_upload(config, callers["upload-after"], files, NAME)
    finally:
        local_cluster.down(path)
    embedded = reports(work / "embedded")
    for step in ("before", "after", "resubmit"):
        got = reports(work / step)
        if got != embedded:
            differ = sorted(name for name in set(got) | set(embedded) if got.get(name) != embedded.get(name))
            raise SystemExit(f"round {number}: the reports of '{step}' differ from the embedded command's: {differ}")
    print(f"round {number} (load average {load:.1f} at its start): " + ", ".join(
        f"{step} {f['wall']:.1f} s / {f['bytes'] / 1e6:.1f} MB" for step, f in figures.items()), flush=True)
    return figures


def reports(directory: Path) -> dict[str, bytes]:
    """The run's files but its provenance, whose times differ from run to run."""
    return {name: data for name, data in files_under(directory).items() if not is_provenance(name)}


def median(rounds, step: str, what: str) -> float:
    return statistics.median(r[step].get(what, float("nan")) for r in rounds)


def main_bench() -> None:
    options = parse_args(__doc__.splitlines()[0])
    print(f"mfscore dataset benchmark: {options.probes} mask probes of {WIDTH}x{HEIGHT}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{options.repeat} round(s)")
    cached = options.data or DATA / f"upload-{options.probes}-{WIDTH}x{HEIGHT}"
    data = dataset(cached, options.probes)
    ref, system = split(data.directory, cached.with_name(cached.name + "-split"))
    size = lambda d: sum(p.stat().st_size for p in d.rglob("*") if p.is_file())  # noqa: E731
    print(f"reference set {size(ref) / 1e6:.1f} MB, system output {size(system) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-datasets-") as tmp:
        rounds = [one_round(Path(tmp) / f"round-{i}", ref, system, i) for i in range(1, options.repeat + 1)]
    print(f"\nmedian of {len(rounds)} round(s)   bytes uploaded   upload s   whole command s")
    labels = {"embedded": "mfscore mask (embedded)", "before": "submit, no dataset (before)",
              "register": "dataset register (once)", "register again": "dataset register again",
              "after": "submit --dataset (after)", "resubmit": "submit --dataset, resubmitted"}
    for step in STEPS:
        print(f"  {labels[step]:32}{median(rounds, step, 'bytes') / 1e6:10.1f} MB{median(rounds, step, 'upload'):10.1f}"
              f"{median(rounds, step, 'wall'):14.1f}")
    print("every submit's report files are byte-identical to the embedded command's")


if __name__ == "__main__":
    main_bench()
