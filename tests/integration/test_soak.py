"""The soak's machinery, run for 3 minutes (``make test-slow``; ``make soak`` runs the hour): bench/soak.py as a
whole command, three teams submitting on a cluster of three NATS nodes and two aggregators while one fault of each
kind that fits is injected, watched by a real Prometheus with deploy/k8s/monitoring/'s rules. It must exit 0, and
its summary must say what the hour's does: every run DONE with the embedded command's files, the dead letter paged
within its rule's window and nothing else fired, every dashboard query has data, nothing grew past its bound.
tests/unit/test_soak_checks.py shows the checks failing on a leak, a quiet-stretch alert and a missed page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_three_minutes_of_the_program_under_every_short_fault(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH / "soak.py"), "--minutes", "3", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=1500)
    print(done.stdout[-6000:])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert done.returncode == 0, summary["problems"] or done.stderr[-3000:]
    assert summary["problems"] == []

    counts = summary["counts"]
    assert counts["same"] >= 8 and counts["different"] == counts["failed"] == counts["stuck"] == 0, counts
    assert summary["server_states"] == {"DONE": counts["same"]}
    assert {run["task"] for run in summary["runs"]} == {"mask", "detection", "provenance-filtering", "video-temporal"}

    kinds = [fault["kind"] for fault in summary["faults"]]
    assert sorted(kinds) == sorted(["kill-scorer", "kill-nats", "kill-leader", "stop-leader", "restart-store",
                                    "refuse-store", "dead-letter"])
    [paged] = summary["alerts_checked"]
    assert paged["alert"] == "MfscoreDeadLettersIncreasing" and paged["fired_after"] is not None
    assert paged["fired_after"] <= paged["must_fire_within"]
    assert set(summary["alerts"]) == {"MfscoreDeadLettersIncreasing"}

    assert summary["dashboard"] and all(panel["points"] > 0 for panel in summary["dashboard"])
    assert {row["service"] for row in summary["growth"]} >= {"aggregator", "mask-scorer", "nats", "seaweedfs"}
    assert len(summary["samples"]) >= 12 * 10 and len(summary["disk"]) >= 10
    assert (tmp_path / "timeline.png").stat().st_size > 20_000
