"""The memory bound per mask job (issue 17; docs/reliability.md "Hostile input").

A job needs about (largest declared pixels) x (bytes per pixel) + its files, the bytes per pixel
being the largest of decoding the reference (2 bytes per decoded sample: 6 for a colour PNG),
decoding the system mask beside three reference maps (3 + 2 per sample) and the no-score zones (6
one-byte maps). A pair needing more than the limit (1 GB by default) is refused from its headers:

* through ``mfscore mask``, a pair whose tiny PNGs declare 10000x10000 colour and RGBA pixels
  (11 bytes per pixel: 1.1 GB) is that trial's error, and neither file is decoded;
* a pair needing exactly the limit scores, one byte less is refused;
* scoring a large pair in a subprocess peaks within the bytes per pixel the limit rests on.
"""

# ruff: noqa: F811  (the CLI test takes the mask bad-input suite's ``env`` fixture, imported below)
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from test_mask_bad_input import PROBES, REF_DIR, assert_one_probe_unscored, env, png_chunk, run  # noqa: F401

from mfscore.formats import images
from mfscore.limits import DEFAULT_MAX_JOB_BYTES
from mfscore.masks.mask_record import SCORED, UNREADABLE
from mfscore.masks.mask_scoring import MaskJob, score_mask
from mfscore.masks.scorer import MaskOptions
from mfscore.tasks.mask import TASK, Options

RED = (255, 0, 0)
GREEN = (0, 255, 0)
PNG_RGB, PNG_RGBA = 2, 6  # IHDR colour types


def declaring_png(width: int, height: int, colour_type: int) -> bytes:
    """A valid-looking 8-bit PNG whose IHDR declares ``width`` x ``height`` pixels, with a tiny IDAT."""
    ihdr = png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))
    idat = png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    return b"\x89PNG\r\n\x1a\n" + ihdr + idat + png_chunk(b"IEND", b"")


def test_a_pair_over_the_limit_is_refused_from_its_headers(env, capsys, monkeypatch):
    assert DEFAULT_MAX_JOB_BYTES == 1_000_000_000
    reference = env["ref"] / REF_DIR / "mask" / "P2.png"
    system = env["sys"] / "mask" / "P2.png"
    reference.write_bytes(declaring_png(10_000, 10_000, PNG_RGB))
    system.write_bytes(declaring_png(10_000, 10_000, PNG_RGBA))
    decoded = []
    decode = images._decode
    monkeypatch.setattr(images, "_decode", lambda path, max_pixels: decoded.append(path) or decode(path, max_pixels))
    sentence = (f"the masks {reference} and {system} need about 1.1 GB to score (10000x10000 pixels x 11 bytes + ",
                "of files), more than the limit of 1 GB per job; the trial is left unscored")
    line = assert_one_probe_unscored(run(env), capsys, env, "P2", *sentence)
    assert line.startswith("mfscore: ERROR: ")
    assert len(decoded) == 2 * (len(PROBES) - 1)
    assert not [path for path in decoded if path.endswith("P2.png")]


def colour_pair(directory: Path, width: int, height: int) -> tuple[str, str]:
    """A colour reference (a red region and a green distractor on white) and a grey system mask."""
    reference = np.full((height, width, 3), 255, np.uint8)
    reference[height // 5: height // 2, width // 5: width // 2] = RED[::-1]
    reference[height * 3 // 5: height * 4 // 5, width // 5: width // 2] = GREEN[::-1]
    system = np.full((height, width), 255, np.uint8)
    system[height // 4: height // 2, width // 4: width * 3 // 5] = np.arange(width * 3 // 5 - width // 4) % 256
    paths = str(directory / "reference.png"), str(directory / "system.png")
    assert cv2.imwrite(paths[0], reference) and cv2.imwrite(paths[1], system)
    return paths


def test_a_pair_needing_the_limit_scores_and_one_byte_less_is_refused(tmp_path):
    reference, system = colour_pair(tmp_path, 64, 48)
    files = os.path.getsize(reference) + os.path.getsize(system)
    assert files < 1000
    need = 64 * 48 * 6 + files
    job = MaskJob(reference, system, selected_colours=(RED,), pixel_value=200)
    at_limit = score_mask(replace(job, max_job_bytes=need))
    assert at_limit.status == SCORED
    assert at_limit.to_dict() == score_mask(job).to_dict()
    refused = score_mask(replace(job, max_job_bytes=need - 1))
    assert refused.status == UNREADABLE
    assert refused.message == (f"the masks {reference} and {system} need about {need / 1000:.3g} kB to score "
                               f"(64x48 pixels x 6 bytes + {files} bytes of files), "
                               f"more than the limit of {(need - 1) / 1000:.3g} kB per job")


def test_the_limit_of_a_run_reaches_every_job(env):
    options = Options(ref_dir=str(env["ref"]), reference=f"{REF_DIR}/X-ref.csv", index="indexes/X-index.csv",
                      system=str(env["sys"] / "sys.csv"), scoring=MaskOptions(max_job_bytes=12_345))
    jobs = TASK.plan(options).jobs
    assert len(jobs) == len(PROBES)
    assert {job.work.max_job_bytes for job in jobs} == {12_345}


# The peak resident memory of this process's own pages (VmHWM): ru_maxrss would start from the
# parent's resident size at the fork, the test process's.
PEAK = textwrap.dedent("""
    import json, sys
    from mfscore.masks.mask_scoring import MaskJob, score_mask
    def status(field):
        return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(field))
    small, large = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    score_mask(MaskJob(*small, selected_colours=((255, 0, 0),), pixel_value=200))  # the codecs' first-use setup
    before = status("VmRSS:")
    record = score_mask(MaskJob(*large, selected_colours=((255, 0, 0),), pixel_value=200))
    print(json.dumps({"status": record.status, "peak_bytes": status("VmHWM:") - before}))
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak resident memory from /proc")
def test_scoring_a_large_pair_stays_within_the_bytes_per_pixel_of_the_limit(tmp_path):
    (tmp_path / "small").mkdir()
    small = colour_pair(tmp_path / "small", 64, 48)
    large = colour_pair(tmp_path, 4000, 3000)
    bound = 4000 * 3000 * 6 + os.path.getsize(large[0]) + os.path.getsize(large[1])  # 6: 2 x 3 decoded channels
    done = subprocess.run([sys.executable, "-c", PEAK, json.dumps(small), json.dumps(large)],
                          capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    result = json.loads(done.stdout)
    assert result["status"] == SCORED
    assert result["peak_bytes"] <= bound * 1.1 + (8 << 20), (result, bound)  # 12 bytes per pixel before issue 17
