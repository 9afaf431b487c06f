"""A real Prometheus server for the soak benchmark (``soak.py``): it scrapes the cluster's /metrics ports under the
job name kube-prometheus would give them (``soak/mfscore``), evaluates deploy/k8s/monitoring's alert rules unchanged,
and answers what the soak checks afterwards: when each alert fired, how soon a rule may fire and clear, and which
dashboard panels had data."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from mfscore.services.local.servers import free_port

MONITORING = Path(__file__).resolve().parent.parent / "deploy" / "k8s" / "monitoring"
JOB = "soak/mfscore"
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


@dataclass(frozen=True)
class Target:
    """One service process's /metrics endpoint on 127.0.0.1."""

    pod: str
    service: str
    port: int


@dataclass(frozen=True)
class Interval:
    """One stretch of an alert series in a state (epoch seconds of its first and last point) and its labels."""

    start: float
    end: float
    labels: dict[str, str]


@dataclass(frozen=True)
class RuleTiming:
    """An alert rule's ``for:`` and the longest range its expression looks back over, in seconds."""

    for_seconds: float
    lookback_seconds: float


@dataclass(frozen=True)
class PanelData:
    """What one dashboard panel target's expression returned over a window: its series and non-NaN points."""

    title: str
    expr: str
    series: int
    points: int


def rule_groups() -> list[dict]:
    """The ``spec.groups`` of the PrometheusRule, which is a Prometheus rule file's ``groups`` as they are."""
    return yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]["groups"]


def duration_seconds(text: str) -> float:
    """A Prometheus duration ("5m", "1h30m", "500ms") in seconds."""
    return sum(float(n) * UNIT_SECONDS[unit] for n, unit in re.findall(r"(\d+)(ms|[smhdwy])", text))


def rule_timing() -> dict[str, RuleTiming]:
    """Each alert rule's timing: an alert fires at most ``for`` after its expression holds (plus scrape and evaluation
    delays), and an expression over ``x[15m]`` may keep holding up to 15 minutes after its cause is gone."""
    timings = {}
    for group in rule_groups():
        for rule in group["rules"]:
            if "alert" in rule:
                expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', rule["expr"])
                ranges = [duration_seconds(r) for r in re.findall(r"\[([0-9a-z]+)(?::[0-9a-z]*)?\]", expr)]
                timings[rule["alert"]] = RuleTiming(duration_seconds(rule.get("for", "0s")), max(ranges, default=0))
    return timings


def prometheus_duration(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


class Prometheus:
    """``prometheus`` run in ``work_dir`` (its config, rules, TSDB and log), scraping ``targets`` every
    ``scrape_seconds`` and evaluating the rules as often."""

    def __init__(self, work_dir: Path, targets: list[Target], scrape_seconds: float = 10.0):
        self.work_dir, self.targets, self.scrape_seconds = Path(work_dir), list(targets), scrape_seconds
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Prometheus:
        binary = shutil.which("prometheus")
        if binary is None:
            raise SystemExit("the soak needs a Prometheus server: apt-get install prometheus")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        rules = self.work_dir / "rules.yaml"
        rules.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
        every = prometheus_duration(self.scrape_seconds)
        static = [{"targets": [f"127.0.0.1:{t.port}"], "labels": {"pod": t.pod, "service": t.service,
                                                                    "container": t.service}} for t in self.targets]
        config = {"global": {"scrape_interval": every, "evaluation_interval": every},
                  "rule_files": [str(rules)], "scrape_configs": [{"job_name": JOB, "static_configs": static}]}
        (self.work_dir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.port = free_port()
        log = self.work_dir / "prometheus.log"
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [binary, f"--config.file={self.work_dir / 'prometheus.yml'}",
                 f"--storage.tsdb.path={self.work_dir / 'tsdb'}", f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise SystemExit(f"prometheus did not become ready within 60 s; {log}:\n{tail}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _api(self, path: str, params: dict) -> list[dict]:
        """The ``result`` of a POST to /api/v1/<path>; raises with Prometheus's error when it is not a success."""
        request = urllib.request.Request(f"{self.url}/api/v1/{path}", urllib.parse.urlencode(params).encode())
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                body = json.load(answer)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus {path} {params.get('query')!r}: {body.get('error')}")
        return body["data"]["result"]

    def wait_scraped(self, timeout: float) -> None:
        """Waits until every target has been scraped once (``up`` has one series per target)."""
        deadline = time.monotonic() + timeout
        while len(self._api("query", {"query": "up"})) < len(self.targets):
            if time.monotonic() > deadline:
                raise TimeoutError(f"prometheus did not scrape all {len(self.targets)} targets within {timeout} s")
            time.sleep(0.5)

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict]:
        """Each series of ``expr`` over [start, end]: {"metric": {...}, "values": [[t, "v"], ...]}."""
        return self._api("query_range", {"query": expr, "start": start, "end": end, "step": step})

    def alert_intervals(self, start: float, end: float, state: str = "firing") -> dict[str, list[Interval]]:
        """Each alert's intervals in ``state`` ("firing" or "pending") over [start, end]: points of one series no more
        than 1.5 evaluation steps apart make one interval."""
        step = self.scrape_seconds
        intervals: dict[str, list[Interval]] = {}
        for series in self.query_range(f'ALERTS{{alertstate="{state}"}}', start, end, step):
            labels = {k: v for k, v in series["metric"].items() if k not in ("__name__", "alertstate")}
            times = [float(t) for t, _ in series["values"]]
            first = times[0]
            for before, after in zip(times, times[1:] + [math.inf]):
                if after - before > 1.5 * step:
                    intervals.setdefault(labels["alertname"], []).append(Interval(first, before, labels))
                    first = after
        return {name: sorted(found, key=lambda i: i.start) for name, found in intervals.items()}

    def dashboard_panels(self, start: float, end: float) -> list[PanelData]:
        """Every dashboard panel target's series and non-NaN points over [start, end]."""
        step = max(self.scrape_seconds, (end - start) / 200)
        panels = json.loads((MONITORING / "dashboard.json").read_text())["panels"]
        found = []
        for panel in panels:
            for target in panel.get("targets", []):
                result = self.query_range(target["expr"], start, end, step)
                points = sum(1 for series in result for _, v in series["values"] if not math.isnan(float(v)))
                found.append(PanelData(panel["title"], target["expr"], len(result), points))
        return found
