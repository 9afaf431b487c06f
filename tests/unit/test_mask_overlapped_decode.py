"""A job's reference mask decoded on the reader thread while the system mask is decoded
(``mask_scoring.OVERLAP_BYTES``), and the next job's reference while a job is scored (``read_next``): every record,
message included, is the one the plain path gives (the system mask read after the reference, on the calling
thread), for good masks and every kind of bad one; a pair over the budget is read as before."""

from __future__ import annotations

import dataclasses
import threading

import cv2
import numpy as np
import pytest

import mfscore.masks.mask_scoring as mask_scoring
from mfscore.masks.mask_record import NOT_SCOREABLE, SCORED, UNREADABLE
from mfscore.masks.mask_scoring import MaskJob, ZoneOptions, score_mask
from mfscore.run.pool import pool_map

RED = (255, 0, 0)


def write_png(path, array) -> str:
    assert cv2.imwrite(str(path), array)
    return str(path)


def same_records(a, b) -> bool:
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))


@pytest.fixture
def masks(tmp_path):
    """Name -> path: references (colour, grey, blank, bad) and system masks (good, wrong size, colour, bad)."""
    rng = np.random.default_rng(7)
    h, w = 48, 64
    colour = np.full((h, w, 3), 255, np.uint8)
    colour[5:20, 10:40] = (0, 0, 255)  # red, BGR
    colour[25:40, 30:60] = (0, 255, 0)  # a distractor
    grey = np.full((h, w), 255, np.uint8)
    grey[10:30, 5:25] = 0
    system = rng.integers(0, 256, (h, w), np.uint8)
    differing = np.repeat(system[:, :, None], 3, axis=2)
    differing[0, 0, 1] ^= 1
    ok, encoded = cv2.imencode(".png", system)
    paths = {
        "colour": write_png(tmp_path / "colour.png", colour),
        "grey": write_png(tmp_path / "grey.png", grey),
        "blank": write_png(tmp_path / "blank.png", np.full((h, w, 3), 255, np.uint8)),
        "system": write_png(tmp_path / "system.png", system),
        "system as rgb": write_png(tmp_path / "rgb.png", np.repeat(system[:, :, None], 3, axis=2)),
        "wrong size": write_png(tmp_path / "wide.png", np.zeros((h, w + 1), np.uint8)),
        "channels differ": write_png(tmp_path / "differ.png", differing),
        "missing": str(tmp_path / "missing.png"),
        "not an image": str(tmp_path / "text.png"),
        "truncated": str(tmp_path / "truncated.png"),
    }
    (tmp_path / "text.png").write_bytes(b"this is not a PNG")
    (tmp_path / "truncated.png").write_bytes(encoded.tobytes()[: len(encoded) // 2])
    return paths


REFERENCES = ("colour", "grey", "blank", "missing", "truncated")
SYSTEMS = ("system", "system as rgb", "wrong size", "channels differ", "missing", "not an image", "truncated", None)


def jobs(masks):
    zones = ZoneOptions(3, 3, 3, "box")
    for reference in REFERENCES:
        for system in SYSTEMS:
            for colours in ((RED,), ((0, 0, 0),)):
                yield MaskJob(masks[reference], masks[system] if system else None, selected_colours=colours,
                              zones=zones, pixel_value=200)
    yield MaskJob(masks["colour"], None, selected_colours=(RED,), blank_size=(64, 48))
    yield MaskJob(masks["colour"], None, selected_colours=(RED,), blank_size=(65, 48))


def test_every_record_is_the_plain_paths(masks, monkeypatch):
    overlapped = [score_mask(job) for job in jobs(masks)]
    monkeypatch.setattr(mask_scoring, "OVERLAP_BYTES", 0)
    plain = [score_mask(job) for job in jobs(masks)]
    assert len(plain) == len(overlapped) > 80
    for job, a, b in zip(jobs(masks), plain, overlapped):
        assert same_records(a, b), job
    assert {record.status for record in plain} == {SCORED, NOT_SCOREABLE, UNREADABLE}
    messages = {record.message for record in plain}
    assert any("the reference mask file" in m for m in messages) and any("the system mask file" in m for m in messages)


def test_the_jobs_of_a_probe_under_several_queries_read_it_once_either_way(masks, monkeypatch):
    """``readers`` > 1: the reader thread's decode is kept for the probe's next job, as the calling thread's is."""
    probe = [MaskJob(masks["colour"], masks["system"], selected_colours=colours, readers=3)
             for colours in ((RED,), ((0, 255, 0),), (RED, (0, 255, 0)))]
    overlapped = [score_mask(job) for job in probe]
    ahead = one_by_one(probe)
    assert not mask_scoring.DECODED._kept
    monkeypatch.setattr(mask_scoring, "OVERLAP_BYTES", 0)
    plain = [score_mask(job) for job in probe]
    assert all(same_records(a, b) and same_records(a, c) for a, b, c in zip(plain, overlapped, ahead))
    assert not mask_scoring.DECODED._kept


def where_read(monkeypatch, reader: str) -> list[str]:
    """The names of the threads that run ``mask_scoring``'s ``reader`` (``read_colour``: references, ``read_grey``:
    system masks), as they do."""
    threads = []
    read = getattr(mask_scoring, reader)

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return read(*args, **kwargs)

    monkeypatch.setattr(mask_scoring, reader, recorded)
    return threads


def test_the_reference_is_read_on_the_reader_thread_within_the_budget_only(masks, monkeypatch):
    references, systems = where_read(monkeypatch, "read_colour"), where_read(monkeypatch, "read_grey")
    here = threading.current_thread().name
    job = MaskJob(masks["colour"], masks["system"], selected_colours=(RED,))
    assert score_mask(job).status == SCORED
    assert references[-1].startswith("mask-reader") and systems[-1] == here
    monkeypatch.setattr(mask_scoring, "OVERLAP_BYTES", 64 * 48 * 2 - 1)  # a grey PNG's decode: 2 bytes a pixel
    assert score_mask(job).status == SCORED
    assert references[-1] == here and systems[-1] == here


def test_a_pair_whose_system_header_is_refused_is_read_as_before(masks, monkeypatch):
    """Its error is the plain path's: a job goes to the reader thread only when the system mask's header is good."""
    threads = where_read(monkeypatch, "read_colour")
    for system in ("missing", "not an image", "truncated"):
        record = score_mask(MaskJob(masks["colour"], masks[system], selected_colours=(RED,)))
        assert record.status == UNREADABLE and masks[system] in record.message
    here = threading.current_thread().name
    assert threads[:2] == [here, here] and threads[2].startswith("mask-reader")  # the truncated one's header is whole


def one_by_one(jobs_list):
    """The records the local runner's one-thread path gives, each job's successor named before it is scored."""
    return pool_map(score_mask, jobs_list, 1, interactive=False, read_ahead=mask_scoring.read_next)


def test_reading_the_next_reference_ahead_changes_no_record(masks, monkeypatch):
    every = list(jobs(masks))
    ahead = one_by_one(every)
    monkeypatch.setattr(mask_scoring, "OVERLAP_BYTES", 0)
    plain = [score_mask(job) for job in every]
    assert len(ahead) == len(plain) > 80
    for job, a, b in zip(every, plain, ahead):
        assert same_records(a, b), job


def test_the_next_reference_is_decoded_while_this_job_is_scored(masks, monkeypatch):
    """Each reference but the first is decoded by a reader thread started while the job before it was scored
    (``_AHEAD``), and none is left reading once the jobs are scored."""
    started: list[str] = []
    take = mask_scoring._ReadAhead.take

    def took(self, job):
        future = take(self, job)
        started.append("ahead" if future is not None else "here")
        return future

    monkeypatch.setattr(mask_scoring._ReadAhead, "take", took)
    probes = [MaskJob(masks["colour"], masks["system"], selected_colours=(RED,)) for _ in range(4)]
    records = one_by_one(probes)
    assert [record.status for record in records] == [SCORED] * 4
    assert started == ["here", "ahead", "ahead", "ahead"]
    assert mask_scoring._AHEAD.reading is None and mask_scoring._AHEAD.following is None
    assert not [t for t in threading.enumerate() if t.name.startswith("mask-reader")]


def test_a_reference_over_the_budget_is_not_read_ahead(masks, monkeypatch):
    threads = where_read(monkeypatch, "read_colour")
    monkeypatch.setattr(mask_scoring, "OVERLAP_BYTES", 64 * 48 * 2)  # the system's decode fits, a colour one's not
    probes = [MaskJob(masks["colour"], masks["system"], selected_colours=(RED,)) for _ in range(3)]
    assert [record.status for record in one_by_one(probes)] == [SCORED] * 3
    assert threads == ["mask-reader"] * 3  # each job's own, started when it is scored


def test_a_reference_read_ahead_for_a_job_not_scored_is_dropped(masks):
    """A run stopped short leaves the next job's decode behind: the next job scored waits for it and reads its own."""
    named = MaskJob(masks["colour"], masks["system"], selected_colours=(RED,))
    mask_scoring.read_next(named)
    first = score_mask(MaskJob(masks["grey"], masks["system"], selected_colours=((0, 0, 0),)))
    assert first.status == SCORED and mask_scoring._AHEAD.reading[0] is named
    other = MaskJob(masks["colour"], masks["system"], selected_colours=((0, 255, 0),))
    assert same_records(score_mask(other), score_mask(dataclasses.replace(other)))
    assert mask_scoring._AHEAD.reading is None
