"""Distributed scoring benchmark, run by hand: ``python bench/cluster.py [N_PROBES] [--size WxH] [--cold]`` (or
``make bench``).

Not a test: it generates N (default 500) mask probes of ``--size`` (default 1024x768), runs the embedded
``mfscore mask`` as a whole command in a subprocess (three times: its median is what the ratios divide by), then
``mfscore submit`` (in process) on ``mfscore local-cluster`` (real nats-server, real S3 server (SeaweedFS), every
service a process) with 1 and then 2 mask-scorer workers. Each cluster first scores a warm-up submit of 8 other
probes by another caller, unmeasured, as a serving cluster has: a scorer starts its scoring process on its first
job, and that start is the services' start-up, which is not counted (``--cold`` measures the first submit instead).
It prints:

1. CPU seconds per probe (user + system, all threads): the embedded command's (``getrusage`` of the
   child), and each cluster run's from Linux /proc per process, grouped into mfscore's own processes
   (every service and the ``submit`` client), the object store (seaweedfs) and NATS (nats-server);
   mfscore's as a ratio to embedded against issue 47's goal for the size (≤ 1.25× at 1024x768, ≤ 1.15× at
   2048x1536, where the capacity plan puts real images), said met or not; the object store's and NATS's on their
   own; and split in time: before SubmitRun (the client plans, hashes and uploads; the aggregator receives and
   stores), from SubmitRun to the run's end, and after it (the reports fetched);
2. throughput server side (SubmitRun to the run's end on the aggregator) in probes per second for 1
   and 2 workers and their ratio, each next to the object store's CPU seconds in the same window (the
   S3 server shares the cores with the scorers) and over the whole submit;
3. wall times: the embedded command, and the whole ``submit`` including the upload;
4. S3 requests per probe by kind, counted from the S3 server's request log over the whole submit: PUT
   object, GET of an uploaded object (a mask or a table: objects are named by digest), of a report, HEAD object
   (stat), LIST, bucket requests. Reads should be one GET per mask object (2 per probe: reference and system).

5. upload bytes (the aggregator's ``mfscore_uploaded_bytes_total``): the measured submit, by a caller new to the
   cluster, uploads the reference set and the system output; then, on the 2-worker cluster, the reference set
   registered once as a dataset (``mfscore dataset register``) and a submit naming it (``--dataset``) by another
   new client uploads only its system output (goal: exactly the system output's bytes). That submit's CPU per
   probe is printed with the first table's: it is what each submission of an evaluation costs once its reference
   set is registered.
6. the floor of the transport: on the 2-worker cluster, this process reads each uploaded object once and writes
   each system file once through ``ObjectStore`` (the services' S3 client) against the same object store, and its
   thread's CPU is printed per probe and as a share of the embedded CPU, next to what the goal leaves for
   everything else the cluster does (the NATS messages, the upload stream, planning, merging, the reports).

The data is laid out as a reference directory and a system directory (a dataset is the reference set alone).
Every cluster run's reports are checked byte for byte against the embedded run's (its run record,
``<prefix>_run.json``, names the runner and the times, so it is left out).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import io
import os
import platform
import re
import resource
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from cluster_measures import children, cpu_seconds, embedded_run, last_run, run_files

from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster
from mfscore.services.common.object_store import ObjectStore


def image_size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    if not (width.isdigit() and height.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT, e.g. 2048x1536")
    return int(width), int(height)


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="mfscore submit on a local cluster against the embedded command")
    parser.add_argument("n_probes", nargs="?", type=int, default=500, help="mask probes (default 500)")
    parser.add_argument("--size", type=image_size, default=(1024, 768), help="the masks' WxH (default 1024x768)")
    parser.add_argument("--cold", action="store_true",
                        help="measure the first submit of a fresh cluster (no warm-up submit before it)")
    return parser.parse_args(argv)


# issue 47: mfscore's processes at most this times the embedded CPU a probe over a whole submit, by image size
GOALS = {(1024, 768): 1.25, (2048, 1536): 1.15}
ARGS = arguments(sys.argv[1:])
N_PROBES = ARGS.n_probes
WIDTH, HEIGHT = ARGS.size
GOAL = GOALS.get(ARGS.size)  # None: no goal at this size
WARM_PROBES = 8  # the warm-up submit's: enough for each scorer of a 2-worker cluster to take jobs
EMBEDDED_ROUNDS = 3  # the embedded command's CPU varies by ±10 % from run to run; every ratio divides by its median
CLIENT = "submit (client)"
DATASET = "bench-cluster-ref@1"
GROUPS = {"seaweedfs": "object store", "nats-server": "NATS"}
# a request as SeaweedFS logs it at verbosity 2 (its identity, method, path without the query, status, duration)
REQUEST = re.compile(r'stats\.go:\d+\]? "[^"]*" ([A-Z]+) "(/[^"]*)" \d{3} ')


@dataclass
class ClusterRun:
    workers: int
    wall: float
    server: float
    cpu: dict[str, float]          # per process, whole submit
    window: dict[str, float]       # per process, SubmitRun to the run's end
    before: dict[str, float]       # per process, the submit's start to SubmitRun (planning, hashing, the upload)
    requests: Counter
    objects: Counter               # distinct objects each kind of request named
    uploaded: int                  # bytes the measured submit uploaded
    uploaded_with_dataset: int | None = None  # bytes a submit naming the registered reference set uploaded
    cpu_with_dataset: dict[str, float] | None = None  # per process, over that submit
    transport: Transport | None = None


@dataclass
class Transport:
    """This process's CPU seconds to move the run's files through the object store once more with the services'
    S3 client: every uploaded object read once (what the scorers read), every system file written once as the
    aggregator stores it for a submit naming a dataset (signed with its digest, computed before the timing)."""

    gets: int
    get_seconds: float
    puts: int
    put_seconds: float


def group(name: str) -> str:
    return GROUPS.get(name, "mfscore")


def grouped(cpu: dict[str, float]) -> Counter:
    totals = Counter()
    for name, seconds in cpu.items():
        totals[group(name)] += seconds
    return totals


def quiet(argv: list[str]) -> float:
    started = time.perf_counter()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
        status = main(argv)
    if status != 0:
        raise SystemExit(f"mfscore {' '.join(argv[:2])} failed: {err.getvalue()}")
    return time.perf_counter() - started


def warm_client() -> None:
    """Import what ``mfscore submit`` imports as it runs, so that no run's client CPU counts imports (the
    first run's would; the services import theirs at start)."""
    from mfscore import tasks
    from mfscore.run import local  # noqa: F401
    from mfscore.services.commands import report, submit  # noqa: F401
    from mfscore.services.common import grpc_server, object_store  # noqa: F401

    tasks.get("mask")


def working(config) -> dict[str, int]:
    """The cluster's processes by name, but its supervisor: the services it runs are counted under their own."""
    return {p["name"]: p["pid"] for p in config.processes if not p.get("supervisor")}


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuSampler:
    """CPU seconds of each process, and of this one less the sampling thread (the ``submit`` client),
    sampled against the wall clock while the block runs."""

    def __init__(self, pids: dict[str, int], interval: float = 0.05):
        self.pids = pids
        self.interval = interval
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._sampling = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self.samples.append(self._sample())
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self._sample())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self._sample())
            self._sampling = time.thread_time()

    def _sample(self) -> tuple[float, dict[str, float]]:
        cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        cpu[CLIENT] = own_cpu_seconds() - self._sampling
        return time.time(), cpu

    def at(self, when: float) -> dict[str, float]:
        """Each process's CPU seconds at wall time ``when``, interpolated between samples."""
        times = [t for t, _ in self.samples]
        i = min(max(bisect.bisect(times, when), 1), len(times) - 1)
        (t0, a), (t1, b) = self.samples[i - 1], self.samples[i]
        share = min(max((when - t0) / (t1 - t0), 0.0), 1.0) if t1 > t0 else 1.0
        return {name: a[name] + share * (b[name] - a[name]) for name in a}

    def spent(self, start: float | None = None, end: float | None = None) -> dict[str, float]:
        first = self.samples[0][1] if start is None else self.at(start)
        last = self.samples[-1][1] if end is None else self.at(end)
        return {name: last[name] - first[name] for name in first}


def request_kind(method: str, key: str, query: str) -> str:
    if not key:
        return "LIST" if method == "GET" else f"{method} bucket"
    if query:
        return f"{method} object ?{query.split('=', 1)[0]}"
    if method == "GET":
        if key.startswith("objects/"):  # an uploaded file, by its digest: a mask or a table
            return "GET input object"
        what = "report" if "/inputs/" not in key else "table" if key.lower().endswith(".csv") else "mask"
        return f"GET {what}"
    return {"HEAD": "HEAD object (stat)", "PUT": "PUT object"}.get(method, f"{method} object")


def s3_requests(log: str, bucket: str) -> tuple[Counter, Counter]:
    """(requests by kind, distinct objects by kind) in the S3 server's request log."""
    kinds, keys = Counter(), {}
    for method, target in REQUEST.findall(log):
        path, _, query = target.partition("?")  # SeaweedFS leaves the query out: a multipart PUT counts as a PUT
        key = unquote(path.removeprefix(f"/{bucket}").lstrip("/"))
        kind = request_kind(method, key, query)
        kinds[kind] += 1
        keys.setdefault(kind, set()).add(key)
    return kinds, Counter({kind: len(named) for kind, named in keys.items()})


def uploaded_bytes(config) -> int:
    """The aggregator's ``mfscore_uploaded_bytes_total``: every byte a caller has uploaded to the cluster."""
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == "aggregator")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(r"^mfscore_uploaded_bytes_total (\S+)$", text, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


def with_dataset(root: Path, path: Path, config, reference: Path, arguments: list[str],
                 expected: dict[str, bytes]) -> tuple[int, dict[str, float]]:
    """Register the reference set as a dataset (the operator, once) and submit naming it as a client new to the
    cluster: the bytes that submit uploaded (its reports checked against the embedded run's) and the CPU seconds
    of each process over that submit."""
    caller = root / "dataset-client.json"
    local_cluster.add_caller(config, "bench-dataset-client", "client", out=caller)
    time.sleep(1.5)  # the services read the tokens file again within a second
    quiet(["dataset", "register", DATASET, str(reference), "--shared", "--release", "open", "--cluster", str(path)])
    before = uploaded_bytes(config)
    out = root / "dataset-out"
    with CpuSampler(working(config)) as cpu:
        quiet(["submit", "--cluster", str(caller), "--dataset", DATASET, "mask", *arguments, "-oR", str(out / "x")])
    if run_files(out) != expected:
        raise SystemExit("the reports of the submit naming the dataset differ from the embedded CLI's")
    return uploaded_bytes(config) - before, cpu.spent()


def transport_floor(config, system: Path) -> Transport:
    store = ObjectStore(local_cluster.service_s3_settings(config))
    keys = store.list_keys("objects/")
    started = time.thread_time()
    for key in keys:
        store.get_bytes(key, max_bytes=1 << 30)
    get_seconds = time.thread_time() - started
    files = [path.read_bytes() for path in sorted(system.rglob("*")) if path.is_file()]
    digests = [hashlib.sha256(data).hexdigest() for data in files]  # the aggregator's check, not the transport
    started = time.thread_time()
    for i, (data, sha256) in enumerate(zip(files, digests)):
        store.put_stream(f"bench-transport/{i}", io.BytesIO(data), len(data), sha256=sha256)
    return Transport(len(keys), get_seconds, len(files), time.thread_time() - started)


def warm_up(path: Path, config, warm_arguments: list[str]) -> None:
    """Submit WARM_PROBES other probes as another caller, unmeasured, so that the measured submit finds the cluster
    as a serving one is: each scorer's scoring process started (a pool starts it on its first job, about 0.35 s of
    CPU: mfscore.run.limited), the aggregator's first report written. Says which scorers took no job."""
    caller = path.parent / "warm-up-client.json"
    local_cluster.add_caller(config, "bench-warm-up", "client", out=caller)
    time.sleep(1.5)  # the services read the tokens file again within a second
    quiet(["submit", "--cluster", str(caller), "mask", *warm_arguments, "-oR", str(path.parent / "warm-up-out" / "x")])
    idle = [name for name, pid in working(config).items() if name.startswith("mask-scorer") and not children(pid)]
    if idle:
        print(f"warm-up: {', '.join(idle)} took no job; its scoring process starts in the measured submit")


def cluster_run(root: Path, arguments: list[str], workers: int, expected: dict[str, bytes],
                warm_arguments: list[str] | None, split_dirs: tuple[Path, Path] | None = None) -> ClusterRun:
    """One ``mfscore submit`` on a fresh local cluster with ``workers`` mask scorers, after a warm-up submit of
    ``warm_arguments`` (None: none); with ``split_dirs`` (the reference and system directories), then a submit
    naming the reference set registered as a dataset, and the transport's floor."""
    path = root / f"cluster-{workers}" / "cluster.json"
    config = local_cluster.up(path, mask_scorers=workers, log_s3_requests=True)
    try:
        if warm_arguments is not None:
            warm_up(path, config, warm_arguments)
        out = root / f"cluster-{workers}-out"
        log = Path(next(p["log"] for p in config.processes if p["name"] == "seaweedfs"))
        offset = log.stat().st_size
        uploaded = uploaded_bytes(config)
        with CpuSampler(working(config)) as cpu:
            wall = quiet(["submit", "--cluster", str(path), "mask", *arguments, "-oR", str(out / "x")])
        uploaded = uploaded_bytes(config) - uploaded
        with log.open("rb") as f:
            f.seek(offset)
            requests, objects = s3_requests(f.read().decode(errors="replace"), config.bucket)
        if run_files(out) != expected:
            raise SystemExit(f"the {workers}-worker cluster's reports differ from the embedded CLI's")
        run = last_run(path)
        submitted, finished = run.submitted_at.ToNanoseconds() / 1e9, run.finished_at.ToNanoseconds() / 1e9
        result = ClusterRun(workers, wall, finished - submitted, cpu.spent(), cpu.spent(submitted, finished),
                            cpu.spent(None, submitted), requests, objects, uploaded)
        print_processes(result)
        if split_dirs is not None:
            reference, system = split_dirs
            result.uploaded_with_dataset, result.cpu_with_dataset = with_dataset(root, path, config, reference,
                                                                                 arguments, expected)
            result.transport = transport_floor(config, system)
        return result
    finally:
        local_cluster.down(path)


def print_processes(run: ClusterRun) -> None:
    print(f"CPU seconds with {run.workers} worker(s), {run.wall:.2f} s wall: "
          + ", ".join(f"{name} {seconds:.2f}" for name, seconds in run.cpu.items() if seconds >= 0.05))


def goal_text(ratio: float | None = None) -> str:
    """Issue 47's goal at this size; with ``ratio``, whether it was met."""
    if GOAL is None:
        return f"no goal at {WIDTH}x{HEIGHT}"
    said = f"goal <= {GOAL:g}x at {WIDTH}x{HEIGHT}"
    return said if ratio is None else f"{said}: {verdict(ratio)}"


def verdict(ratio: float) -> str:
    return "-" if GOAL is None else "met" if ratio <= GOAL else "not met"


def print_cpu(embedded_cpu: float, runs: list[ClusterRun]) -> None:
    per = 1000.0 / N_PROBES
    print(f"\nCPU per probe (user + system, all threads){'':6}" + "".join(f"{r.workers:>9} worker(s)" for r in runs))
    print(f"{'embedded mfscore mask (whole command)':48}{embedded_cpu * per:16.1f} ms")
    groups = [grouped(r.cpu) for r in runs]
    print(f"{'cluster: mfscore processes (services, submit)':48}"
          + "".join(f"{g['mfscore'] * per:16.1f} ms" for g in groups))
    print(f"{'  / embedded (' + goal_text() + ')':48}"
          + "".join(f"{g['mfscore'] / embedded_cpu:18.2f}x" for g in groups))
    print(f"{'  issue 47 goal':48}" + "".join(f"{verdict(g['mfscore'] / embedded_cpu):>19}" for g in groups))
    for name in ("object store", "NATS"):
        print(f"{'cluster: ' + name:48}" + "".join(f"{g[name] * per:16.1f} ms" for g in groups))
    print("  by process (mfscore's own), over the whole submit / from SubmitRun to the run's end (no upload):")
    for name in sorted({n for r in runs for n in r.cpu if group(n) == "mfscore"}):
        cells = [f"{r.cpu.get(name, 0) * per:8.1f} /{r.window.get(name, 0) * per:5.1f} ms" for r in runs]
        if any(r.cpu.get(name, 0) >= 0.05 for r in runs):
            print(f"    {name:44}" + "".join(f"{c:>18}" for c in cells))
    windows = [grouped(r.window) for r in runs]
    print(f"{'  SubmitRun to the end / embedded':48}"
          + "".join(f"{w['mfscore'] / embedded_cpu:18.2f}x" for w in windows))
    befores = [grouped(r.before) for r in runs]
    afters = [g["mfscore"] - w["mfscore"] - b["mfscore"] for g, w, b in zip(groups, windows, befores)]
    print(f"{'  before SubmitRun (plan, hashes, upload)':48}"
          + "".join(f"{b['mfscore'] * per:9.1f} ms {b['mfscore'] / embedded_cpu:5.2f}x" for b in befores))
    print(f"{'  after the end of the run (reports fetched)':48}"
          + "".join(f"{after * per:9.1f} ms {after / embedded_cpu:5.2f}x" for after in afters))
    print(f"{'  object store before SubmitRun (the PUTs)':48}"
          + "".join(f"{b['object store'] * per:16.1f} ms" for b in befores))
    for run in runs:
        if run.cpu_with_dataset is not None:
            spent = grouped(run.cpu_with_dataset)
            print(f"submit --dataset (reference set registered once), {run.workers} workers: mfscore processes "
                  f"{spent['mfscore'] * per:.1f} ms, {spent['mfscore'] / embedded_cpu:.2f}x embedded "
                  f"({goal_text(spent['mfscore'] / embedded_cpu)}), "
                  f"the client's share {run.cpu_with_dataset[CLIENT] * per:.1f} ms; "
                  f"object store {spent['object store'] * per:.1f} ms, NATS {spent['NATS'] * per:.1f} ms")
            if run.transport is not None:
                print_transport(run.transport, run.requests["GET input object"], embedded_cpu, spent["mfscore"])


def print_transport(moved: Transport, scorer_gets: int, embedded_cpu: float, dataset_submit: float) -> None:
    """The transport's floor (a probe's GETs as the scorers made them, its system files' PUTs), and what the goal
    leaves beside it."""
    per = 1000.0 / N_PROBES
    get, put = moved.get_seconds / moved.gets, moved.put_seconds / moved.puts
    floor = get * scorer_gets + put * moved.puts
    rest = dataset_submit - embedded_cpu - floor
    print(f"floor of the transport (the services' S3 client, in this process, the same object store): a GET "
          f"{get * 1e3:.2f} ms ({moved.gets} timed), a PUT {put * 1e3:.2f} ms ({moved.puts}); a probe's "
          f"{scorer_gets / N_PROBES:.2f} GETs and {moved.puts / N_PROBES:.2f} PUTs {floor * per:.1f} ms, "
          f"{floor / embedded_cpu:.2f}x embedded")
    if GOAL is None:
        return
    left = (GOAL - 1) * embedded_cpu - floor
    print(f"  the goal leaves {left * per:.1f} ms a probe ({left / embedded_cpu:.2f}x) "
          f"for the rest (messages, upload stream, planning, merging, reports); the submit --dataset spent "
          f"{rest * per:.1f} ms ({rest / embedded_cpu:.2f}x) on it beyond the embedded CPU and the transport")


def print_throughput(embedded_wall: float, one: ClusterRun, two: ClusterRun) -> None:
    print("\nThroughput server side (SubmitRun to the run's end)")
    for run in (one, two):
        store = grouped(run.window)["object store"]
        print(f"  {run.workers} worker(s): {N_PROBES / run.server:6.1f} probes/s ({run.server:.2f} s, "
              f"{run.server / embedded_wall:.2f}x the embedded wall); object store CPU "
              f"{store:.2f} s in that window, {grouped(run.cpu)['object store']:.2f} s over the whole submit")
    print(f"  2 workers / 1 worker: {one.server / two.server:.2f}x")
    print(f"Wall: embedded {embedded_wall:.2f} s; whole submit with upload {one.wall:.2f} s (1 worker), "
          f"{two.wall:.2f} s (2 workers)")


def request_cell(run: ClusterRun, kind: str) -> str:
    objects = str(run.objects[kind]) if kind.startswith("GET ") else ""
    return f"{run.requests[kind] / N_PROBES:11.2f}{run.requests[kind]:10d}{objects:>10}"


def print_requests(runs: list[ClusterRun]) -> None:
    print("\nS3 requests (S3 server log, whole submit)" + "".join(f"{r.workers:>21} worker(s)" for r in runs))
    print(f"{'':41}" + f"{'per probe':>11}{'requests':>10}{'objects':>10}" * len(runs))
    for kind in sorted(set().union(*(r.requests for r in runs))):
        print((f"  {kind:39}" + "".join(request_cell(r, kind) for r in runs)).rstrip())
    for run in runs:
        gets = run.requests["GET input object"] + run.requests["GET mask"] + run.requests["GET table"]
        read = run.objects["GET input object"] + run.objects["GET mask"] + run.objects["GET table"]
        stats = run.requests["HEAD object (stat)"]
        print(f"  {run.workers} worker(s): {gets} GETs of {read} uploaded objects (masks and tables; "
              f"{read / N_PROBES:.2f} per probe), {gets - read} read again; {stats} HEAD/stat")


def print_uploads(runs: list[ClusterRun], system_bytes: int) -> None:
    print(f"\nUploaded (aggregator's mfscore_uploaded_bytes_total); the system output is {system_bytes / 1e6:.2f} MB")
    for run in runs:
        print(f"  submit without a dataset, a caller new to the {run.workers}-worker cluster: "
              f"{run.uploaded / 1e6:.2f} MB")
        if run.uploaded_with_dataset is not None:
            only = run.uploaded_with_dataset == system_bytes
            verdict = "only its system output" if only else "not only its system output"
            print(f"  submit --dataset (reference set registered once), a new client: "
                  f"{run.uploaded_with_dataset / 1e6:.2f} MB, {verdict} (goal: only its system output)")


def split(source: Path, target: Path) -> tuple[Path, Path]:
    """(reference directory, system directory) under ``target``: hard links of ``source``'s files."""
    ref, system = target / "ref", target / "sys"
    for part, into in (("reference", ref), ("indexes", ref), ("system", system)):
        for path in sorted((source / part).rglob("*")):
            if path.is_file():
                link = into / path.relative_to(source)
                link.parent.mkdir(parents=True, exist_ok=True)
                os.link(path, link)
    return ref, system


def main_bench() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
    print(f"mfscore cluster benchmark: {N_PROBES} probes of {WIDTH}x{HEIGHT}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          "each cluster "
          + ("measured cold (its first submit)" if ARGS.cold else f"warmed up first ({WARM_PROBES} other probes)"))
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-cluster-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        data = generate_mask_dataset(root / "data", N_PROBES, width=WIDTH, height=HEIGHT, non_target_share=0.0)
        print(f"generated the data in {time.perf_counter() - started:.1f} s")
        reference, system = split(data.directory, root / "split")
        arguments = ["--refDir", str(reference), "-r", data.reference, "-x", data.index,
                     "--sysDir", str(system), "-s", data.system, "--sbin", "128"]
        system_bytes = sum(p.stat().st_size for p in system.rglob("*") if p.is_file())
        timings = [embedded_run(["mask", *arguments, "-oR", str(root / f"embedded-{i}" / "x")])
                   for i in range(EMBEDDED_ROUNDS)]
        embedded_wall, embedded_cpu = (statistics.median(t[0] for t in timings),
                                       statistics.median(t[1] for t in timings))
        print(f"embedded mfscore mask, median of {EMBEDDED_ROUNDS} runs: {embedded_wall:.2f} s wall, "
              f"{embedded_cpu:.2f} s CPU (CPU of each: {', '.join(f'{t[1]:.2f}' for t in timings)})")
        expected = run_files(root / "embedded-0")
        if any(run_files(root / f"embedded-{i}") != expected for i in range(1, EMBEDDED_ROUNDS)):
            raise SystemExit("the embedded runs' reports differ from each other")
        warm_client()
        warm_arguments = None
        if not ARGS.cold:
            warm = generate_mask_dataset(root / "warm-up", WARM_PROBES, width=WIDTH, height=HEIGHT,
                                         non_target_share=0.0, seed=47)
            warm_arguments = ["--refDir", str(warm.directory), "-r", warm.reference, "-x", warm.index,
                              "--sysDir", str(warm.directory), "-s", warm.system, "--sbin", "128"]
        runs = [cluster_run(root, arguments, workers, expected, warm_arguments,
                            (reference, system) if workers == 2 else None) for workers in (1, 2)]
    print_cpu(embedded_cpu, runs)
    print_throughput(embedded_wall, *runs)
    print_requests(runs)
    print_uploads(runs, system_bytes)
    print("every cluster run's report files are byte-identical to the embedded run's")
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[1]:.1f} (5 min) at the end")


if __name__ == "__main__":
    main_bench()
