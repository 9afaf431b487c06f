"""Distributed scoring benchmark, run by hand: ``python bench/cluster.py [N_PROBES]`` (or ``make bench``).

Not a test: it generates N (default 500) 1024×768 mask probes, scores them with the embedded CLI
(``mfscore mask``, one process), then through ``mfscore local-cluster`` (real nats-server, real S3
server, every service a process) with 1 and then 2 mask-scorer workers, and prints:

1. the embedded time per probe;
2. the cluster's time per probe, counted from SubmitRun to the run's end on the aggregator
   (validation, planning, fetching masks from S3, scoring, folding, reports), and the whole
   ``mfscore submit`` wall time including the upload; each as a ratio to embedded (target ≤ 1.2×);
3. the 2-worker / 1-worker throughput ratio (target ≥ 1.7× on 2 cores);
4. the CPU seconds each process of the cluster spent on the run (Linux /proc), which shows what
   shares the machine's cores with the scorers (the S3 server above all).

Every cluster run's files are checked byte for byte against the embedded run's.
"""

from __future__ import annotations

import io
import os
import platform
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import grpc

from mfscore.cli.main import main
from mfscore.reports.staged_outputs import files_under
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster
from mfscore.services.wire import runs_pb2, services_pb2_grpc

N_PROBES = int(sys.argv[1]) if len(sys.argv) > 1 else 500
WIDTH, HEIGHT = 1024, 768


def quiet(argv: list[str]) -> tuple[int, float]:
    started = time.perf_counter()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
        status = main(argv)
    if status != 0:
        raise SystemExit(f"mfscore {' '.join(argv[:2])} failed: {err.getvalue()}")
    return status, time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 where /proc is absent)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_run(root: Path, arguments: list[str], workers: int, expected: dict[str, bytes]) -> tuple[float, float]:
    """(server-side seconds from submission to reports, whole submit wall seconds) with ``workers`` mask scorers."""
    path = root / f"cluster-{workers}" / "cluster.json"
    config = local_cluster.up(path, mask_scorers=workers)
    try:
        out = root / f"cluster-{workers}-out"
        before = {p["name"]: cpu_seconds(p["pid"]) for p in config.processes}
        client = os.times()
        _, wall = quiet(["submit", "--cluster", str(path), "mask", *arguments, "-oR", str(out / "x")])
        spent = {name: cpu_seconds(p["pid"]) - before[name] for name, p in ((p["name"], p) for p in config.processes)}
        spent["submit (client)"] = sum(os.times()[:2]) - sum(client[:2])
        print(f"CPU seconds with {workers} worker(s), {wall:.2f} s wall: "
              + ", ".join(f"{name} {seconds:.2f}" for name, seconds in spent.items() if seconds >= 0.05))
        if files_under(out) != expected:
            raise SystemExit(f"the {workers}-worker cluster's reports differ from the embedded CLI's")
        config = local_cluster.ClusterConfig.read(path)
        with grpc.insecure_channel(config.aggregator_address) as channel:
            run = services_pb2_grpc.AggregatorStub(channel).ListRuns(runs_pb2.ListRunsRequest()).runs[-1]
        server = (run.finished_at.ToNanoseconds() - run.submitted_at.ToNanoseconds()) / 1e9
        return server, wall
    finally:
        local_cluster.down(path)


def main_bench() -> None:
    print(f"mfscore cluster benchmark: {N_PROBES} probes of {WIDTH}x{HEIGHT}, {platform.processor() or platform.machine()},"
          f" {os.cpu_count()} CPUs, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-cluster-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        data = generate_mask_dataset(root / "data", N_PROBES, width=WIDTH, height=HEIGHT, non_target_share=0.0)
        print(f"generated the data in {time.perf_counter() - started:.1f} s")
        arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                     "--sysDir", str(data.directory), "-s", data.system, "--sbin", "128"]
        _, embedded = quiet(["mask", *arguments, "-oR", str(root / "embedded" / "x")])
        expected = files_under(root / "embedded")
        one_server, one_wall = cluster_run(root, arguments, 1, expected)
        two_server, two_wall = cluster_run(root, arguments, 2, expected)

    per = 1000.0 / N_PROBES
    print(f"{'':34}{'total':>9}{'per probe':>12}{'vs embedded':>13}")
    print(f"{'embedded mfscore mask (1 process)':34}{embedded:8.2f}s{embedded * per:10.1f}ms{1.0:12.2f}x")
    for label, seconds in (("cluster, 1 worker (server side)", one_server), ("cluster, 1 worker (submit wall)", one_wall),
                           ("cluster, 2 workers (server side)", two_server), ("cluster, 2 workers (submit wall)", two_wall)):
        print(f"{label:34}{seconds:8.2f}s{seconds * per:10.1f}ms{seconds / embedded:12.2f}x")
    print(f"overhead of the 1-worker cluster: {one_server / embedded:.2f}x server side (target <= 1.2x), "
          f"{one_wall / embedded:.2f}x with upload")
    print(f"2-worker / 1-worker throughput: {one_server / two_server:.2f}x server side (target >= 1.7x), "
          f"{one_wall / two_wall:.2f}x with upload")
    print("every cluster run's report files are byte-identical to the embedded run's")


if __name__ == "__main__":
    main_bench()
