"""The soak's checks (bench/soak.py) fail where they should: a process that leaks, a store that keeps what it should
not, an alert that does not page for its fault, one that fires in a quiet stretch or does not clear; and its fault
schedule holds every kind. tests/integration/test_soak.py runs the soak itself for 3 minutes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import soak  # noqa: E402
from soak_faults import FAULTS, SHORT_FAULTS, Fault, schedule  # noqa: E402
from soak_prometheus import Interval, RuleTiming  # noqa: E402

HOUR = 3600.0
T0 = 1_800_000_000.0


def samples(pod: str, rss_per_hour: float, *, pid: int = 7, fds: int = 20, hours: float = 1.0) -> list[dict]:
    """A process sampled every 10 s whose RSS rises ``rss_per_hour`` MiB an hour from 150 MiB (with a sawtooth)."""
    steps = int(hours * HOUR / 10)
    return [{"t": T0 + 10 * i, "pod": pod, "pid": pid, "rss_mib": 150 + rss_per_hour * i * 10 / HOUR + (i % 7),
             "fds": fds} for i in range(steps + 1)]


def test_a_leaking_service_fails_the_soak_and_a_steady_one_does_not():
    rows, problems = soak.growth_findings(samples("steady-0", 5) + samples("leaky-0", 200), T0, T0 + HOUR)
    assert [p.split("'")[0] for p in problems] == ["leaky"]
    rise = {row["service"]: row["rss_mib_last"] - row["rss_mib_second"] for row in rows}
    assert rise["leaky"] == pytest.approx(100, abs=8) and abs(rise["steady"]) < 8
    fitted = {row["service"]: row["pods"][0]["rss_mib_per_hour"] for row in rows}
    assert fitted["leaky"] == pytest.approx(200, abs=10)


def test_open_files_that_keep_growing_fail_it():
    leaking = [{**s, "fds": 20 + i // 6} for i, s in enumerate(samples("worker-1", 0))]  # one more a minute
    _, problems = soak.growth_findings(leaking, T0, T0 + HOUR)
    assert problems == ["worker's peak open files rose by 31 from the second quarter to the last (bound 14)"]


def test_a_role_moving_between_processes_or_a_restart_is_no_growth():
    def run(pod: str, pid: int, start_hours: float, hours: float, rss: float) -> list[dict]:
        return [{**s, "t": s["t"] + start_hours * HOUR, "pid": pid, "rss_mib": s["rss_mib"] + rss}
                for s in samples(pod, 0, hours=hours)]

    leader_then_standby = run("aggregator-1", 1, 0, 0.42, 250) + run("aggregator-1", 3, 0.42, 0.58, 25)
    standby_then_leader = run("aggregator-2", 2, 0, 0.42, 25) + run("aggregator-2", 2, 0.42, 0.58, 250)
    restarted = run("store", 4, 0, 0.6, 500) + run("store", 5, 0.6, 0.1, 100) + run("store", 5, 0.7, 0.3, 500)
    rows, problems = soak.growth_findings(leader_then_standby + standby_then_leader + restarted, T0, T0 + HOUR)
    assert problems == [] and [row["service"] for row in rows] == ["aggregator", "store"]


def test_a_store_keeping_more_than_the_runs_reports_fails_it():
    loads = [soak.Workload("mask", [], ("-oR", "x"), baseline={"x.csv": b"a" * 2 ** 20})]
    runs = [soak.Submission("red", "mask", T0 + 1000 + i, finished=T0 + 1010 + i) for i in range(100)]
    disk = [{"t": T0 + t, "store_mib": mib, "jetstream_mib": 1.0, "state_mib": mib, "logs_mib": 0.0}
            for t, mib in ((0, 10.0), (HOUR / 4, 20.0), (HOUR, 20.0 + 100 * 1.2))]
    figures, problems = soak.disk_findings(disk, runs, loads, T0, T0 + HOUR)
    assert problems == [] and figures["runs_after_first_quarter"] == 100
    disk[-1]["store_mib"] += 200
    assert soak.disk_findings(disk, runs, loads, T0, T0 + HOUR)[1][0].startswith("the object store grew 320.0 MiB")


TIMING = {"MfscoreServiceDown": RuleTiming(300, 0), "MfscoreDeadLettersIncreasing": RuleTiming(0, 900)}


def fault(kind: str, start: float, end: float, *pages: str) -> Fault:
    return Fault(kind, "x", T0 + start, T0 + end, list(pages))


def firing(start: float, end: float) -> Interval:
    return Interval(T0 + start, T0 + end, {})


def test_a_fault_paging_in_time_and_clearing_passes():
    faults = [fault("scorer-down", 600, 960, "MfscoreServiceDown"), fault("kill-nats", 1200, 1210)]
    rows, problems = soak.alert_findings(TIMING, {"MfscoreServiceDown": [firing(910, 970)]}, faults, T0, T0 + HOUR)
    assert problems == []
    assert rows == [{"fault": "scorer-down", "at": 600, "alert": "MfscoreServiceDown", "fired_after": 310,
                     "must_fire_within": 330, "cleared_after_fault": 10, "must_clear_within": 30}]


def test_a_page_that_never_comes_fails():
    faults = [fault("dead-letter", 600, 600, "MfscoreDeadLettersIncreasing")]
    _, problems = soak.alert_findings(TIMING, {}, faults, T0, T0 + HOUR)
    assert problems == ["MfscoreDeadLettersIncreasing did not fire within 30 s of the dead-letter at 600 s"]


def test_an_alert_in_a_quiet_stretch_fails_and_so_does_one_that_stays():
    faults = [fault("dead-letter", 600, 600, "MfscoreDeadLettersIncreasing")]
    intervals = {"MfscoreDeadLettersIncreasing": [firing(610, 2000)], "MfscoreServiceDown": [firing(3000, 3100)]}
    _, problems = soak.alert_findings(TIMING, intervals, faults, T0, T0 + HOUR)
    assert problems == ["MfscoreDeadLettersIncreasing fired from 610 s and did not clear in time",
                        "MfscoreServiceDown fired at 3000 s with no fault to page for"]


def test_an_alert_still_firing_when_a_short_soak_ends_is_not_yet_due_to_clear():
    faults = [fault("dead-letter", 100, 100, "MfscoreDeadLettersIncreasing")]
    intervals = {"MfscoreDeadLettersIncreasing": [firing(112, 180)]}
    rows, problems = soak.alert_findings(TIMING, intervals, faults, T0, T0 + 180)
    assert problems == [] and rows[0]["fired_after"] == 12 and rows[0]["cleared_after_fault"] is None


def test_an_hour_holds_every_fault_kind_and_ends_quiet_and_a_short_soak_one_of_each_that_fits():
    plan = schedule(60, seed=46)
    assert {kind for _, kind in plan} == set(FAULTS)
    assert plan[0][0] == 60 and max(at for at, _ in plan) < 45 * 60
    assert all(later - earlier >= 150 for (earlier, _), (later, _) in zip(plan, plan[1:]))
    short = schedule(3, seed=46)
    assert sorted(kind for _, kind in short) == sorted(SHORT_FAULTS) and max(at for at, _ in short) < 180
