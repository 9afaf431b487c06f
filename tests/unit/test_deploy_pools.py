"""Every registered task and every registered service is deployed, checked from the registries without naming one.

For each task of ``mfscore.tasks`` the pool that pulls its ``resource`` class (a scorer pool of the service registry,
``services/common/service_specs.py``, whose entry names the ``resources`` it pulls)
must be deployed in the base and in every overlay view
(``test_deploy_manifests.overlay_view``): a Deployment running ``mfscore serve <pool>`` with gRPC probes, a
PodDisruptionBudget, scraping by the PodMonitor, and an autoscaler on its consumer ``<resource>-scorers``: a KEDA
ScaledObject trigger, or in an overlay without KEDA an HPA. The dev overlay keeps no operator resources (no KEDA,
no Prometheus Operator) and runs each pool at a fixed replica count instead. A ``PLANNER`` task is scored in the
aggregator itself, so the aggregator's Deployment covers it. A new task is held to all of this by its registry
line alone.

For each service of the registry: ``mfscore serve`` takes it and ``mfscore local-cluster`` runs it (a scorer pool with
its ``--<pool>s`` flag); its code is where the registry says (``run_<role>``, or the generic pool's ``run_pool``, and
only a pool names resource classes); the base runs it as a Deployment of its role's component with a Service, and
with the replicas it declares (a fixed count, or its autoscalers' bounds: KEDA's in the base, the HPA's without KEDA);
the dev overlay runs one. Every role is a metrics registry (``services/common/metrics.py``), and the metrics
reference lists each service under the families of its role. What else each service must have (its NATS user, its
probes, budget, scraping, network policies) test_deploy_manifests.py checks for every registered service; no
manifest names a service the registry does not hold.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mfscore import tasks
from mfscore.services.common import service_specs
from mfscore.tasks.base import PLANNER
from test_deploy_manifests import (BASE, DEV, GRPC_PORT, K8S, KUSTOMIZATION_DIRS, budget_of, containers, find,
                                   kustomization, objects, one, overlay_view, pod_labels)

NAMES = tasks.names()


REGISTERED = service_specs.SERVICES
NO_KEDA = K8S / "overlays" / "no-keda"


def pools() -> dict[str, tuple[str, ...]]:
    """Every scorer pool of the registry: name -> the resource classes it pulls."""
    return {spec.name: spec.resources for spec in service_specs.of_role(service_specs.SCORER)}


def deployment_of(task: str) -> tuple[str, str | None]:
    """(the Deployment scoring ``task``'s jobs, the consumer it pulls them from; None when it scores in process)."""
    resource = tasks.get(task).resource
    if resource == PLANNER:
        return "aggregator", None
    owners = [name for name, classes in pools().items() if resource in classes]
    assert len(owners) == 1, f"{task}: resource {resource!r} is pulled by {owners}, not by exactly one pool"
    return owners[0], f"{resource}-scorers"


def selected(selector: dict, labels: dict) -> bool:
    return selector.get("matchLabels", {}).items() <= labels.items() and all(
        term["operator"] == "In" and labels.get(term["key"]) in term["values"]
        for term in selector.get("matchExpressions", []))


def keeps_operators(kdir: Path) -> bool:
    """Whether the overlay keeps the KEDA and Prometheus Operator resources (dev removes them all)."""
    return kdir != DEV


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
@pytest.mark.parametrize("task", NAMES)
def test_the_task_s_pool_is_deployed_probed_budgeted_scraped_and_scaled(task, kdir):
    name, consumer = deployment_of(task)
    objs = overlay_view(kdir)
    where = f"{kdir.name}: {task} is scored by {name}"
    d = one(objs, "Deployment", name)
    (c,) = containers(d)
    assert c["args"] == ["serve", name], f"{where}, which runs {c['args']}"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["grpc"]["port"] == GRPC_PORT, f"{where}: its {probe} is not a gRPC probe"
    budget_of(objs, name)
    monitors = [m for m in find(objs, "PodMonitor") if selected(m["spec"]["selector"], pod_labels(d))]
    assert len(monitors) == (1 if keeps_operators(kdir) else 0), f"{where}: {len(monitors)} PodMonitors scrape it"
    if consumer is None:
        return
    scaled = [so for so in find(objs, "ScaledObject") if so["spec"]["scaleTargetRef"]["name"] == name]
    hpas = [h for h in find(objs, "HorizontalPodAutoscaler") if h["spec"]["scaleTargetRef"]["name"] == name]
    if not keeps_operators(kdir):
        assert not scaled and not hpas and d["spec"].get("replicas", 0) >= 1, f"{where}: a fixed replica count"
    elif find(objs, "ScaledObject"):                    # the overlay scales with KEDA
        (so,) = scaled
        consumers = [t["metadata"]["consumer"] for t in so["spec"]["triggers"]]
        assert consumer in consumers, f"{where}: its ScaledObject watches {consumers}, not {consumer}"
        assert not hpas
    else:
        assert len(hpas) == 1 and not scaled, f"{where}: without KEDA, one HPA scales it"


def test_every_pool_scores_some_task_and_every_overlay_keeps_keda_but_one():
    """No pool is deployed for nothing, and the overlay without KEDA is the only one scaling by HPA."""
    used = {deployment_of(task)[0] for task in NAMES}
    assert set(pools()) <= used, f"pools no task uses: {sorted(set(pools()) - used)}"
    kinds = {k.name: {o["kind"] for o in overlay_view(k)} for k in KUSTOMIZATION_DIRS if keeps_operators(k)}
    assert kinds[BASE.name] >= {"ScaledObject", "PodMonitor"}
    assert [n for n, ks in kinds.items() if "ScaledObject" not in ks] == ["no-keda"], kinds


# ----------------------------------------------------------------------------- the service registry

def test_the_registry_names_each_service_once_and_only_pools_name_resources():
    names = service_specs.names()
    assert len(set(names)) == len(names) and names, names
    assert all(spec.role in service_specs.ROLES for spec in REGISTERED)
    assert [len(service_specs.of_role(role)) for role in (service_specs.VALIDATOR, service_specs.AGGREGATOR)] == [1, 1]
    assert all(spec.resources for spec in service_specs.of_role(service_specs.SCORER)), pools()
    for role in (service_specs.VALIDATOR, service_specs.AGGREGATOR):
        with pytest.raises(ValueError):
            service_specs.ServiceSpec("x", role, resources=("mask",))
    with pytest.raises(ValueError):
        service_specs.ServiceSpec("x-scorer", service_specs.SCORER)


@pytest.mark.parametrize("spec", REGISTERED, ids=lambda s: s.name)
def test_the_service_s_code_is_where_the_registry_says(spec):
    code = importlib.import_module(spec.module)
    entry = "run_pool" if spec.role == service_specs.SCORER else f"run_{spec.role}"
    assert hasattr(code, entry), f"{spec.module} has no {entry}, which `mfscore serve {spec.name}` runs"


def test_the_commands_take_every_registered_service():
    from mfscore.cli.main import build_parser

    parser = build_parser()
    for spec in REGISTERED:
        assert parser.parse_args(["serve", spec.name]).service == spec.name
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "no-such-scorer"])
    flags = ["local-cluster", "up"]
    for number, spec in enumerate(service_specs.of_role(service_specs.SCORER), start=2):
        flags += [f"--{spec.name}s", str(number)]
    args = vars(parser.parse_args(flags))
    for number, spec in enumerate(service_specs.of_role(service_specs.SCORER), start=2):
        assert args[f"{spec.package}s"] == number, f"local-cluster --{spec.name}s"


def test_every_role_is_a_metrics_registry_and_its_services_are_listed():
    from mfscore.services.common import metrics, metrics_doc

    assert set(service_specs.ROLES) == set(metrics.ROLES) == set(metrics.REGISTRIES)
    page = metrics_doc.render()
    for spec in REGISTERED:
        exported = [f for f in metrics.FAMILIES if spec.role in f.roles and set(f.roles) != set(metrics.ROLES)]
        assert exported, f"{spec.name}'s role {spec.role} exports no family of its own"
        for family in exported:
            (row,) = [line for line in page.splitlines() if line.startswith(f"| `{family.name}` |")]
            assert spec.name in row.split(" | ")[3], f"the metrics reference omits {spec.name} from {family.name}"


@pytest.mark.parametrize("spec", REGISTERED, ids=lambda s: s.name)
def test_the_service_is_deployed_with_its_role_and_replicas(spec):
    base = objects(BASE)
    d = one(base, "Deployment", spec.name)
    one(base, "Service", spec.name)
    (c,) = containers(d)
    assert c["args"] == ["serve", spec.name]
    assert pod_labels(d)["app.kubernetes.io/component"] == spec.role, f"{spec.name}: component {spec.role}"
    dev = {e["name"]: e["count"] for e in kustomization(DEV).get("replicas", [])}
    assert dev.get(spec.name) == 1, f"dev runs one {spec.name}"
    if not isinstance(spec.replicas, service_specs.Autoscaled):
        assert d["spec"].get("replicas", 1) == spec.replicas, f"{spec.name} runs {spec.replicas} replicas"
        assert not [o for o in base if ((o.get("spec") or {}).get("scaleTargetRef") or {}).get("name") == spec.name]
        return
    bounds = (spec.replicas.min_replicas, spec.replicas.max_replicas)
    assert "replicas" not in d["spec"], f"{spec.name}: its autoscaler owns the replica count"
    (so,) = [o for o in find(base, "ScaledObject") if o["spec"]["scaleTargetRef"]["name"] == spec.name]
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == bounds, f"{spec.name}'s ScaledObject"
    (hpa,) = [o for o in find(overlay_view(NO_KEDA), "HorizontalPodAutoscaler")
              if o["spec"]["scaleTargetRef"]["name"] == spec.name]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == bounds, f"{spec.name}'s HPA (no-keda)"
