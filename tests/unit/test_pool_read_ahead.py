"""``pool_map`` on one thread names each job's successor to ``read_ahead`` before scoring the job, and None at the
end, even when a job fails; with several workers it names none."""

from __future__ import annotations

import pytest

from mfscore.run.pool import THREADS, pool_map


def test_each_job_is_preceded_by_its_successors_name():
    events: list[tuple[str, int | None]] = []
    results = pool_map(lambda job: events.append(("score", job)) or job * 10, [1, 2, 3], 1, interactive=False,
                       read_ahead=lambda job: events.append(("next", job)))
    assert results == [10, 20, 30]
    assert events == [("next", 2), ("score", 1), ("next", 3), ("score", 2), ("next", None), ("score", 3),
                      ("next", None)]


def test_a_failing_job_still_ends_with_none():
    named: list[int | None] = []

    def score(job: int) -> int:
        if job == 2:
            raise ValueError("bad job")
        return job

    with pytest.raises(ValueError):
        pool_map(score, [1, 2, 3], 1, interactive=False, read_ahead=named.append)
    assert named == [2, 3, None]


def test_threads_are_not_told():
    named: list[int | None] = []
    results = pool_map(abs, [-1, -2, -3, -4], 2, interactive=False, workers=THREADS, read_ahead=named.append)
    assert results == [1, 2, 3, 4]
    assert named == []
