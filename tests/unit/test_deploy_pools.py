"""Every registered task is deployed, checked from the task registry without naming a task.

For each task of ``mfscore.tasks`` the pool that pulls its ``resource`` class (``services/<pool>/service.py``
``POOL = ScorerPool(name, resources)``) must be deployed in the base and in every overlay view
(``test_deploy_manifests.overlay_view``): a Deployment running ``mfscore serve <pool>`` with gRPC probes, a
PodDisruptionBudget, scraping by the PodMonitor, and an autoscaler on its consumer ``<resource>-scorers``: a KEDA
ScaledObject trigger, or in an overlay without KEDA an HPA. The dev overlay keeps no operator resources (no KEDA,
no Prometheus Operator) and runs each pool at a fixed replica count instead. A ``PLANNER`` task is scored in the
aggregator itself, so the aggregator's Deployment covers it. A new task is held to all of this by its registry
line alone.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from mfscore import tasks
from mfscore.tasks.base import PLANNER
from test_deploy_manifests import (BASE, DEV, GRPC_PORT, KUSTOMIZATION_DIRS, budget_of, containers, find, one,
                                   overlay_view, pod_labels)

NAMES = tasks.names()


def pools() -> dict[str, tuple[str, ...]]:
    """Every scorer pool the services define (``services/<package>/service.py`` ``POOL``): name -> resource classes."""
    import mfscore.services
    from mfscore.services.common.scorer_pool import ScorerPool

    found = {}
    for info in pkgutil.iter_modules(mfscore.services.__path__):
        if info.ispkg and (Path(info.module_finder.path) / info.name / "service.py").is_file():
            pool = getattr(importlib.import_module(f"mfscore.services.{info.name}.service"), "POOL", None)
            if isinstance(pool, ScorerPool):
                found[pool.name] = tuple(pool.resources)
    return found


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
