"""Validator benchmark, run by hand: ``python bench/validate.py`` (or ``make bench``).

Not a test: it generates a manipulation-image submission of 50,000 probes (index, system CSV and
50,000 grey PNG masks of 1024×768, one encoded mask written to every file), then prints:

1. ``validate_submission`` wall time and rows per second (every row: score, status, pixel value,
   key, and the mask's confinement, existence and PNG header: size, channels, bit depth);
2. the decode floor a pixel-reading validator cannot beat: ``cv2.imread`` of each mask (measured
   on 2,000 masks and extrapolated), and the ratio between the two.
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from mfscore.formats.tables import write_table
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.submission import validate_submission

N_ROWS = 50_000
WIDTH, HEIGHT = 1024, 768
DECODE_SAMPLE = 2_000


def _generate(directory: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(6)
    probes = np.char.mod("P%07d", np.arange(N_ROWS))
    mask = np.full((HEIGHT, WIDTH), 255, np.uint8)
    cv2.ellipse(mask, (400, 300), (180, 90), 30, 0, 360, 0, -1)
    mask = cv2.GaussianBlur(mask, (31, 31), 0)
    encoded = cv2.imencode(".png", mask)[1].tobytes()
    (directory / "system" / "mask").mkdir(parents=True)
    for probe in probes:
        (directory / "system" / "mask" / f"{probe}.png").write_bytes(encoded)
    index = pd.DataFrame({"TaskID": "manipulation", "ProbeFileID": probes, "ProbeFileName": np.char.add(probes, ".jpg"),
                          "ProbeWidth": WIDTH, "ProbeHeight": HEIGHT})
    system = pd.DataFrame({"ProbeFileID": probes, "ConfidenceScore": np.round(rng.random(N_ROWS), 4),
                           "OutputProbeMaskFileName": np.char.add(np.char.add("mask/", probes), ".png"),
                           "ProbeStatus": "Processed", "ProbeOptOutPixelValue": ""})
    write_table(index, directory / "index.csv")
    write_table(system, directory / "system" / "system.csv")
    return directory / "system" / "system.csv", directory / "index.csv"


def main() -> int:
    print(f"mfscore validator benchmark — {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        system, index = _generate(Path(tmp))
        print(f"generated {N_ROWS} rows and masks of {WIDTH}x{HEIGHT} in {time.perf_counter() - start:.1f} s")
        validate_submission(str(system), str(index), ValidatorOptions())  # warm the page cache
        start = time.perf_counter()
        report = validate_submission(str(system), str(index), ValidatorOptions()).report
        elapsed = time.perf_counter() - start
        assert report.valid, report.findings[:5]
        masks = sorted((system.parent / "mask").iterdir())[:DECODE_SAMPLE]
        start = time.perf_counter()
        for path in masks:
            cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        decode = (time.perf_counter() - start) * N_ROWS / len(masks)
    print(f"validate {N_ROWS} mask rows: {elapsed:.2f} s = {N_ROWS / elapsed:,.0f} rows/s")
    print(f"decode floor (cv2.imread every mask, extrapolated from {DECODE_SAMPLE}): {decode:.1f} s")
    print(f"header-only validation is {decode / elapsed:.0f}x faster than decoding the masks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
