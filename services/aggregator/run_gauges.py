"""The aggregator's gauges read from its run book at each scrape: the trials outstanding (planned, not yet received,
over the runs that have not ended) and, per unfinished state, how long the run longest in it has been there.

The run book holds no time of a run's last state change, so the age is this aggregator's own observation: from the
first scrape that saw the run in that state (a restarted aggregator starts counting again).
"""

from __future__ import annotations

import time

from mfscore.services.aggregator.run import UNFINISHED, State
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common import metrics


def outstanding(book: RunBook) -> int:
    """Trials planned and not yet received, over the runs that have not ended."""
    return sum(max(0, run.trials_planned - run.trials_received) for run in book.runs.values() if not run.ended)


class StateClock:
    """When this aggregator first saw each unfinished run in its current state."""

    def __init__(self, book: RunBook, clock=time.monotonic):
        self.book, self.clock = book, clock
        self.since: dict[str, tuple[int, float]] = {}

    def oldest(self, state: int) -> float:
        """Seconds the run longest in ``state`` has been in it; 0 for none."""
        now, seen = self.clock(), {}
        for run_id, run in self.book.runs.items():
            if run.state in UNFINISHED:
                was = self.since.get(run_id)
                seen[run_id] = was if was is not None and was[0] == run.state else (run.state, now)
        self.since = seen
        return max((now - since for in_state, since in seen.values() if in_state == state), default=0.0)


def watch_book(book: RunBook) -> None:
    """Compute the aggregator's run gauges from ``book`` whenever they are scraped."""
    metrics.TRIALS_OUTSTANDING.set_function(lambda: outstanding(book))
    clock = StateClock(book)
    for state in UNFINISHED:
        metrics.RUN_STATE_AGE.labels(State.Name(state)).set_function(lambda state=state: clock.oldest(state))
