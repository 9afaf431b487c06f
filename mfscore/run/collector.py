"""Python's cyclic garbage collector, set for a command's run or a service's life.

A run makes few reference cycles but very many short-lived containers: parsed JSON, records, mapping rows.
With the default setting the collector runs every 700 new containers, and each of its older passes walks
every object of every imported module again. Provenance filtering of 300 probes spent about an eighth of its
CPU in the collector (``perf``).
"""

from __future__ import annotations

import gc

YOUNG_COLLECTION_EVERY = 10_000  # new container objects between two collections of the youngest generation (700)


def collect_less() -> None:
    """Leave every object alive now (the imported modules, the options) out of all later collections, and collect
    the youngest generation less often. For a process whose objects alive now live as long as it does (a command
    once its modules are imported, a service once it has loaded its tasks): an object frozen here that later
    becomes garbage in a cycle is never collected (``gc.freeze``). Processes forked later inherit both."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY)
