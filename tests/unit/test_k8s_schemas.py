"""Every built-in Kubernetes object under ``deploy/k8s/`` against Kubernetes' own OpenAPI schemas, strictly.

``kubernetes-validate`` (the ``test`` extra) bundles, for each Kubernetes release, the JSON schemas generated from
that release's OpenAPI document, in a strict variant where a field an object's schema does not declare is an error
(as ``kubectl apply`` with strict field validation refuses it): a misspelt or misplaced field, a wrong type, a missing
required field, an ``apiVersion`` or kind the release does not serve. Each object is validated against two releases:
the oldest docs/deploy.md supports (``MINIMUM_KUBERNETES``, 1.27: the native gRPC probes) and the newest the package
bundles, so a field newer than the documented minimum fails too.

What is validated: each kustomization's objects as ``test_deploy_manifests.overlay_view`` builds them (the base's
objects and the overlay's own, with its patches applied), plus the ConfigMaps its ``configMapGenerator`` makes; every
resource file as written (not the patches, which are partial objects), ``secret.example.yaml`` included; and, in
``test_deploy_manifests.test_overlays_render_with_kustomize`` when kustomize or kubectl is on PATH, every overlay as
rendered.

Skipped: the custom resources, whose kinds Kubernetes' schemas do not have: KEDA's (``keda.sh``) and the Prometheus
Operator's (``monitoring.coreos.com``), which ``test_deploy_manifests`` validates against their CRDs, vendored in
``deploy/crds/``. The skipped groups must be exactly the groups of those CRDs; an object of any other group with no
Kubernetes schema fails.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from test_deploy_manifests import (BASE, CRDS, DEV, DOCS, K8S, KUSTOMIZATION_DIRS, REPO, SECRET_EXAMPLE, containers,
                                   crd_schemas, is_custom, kustomization, load_docs, objects, one, overlay_view,
                                   resource_files)

MINIMUM_KUBERNETES = "1.27"                                   # docs/deploy.md: "version 1.27 or later"
NEWEST_KUBERNETES = kubernetes_validate.latest_version()      # the newest release whose schemas the package bundles
KUBERNETES_VERSIONS = (MINIMUM_KUBERNETES, NEWEST_KUBERNETES)
# the API groups of the custom resources, validated against their vendored CRDs instead (test_deploy_manifests)
CRD_GROUPS = frozenset({"keda.sh", "monitoring.coreos.com"})


def group_of(doc: dict) -> str:
    return doc["apiVersion"].rpartition("/")[0]


def describe(doc: dict) -> str:
    return f"{doc.get('apiVersion')} {doc.get('kind')} {(doc.get('metadata') or {}).get('name')}"


def check_builtin_schemas(docs: list[dict], where: str) -> tuple[int, set[str]]:
    """Validate every built-in object of ``docs`` against each of KUBERNETES_VERSIONS, strictly; (how many were
    validated, the API groups skipped as custom resources). A ``$patch: delete`` is not an object."""
    validated, skipped = 0, set()
    for doc in docs:
        if "$patch" in doc:
            continue
        if group_of(doc) in CRD_GROUPS:
            skipped.add(group_of(doc))
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                path = "/".join(map(str, error.absolute_path)) or "(the object)"
                raise AssertionError(f"{where}: {describe(doc)} does not pass Kubernetes {version}'s schema at "
                                     f"{path}: {error.message}") from None
            except kubernetes_validate.SchemaNotFoundError as error:
                raise AssertionError(f"{where}: {describe(doc)}: Kubernetes {version} has no such kind "
                                     f"({error.message}); custom resources are only those of {sorted(CRD_GROUPS)}, "
                                     "validated against deploy/crds/") from None
        validated += 1
    return validated, skipped


def generated_config_maps(kdir: Path) -> list[dict]:
    """The ConfigMaps the ``configMapGenerator`` entries of ``kdir`` and of the kustomizations it lists make, as
    kustomize makes them (a key per file, the options' labels and annotations); only the shapes used here."""
    made = []
    for entry in kustomization(kdir).get("resources", []):
        if (kdir / entry).is_dir():
            made += generated_config_maps((kdir / entry).resolve())
    for generator in kustomization(kdir).get("configMapGenerator", []):
        assert set(generator) <= {"name", "files", "literals", "options"}, \
            f"{kdir.name}: a configMapGenerator field this test does not build: {sorted(generator)}"
        data = {}
        for item in generator.get("files", []):
            key, _, file = item.rpartition("=")
            data[key or Path(file).name] = (kdir / file).read_text()
        data |= dict(literal.split("=", 1) for literal in generator.get("literals", []))
        options = generator.get("options", {})
        metadata = {"name": generator["name"]} | {k: options[k] for k in ("labels", "annotations") if k in options}
        made.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
    return made


def view_with_generated(kdir: Path) -> list[dict]:
    return overlay_view(kdir) + generated_config_maps(kdir)


def test_the_kubernetes_releases_checked():
    """The minimum is docs/deploy.md's, and the package bundles both it and a newer release."""
    assert re.search(rf"Kubernetes\s+cluster\s+of\s+version\s+{re.escape(MINIMUM_KUBERNETES)}\s+or\s+later",
                     DOCS.read_text()), \
        f"docs/deploy.md no longer says Kubernetes {MINIMUM_KUBERNETES} or later: change MINIMUM_KUBERNETES with it"
    bundled = {re.match(r"\d+\.\d+", v)[0] for v in kubernetes_validate.utils.all_versions()}
    assert MINIMUM_KUBERNETES in bundled, f"kubernetes-validate bundles no schemas of {MINIMUM_KUBERNETES}: {bundled}"
    newest = tuple(map(int, NEWEST_KUBERNETES.split(".")[:2]))
    assert newest > tuple(map(int, MINIMUM_KUBERNETES.split("."))), NEWEST_KUBERNETES


def test_the_skipped_groups_are_those_of_the_vendored_crds():
    vendored = {crd["spec"]["group"] for path in sorted(CRDS.glob("*.yaml")) for crd in load_docs(path)}
    assert vendored == CRD_GROUPS, f"deploy/crds/ vendors the CRDs of {sorted(vendored)}, not {sorted(CRD_GROUPS)}"


@pytest.mark.parametrize("kdir", KUSTOMIZATION_DIRS, ids=lambda p: p.name)
def test_every_builtin_object_passes_the_kubernetes_schemas(kdir):
    docs = view_with_generated(kdir)
    validated, skipped = check_builtin_schemas(docs, f"{kdir.name} (overlay view)")
    builtin = [d for d in docs if "$patch" not in d and not is_custom(d)]
    assert validated == len(builtin) and validated >= 20, f"{kdir.name}: {validated} of {len(builtin)} validated"
    custom = [d for d in docs if "$patch" not in d and is_custom(d)]
    assert skipped == {group_of(d) for d in custom}, f"{kdir.name}: skipped {sorted(skipped)}"
    for doc in custom:     # each skipped kind is one test_deploy_manifests checks against its CRD
        assert (doc["apiVersion"], doc["kind"]) in crd_schemas(), f"{describe(doc)} has no vendored CRD"
    kinds = {d["kind"] for d in builtin}
    assert {"Deployment", "Service", "ConfigMap", "NetworkPolicy", "PodDisruptionBudget"} <= kinds, sorted(kinds)
    if kdir == DEV:
        assert {"StatefulSet"} <= kinds and one(docs, "StatefulSet", "seaweedfs")


def test_every_custom_resource_group_is_skipped_somewhere():
    """Across the kustomizations, the groups skipped are exactly CRD_GROUPS: none is skipped for nothing."""
    skipped = set()
    for kdir in KUSTOMIZATION_DIRS:
        skipped |= check_builtin_schemas([d for d in view_with_generated(kdir) if is_custom(d)], kdir.name)[1]
    assert skipped == CRD_GROUPS, f"custom resources of {sorted(skipped)} appear; CRD_GROUPS is {sorted(CRD_GROUPS)}"


def test_every_resource_file_passes_the_kubernetes_schemas():
    """Every object of every file a kustomization lists, as written, and the example Secrets."""
    files = {path for kdir in KUSTOMIZATION_DIRS for path in resource_files(kdir)} | {SECRET_EXAMPLE}
    assert {K8S / "nats" / "nats.yaml", K8S / "monitoring" / "prometheusrule.yaml"} <= files
    total = 0
    for path in sorted(files):
        validated, _ = check_builtin_schemas(load_docs(path), str(path.relative_to(REPO)))
        total += validated
    assert total >= 40, f"only {total} objects validated"
    assert any(p.name == "seaweedfs.yaml" for p in files) and SECRET_EXAMPLE in files


def test_the_schema_check_fails_on_wrong_objects():
    """The check can fail: a misspelt field, a wrong type, a missing required field, a field newer than the minimum
    release, a kind Kubernetes does not serve and a custom resource of a group with no vendored CRD."""
    dev = overlay_view(DEV)
    statefulset = copy.deepcopy(one(dev, "StatefulSet", "seaweedfs"))
    statefulset["spec"]["volumeClaimTemplate"] = statefulset["spec"].pop("volumeClaimTemplates")
    service = copy.deepcopy(one(dev, "Service", "seaweedfs"))
    service["spec"]["ports"][0]["port"] = "8333"
    policy = copy.deepcopy(one(dev, "NetworkPolicy", "seaweedfs"))
    policy["spec"]["ingress"][0]["ports"][0]["protocol"] = 6
    deployment = copy.deepcopy(one(objects(BASE), "Deployment", "validator"))
    del containers(deployment)[0]["name"]
    sidecar = copy.deepcopy(one(objects(BASE), "Deployment", "aggregator"))
    containers(sidecar)[0]["restartPolicy"] = "Always"       # containers' restartPolicy: Kubernetes 1.28 and later
    unserved = copy.deepcopy(one(objects(BASE), "PodDisruptionBudget", "validator"))
    unserved["apiVersion"] = "policy/v1beta1"                 # removed in 1.25
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "mfscore-tls"},
                   "spec": {"secretName": "mfscore-tls"}}
    for doc, message in ((statefulset, "'volumeClaimTemplate' was unexpected"), (service, "'8333' is not of type"),
                         (policy, "6 is not of type"), (deployment, "'name' is a required property"),
                         (sidecar, f"Kubernetes {MINIMUM_KUBERNETES}'s schema.*'restartPolicy' was unexpected"),
                         (unserved, "has no such kind"), (certificate, "has no such kind")):
        with pytest.raises(AssertionError, match=message):
            check_builtin_schemas([doc], "test")
    assert check_builtin_schemas([one(dev, "StatefulSet", "seaweedfs")], "test") == (1, set())
    scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "x"}, "spec": {}}
    assert check_builtin_schemas([scaled], "test") == (0, {"keda.sh"}), "a CRD's kind is left to its CRD's check"


def test_the_generated_config_maps_are_the_dashboards():
    (dashboard,) = generated_config_maps(BASE)
    assert dashboard["metadata"]["name"] == "mfscore" and dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert list(dashboard["data"]) == ["dashboard.json"] and dashboard["data"]["dashboard.json"].lstrip().startswith("{")
    assert yaml.safe_load(dashboard["data"]["dashboard.json"])    # JSON is YAML: it parses
