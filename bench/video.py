"""Spatial-temporal video mask benchmark, run by hand: ``python bench/video.py`` (or ``make bench``).

Not a test: it generates a 1080p, 300-frame reference and system mask pair (a moving manipulated
region in frames 61-240, a bit-plane distractor, a graded system detection in frames 51-250 and
white elsewhere), stored the way video masks usually are — gzip, one HDF5 chunk per frame — and
also uncompressed. For each storage it prints:

1. mfscore's time for ``score_video`` (stream both masks, no-score zones per frame, histograms,
   temporal counts at every threshold) plus the per-video metrics, in frames per second;
2. the read-only floor: h5py reading the same frames of both files, frame by frame, nothing else;
3. their ratio (target ≤ 1.5× on the compressed pair);
4. the peak memory the scoring added (tracemalloc), against the 2.5 GB the two volumes would take.
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import cv2
import h5py
import numpy as np

from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.video.frame_tally import FrameRules
from mfscore.video.video_metrics import video_cells
from mfscore.video.video_scoring import VideoJob, score_video

FRAMES, HEIGHT, WIDTH = 300, 1080, 1920
MANIPULATED = range(60, 240)   # 0-indexed frames with a reference region
DETECTED = (50, 250)           # 0-indexed block of the system mask
REPEATS = 2


def _reference_frame(i: int) -> np.ndarray:
    frame = np.zeros((HEIGHT, WIDTH), np.uint8)
    if i in MANIPULATED:
        x = 300 + 4 * (i - MANIPULATED.start)
        cv2.ellipse(frame, (x, 540), (180, 120), 0, 0, 360, 1, -1)       # bit-plane 1: the target
        cv2.rectangle(frame, (x + 250, 200), (x + 400, 320), 2, -1)      # bit-plane 2: a distractor
    return frame


def _system_frame(i: int, rng: np.random.Generator) -> np.ndarray:
    frame = np.full((HEIGHT, WIDTH), 255, np.uint8)
    x = 320 + 4 * (i - MANIPULATED.start)
    blob = np.zeros((HEIGHT, WIDTH), np.uint8)
    cv2.ellipse(blob, (x, 530), (200, 130), 0, 0, 360, 1, -1)
    confidence = rng.integers(0, 200, (HEIGHT, WIDTH), dtype=np.uint8)
    frame[blob == 1] = confidence[blob == 1]
    return frame


def _write(directory: Path, compression: str | None) -> tuple[str, str]:
    rng = np.random.default_rng(7)
    ref_path, sys_path = directory / f"ref-{compression}.hdf5", directory / f"sys-{compression}.hdf5"
    options = {"compression": compression, "chunks": (1, HEIGHT, WIDTH)}
    with h5py.File(ref_path, "w") as f:
        block = f.create_dataset("0/masks", (FRAMES, HEIGHT, WIDTH), np.uint8, **options)
        for i in range(FRAMES):
            block[i] = _reference_frame(i)
    start, stop = DETECTED
    with h5py.File(sys_path, "w") as f:
        block = f.create_dataset(f"{start}/masks", (stop - start, HEIGHT, WIDTH), np.uint8, **options)
        for i in range(start, stop):
            block[i - start] = _system_frame(i, rng)
    return str(ref_path), str(sys_path)


def _read_only(ref_path: str, sys_path: str) -> None:
    with h5py.File(ref_path, "r") as ref, h5py.File(sys_path, "r") as sys_:
        for name, f in (("0", ref), (str(DETECTED[0]), sys_)):
            dataset = f[f"{name}/masks"]
            for i in range(dataset.shape[0]):
                dataset[i]


def _score(ref_path: str, sys_path: str):
    job = VideoJob("bench", ref_path, sys_path, FRAMES, FrameRules((1,), (1, 2), False, ZoneOptions()), collar=5)
    record = score_video(job)
    return record, video_cells(record, maximum=None, actual=None)


def _best(function, *args) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    print(f"mfscore video benchmark: {FRAMES} frames of {WIDTH}x{HEIGHT}, "
          f"python {platform.python_version()}, {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="mfscore-bench-video-") as tmp:
        for compression in ("gzip", None):
            started = time.perf_counter()
            ref_path, sys_path = _write(Path(tmp), compression)
            sizes = sum(Path(p).stat().st_size for p in (ref_path, sys_path)) / 1e6
            print(f"\n{compression or 'uncompressed'} masks ({sizes:,.0f} MB, written in "
                  f"{time.perf_counter() - started:.1f} s)")
            record, cells = _score(ref_path, sys_path)
            assert record.error == "" and cells["Scored"] == "Y", (record.error, cells)
            read = _best(_read_only, ref_path, sys_path)
            score = _best(_score, ref_path, sys_path)
            tracemalloc.start()
            _score(ref_path, sys_path)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"  h5py read only        {read:7.2f} s  {FRAMES / read:7.1f} frames/s")
            print(f"  mfscore score_video   {score:7.2f} s  {FRAMES / score:7.1f} frames/s")
            print(f"  ratio to the read     {score / read:7.2f}x  (target <= 1.5x)")
            print(f"  peak memory added     {peak / 1e6:7.1f} MB  (both volumes: {2 * FRAMES * HEIGHT * WIDTH / 1e9:.1f} GB)")
            print(f"  optimum MCC {cells['OptimumMCC']:.4f}, TemporalMCC {cells['TemporalMCC']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
