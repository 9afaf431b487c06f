"""Image mask scoring benchmark, run by hand: ``python bench/masks.py`` (or ``make bench``).

Not a test: it generates its own data (200 probes of 1024×768, grey system masks, MFC18-style
bit-plane references in JPEG 2000 and, as a harder case, in PNG), then prints, single process:

1. mfscore's time per probe: ``score_mask`` (read both masks, select the region, no-score zones,
   histograms) plus every per-probe metric (``trial_cells``);
2. the decode-only floor: ``cv2.imdecode`` of the same two files, nothing else;
3. their ratio (target ≤ 1.5×);
4. the ratio against a straightforward per-threshold implementation that, given the decoded
   masks and weight map, counts TP/TN/FP/FN with one pass over the image per threshold
   (measured on a subset of probes; target ≥ 20×). Its counts are checked against mfscore's;
5. the issue-28 goals for the whole command, each in a fresh process (``os.wait4``), alternating rounds, medians:
   the CPU seconds (user + system, the figure worker included) of ``mfscore mask -p 1`` on 120 probes against
   those of decoding its PNGs with OpenCV in a fresh process (goal ≤ 1.5×), and its wall seconds on 100 probes
   against MediScore's 22.6 s (issue 28's table; goal ≥ 8×).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from mfscore.formats.tables import read_table
from mfscore.masks.mask_scoring import MaskJob, ZoneOptions, score_mask
from mfscore.masks.noscore_zones import noscore_zones
from mfscore.masks.reference_selection import bitplane_selection
from mfscore.masks.threshold_metrics import confusion_at, mask_thresholds
from mfscore.masks.trial_metrics import trial_cells
from mfscore.sample_data.masks import generate_mask_dataset

N_PROBES = 200
WIDTH, HEIGHT = 1024, 768
NAIVE_PROBES = 10
GOAL_PROBES = 120        # the CPU goal's run (issue 28)
MEDISCORE_PROBES = 100   # MediScore's whole command on 100 such probes, -p 1: 22.6 s (issue 28)
MEDISCORE_SECONDS = 22.6
ROUNDS = 5


def _jobs(data) -> list[MaskJob]:
    ref_dir = data.directory
    reference = read_table(ref_dir / data.reference, raw_text=True).fillna("")
    journal = read_table(ref_dir / (data.reference.removesuffix(".csv") + "-journalmask.csv"), raw_text=True)
    joins = read_table(ref_dir / (data.reference.removesuffix(".csv") + "-probejournaljoin.csv"), raw_text=True)
    bits = joins.merge(journal, on=["JournalName", "StartNodeID", "EndNodeID"]).groupby("ProbeFileID")["BitPlane"]
    planes = {probe: tuple(int(b) for b in values) for probe, values in bits}
    system = read_table(ref_dir / data.system, raw_text=True).set_index("ProbeFileID")
    jobs = []
    for row in reference[reference["IsTarget"] == "Y"].itertuples():
        jobs.append(MaskJob(
            reference_path=str(ref_dir / row.ProbeBitPlaneMaskFileName),
            system_path=str(ref_dir / "system" / system.loc[row.ProbeFileID, "OutputProbeMaskFileName"]),
            bitplanes=True, selected_bitplanes=planes[row.ProbeFileID], journal_bitplanes=planes[row.ProbeFileID],
            zones=ZoneOptions()))
    return jobs


def _decode(path: str, flag: int) -> np.ndarray:
    return cv2.imdecode(np.fromfile(path, np.uint8), flag)


def _time(fn, jobs) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        for job in jobs:
            fn(job)
        best = min(best, time.perf_counter() - start)
    return best / len(jobs)


def _mfscore(job: MaskJob) -> None:
    trial_cells(score_mask(job), actual=None, maximum=None)


def _floor(job: MaskJob) -> None:
    _decode(job.reference_path, cv2.IMREAD_UNCHANGED)
    _decode(job.system_path, cv2.IMREAD_UNCHANGED)


def _naive_counts(job: MaskJob) -> list[tuple[int, int, int, int]]:
    """One pass over the image per threshold (what a direct implementation does)."""
    layers = _decode(job.reference_path, cv2.IMREAD_UNCHANGED)[..., None]
    system = _decode(job.system_path, cv2.IMREAD_UNCHANGED)
    selection = bitplane_selection(layers, list(job.selected_bitplanes), list(job.journal_bitplanes))
    z = job.zones
    weight = noscore_zones(selection.region, selection.distractors, system, erode_size=z.erode_size,
                           dilate_size=z.dilate_size, distraction_size=z.distraction_size, kernel=z.kernel,
                           pixel_value=None).weight
    truth = selection.region
    counts = []
    for theta in [-1, *np.unique(system)]:
        predicted = system <= theta
        counts.append((int(np.sum(predicted & truth & weight)), int(np.sum(~predicted & ~truth & weight)),
                       int(np.sum(predicted & ~truth & weight)), int(np.sum(~predicted & truth & weight))))
    return counts


def _check(job: MaskJob) -> None:
    record = score_mask(job)
    c = confusion_at(record, mask_thresholds(record))
    ours = list(zip(c.tp.tolist(), c.tn.tolist(), c.fp.tolist(), c.fn.tolist()))
    assert ours == _naive_counts(job), "histogram counts differ from the per-threshold loop"


def _run(label: str, jobs: list[MaskJob]) -> dict:
    _check(jobs[0])
    per_probe = _time(_mfscore, jobs)
    floor = _time(_floor, jobs)
    naive = _time(_naive_counts, jobs[:NAIVE_PROBES])
    print(f"{label}: mfscore {per_probe * 1000:.1f} ms/probe, decode floor {floor * 1000:.1f} ms/probe "
          f"→ {per_probe / floor:.2f}× the floor; per-threshold loop {naive * 1000:.0f} ms/probe "
          f"→ mfscore {naive / per_probe:.0f}× faster", flush=True)
    return {"references": label, "ms/probe": round(per_probe * 1000, 1), "decode floor ms": round(floor * 1000, 1),
            "× floor": round(per_probe / floor, 2), "per-threshold ms": round(naive * 1000),
            "× faster than per-threshold": round(naive / per_probe)}


def _command(arguments: list[str]) -> tuple[float, float]:
    """(CPU seconds: user + system of the process and its children, wall seconds) of a fresh Python process."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(arguments[:4])} ... failed:\n{error[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def _whole_command(root: Path, n: int) -> tuple[list[str], list[str]]:
    """``mfscore mask -p 1`` on ``n`` generated probes, and the floor: decoding the run's PNGs with OpenCV."""
    data = generate_mask_dataset(root, n, width=WIDTH, height=HEIGHT)
    pngs = sorted(str(p) for p in data.directory.rglob("*.png"))
    command = ["-m", "mfscore", "mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
               "-s", str(data.directory / data.system), "-p", "1", "--quiet", "-oR", str(root / "out" / "run")]
    floor = ["-c", "import sys, cv2\nfor path in sys.argv[1:]:\n"
                   "    assert cv2.imread(path, cv2.IMREAD_UNCHANGED) is not None, path\n", *pngs]
    return command, floor


def goals(root: Path) -> None:
    """The whole command's CPU against its PNG-decode floor, and its wall time against MediScore's."""
    command, floor = _whole_command(root / "goal", GOAL_PROBES)
    mediscore_size, _ = _whole_command(root / "mediscore", MEDISCORE_PROBES)
    cpu, floors, walls = [], [], []
    for _ in range(ROUNDS):
        cpu.append(_command(command)[0])
        floors.append(_command(floor)[0])
        walls.append(_command(mediscore_size)[1])
    cpu, floor_cpu, wall = statistics.median(cpu), statistics.median(floors), statistics.median(walls)
    load = os.getloadavg()[0]
    print(f"\nwhole command (medians of {ROUNDS} alternating rounds, load average {load:.1f} on "
          f"{os.cpu_count()} CPUs):")
    print(f"  mfscore mask -p 1, {GOAL_PROBES} probes: {cpu:.2f} s CPU; decoding its PNGs: {floor_cpu:.2f} s CPU "
          f"→ {cpu / floor_cpu:.2f}× the floor (goal ≤ 1.5×)")
    print(f"  mfscore mask -p 1, {MEDISCORE_PROBES} probes: {wall:.2f} s wall; MediScore {MEDISCORE_SECONDS} s "
          f"→ {MEDISCORE_SECONDS / wall:.1f}× faster (goal ≥ 8×)")


def main() -> int:
    print(f"mask benchmark: {N_PROBES} probes of {WIDTH}×{HEIGHT}, single process, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, OpenCV {cv2.__version__}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, jp2 in (("bit-plane JPEG 2000", True), ("bit-plane PNG", False)):
            data = generate_mask_dataset(Path(tmp) / label.replace(" ", "_"), N_PROBES, width=WIDTH, height=HEIGHT,
                                         bitplanes=True, jpeg2000=jp2, non_target_share=0.0)
            rows.append(_run(label, _jobs(data)))
    print()
    print(pd.DataFrame(rows).to_string(index=False))
    print("\nFor scale: MediScore needs about 330 ms per such probe on this machine (issue 3, speed-up mode).")
    with tempfile.TemporaryDirectory() as tmp:
        goals(Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
