"""Masks decoded once for the jobs that read them (a probe under several ``-qm`` queries): kept read-only until
the last reader, never for a single reader, within the byte budget, read again when the file changes, one
decode when two threads ask at once; and the mask planner puts a probe's jobs together, counting them."""

from __future__ import annotations

import os
import threading
import time

import cv2
import numpy as np
import pytest

from mfscore.formats.images import ImageBytes, read_grey
from mfscore.masks.decoded_masks import DecodedMasks
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.tasks.mask import TASK, Options


class Counted:
    """A decoder that counts its calls (and may take its time, to let another thread ask meanwhile)."""

    def __init__(self, path, pause: float = 0.0):
        self.path, self.pause, self.calls = str(path), pause, 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        time.sleep(self.pause)
        return read_grey(self.path)


@pytest.fixture
def mask(tmp_path):
    path = tmp_path / "m.png"
    cv2.imwrite(str(path), np.arange(64 * 48, dtype=np.uint8).reshape(48, 64))
    return path


def test_a_mask_of_three_readers_is_decoded_once_and_dropped_after_the_last(mask):
    cache, decode = DecodedMasks(budget=1 << 20), Counted(mask)
    images = [cache.read(str(mask), "grey", decode, readers=3) for _ in range(3)]
    assert decode.calls == 1 and all(image is images[0] for image in images)
    assert not images[0].flags.writeable  # a reader cannot change what the next one reads
    assert cache._bytes == 0 and not cache._kept
    cache.read(str(mask), "grey", decode, readers=3)
    assert decode.calls == 2  # a fourth read (another run's) decodes again


def test_a_single_reader_or_bytes_without_an_identity_are_not_kept(mask):
    cache, decode = DecodedMasks(budget=1 << 20), Counted(mask)
    first = cache.read(str(mask), "grey", decode, readers=1)
    cache.read(str(mask), "grey", decode, readers=1)
    assert decode.calls == 2 and first.flags.writeable and not cache._kept
    in_memory = ImageBytes(str(mask), mask.read_bytes())
    cache.read(in_memory, "grey", decode, readers=2)
    cache.read(in_memory, "grey", decode, readers=2)
    assert decode.calls == 4 and not cache._kept


def test_bytes_are_kept_under_their_identity_an_objects_key(mask):
    """A cluster scorer's masks: two jobs reading the object ``objects/.../<sha256>`` decode it once."""
    cache, decode = DecodedMasks(budget=1 << 20), Counted(mask)
    key = "objects/reference/team/" + "ab" * 32
    images = [cache.read(ImageBytes("m.png", mask.read_bytes(), identity=key), "grey", decode, readers=2)
              for _ in range(2)]
    assert decode.calls == 1 and images[0] is images[1] and not cache._kept
    cache.read(ImageBytes("m.png", None, identity=key), "grey", lambda: None, readers=2)  # a missing object
    assert not cache._kept


def test_the_budget_bounds_what_is_kept(tmp_path, mask):
    size = 64 * 48
    assert DecodedMasks(budget=size - 1).read(str(mask), "grey", Counted(mask), readers=2).flags.writeable  # too big
    cache = DecodedMasks(budget=2 * size)
    paths = []
    for k in range(3):
        path = tmp_path / f"{k}.png"
        path.write_bytes(mask.read_bytes())
        paths.append(path)
        cache.read(str(path), "grey", Counted(path), readers=2)
    assert [key[1] for key in cache._kept] == [str(p) for p in paths[1:]] and cache._bytes == 2 * size  # oldest out


def test_a_file_changed_on_disk_is_decoded_again(mask):
    cache, decode = DecodedMasks(budget=1 << 20), Counted(mask)
    cache.read(str(mask), "grey", decode, readers=2)
    cv2.imwrite(str(mask), np.zeros((48, 64), np.uint8))
    os.utime(mask, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert not cache.read(str(mask), "grey", decode, readers=2).any() and decode.calls == 2


def test_two_threads_asking_at_once_decode_once(mask):
    cache, decode = DecodedMasks(budget=1 << 20), Counted(mask, pause=0.2)
    images = []
    threads = [threading.Thread(target=lambda: images.append(cache.read(str(mask), "grey", decode, readers=2)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert decode.calls == 1 and images[0] is images[1] and not cache._kept


def test_the_planner_puts_a_probes_jobs_together_and_counts_them(tmp_path):
    data = generate_mask_dataset(tmp_path, 12)
    queries = ("Purpose==['add']", "Purpose==['remove','clone','heal']", "Purpose==['add','remove','clone','heal']")
    options = Options(ref_dir=str(data.directory), reference=data.reference, index=data.index,
                      system=str(data.directory / data.system), manipulation_queries=queries)
    jobs = TASK.plan(options).jobs
    pairs = [(job.work.reference_path, job.work.system_path) for job in jobs]
    runs = [pair for k, pair in enumerate(pairs) if k == 0 or pairs[k - 1] != pair]
    assert len(runs) == len(set(pairs))  # each pair's jobs are one run of the list
    assert all(job.work.readers == pairs.count(pair) for job, pair in zip(jobs, pairs))
    assert max(job.work.readers for job in jobs) > 1  # the third query selects again what the first two select
    assert sorted(job.key for job in jobs) == sorted({job.key for job in jobs})
