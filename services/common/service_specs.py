"""The services of the distributed mode, each declared once: what ``mfscore serve`` starts, what ``mfscore
local-cluster`` runs, what the metrics reference lists per role, and what the manifests of ``deploy/k8s/`` must
deploy (``tests/unit/test_deploy_pools.py`` holds them to it).

A service's code is ``services/<package>/service.py``: ``run_<role>(settings, stop)`` for the validator and the
aggregator; a scorer pool's is one line, ``POOL = ScorerPool(name, resources)``, naming the resource classes it
pulls (its consumers ``<class>-scorers``, on whose lag KEDA scales it). Adding a scorer pool is one entry below and
that line (docs/development.md "Adding a scorer pool").

Nothing here imports more than the standard library: the deploy tests read it without the cluster extra.
"""

from __future__ import annotations

from dataclasses import dataclass

VALIDATOR, SCORER, AGGREGATOR = "validator", "scorer", "aggregator"
ROLES = (VALIDATOR, SCORER, AGGREGATOR)  # also the metric registries (services/common/metrics.py REGISTRIES)
GRPC_SERVICES = {VALIDATOR: "mfscore.v1.ValidatorService", SCORER: "mfscore.v1.ScorerService",
                 AGGREGATOR: "mfscore.v1.AggregatorService"}


@dataclass(frozen=True)
class Autoscaled:
    """A Deployment whose replicas an autoscaler owns, between these bounds (the base manifests'): KEDA on its
    consumers' lag, or a CPU HPA in overlays/no-keda."""

    min_replicas: int
    max_replicas: int


@dataclass(frozen=True)
class ServiceSpec:
    """One service: its name (``mfscore serve <name>``, its Deployment, its processes' labels), its role (what runs
    it and which metric families it exports), the NATS user it connects as ('' for none: it uses no NATS) and its
    replicas in the base manifests (a number, or ``Autoscaled``)."""

    name: str
    role: str
    nats_user: str = ""
    replicas: int | Autoscaled = 1

    @property
    def package(self) -> str:
        """Its package under ``services/`` (``mfscore.services.<package>``)."""
        return self.name.replace("-", "_")

    @property
    def module(self) -> str:
        """The module holding its code: ``run_<role>``, or a scorer pool's ``POOL``."""
        return f"mfscore.services.{self.package}.service"

    @property
    def grpc_service(self) -> str:
        """The gRPC service it serves (its Deployment's readiness asks for it)."""
        return GRPC_SERVICES[self.role]


POOL_REPLICAS = Autoscaled(min_replicas=1, max_replicas=10)
SERVICES = (
    ServiceSpec("validator", VALIDATOR),
    ServiceSpec("mask-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS),
    ServiceSpec("provenance-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS),
    ServiceSpec("detection-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS),
    ServiceSpec("aggregator", AGGREGATOR, nats_user="aggregator", replicas=2),  # a leader and a standby
)


def names() -> tuple[str, ...]:
    """Every service's name, in the registry's order."""
    return tuple(spec.name for spec in SERVICES)


def get(name: str) -> ServiceSpec:
    """The service ``name``; KeyError if there is none."""
    for spec in SERVICES:
        if spec.name == name:
            return spec
    raise KeyError(name)


def of_role(role: str) -> tuple[ServiceSpec, ...]:
    """The services of ``role``, in the registry's order."""
    return tuple(spec for spec in SERVICES if spec.role == role)
