"""Capacity benchmark, run by hand: ``python bench/capacity.py`` (or ``make bench``). Its figures feed docs/scaling.md.

Not a test. It measures what one probe costs, per kind of work, at the image sizes an evaluation has (not only
1024×768), so that a capacity plan can multiply:

1. **Image masks** at 1024×768 (0.8 MP), 2048×1536 (3.1 MP) and 4032×3024 (12.2 MP, a phone camera's frame): the
   whole command ``mfscore mask -p 1`` on two run sizes, each in a fresh process, its CPU seconds (user + system)
   and peak resident memory from ``wait4``. The CPU per probe is the slope between the two runs (start-up and
   reporting cancel out), the fixed cost the intercept. Beside it the floor measured in the same run: decoding
   that run's PNGs with OpenCV in a fresh process, start-up included.
2. **What crosses the wire per image probe**: the bytes a scorer reads from the object store (the reference and
   system masks' files) and the sizes of the NATS job and record messages, encoded exactly as the services
   encode them (``mfscore.services.common.messages``).
3. **Video temporal**: ``mfscore video-temporal`` on two run sizes, the same slope and intercept.

Every command's output is thrown away; only the timings and sizes are printed.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SIZES = ((1024, 768), (2048, 1536), (4032, 3024))
RUN_SIZES = (10, 40)           # image probes in the two runs whose difference gives the cost of one probe
VIDEO_RUN_SIZES = (400, 1600)  # videos (temporal intervals only)
REPEATS = 3                    # each command's least CPU of this many runs (other work on the machine only adds)


@dataclass
class Cost:
    cpu: float     # seconds, user + system, the whole process
    rss_mb: float  # peak resident set


def measured(command: list[str]) -> Cost:
    """``command``'s least CPU seconds and peak memory over REPEATS runs."""
    costs = [measured_once(command) for _ in range(REPEATS)]
    return Cost(min(c.cpu for c in costs), max(c.rss_mb for c in costs))


def measured_once(command: list[str]) -> Cost:
    """Run ``command`` in a fresh process, output discarded; its CPU seconds and peak memory (exit 0 required)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command[:4])} ... failed:\n{error[-2000:]}")
    return Cost(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def mfscore(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "mfscore", *arguments]


def decode_floor(pngs: list[str]) -> list[str]:
    script = ("import sys, cv2\n"
              "for path in sys.argv[1:]:\n"
              "    assert cv2.imread(path, cv2.IMREAD_UNCHANGED) is not None, path\n")
    return [sys.executable, "-c", script, *pngs]


def slope(small: Cost, large: Cost, n_small: int, n_large: int) -> tuple[float, float]:
    """(per unit, fixed): the CPU seconds one more unit costs and what a run costs before its first unit."""
    per = (large.cpu - small.cpu) / (n_large - n_small)
    return per, small.cpu - per * n_small


def mask_run(root: Path, n: int, width: int, height: int) -> tuple[list[str], list[str]]:
    from mfscore.sample_data.masks import generate_mask_dataset
    data = generate_mask_dataset(root, n, width=width, height=height)
    pngs = sorted(str(p) for p in data.directory.rglob("*.png"))
    return ["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "-s", str(data.directory / data.system), "-p", "1", "--quiet", "-oR", str(root / "out" / "run")], pngs


def wire_sizes(arguments: list[str]) -> tuple[float, float, float]:
    """Mean bytes per probe of (object-store reads, NATS job message, NATS record message) for a mask run, encoded
    as the services encode them (the record of every job, scored in this process)."""
    from mfscore import tasks
    from mfscore.cli.main import build_parser
    from mfscore.run.local import score_work
    from mfscore.services.common.messages import job_message, record_message

    args = build_parser(arguments).parse_args(arguments)
    run = args.task_options(args)
    task = tasks.get(args.task_name)
    plan = task.plan(run.options)
    read = jobs = records = 0
    for job in plan.jobs:
        message = job_message("0" * 32, task, job, "runs/" + "0" * 32 + "/inputs/")
        jobs += message.ByteSize()
        records += record_message(message, score_work(task.name, job.work), "mask-scorer").ByteSize()
        read += sum(os.path.getsize(path) for path in task.blobs(job.work).values() if path and os.path.isfile(path))
    n = len(plan.jobs)
    return read / n, jobs / n, records / n


def main() -> int:
    print(f"mfscore capacity benchmark: python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs; CPU seconds are user + system of whole commands, one process each")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-capacity-") as tmp:
        root = Path(tmp)
        print(f"\nimage masks, mfscore mask -p 1 on {RUN_SIZES[0]} and {RUN_SIZES[1]} probes")
        print(f"{'size':>11} {'MP':>5} {'CPU/probe':>10} {'fixed':>7} {'decode/probe':>13} {'ratio':>6} "
              f"{'peak RSS':>9} {'S3 read/probe':>14} {'job msg':>8} {'record msg':>11}")
        for width, height in SIZES:
            costs, floors = [], []
            for n in RUN_SIZES:
                arguments, pngs = mask_run(root / f"m{width}-{n}", n, width, height)
                costs.append(measured(mfscore(arguments)))
                floors.append(measured(decode_floor(pngs)))
            per, fixed = slope(*costs, *RUN_SIZES)
            decode, _ = slope(*floors, *RUN_SIZES)
            read, job, record = wire_sizes(arguments)
            print(f"{width:>5}x{height:<5} {width * height / 1e6:5.1f} {per:9.3f}s {fixed:6.2f}s {decode:12.3f}s "
                  f"{per / decode:5.2f}x {costs[1].rss_mb:7.0f}MB {read / 1e3:12.0f}kB {job:7.0f}B {record:10.0f}B")

        from mfscore.sample_data.video import generate_temporal_dataset
        costs = []
        for n in VIDEO_RUN_SIZES:
            data = generate_temporal_dataset(root / f"t{n}", n)
            costs.append(measured(mfscore(["video-temporal", *data.cli_args(), "--quiet", "-o", str(root / f"t{n}out/")])))
        per, fixed = slope(*costs, *VIDEO_RUN_SIZES)
        print(f"\nvideo temporal, mfscore video-temporal on {VIDEO_RUN_SIZES[0]} and {VIDEO_RUN_SIZES[1]} videos: "
              f"{per * 1e3:.2f} ms CPU per video, {fixed:.2f} s fixed, peak RSS {costs[1].rss_mb:.0f} MB")
        start = measured([sys.executable, "-c", "import numpy"])
        print(f"start-up floor (python -c 'import numpy'): {start.cpu:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
