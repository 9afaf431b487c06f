"""An hour of the program under faults, watched by a real Prometheus: ``make soak`` (60 minutes) or
``python bench/soak.py --minutes 10``. Not a test; ``make test-slow`` runs a 3-minute one
(tests/integration/test_soak.py), which checks the same things.

On this machine it starts a local cluster (three NATS nodes, two aggregators, two mask scorers, one of each other
pool, the object store behind a loopback proxy: bench/soak_faults.py) and a Prometheus server scraping every
service's ``/metrics`` with deploy/k8s/monitoring/'s rules loaded unchanged (bench/soak_prometheus.py). Three teams
then submit, each on a seeded random schedule, mask runs, detection with ``--ci``, provenance filtering and video
temporal runs (``mfscore submit`` as a process, as a team would), while a fault is injected every few minutes.
Each workload's embedded result is computed once beforehand; every run's files must be byte-identical to it.

It checks, and exits 1 when one fails: every run ends DONE with the baseline's files (0 lost, 0 different, 0 stuck);
each service's RSS and open files grow less than RSS_MIB_PER_HOUR and FDS_PER_HOUR after the first quarter;
the object store and JetStream grow by no more per run than the run's reports need; every fault that should page
fires its alert within the rule's ``for:`` plus a few scrapes and clears once the rule's window has passed it, and
no alert fires otherwise; every dashboard query returns data. It writes ``summary.json`` and ``timeline.png`` under
``--out`` and prints the figures docs/reliability.md "An hour under faults" quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from cluster_measures import run_files
from soak_faults import FAULTS, Fault, Kubelet, SoakCluster, schedule
from soak_prometheus import Interval, Prometheus, RuleTiming, Target, rule_timing
from soak_timeline import draw_timeline

from mfscore.services.commands import local_cluster as commands

TEAMS = ("red", "blue", "green")
IN_FLIGHT = 2              # a team's submissions running at once, at most
SAMPLE_SECONDS = 10.0
SCRAPE_SECONDS = 10.0
RSS_MIB_PER_HOUR = 48.0    # bounds on a service's peak memory and open files rising from the second quarter to the last
RSS_SLACK_MIB = 24.0
FDS_PER_HOUR = 12.0
FDS_SLACK = 8
WARMING_SLACKS = (256.0, 48)  # the slacks of a soak under 20 minutes, which is warm-up throughout (a takeover
                              # loads the runs: 170 -> 225 MiB; the object store fills its caches: 526 -> 663 MiB)
STORE_SLACK_PER_RUN = 256 * 1024   # bytes a run may leave in the store beyond its reports (manifests, seal)
JETSTREAM_PER_RUN = 64 * 1024      # bytes a run may leave in JetStream (its entries in the run bucket)
DISK_SLACK = 64 * 2 ** 20
CREATED = re.compile(r"run ([0-9a-f]{32}) created")
SIGNALS = {  # each alert's left-hand side, to measure its threshold against the soak's series
    "MfscoreServiceDown": 'min(up{job=~".*/mfscore"})',
    "MfscoreConsumerLagGrowing": "max(mfscore_jetstream_consumer_pending)",
    "MfscoreDeadLettersPresent": 'max(mfscore_jetstream_stream_messages{stream="MFSCORE_DEAD"})',
    "MfscoreDeadLettersIncreasing": 'sum(increase(mfscore_jobs_total{outcome="dead"}[15m]))',
    "MfscoreJobErrorRateHigh": "max(sum by (service, task) (rate(mfscore_jobs_total"
                               '{outcome=~"retried|dead", task!="unknown"}[10m]))'
                               " / sum by (service, task) (rate(mfscore_jobs_total[10m])))",
    "MfscoreRunStuck": "max(mfscore_run_state_age_seconds)",
    "MfscoreS3Errors": "max(sum by (operation) (rate(mfscore_s3_errors_total[5m])))",
}


@dataclass
class Workload:
    """A task's run as the teams submit it: its arguments but the output, the output flag and name, and the
    embedded command's files (the baseline) with its wall seconds."""

    task: str
    arguments: list[str]
    output: tuple[str, str]
    baseline: dict[str, bytes] | None = None
    embedded_seconds: float = 0.0

    def argv(self, out: Path) -> list[str]:
        flag, name = self.output
        return [self.task, *self.arguments, flag, str(out / name) if name else f"{out}/"]


def workloads(root: Path, short: bool) -> list[Workload]:
    """The capacity plan's mix, scaled to this machine: 1,000 mask probes at 320×240 (200 in a short soak),
    detection of 10^5 trials with ``--ci``, provenance filtering of 300 probes, the sample video temporal set."""
    from mfscore.sample_data.detection import generate_detection_dataset
    from mfscore.sample_data.masks import generate_mask_dataset
    from mfscore.sample_data.provenance import generate_provenance_dataset
    from mfscore.sample_data.video import generate_temporal_dataset

    masks = generate_mask_dataset(root / "mask", 200 if short else 1000, width=320, height=240)
    detection = generate_detection_dataset(root / "detection", 100_000)
    provenance = generate_provenance_dataset(root / "provenance", 100 if short else 300)
    video = generate_temporal_dataset(root / "video", 100 if short else 400)
    return [
        Workload("mask", ["--refDir", str(masks.directory), "-r", masks.reference, "-x", masks.index,
                          "--sysDir", str(masks.directory), "-s", masks.system, "--sbin", "120",
                          "-qm", "Purpose==['add']", "Purpose==['clone']"], ("-oR", "x")),
        Workload("detection", ["--refDir", str(detection.directory), "-r", detection.reference, "-x", detection.index,
                               "--sysDir", str(detection.directory), "-s", detection.system, "--ci"], ("-o", "x")),
        Workload("provenance-filtering", [*provenance.options("system.csv"), "--nodetype", "all"], ("-o", "")),
        Workload("video-temporal", video.cli_args(), ("-o", "")),
    ]


def compute_baselines(root: Path, loads: list[Workload]) -> None:
    """Each workload's embedded command, once, as a whole process: its files and wall seconds."""
    for load in loads:
        out = root / "baseline" / load.task
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mfscore", *load.argv(out)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the embedded {load.task} run failed: {done.stderr.strip()}")
        load.embedded_seconds = time.perf_counter() - started
        load.baseline = run_files(out)


@dataclass
class Submission:
    team: str
    task: str
    submitted: float
    finished: float | None = None
    seconds: float | None = None
    status: int | None = None
    outcome: str = "running"   # same, different, failed, stuck
    run_id: str = ""
    fault: bool = False
    error: str = ""


class Team(threading.Thread):
    """One team's submissions: one every ``interval`` seconds on average (exponential gaps, seeded), at most
    IN_FLIGHT at once, until ``until``; then it waits for its runs, up to ``drain_until``."""

    def __init__(self, name: str, caller: Path, loads: list[Workload], root: Path, interval: float, until: float,
                 drain_until: float, seed: int):
        super().__init__(daemon=True)
        self.name, self.caller, self.loads, self.root = name, caller, loads, root
        self.interval, self.until, self.drain_until = interval, until, drain_until
        self.rng = random.Random(seed)
        self.done: list[Submission] = []
        self.running: list[tuple[Submission, Workload, subprocess.Popen, Path]] = []

    def run(self) -> None:
        due = time.time() + self.rng.uniform(0, self.interval)
        while time.time() < self.until:
            if time.time() >= due and len(self.running) < IN_FLIGHT:
                self.submit(self.rng.choice(self.loads))
                due = time.time() + self.rng.expovariate(1 / self.interval)
            self.reap()
            time.sleep(0.5)
        while self.running and time.time() < self.drain_until:
            self.reap()
            time.sleep(0.5)
        for submission, _, popen, out in self.running:
            popen.kill()
            popen.wait()
            submission.outcome = "stuck"
            self.done.append(submission)
        self.running = []

    def submit(self, load: Workload) -> None:
        count = len(self.done) + len(self.running)
        out = self.root / "runs" / f"{self.name}-{count:04d}-{load.task}"
        out.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k not in ("MFSCORE_CLUSTER", "MFSCORE_TOKEN")}
        with open(out.with_suffix(".stderr"), "w") as err:
            popen = subprocess.Popen([sys.executable, "-m", "mfscore", "submit", "--cluster", str(self.caller),
                                      *load.argv(out)], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=err)
        self.running.append((Submission(self.name, load.task, time.time()), load, popen, out))

    def reap(self) -> None:
        for entry in list(self.running):
            submission, load, popen, out = entry
            if popen.poll() is None:
                continue
            self.running.remove(entry)
            submission.finished = time.time()
            submission.seconds = submission.finished - submission.submitted
            submission.status = popen.returncode
            said = out.with_suffix(".stderr").read_text(errors="replace")
            found = CREATED.search(said)
            submission.run_id = found.group(1) if found else ""
            if popen.returncode != 0:
                submission.outcome, submission.error = "failed", said.strip()[-500:]
            elif run_files(out) != load.baseline:
                submission.outcome = "different"
            else:
                submission.outcome = "same"
                shutil.rmtree(out)
                out.with_suffix(".stderr").unlink()
            self.done.append(submission)


class Sampler(threading.Thread):
    """Every SAMPLE_SECONDS: each process's RSS and open file descriptors, and the sizes on disk of the object store,
    JetStream and the whole state directory."""

    def __init__(self, cluster: SoakCluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.stopping = threading.Event()
        self.samples: list[dict] = []
        self.disk: list[dict] = []

    def run(self) -> None:
        while True:
            now = time.time()
            processes = {**self.cluster.slots(), **self.cluster.servers()}
            for pod, process in processes.items():
                pid = self.cluster.pid(process)
                measured = _process_figures(pid) if pid else None
                if measured:
                    self.samples.append({"t": now, "pod": pod, "pid": pid, **measured})
            tops = _mib_by_top(self.cluster.state_dir)
            self.disk.append({"t": now, "store_mib": tops.get("s3", 0.0), "jetstream_mib": tops.get("jetstream", 0.0),
                              "state_mib": sum(tops.values()), "logs_mib": tops.get("logs", 0.0)})
            if self.stopping.wait(SAMPLE_SECONDS):
                return


def _process_figures(pid: int) -> dict | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return {"rss_mib": int(rss.group(1)) / 1024 if rss else 0.0, "fds": fds}


def _mib_by_top(path: Path) -> dict[str, float]:
    """What the files under ``path`` take on disk (allocated blocks), MiB, by the entry of ``path`` they are in."""
    totals: dict[str, float] = {}
    for folder, _, files in os.walk(path):
        top = Path(folder).relative_to(path).parts[:1]
        for name in files:
            key = top[0] if top else name
            try:
                totals[key] = totals.get(key, 0.0) + os.lstat(os.path.join(folder, name)).st_blocks * 512 / 2 ** 20
            except OSError:
                pass
    return totals


def inject(cluster: SoakCluster, plan: list[tuple[float, str]], started: float, seed: int,
           faults: list[Fault]) -> None:
    """Run the faults of ``plan`` in turn, each at its time (or as soon as the one before has ended)."""
    rng = random.Random(seed)
    for at, kind in plan:
        time.sleep(max(0.0, started + at - time.time()))
        fault = Fault(kind, start=time.time())
        faults.append(fault)
        print(f"  {time.strftime('%H:%M:%S')} fault {kind}", flush=True)
        FAULTS[kind](cluster, rng, fault)
        fault.end = fault.end or time.time()
        print(f"  {time.strftime('%H:%M:%S')} fault {kind} on {fault.target} ({fault.end - fault.start:.0f} s)",
              flush=True)


def service_of(pod: str) -> str:
    """The service a process belongs to: ``aggregator`` for ``aggregator-2``, ``nats`` for ``nats-0``."""
    return re.sub(r"-\d+$", "", pod)


def growth_findings(samples: list[dict], started: float, ended: float) -> tuple[list[dict], list[str]]:
    """Each service's peak RSS and open files in the last quarter against its peak in the second (the first is
    warm-up), and the bounds it broke; beside them each process's own fitted rise over its longest stretch after the
    first quarter, for the record.

    Peaks are taken over every process of a service, since roles move between them: a standby aggregator that takes
    the lead grows to the leader's working set (175 -> 400 MiB), the NATS node that becomes a stream's leader holds
    its cache, a restarted process warms up again. A leak raises the service's peak quarter after quarter."""
    quarter = (ended - started) / 4
    apart_hours = 2 * quarter / 3600  # from the middle of the second quarter to the middle of the last
    rss_slack, fds_slack = WARMING_SLACKS if ended - started < 20 * 60 else (RSS_SLACK_MIB, FDS_SLACK)
    rows, problems = [], []
    for service in sorted({service_of(s["pod"]) for s in samples}):
        mine = [s for s in samples if service_of(s["pod"]) == service]
        second = [s for s in mine if started + quarter <= s["t"] < started + 2 * quarter]
        last = [s for s in mine if s["t"] >= started + 3 * quarter]
        if not second or not last:
            continue
        row = {"service": service, **{f"{what}_{when}": max(s[what] for s in found) for what in ("rss_mib", "fds")
                                      for when, found in (("second", second), ("last", last))}}
        row["pods"] = [_fitted(pod, [s for s in mine if s["pod"] == pod], started + quarter, ended)
                       for pod in sorted({s["pod"] for s in mine})]
        rows.append(row)
        rss_bound = RSS_MIB_PER_HOUR * apart_hours + rss_slack
        if row["rss_mib_last"] - row["rss_mib_second"] > rss_bound:
            problems.append(f"{service}'s peak RSS rose {row['rss_mib_last'] - row['rss_mib_second']:.1f} MiB from "
                            f"the second quarter to the last (bound {rss_bound:.0f} MiB: {RSS_MIB_PER_HOUR:g} MiB/h "
                            f"+ {rss_slack:g})")
        fds_bound = FDS_PER_HOUR * apart_hours + fds_slack
        if row["fds_last"] - row["fds_second"] > fds_bound:
            problems.append(f"{service}'s peak open files rose by {row['fds_last'] - row['fds_second']} from the "
                            f"second quarter to the last (bound {fds_bound:.0f})")
    return rows, problems


def _fitted(pod: str, samples: list[dict], after: float, ended: float) -> dict:
    """A process's RSS and open files: the fitted line's rise, per hour, over the longest stretch one process ran
    after ``after``; informative only (a role change or a restart shows in it too)."""
    by_pid: dict[int, list[dict]] = {}
    for s in samples:
        if s["t"] >= after:
            by_pid.setdefault(s["pid"], []).append(s)
    if not by_pid:
        return {"pod": pod}
    longest = max(by_pid.values(), key=lambda run: run[-1]["t"] - run[0]["t"])
    hours = (longest[-1]["t"] - longest[0]["t"]) / 3600
    if len(longest) < 3 or hours <= 0:
        return {"pod": pod}
    t = np.array([s["t"] for s in longest])

    def per_hour(what: str) -> float:
        return float(np.polyfit(t, [s[what] for s in longest], 1)[0] * 3600)

    return {"pod": pod, "minutes": round(hours * 60), "rss_mib_end": longest[-1]["rss_mib"],
            "rss_mib_per_hour": per_hour("rss_mib"), "fds_end": longest[-1]["fds"], "fds_per_hour": per_hour("fds")}


def disk_findings(disk: list[dict], runs: list[Submission], loads: list[Workload], started: float,
                  ended: float) -> tuple[dict, list[str]]:
    """The object store's and JetStream's growth after the first quarter against what the runs done in that time
    may leave: their reports (kept MFSCORE_RETENTION_DAYS) and a little more each."""
    after = started + (ended - started) / 4
    first = min((d for d in disk if d["t"] >= after), key=lambda d: d["t"])
    last = disk[-1]
    late = [r for r in runs if r.finished and r.finished >= after]
    reports = {w.task: sum(len(data) for data in w.baseline.values()) for w in loads}
    may_store = sum(reports[r.task] + STORE_SLACK_PER_RUN for r in late) + DISK_SLACK
    may_jetstream = len(late) * JETSTREAM_PER_RUN + DISK_SLACK
    grew_store = (last["store_mib"] - first["store_mib"]) * 2 ** 20
    grew_jetstream = (last["jetstream_mib"] - first["jetstream_mib"]) * 2 ** 20
    figures = {"runs_after_first_quarter": len(late), "store_growth_mib": grew_store / 2 ** 20,
               "store_bound_mib": may_store / 2 ** 20, "jetstream_growth_mib": grew_jetstream / 2 ** 20,
               "jetstream_bound_mib": may_jetstream / 2 ** 20, "store_mib_end": last["store_mib"],
               "jetstream_mib_end": last["jetstream_mib"], "state_mib_end": last["state_mib"],
               "logs_mib_per_hour": (last["logs_mib"] - disk[0]["logs_mib"]) * 3600 / max(1.0, ended - started)}
    problems = []
    if grew_store > may_store:
        problems.append(f"the object store grew {grew_store / 2 ** 20:.1f} MiB for {len(late)} runs "
                        f"(bound {may_store / 2 ** 20:.1f} MiB)")
    if grew_jetstream > may_jetstream:
        problems.append(f"JetStream grew {grew_jetstream / 2 ** 20:.1f} MiB for {len(late)} runs "
                        f"(bound {may_jetstream / 2 ** 20:.1f} MiB)")
    return figures, problems


def alert_findings(timing: dict[str, RuleTiming], intervals: dict[str, list[Interval]], faults: list[Fault],
                   started: float, ended: float) -> tuple[list[dict], list[str]]:
    """Each paging fault's alert: when it fired and cleared against when it had to (``timing``: the rule's ``for:``
    and window, plus three scrapes); and every firing no fault explains (an alert in a quiet stretch)."""
    slack = 3 * SCRAPE_SECONDS

    def fire_by(fault: Fault, alert: str) -> float:
        return fault.start + timing[alert].for_seconds + slack

    def clear_by(fault: Fault, alert: str) -> float:
        return fault.end + timing[alert].lookback_seconds + slack

    rows, problems = [], []
    for fault in faults:
        for alert in fault.pages:
            fired = next((i for i in intervals.get(alert, []) if fault.start - SCRAPE_SECONDS <= i.start
                          <= fire_by(fault, alert)), None)
            row = {"fault": fault.kind, "at": fault.start - started, "alert": alert,
                   "fired_after": fired.start - fault.start if fired else None,
                   "must_fire_within": fire_by(fault, alert) - fault.start,
                   "cleared_after_fault": fired.end - fault.end if fired and fired.end < ended - SCRAPE_SECONDS
                   else None, "must_clear_within": clear_by(fault, alert) - fault.end}
            rows.append(row)
            if fired is None:
                problems.append(f"{alert} did not fire within {row['must_fire_within']:.0f} s of the "
                                f"{fault.kind} at {row['at']:.0f} s")
    for alert, found in intervals.items():
        for interval in found:
            paging = [f for f in faults if alert in f.pages and f.start - SCRAPE_SECONDS <= interval.end]
            if not any(f.start - SCRAPE_SECONDS <= interval.start <= fire_by(f, alert) for f in paging):
                problems.append(f"{alert} fired at {interval.start - started:.0f} s with no fault to page for")
                continue
            cleared_by = max(clear_by(f, alert) for f in paging)
            if ended > cleared_by + SCRAPE_SECONDS and interval.end > cleared_by:
                problems.append(f"{alert} fired from {interval.start - started:.0f} s and did not clear in time")
    return rows, problems


def signal_maxima(prometheus: Prometheus, faults: list[Fault], started: float, ended: float) -> dict[str, dict]:
    """Each alert's signal (SIGNALS) at its largest (smallest for ``up``) in quiet stretches and overall: how far the
    soak's series came from each threshold."""
    timing = rule_timing()
    figures = {}
    for alert, expr in SIGNALS.items():
        window = timing[alert].lookback_seconds + 2 * SCRAPE_SECONDS
        values = [(float(t), float(v)) for series in prometheus.query_range(expr, started, ended, SCRAPE_SECONDS)
                  for t, v in series["values"] if v not in ("NaN", "+Inf", "-Inf")]
        quiet = [v for t, v in values if not any(f.start <= t <= f.end + window for f in faults)]
        pick = min if alert == "MfscoreServiceDown" else max
        figures[alert] = {"quiet": pick(quiet) if quiet else None, "overall": pick(v for _, v in values)
                          if values else None}
    return figures


def latency_table(runs: list[Submission]) -> list[dict]:
    rows = []
    for task in sorted({r.task for r in runs}):
        for fault in (False, True):
            seconds = sorted(r.seconds for r in runs if r.task == task and r.fault == fault and r.seconds)
            if seconds:
                rows.append({"task": task, "fault": fault, "runs": len(seconds), "p50": statistics.median(seconds),
                             "p95": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))], "max": seconds[-1]})
    return rows


def server_states(cluster: SoakCluster) -> dict[str, int]:
    """The runs the cluster knows, by state (the operator's view)."""
    from mfscore.services.commands.report import list_runs
    from mfscore.services.wire import runs_pb2, services_pb2_grpc

    with cluster.config.channel() as channel:
        found = list(list_runs(services_pb2_grpc.AggregatorServiceStub(channel)))
    states: dict[str, int] = {}
    for run in found:
        name = runs_pb2.RunState.Name(run.state).removeprefix("RUN_STATE_")
        states[name] = states.get(name, 0) + 1
    return states


def soak(minutes: float, out: Path, seed: int, interval: float) -> dict:
    short = minutes < 20
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="soak-", dir=out))
    print(f"generating the workloads and their baselines under {root}", flush=True)
    loads = workloads(root / "data", short)
    compute_baselines(root, loads)
    for load in loads:
        print(f"  {load.task}: embedded {load.embedded_seconds:.1f} s", flush=True)
    cluster = SoakCluster(root / "cluster" / "cluster.json")
    kubelet, sampler = Kubelet(cluster), Sampler(cluster)
    prometheus = Prometheus(root / "prometheus", [Target(slot, p["service"], p["metrics_port"])
                                                  for slot, p in cluster.slots().items()], SCRAPE_SECONDS)
    faults: list[Fault] = []
    try:
        prometheus.start()
        prometheus.wait_scraped(60)
        callers = {team: root / f"{team}.json" for team in TEAMS}
        for team, caller in callers.items():
            commands.add_caller(cluster.config, f"team-{team}", "client", out=caller)
        time.sleep(1.5)  # the services read the tokens file again within a second
        kubelet.start()
        sampler.start()
        started = time.time()
        until = started + minutes * 60
        drain = 240 if short else 900
        teams = [Team(team, callers[team], loads, root, interval, until, until + drain, seed + i)
                 for i, team in enumerate(TEAMS)]
        for team in teams:
            team.start()
        plan = schedule(minutes, seed)
        print(f"soaking {minutes:g} minutes from {time.strftime('%H:%M:%S')}: {len(plan)} faults", flush=True)
        inject(cluster, plan, started, seed, faults)
        for team in teams:
            team.join()
        ended = time.time()
        time.sleep(2 * SCRAPE_SECONDS)
        runs = sorted((s for team in teams for s in team.done), key=lambda s: s.submitted)
        for run in runs:
            run.fault = any(f.start <= (run.finished or ended) and f.end >= run.submitted for f in faults)
        states = server_states(cluster)
        intervals = prometheus.alert_intervals(started, ended)
        alert_rows, alert_problems = alert_findings(rule_timing(), intervals, faults, started, ended)
        alerts = {name: [asdict(i) for i in found] for name, found in intervals.items()}
        panels = prometheus.dashboard_panels(started, ended)
        signals = signal_maxima(prometheus, faults, started, ended)
    finally:
        kubelet.stopping.set()
        sampler.stopping.set()
        prometheus.stop()
        cluster.down()
    growth, growth_problems = growth_findings(sampler.samples, started, ended)
    disk, disk_problems = disk_findings(sampler.disk, runs, loads, started, ended)
    counts = {outcome: sum(r.outcome == outcome for r in runs) for outcome in ("same", "different", "failed", "stuck")}
    problems = [*(f"{n} runs {outcome}" for outcome, n in counts.items() if outcome != "same" and n),
                *(f"{n} runs {state} on the cluster" for state, n in states.items() if state != "DONE"),
                *alert_problems, *growth_problems, *disk_problems,
                *(f"the dashboard panel {p.title!r} has no data ({p.expr})" for p in panels if p.points == 0)]
    if states.get("DONE", 0) != counts["same"] + counts["different"]:
        problems.append(f"{states.get('DONE', 0)} runs DONE on the cluster for {len(runs)} submitted")
    summary = {
        "started": started, "ended": ended, "minutes": minutes, "seed": seed, "interval": interval,
        "counts": counts, "server_states": states,
        "workloads": [{"task": w.task, "embedded_seconds": w.embedded_seconds} for w in loads],
        "latency": latency_table(runs), "alerts_checked": alert_rows, "signals": signals,
        "growth": growth, "disk_figures": disk,
        "dashboard": [{"title": p.title, "series": p.series, "points": p.points} for p in panels],
        "problems": problems,
        "runs": [asdict(r) for r in runs], "faults": [f.to_json() for f in faults], "alerts": alerts,
        "samples": sampler.samples, "disk": sampler.disk,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    draw_timeline(summary, out / "timeline.png")
    if not problems:
        shutil.rmtree(root, ignore_errors=True)
    return summary


def print_summary(summary: dict) -> None:
    counts = summary["counts"]
    print(f"\n{sum(counts.values())} runs in {summary['minutes']:g} minutes: {counts['same']} the baseline's files, "
          f"{counts['different']} different, {counts['failed']} failed (lost), {counts['stuck']} stuck; "
          f"the cluster's runs: {summary['server_states']}")
    print("\nseconds from submit to done (the whole `mfscore submit`):")
    print(f"  {'task':22} {'fault':>5} {'runs':>5} {'p50':>6} {'p95':>6} {'max':>6}")
    for row in summary["latency"]:
        print(f"  {row['task']:22} {'yes' if row['fault'] else 'no':>5} {row['runs']:5d} {row['p50']:6.1f} "
              f"{row['p95']:6.1f} {row['max']:6.1f}")
    print("\nfaults and their alerts:")
    for fault in summary["faults"]:
        print(f"  {fault['start'] - summary['started']:6.0f} s  {fault['kind']:14} {fault['target']:16} "
              f"{fault['end'] - fault['start']:5.0f} s  pages: {', '.join(fault['pages']) or '-'}")
    for row in summary["alerts_checked"]:
        fired = "not fired" if row["fired_after"] is None else f"fired after {row['fired_after']:.0f} s"
        cleared = ("not cleared before the end" if row["cleared_after_fault"] is None
                   else f"cleared {row['cleared_after_fault']:.0f} s after the fault")
        print(f"  {row['alert']}: {fired} (within {row['must_fire_within']:.0f} s), {cleared} "
              f"(within {row['must_clear_within']:.0f} s)")
    print("\neach alert's signal, quiet and overall (docs/reliability.md):")
    for alert, values in summary["signals"].items():
        print(f"  {alert:30} quiet {values['quiet']!s:>22}  overall {values['overall']!s:>22}")
    print("\npeak memory and open files per service, second quarter -> last (each process's fitted rise per hour):")
    for row in summary["growth"]:
        pods = ", ".join(f"{p['pod']} {p['rss_mib_per_hour']:+.0f} MiB/h over {p['minutes']} min"
                         for p in row["pods"] if "minutes" in p)
        print(f"  {row['service']:18} RSS {row['rss_mib_second']:6.1f} -> {row['rss_mib_last']:6.1f} MiB, "
              f"open files {row['fds_second']:4d} -> {row['fds_last']:4d}  ({pods})")
    print(f"\ndisk: {summary['disk_figures']}")
    empty = [p["title"] for p in summary["dashboard"] if p["points"] == 0]
    print(f"\ndashboard: {len(summary['dashboard'])} queries, {len(empty)} without data {empty or ''}")
    print("\n" + ("every check passed" if not summary["problems"] else
                  "FAILED:\n  " + "\n  ".join(summary["problems"])))


def recheck(path: Path) -> dict:
    """A saved soak's summary with its growth check done again on its samples (``growth_findings`` as it is now),
    written back with its timeline."""
    summary = json.loads(path.read_text())
    growth, problems = growth_findings(summary["samples"], summary["started"], summary["ended"])
    kept = [p for p in summary["problems"] if "RSS" not in p and "open files" not in p]
    summary.update(growth=growth, problems=[*kept, *problems])
    path.write_text(json.dumps(summary, indent=1))
    draw_timeline(summary, path.with_name("timeline.png"))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long teams submit (default 60)")
    parser.add_argument("--seed", type=int, default=46, help="the seed of the submissions and the faults")
    parser.add_argument("--interval", type=float, default=None,
                        help="mean seconds between a team's submissions (default 40; 20 in a short soak)")
    parser.add_argument("--out", type=Path, default=Path("soak-output"), help="where summary.json and timeline.png go")
    parser.add_argument("--recheck", type=Path, metavar="SUMMARY",
                        help="check the memory and open files of a saved summary.json again (its other checks kept), "
                             "and draw its timeline again; nothing is run")
    args = parser.parse_args(argv)
    if args.recheck:
        summary = recheck(args.recheck)
        print_summary(summary)
        return 1 if summary["problems"] else 0
    interval = args.interval or (20.0 if args.minutes < 20 else 40.0)
    summary = soak(args.minutes, args.out, args.seed, interval)
    print_summary(summary)
    print(f"\nsummary: {args.out / 'summary.json'}; timeline: {args.out / 'timeline.png'}")
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
