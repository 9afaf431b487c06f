"""What operators see, checked offline: the metrics reference page is what the registry generates; the alert rules
and the dashboard in deploy/k8s/monitoring/ parse with promtool, each alert fires on trouble and stays silent on
healthy series (``promtool test rules``, tests/unit/data/monitoring/alerts-test.yaml), and every query names only
metrics the services export (or Prometheus' own ``up``).

The promtool tests need Debian's ``prometheus`` package (``promtool``); without it they fail, saying so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mfscore.services.common import metrics, metrics_doc

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "deploy" / "k8s" / "monitoring"
RULE = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "dashboard.json"
ALERTS_TEST = Path(__file__).parent / "data" / "monitoring" / "alerts-test.yaml"
CRD = REPO / "deploy" / "crds" / "monitoring.coreos.com_prometheusrules.yaml"
PROMETHEUS_OWN = {"up"}
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
                "offset", "inf", "nan"}


def promtool(*args: str) -> subprocess.CompletedProcess:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: install Debian's prometheus package (apt-get install prometheus)")
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=120)


def rule_groups() -> list[dict]:
    return yaml.safe_load(RULE.read_text())["spec"]["groups"]


def alert_exprs() -> dict[str, str]:
    return {rule["alert"]: rule["expr"] for group in rule_groups() for rule in group["rules"] if "alert" in rule}


def dashboard_exprs() -> list[str]:
    return [target["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]]


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: its identifiers once strings, label matchers, ranges, grouping
    lists, function calls and keywords are set aside."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = re.findall(r"(?<![\w.])([a-zA-Z_:][\w:]*)\b(?!\s*\()", text)
    return {name for name in names if name.lower() not in PROMQL_WORDS}


def exported_names() -> set[str]:
    names = set()
    for family in metrics.FAMILIES:
        names.add(family.name)
        if family.type == "histogram":
            names.update(family.name + suffix for suffix in HISTOGRAM_SERIES)
    return names


def test_the_metrics_reference_page_is_what_the_registry_generates():
    assert metrics_doc.DEFAULT_PATH.read_text() == metrics_doc.render(), \
        "docs/metrics-reference.md is stale: run python -m mfscore.services.common.metrics_doc"


def test_every_family_is_on_the_registries_of_its_roles_alone():
    from prometheus_client import generate_latest

    for role, registry in metrics.REGISTRIES.items():
        text = generate_latest(registry).decode()
        for family in metrics.FAMILIES:
            assert (f"# TYPE {family.name} " in text) == (role in family.roles), (role, family.name)
        assert re.search(r'^mfscore_build_info\{python="[\d.]+",version="[^"]+"\} 1\.0$', text, re.M), role


def test_metric_names_are_read_from_promql():
    expr = ('histogram_quantile(0.95, sum by (le, task) (rate(mfscore_job_duration_seconds_bucket{task!="x"}[5m])))'
            ' / on (task) group_left (service) max(up{job=~"a/b"}) > bool 0 unless absent(grpc_server_started_total)')
    assert metric_names(expr) == {"mfscore_job_duration_seconds_bucket", "up", "grpc_server_started_total"}


@pytest.mark.parametrize("source", ["alerts", "dashboard"])
def test_queries_name_only_exported_metrics(source):
    exprs = list(alert_exprs().values()) if source == "alerts" else dashboard_exprs()
    assert exprs
    exported = exported_names() | PROMETHEUS_OWN
    for expr in exprs:
        unknown = metric_names(expr) - exported
        assert not unknown, f"{expr!r} names {sorted(unknown)}, which no mfscore service exports"


@pytest.mark.promtool
def test_the_alert_rules_pass_promtool_check(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    checked = promtool("check", "rules", str(tmp_path / "rules.yaml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alert_exprs())} rules found" in checked.stdout


@pytest.mark.promtool
def test_each_alert_fires_on_trouble_and_stays_silent_when_healthy(tmp_path):
    tests = yaml.safe_load(ALERTS_TEST.read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    for alert in alert_exprs():
        assert any(c["alertname"] == alert and c["exp_alerts"] for c in cases), f"no case where {alert} fires"
        assert any(c["alertname"] == alert and not c["exp_alerts"] for c in cases), f"no case where {alert} is silent"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    shutil.copy(ALERTS_TEST, tmp_path / ALERTS_TEST.name)
    tested = promtool("test", "rules", str(tmp_path / ALERTS_TEST.name))
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.promtool
def test_every_dashboard_query_parses(tmp_path):
    rules = [{"record": f"mfscore:dashboard_query_{n}", "expr": expr} for n, expr in enumerate(dashboard_exprs())]
    (tmp_path / "dashboard.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = promtool("check", "rules", str(tmp_path / "dashboard.yaml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.promtool
def test_a_broken_query_fails_promtool(tmp_path):
    rules = [{"record": "mfscore:broken", "expr": "sum by (task (rate(mfscore_jobs_total[5m]))"}]
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump({"groups": [{"name": "broken", "rules": rules}]}))
    assert promtool("check", "rules", str(tmp_path / "broken.yaml")).returncode != 0


def test_the_dashboard_ships_as_a_labelled_config_map_of_the_base():
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == [DASHBOARD.name]
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}
    assert kustomization["resources"] == [RULE.name]
    base = yaml.safe_load((REPO / "deploy" / "k8s" / "base" / "kustomization.yaml").read_text())
    assert "../monitoring" in base["resources"]
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)


def test_the_prometheus_rule_satisfies_the_vendored_crd_schema():
    """As the API server checks it (Draft 4; tests/unit/test_deploy_manifests.py also refuses undeclared fields)."""
    import jsonschema

    (crd,) = [doc for doc in yaml.safe_load_all(CRD.read_text()) if doc]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    validator = jsonschema.Draft4Validator(served["schema"]["openAPIV3Schema"])
    rule = yaml.safe_load(RULE.read_text())
    assert (rule["apiVersion"], rule["kind"]) == (f"{crd['spec']['group']}/v1", crd["spec"]["names"]["kind"])
    assert not list(validator.iter_errors(rule))
    assert list(validator.iter_errors({**rule, "spec": {"groups": [{"name": "x", "rules": [{"for": "5m"}]}]}}))
