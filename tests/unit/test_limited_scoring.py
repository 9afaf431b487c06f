"""A job scored in a child process held to a wall and a memory limit (``mfscore.run.limited``, issue 41): a job past
either raises ``LimitExceeded`` naming it, a child killed mid-job ``ScoringStopped``, and the next job is scored
by a new child exactly as in this process."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.records import encode_outcome
from mfscore.run.limited import LimitedScorer, LimitExceeded, Limits, ScoringStopped
from mfscore.sample_data.masks import generate_mask_dataset

WIDE_DISCS = ["--eks", "201", "--dks", "201", "--ntdks", "201", "-k", "disc"]  # the largest kernels allowed


def mask_jobs(data, *extra: str):
    args = build_parser().parse_args(["mask", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                                      "--sysDir", str(data.directory), "-s", data.system, "-oR", "unused/x", *extra])
    task = tasks.get(args.task_name)
    return task, task.plan(args.task_options(args).options).jobs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return mask_jobs(generate_mask_dataset(tmp_path_factory.mktemp("small"), 2, non_target_share=0.0))


@pytest.fixture
def scorer():
    scorer = LimitedScorer(Limits(seconds=1, memory_bytes=100 << 20))
    try:
        yield scorer
    finally:
        scorer.close()


def test_a_job_past_the_wall_limit_is_stopped_and_the_next_is_scored(tmp_path, small, scorer):
    """Discs of 201 pixels on a 3000x2000 mask take seconds (3.3 s on 2000x1500, one core of the test machine)."""
    data = generate_mask_dataset(tmp_path / "wide", 1, width=3000, height=2000, non_target_share=0.0)
    task, (slow, *_) = mask_jobs(data, *WIDE_DISCS)
    with pytest.raises(LimitExceeded) as exceeded:
        scorer.score(task.name, slow.work, "probe.png")
    assert exceeded.value.sentence() == "probe.png: exceeded the 1 s wall limit (MFSCORE_JOB_SECONDS)"
    task, jobs = small
    assert [encode_outcome(scorer.score(task.name, job.work, "p")) for job in jobs] == \
        [encode_outcome(task.score(job.work)) for job in jobs]


def test_a_job_past_the_memory_limit_is_refused_not_scored_wrong(tmp_path, small, scorer):
    """A 6000x4000 mask's job takes well over 100 MB more than the idle child: it is refused, where
    a cap on the address space had OpenCV fail to decode it and the job score it as an unreadable mask."""
    data = generate_mask_dataset(tmp_path / "large", 1, width=6000, height=4000, non_target_share=0.0)
    task, (large, *_) = mask_jobs(data)
    with pytest.raises(LimitExceeded) as exceeded:
        scorer.score(task.name, large.work, "large.png")
    assert exceeded.value.sentence() == ("large.png: exceeded the 104857600 bytes memory limit "
                                         "(MFSCORE_JOB_MEMORY_BYTES)")
    task, jobs = small
    assert encode_outcome(scorer.score(task.name, jobs[0].work, "p")) == encode_outcome(task.score(jobs[0].work))


def test_a_child_killed_while_it_scores_is_named_and_replaced(tmp_path, small):
    scorer = LimitedScorer(Limits(seconds=60))
    data = generate_mask_dataset(tmp_path / "wide", 1, width=3000, height=2000, non_target_share=0.0)
    task, (slow, *_) = mask_jobs(data, *WIDE_DISCS)
    try:
        scorer.score(task.name, small[1][0].work, "p")  # the child is up
        threading.Timer(0.5, os.kill, (scorer._child.pid, signal.SIGKILL)).start()
        with pytest.raises(ScoringStopped) as stopped:
            scorer.score(task.name, slow.work, "probe.png")
        assert stopped.value.sentence() == ("probe.png: the scoring process stopped (signal SIGKILL) while it scored "
                                            "the job")
        task, jobs = small
        assert encode_outcome(scorer.score(task.name, jobs[0].work, "p")) == encode_outcome(task.score(jobs[0].work))
    finally:
        scorer.close()


def test_a_child_started_before_any_job_scores_the_first(small, scorer):
    """``start`` (a pool starting up) has the child up before a job comes; the job is scored by that child, and a
    second ``start`` keeps it."""
    assert scorer._child is None
    scorer.start()
    child = scorer._child
    assert child is not None and child.is_alive()
    scorer.start()
    task, jobs = small
    assert encode_outcome(scorer.score(task.name, jobs[0].work, "p")) == encode_outcome(task.score(jobs[0].work))
    assert scorer._child is child
