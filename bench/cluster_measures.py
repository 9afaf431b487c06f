"""What the cluster benchmarks (``cluster.py``, ``detection_cluster.py``) measure the same way: a whole embedded
command's wall and CPU time, a process tree's CPU time, and a cluster run's status and files."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def embedded_run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of every thread and child) of ``mfscore <argv>`` as a whole
    command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mfscore", *argv], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"mfscore {argv[0]} failed: {done.stderr}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _processes() -> tuple[dict[int, list[str]], dict[int, list[int]]]:
    """(the fields of /proc/<pid>/stat after the command's name, by pid; the live children of each pid)."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    children: dict[int, list[int]] = {}
    for each, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(each)
    return stats, children


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    return _processes()[1].get(pid, [])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds so far of a process, its waited-for children and its live descendants (a scorer
    scores each job in a child process of its own: mfscore.run.limited); 0 once it is gone."""
    stats, below = _processes()
    total, todo = 0, [pid] if pid in stats else []
    while todo:
        each = todo.pop()
        total += sum(int(field) for field in stats[each][11:15])
        todo += below.get(each, [])
    return total / os.sysconf("SC_CLK_TCK")


def last_run(path: Path):
    """The status of the newest run of the local cluster described at ``path``."""
    from mfscore.services.commands import local_cluster
    from mfscore.services.commands.report import list_runs
    from mfscore.services.wire import services_pb2_grpc

    config = local_cluster.ClusterConfig.read(path)
    with config.channel() as channel:
        return list(list_runs(services_pb2_grpc.AggregatorServiceStub(channel)))[-1]


def run_files(directory: Path) -> dict[str, bytes]:
    """Every file a run wrote under ``directory`` but its provenance (``<prefix>_run.json``), whose runner and times
    differ from run to run."""
    from mfscore.run.local import is_provenance
    from mfscore.run.staged_outputs import files_under

    return {name: data for name, data in files_under(directory).items() if not is_provenance(name)}
