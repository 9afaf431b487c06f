"""The services of the distributed mode, each declared once: what ``mfscore serve`` starts, what ``mfscore
local-cluster`` runs, what the metrics reference lists per role, and what the manifests of ``deploy/k8s/`` must
deploy (``tests/unit/test_deploy_pools.py`` holds them to it).

The validator's and the aggregator's code is ``services/<package>/service.py``, ``run_<role>(settings, stop)``. A
scorer pool has no code of its own: its entry names the resource classes it pulls (its consumers ``<class>-scorers``,
on whose lag KEDA scales it), and ``mfscore serve`` runs the generic pool (``services/common/scorer_pool.py``) with
them. Adding a scorer pool is one entry below (docs/development.md "Adding a scorer pool").

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
    it and which metric families it exports), the NATS user it connects as ('' for none: it uses no NATS), its
    replicas in the base manifests (a number, or ``Autoscaled``) and, a scorer pool's alone, the resource classes it
    pulls (``Task.resource``)."""

    name: str
    role: str
    nats_user: str = ""
    replicas: int | Autoscaled = 1
    resources: tuple[str, ...] = ()

    def __post_init__(self):
        if bool(self.resources) != (self.role == SCORER):
            raise ValueError(f"{self.name}: a scorer pool, and it alone, names the resource classes it pulls")

    @property
    def package(self) -> str:
        """Its name as an identifier: the package of its code under ``services/`` (``mfscore.services.<package>``)
        for the validator and the aggregator, the stem of a pool's ``local-cluster`` keyword (``mask_scorers``)."""
        return self.name.replace("-", "_")

    @property
    def module(self) -> str:
        """The module holding its code: ``run_<role>``, or for a scorer pool the generic pool's ``run_pool``."""
        if self.role == SCORER:
            return "mfscore.services.common.scorer_pool"
        return f"mfscore.services.{self.package}.service"

    @property
    def grpc_service(self) -> str:
        """The gRPC service it serves (its Deployment's readiness asks for it)."""
        return GRPC_SERVICES[self.role]


POOL_REPLICAS = Autoscaled(min_replicas=1, max_replicas=10)
SERVICES = (
    ServiceSpec("validator", VALIDATOR),
    # image masks (PNG) and video masks (HDF5): the tasks whose jobs read pixels
    ServiceSpec("mask-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS, resources=("mask", "video")),
    # the tasks whose jobs read a system's provenance JSON
    ServiceSpec("provenance-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS, resources=("json",)),
    # the jobs of detection runs large enough to leave the aggregator (a subset's metrics and slices of its
    # bootstrap replicates, each reading the subset's sorted trials the aggregator stored)
    ServiceSpec("detection-scorer", SCORER, nats_user="scorer", replicas=POOL_REPLICAS, resources=("detection",)),
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
