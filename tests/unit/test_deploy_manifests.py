"""Structural checks of ``deploy/``: the Dockerfile and the kustomize base and overlays.

These tests read the YAML files with PyYAML. They do not build the overlays: kustomize's merge
rules are not reimplemented here. An "overlay view" is the base objects plus the overlay's own
resources, with its ``$patch: delete`` patches, ConfigMap data patches, Deployment field patches
and JSON-patch ``replace`` operations applied. That covers the fields these tests check. It is
not a rendering. When a ``kustomize`` or ``kubectl`` binary is on PATH,
``test_overlays_render_with_kustomize`` also renders every overlay for real and runs the naming
and scaling checks on the result. Without one, that test is skipped and only the structural
checks run.

The facts the manifests must follow are read from the code with ``ast`` (so a plain install,
without the ``cluster`` extra, runs these tests): the services ``mfscore serve`` accepts
(``services/commands/serve.py`` SERVICES), the resource classes of the job subjects and their
durable consumers ``<class>-scorers`` (``services/common/jetstream.py`` JOB_KINDS), the classes
each scorer pool pulls (``services/<pool>/service.py`` POOL) and the gRPC services each process
registers (``proto/mfscore/v1/services.proto``).

What is checked: kustomizations list files that exist and parse, and no YAML file is left out.
The four services run once each, as ``mfscore serve <service>``; no retired service
(detection-scorer) or consumer is named anywhere. Each Deployment has gRPC probes on 50051 (readiness
on the gRPC service it serves), a metrics port on 9100, and envFrom the ConfigMap and the
credentials Secret. Every environment variable is a documented ``MFSCORE_*`` one. The grace period
exceeds ``MFSCORE_ACK_WAIT``. KEDA ScaledObjects target the scorer pools with one trigger per
resource class the pool pulls, each on an existing consumer. No Secret values are committed, no
MinIO server is deployed, and the image installs the committed ``services/`` with the ``cluster``
extra, generating nothing.
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
BASE = K8S / "base"
OVERLAYS = sorted(p for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").is_file())
KUSTOMIZATION_DIRS = [BASE, *OVERLAYS]
SECRET_EXAMPLE = K8S / "secret.example.yaml"
DOCS = REPO / "docs" / "deploy.md"
SERVICES_SRC = REPO / "services"            # installed as mfscore.services (pyproject.toml package-dir)

# `mfscore serve <service>`: the Deployments, one each (checked against services/commands/serve.py)
SERVICES = ("validator", "mask-scorer", "provenance-scorer", "aggregator")
# the scorer pools: services/<name with _>/service.py defines POOL = ScorerPool(name, resources)
SCORERS = ("mask-scorer", "provenance-scorer")
# the gRPC service each process registers (and reports on grpc.health.v1.Health), and the module doing so
GRPC_SERVICES = {
    "validator": ("mfscore.v1.Validator", SERVICES_SRC / "validator" / "service.py"),
    "mask-scorer": ("mfscore.v1.Scorer", SERVICES_SRC / "common" / "scorer_pool.py"),
    "provenance-scorer": ("mfscore.v1.Scorer", SERVICES_SRC / "common" / "scorer_pool.py"),
    "aggregator": ("mfscore.v1.Aggregator", SERVICES_SRC / "aggregator" / "service.py"),
}
# names of the five-service layout: detection is scored in the aggregator, provenance jobs are class json
RETIRED_NAMES = ("detection-scorer", "detection_scorer", "detection-scorers", "provenance-scorers",
                 "mfscore.jobs.detection", "mfscore.jobs.provenance")
OTHER_NAMES = frozenset({"mfscore-config", "mfscore-s3-credentials", "mfscore", "nats"})  # not services
ENV_VARS = frozenset({
    "MFSCORE_GRPC_PORT", "MFSCORE_METRICS_PORT", "MFSCORE_NATS_URL", "MFSCORE_S3_ENDPOINT",
    "MFSCORE_S3_ACCESS_KEY", "MFSCORE_S3_SECRET_KEY", "MFSCORE_S3_REGION", "MFSCORE_BUCKET",
    "MFSCORE_VALIDATOR_ADDRESS", "MFSCORE_AGGREGATOR_ADDRESS", "MFSCORE_WORK_DIR",
    "MFSCORE_ACK_WAIT", "MFSCORE_MAX_DELIVER",
})
SECRET_KEYS = frozenset({"MFSCORE_S3_ACCESS_KEY", "MFSCORE_S3_SECRET_KEY"})
CONFIGMAP_KEYS = frozenset({
    "MFSCORE_NATS_URL", "MFSCORE_S3_ENDPOINT", "MFSCORE_S3_REGION", "MFSCORE_BUCKET", "MFSCORE_ACK_WAIT",
    "MFSCORE_MAX_DELIVER", "MFSCORE_VALIDATOR_ADDRESS", "MFSCORE_AGGREGATOR_ADDRESS",
})
CONFIGMAP = "mfscore-config"
SECRET = "mfscore-s3-credentials"
GRPC_PORT, METRICS_PORT, NATS_MONITOR_PORT = 50051, 9100, 8222
SHUTDOWN_MARGIN = 10  # seconds after the ack wait: gRPC stop (5 s) and NATS drain
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


@functools.cache
def serve_choices() -> tuple[str, ...]:
    """What ``mfscore serve`` accepts."""
    return tuple(ast.literal_eval(top_level_value(SERVICES_SRC / "commands" / "serve.py", "SERVICES")))


@functools.cache
def job_classes() -> tuple[str, ...]:
    """The resource classes: jobs go to ``mfscore.jobs.<class>``, pulled by the durable consumer ``<class>-scorers``."""
    source = SERVICES_SRC / "common" / "jetstream.py"
    text = source.read_text()
    assert 'f"mfscore.jobs.{kind}"' in text and 'f"{kind}-scorers"' in text, \
        f"{source.relative_to(REPO)} no longer names subjects mfscore.jobs.<class> and consumers <class>-scorers"
    return tuple(ast.literal_eval(top_level_value(source, "JOB_KINDS")))


def consumer(job_class: str) -> str:
    return f"{job_class}-scorers"


@functools.cache
def pool_classes(name: str) -> tuple[str, ...]:
    """The resource classes the scorer pool ``name`` pulls (its POOL in services/<name>/service.py)."""
    path = SERVICES_SRC / name.replace("-", "_") / "service.py"
    call = top_level_value(path, "POOL")
    assert isinstance(call, ast.Call) and getattr(call.func, "id", None) == "ScorerPool", \
        f"{path.relative_to(REPO)}: POOL is not a ScorerPool(...)"
    fields = dict(zip(("name", "resources"), (ast.literal_eval(a) for a in call.args)))
    fields |= {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert fields["name"] == name, f"{path.relative_to(REPO)}: the pool calls itself {fields['name']!r}"
    return tuple(fields["resources"])


def pool_consumers(name: str) -> list[str]:
    return sorted(consumer(c) for c in pool_classes(name))


@functools.cache
def proto_services() -> frozenset[str]:
    text = (REPO / "proto" / "mfscore" / "v1" / "services.proto").read_text()
    (package,) = re.findall(r"^package\s+([\w.]+)\s*;", text, re.MULTILINE)
    return frozenset(f"{package}.{s}" for s in re.findall(r"^service\s+(\w+)", text, re.MULTILINE))


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
    """Base + overlay objects with the overlay's deletions, ConfigMap/Deployment patches and JSON replaces.

    Only what the checks below read; not a kustomize build (see the module docstring).
    """
    objs = copy.deepcopy(objects(kdir))
    for entry, docs in patches(kdir) if kdir != BASE else []:
        if docs and isinstance(docs[0], list):            # JSON 6902
            for obj in objs:
                if matches(entry["target"], obj):
                    for op in docs[0]:
                        if op["op"] in ("replace", "add"):
                            parent, key = json_pointer(obj, op["path"])
                            parent[key] = copy.deepcopy(op["value"])
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
    return objs


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
        assert not unknown, f"{name} pulls {unknown}, not classes of services/common/jetstream.py JOB_KINDS {classes}"
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
                f"{path.relative_to(REPO)} still names {name!r} (detection is scored in the aggregator; " \
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
    assert c["readinessProbe"]["grpc"].get("service") == grpc_service, \
        f"{name}: readiness must check the service the pod serves, {grpc_service}"
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


def test_aggregator_is_a_single_replica_recreated():
    d = one(objects(BASE), "Deployment", "aggregator")
    assert d["spec"]["replicas"] == 1 and d["spec"]["strategy"]["type"] == "Recreate"
    for kdir in OVERLAYS:
        for entry in kustomization(kdir).get("replicas", []):
            assert entry["name"] != "aggregator" or entry["count"] == 1, f"{kdir.name} scales the aggregator"


def test_scorers_leave_replicas_to_the_autoscaler():
    for name in SCORERS:
        assert "replicas" not in one(objects(BASE), "Deployment", name)["spec"], \
            f"{name}: a fixed replica count would fight KEDA/HPA on every apply"


# ----------------------------------------------------------------------------- configuration

def test_env_var_names_are_documented():
    names = set()
    for path, doc in all_yaml_docs():
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            names |= {e["name"] for e in c.get("env", [])}
        if doc.get("kind") == "ConfigMap":
            names |= set(doc.get("data", {}))
    secret_keys = set(one(load_docs(SECRET_EXAMPLE), "Secret", SECRET)["stringData"])
    undocumented = sorted(n for n in names | secret_keys if n not in ENV_VARS)
    assert not undocumented, f"undocumented environment variables: {undocumented}"
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


def test_no_secret_values_committed():
    for path, doc in all_yaml_docs():
        if doc.get("kind") == "Secret":
            assert not doc.get("data") and not doc.get("stringData"), f"{path.relative_to(REPO)} commits a Secret"
    for kdir in KUSTOMIZATION_DIRS:
        assert "secretGenerator" not in kustomization(kdir)
    example = one(load_docs(SECRET_EXAMPLE), "Secret", SECRET)
    assert all(v.startswith("<") for v in example["stringData"].values()), "the example holds placeholders only"


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
                f"(services/common/jetstream.py JOB_KINDS {job_classes()}: {sorted(consumers)})")
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


def test_production_overrides_endpoints():
    base = one(objects(BASE), "ConfigMap", CONFIGMAP)["data"]
    (patch,) = [d for _, docs in patches(K8S / "overlays" / "production") for d in docs
                if isinstance(d, dict) and d["kind"] == "ConfigMap"]
    assert {"MFSCORE_NATS_URL", "MFSCORE_S3_ENDPOINT", "MFSCORE_S3_REGION"} <= patch["data"].keys()
    assert re.match(r"https://[^/]+$", patch["data"]["MFSCORE_S3_ENDPOINT"]), "production S3 over TLS"
    assert base.keys() >= patch["data"].keys()


def test_every_scorer_has_a_disruption_budget():
    objs = objects(BASE)
    pdbs = find(objs, "PodDisruptionBudget")
    for name in SCORERS:
        labels = pod_labels(one(objs, "Deployment", name))
        budgets = [p for p in pdbs if p["spec"]["selector"]["matchLabels"].items() <= labels.items()]
        assert len(budgets) == 1, f"{name}: {len(budgets)} PodDisruptionBudgets"
        others = [d for d in find(objs, "Deployment") if d["metadata"]["name"] != name
                  and budgets[0]["spec"]["selector"]["matchLabels"].items() <= pod_labels(d).items()]
        assert not others, f"the {name} PodDisruptionBudget also selects {[d['metadata']['name'] for d in others]}"
    for pdb in pdbs:
        selected = [d for d in find(objs, "Deployment")
                    if pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels(d).items()]
        assert selected, f"PodDisruptionBudget {pdb['metadata']['name']} selects no Deployment"


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


def test_dockerfile_installs_the_committed_services_with_the_cluster_extra():
    text = dockerfile_text()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    froms = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert froms and all(f == "python:3.11-slim" for f in froms), froms
    assert "generate_wire" not in text and "grpcio-tools" not in text, \
        "services/wire is committed: the build generates nothing (and needs no grpcio-tools)"
    # services/ is packaged from the source tree as mfscore.services, so the build copies it
    assert pyproject["tool"]["setuptools"]["package-dir"].get("mfscore.services") == "services"
    copied = {src for args in re.findall(r"^COPY\s+(?!--from)(.+)$", text, re.MULTILINE) for src in args.split()[:-1]}
    for needed in ("pyproject.toml", pyproject["project"]["readme"], "mfscore/", "services/"):
        assert needed in copied, f"the build needs {needed} (copied: {sorted(copied)})"
    installs = [(m.start(), m["extras"]) for m in
                re.finditer(r"pip install\s+(['\"]?)\.\[(?P<extras>[\w,-]+)\]\1(?=\s|$)", text)]
    assert installs, "install the checkout with its extras: pip install '.[cluster]'"
    install_at, extras = installs[-1]
    extras = extras.split(",")
    assert "cluster" in extras, f"the image installs extras {extras}: the services need `cluster`"
    runtime = {requirement_name(r) for extra in extras for r in pyproject["project"]["optional-dependencies"][extra]}
    assert CLUSTER_RUNTIME <= runtime, f"the installed extras lack {sorted(CLUSTER_RUNTIME - runtime)}"
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
    needed = [Path("pyproject.toml"), Path("README.md"), *(p.relative_to(REPO) for p in sources)]
    left_out = [str(p) for p in needed if not docker_context_includes(p.as_posix(), rules)]
    assert not left_out, \
        f"deploy/Dockerfile.dockerignore keeps files the image needs out of the build context: {left_out[:10]}"
    for stray in (".venv/bin/python", "tests/unit/test_deploy_manifests.py", "services/__pycache__/x.cpython-311.pyc",
                  "mfscore.egg-info/PKG-INFO"):
        assert not docker_context_includes(stray, rules), f"{stray} should stay out of the build context"


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
        assert c["readinessProbe"]["grpc"].get("service") == GRPC_SERVICES[name][0]


# ----------------------------------------------------------------------------- the guide

def test_deploy_guide_names_the_services_and_consumers():
    text = DOCS.read_text()
    for name in (*SERVICES, *(consumer(c) for c in job_classes()), *{s for s, _ in GRPC_SERVICES.values()}):
        assert name in text, f"docs/deploy.md does not mention {name}"
