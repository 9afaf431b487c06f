"""Structural checks of ``deploy/``: the Dockerfile and the kustomize base and overlays.

These tests read the YAML files with PyYAML. They do not build the overlays: kustomize's merge
rules are not reimplemented here. An "overlay view" is the base objects plus the overlay's own
resources, with its ``$patch: delete`` patches, ConfigMap data patches, Deployment field patches
and JSON-patch ``replace`` operations applied. That covers the fields these tests check. It is
not a rendering. When a ``kustomize`` or ``kubectl`` binary is on PATH,
``test_overlays_render_with_kustomize`` also renders every overlay for real. Without one, that
test is skipped and only the structural checks run.

What is checked: kustomizations list files that exist and parse, and no YAML file is left out.
Each Deployment runs ``mfscore serve <service>`` with gRPC probes on 50051, a metrics port on
9100, and envFrom the ConfigMap and the credentials Secret. Every environment variable is a
documented ``MFSCORE_*`` one. The grace period exceeds ``MFSCORE_ACK_WAIT``. KEDA ScaledObjects
target existing scorers through their durable consumers. No Secret values are committed, and no
MinIO server is deployed.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
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

SERVICES = ("validator", "mask-scorer", "detection-scorer", "provenance-scorer", "aggregator")
SCORERS = {"mask-scorer": "mask", "detection-scorer": "detection", "provenance-scorer": "provenance"}
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


# ----------------------------------------------------------------------------- deployments

def test_base_runs_each_service_once():
    deployments = find(objects(BASE), "Deployment")
    assert sorted(d["metadata"]["name"] for d in deployments) == sorted(SERVICES)
    for d in deployments:
        (c,) = containers(d)
        assert c.get("command") in (None, ["mfscore"]), "the image's ENTRYPOINT is mfscore"
        assert c["args"] == ["serve", d["metadata"]["name"]], f"{d['metadata']['name']} runs {c['args']}"
        assert c["args"][1] in SERVICES
        assert c["image"].split(":")[0] == "mfscore", "overlays rewrite the image by the name `mfscore`"


@pytest.mark.parametrize("name", SERVICES)
def test_deployment_probes_ports_config_and_security(name):
    d = one(objects(BASE), "Deployment", name)
    pod = d["spec"]["template"]["spec"]
    (c,) = containers(d)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe].get("grpc", {}).get("port") == GRPC_PORT, f"{name}: {probe} is not a gRPC probe on {GRPC_PORT}"
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

@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_scaled_objects_target_scorers_through_their_consumers(kdir):
    objs = overlay_view(kdir)
    deployments = {d["metadata"]["name"] for d in find(objs, "Deployment")}
    nats_url = one(objs, "ConfigMap", CONFIGMAP)["data"]["MFSCORE_NATS_URL"]
    for so in find(objs, "ScaledObject"):
        target = so["spec"]["scaleTargetRef"]["name"]
        assert target in deployments and target in SCORERS, f"{kdir.name}: ScaledObject targets {target!r}"
        assert so["spec"]["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
        assert 0 <= so["spec"].get("minReplicaCount", 0) <= so["spec"].get("maxReplicaCount", 100)
        (trigger,) = so["spec"]["triggers"]
        meta = trigger["metadata"]
        assert trigger["type"] == "nats-jetstream"
        assert meta["stream"] == "MFSCORE_JOBS" and meta["account"] == "$G"
        assert meta["consumer"] == f"{SCORERS[target]}-scorers", f"{target} scales on consumer {meta['consumer']}"
        endpoint = meta["natsServerMonitoringEndpoint"]
        assert endpoint.endswith(f":{NATS_MONITOR_PORT}"), f"{endpoint}: NATS monitoring is on {NATS_MONITOR_PORT}"
        assert nats_host(endpoint) == nats_host(nats_url), \
            f"{kdir.name}: KEDA reads lag from {endpoint} but the services use {nats_url}"
        assert int(meta["lagThreshold"]) > 0
    hpas = find(objs, "HorizontalPodAutoscaler")
    for hpa in hpas:
        assert hpa["spec"]["scaleTargetRef"]["name"] in SCORERS
    scaled = [so["spec"]["scaleTargetRef"]["name"] for so in find(objs, "ScaledObject")]
    scaled += [h["spec"]["scaleTargetRef"]["name"] for h in hpas]
    assert len(scaled) == len(set(scaled)), f"{kdir.name}: a scorer has two autoscalers: {sorted(scaled)}"


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

def test_dockerfile_builds_generated_code_and_runs_non_root():
    lines = [ln.strip() for ln in (DEPLOY / "Dockerfile").read_text().splitlines()]
    text = "\n".join(ln for ln in lines if not ln.startswith("#"))
    froms = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert froms and all(f == "python:3.11-slim" for f in froms), froms
    generate = text.index("python -m services.generate_wire")
    assert text.index("COPY proto/") < generate, "the generator needs proto/ in the build"
    installs = [m.start() for m in re.finditer(r"pip install \.(\s|$)", text)]
    assert installs and max(installs) > generate, "install the checkout after generating services/wire"
    assert "pip install -e" not in text and "--editable" not in text
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root USER (runAsNonRoot can verify it)"
    entrypoints = re.findall(r"^ENTRYPOINT\s+(.+)$", text, re.MULTILINE)
    assert json.loads(entrypoints[-1]) == ["mfscore"]
    for name in SERVICES:
        pod = one(objects(BASE), "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert "services/wire/" in ignore, "generated code comes from the build, never from the checkout"


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
    assert kinds.count("Deployment") == len(SERVICES)
    assert "Secret" not in kinds
    for d in find(rendered, "Deployment"):
        assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "mfscore"
        if kdir != BASE:
            assert d["metadata"].get("namespace"), f"{kdir.name} sets the namespace"
    expected = {"base": 3, "dev": 0, "production": 3, "no-keda": 0}.get(kdir.name)
    if expected is not None:
        assert kinds.count("ScaledObject") == expected
