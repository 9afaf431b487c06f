"""Write docs/metrics-reference.md from the metric families (``services/common/metrics.py`` FAMILIES) and the services
of each role (``services/common/service_specs.py``), so the page lists exactly what the services export:
``python -m mfscore.services.common.metrics_doc [PATH]``."""

from __future__ import annotations

import sys
from pathlib import Path

from mfscore.services.common import service_specs
from mfscore.services.common.metrics import FAMILIES, ROLES

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "metrics-reference.md"

HEADER = """\
# Metrics reference

Generated from `services/common/metrics.py` by `python -m mfscore.services.common.metrics_doc`; a unit test
checks that this page is what the command writes. Each service serves `/metrics` on its metrics port
(`MFSCORE_METRICS_PORT`, 9100 in the manifests) and exports only the families of its role below, with the
process's own (`process_*`, `python_*`) beside them.

- No label carries a run id or a credential: a label per run grows without bound (a run's progress is
  `WatchRun`'s). A `task` label takes a registered task's name or `unknown`; `grpc_service` and `grpc_method`
  take a method some registered `.proto` declares, or `unknown`.
- Every replica of a scorer pool exports the lag of its pool's consumers: take the `max` over pods.
- The backlog: `mfscore_trials_outstanding` is what the runs that have not ended still wait for. The counters
  `mfscore_trials_planned_total − mfscore_trials_received_total` since the aggregator started also hold the
  trials of runs that ended unfinished (failed, cancelled).
- The alert rules and the Grafana dashboard built on these families are in `deploy/k8s/monitoring/`.

| metric | type | labels | exported by | meaning |
|---|---|---|---|---|
"""


def render() -> str:
    rows = []
    for family in FAMILIES:
        services = ("every service" if set(family.roles) == set(ROLES)
                    else ", ".join(spec.name for role in family.roles for spec in service_specs.of_role(role)))
        rows.append(f"| `{family.name}` | {family.type} | {', '.join(family.labels)} | {services} | "
                    f"{family.help.replace('|', '/')} |")
    return HEADER + "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_text(render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
