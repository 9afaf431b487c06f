"""The one backoff policy, ``retrying`` and ``one_line`` (services/common/retry.py)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from mfscore.errors import MfscoreError
from mfscore.services.common.retry import (
    AGGREGATOR,
    NATS,
    S3,
    Backoff,
    RetryBudgetSpent,
    one_line,
    retrying,
)

QUICK = Backoff(first=0.001, most=0.002)


def test_a_schedule_doubles_from_its_first_wait_to_its_longest():
    assert list(itertools.islice(AGGREGATOR.delays(), 7)) == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert list(itertools.islice(NATS.delays(), 6)) == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert [S3.delay(n) for n in range(3)] == [0.1, 0.2, 0.4]
    assert Backoff(first=1.0, most=30.0, factor=3).delay(2) == 9.0
    assert AGGREGATOR.delay(10**6) == 5.0  # no overflow however long the outage


def test_one_line():
    assert one_line(MfscoreError("the  file\nis bad", path="a.csv", line=3)) == "a.csv, line 3: the file is bad"
    assert one_line(ValueError("not\n  a number")) == "ValueError: not a number"
    assert one_line(ConnectionRefusedError("refused  here"), typed=False) == "refused here"
    assert one_line(TimeoutError(), typed=False) == "TimeoutError"


def test_retrying_waits_out_what_is_transient_and_raises_the_rest():
    calls = []

    async def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("not yet")
        return "done"

    transient = lambda error: isinstance(error, TimeoutError)  # noqa: E731
    assert asyncio.run(retrying("calling", flaky, transient=transient, waiting_for="for it", backoff=QUICK)) == "done"
    assert len(calls) == 3

    async def broken():
        raise KeyError("bug")

    with pytest.raises(KeyError):
        asyncio.run(retrying("calling", broken, transient=transient, waiting_for="for it", backoff=QUICK))


def test_retrying_raises_once_its_budget_is_spent():
    async def away():
        raise TimeoutError("nats: timeout")

    with pytest.raises(RetryBudgetSpent) as raised:
        asyncio.run(retrying("reading", away, transient=lambda error: True, waiting_for="for NATS", budget=0.01,
                             backoff=QUICK))
    assert isinstance(raised.value, MfscoreError) and raised.value.last == "TimeoutError: nats: timeout"
    assert raised.value.sentence() == "reading failed for 0 s, its retry budget: TimeoutError: nats: timeout"
