"""The production NATS of ``deploy/k8s/nats/``: a 3-node clustered JetStream the production overlay deploys.

Checked field by field (no Kubernetes OpenAPI schema is vendored; ``test_deploy_manifests`` renders the overlay
with kustomize when it can): three pods started together, each with its own PVC under JetStream's store, routes
naming every pod through the headless Service and admitted only with the route password, the monitoring port on
both Services and the probes, lame duck mode finishing inside the grace period, a PodDisruptionBudget letting one
pod go at a time, and exactly the users and permissions of ``services/common/nats_auth.py``, their passwords from
the Secret. The ``nats.conf`` is also given to the nats-server the tests run (``nats-server -t``), whose version
the image must be.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from mfscore.errors import OptionError

REPO = Path(__file__).resolve().parents[2]
NATS_DIR = REPO / "deploy" / "k8s" / "nats"
PRODUCTION = REPO / "deploy" / "k8s" / "overlays" / "production"
NATS_SECRET = "mfscore-nats-passwords"
MONITOR_PORT, CLIENT_PORT = 8222, 4222
KINDS = {"ConfigMap": "v1", "Service": "v1", "StatefulSet": "apps/v1", "PodDisruptionBudget": "policy/v1"}


def documents() -> list[dict]:
    kustomization = yaml.safe_load((NATS_DIR / "kustomization.yaml").read_text())
    return [doc for entry in kustomization["resources"]
            for doc in yaml.safe_load_all((NATS_DIR / entry).read_text()) if doc]


def one(kind: str, name: str | None = None) -> dict:
    found = [d for d in documents() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def statefulset() -> dict:
    return one("StatefulSet", "nats")


def container() -> dict:
    (c,) = statefulset()["spec"]["template"]["spec"]["containers"]
    return c


def config_text() -> str:
    return one("ConfigMap", "nats-config")["data"]["nats.conf"]


def config() -> dict:
    """nats.conf with each ``$NAME`` (read by nats-server from the environment) as the string ``"$NAME"``."""
    return json.loads(re.sub(r'(?<=[:\[,])(\s*)\$(\w+)', r'\1"$\2"', config_text()))


def expanded(c: dict) -> dict[str, str]:
    """The container's environment as Kubernetes sets it: literal values with ``$(NAME)`` replaced by the
    variables defined before them, secrets as placeholders (starting with a letter, as the Secrets' do)."""
    values: dict[str, str] = {}
    for e in c.get("env", []):
        if "value" in e:
            values[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: values[m[1]], e["value"])
        else:
            values[e["name"]] = "nats-0" if "fieldRef" in e["valueFrom"] else f"p{e['name'].lower().replace('_', '')}" * 2
    return values


def ports(c: dict) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in c["ports"]}


def env(c: dict) -> dict[str, dict]:
    return {e["name"]: e for e in c.get("env", [])}


def seconds(duration: str) -> int:
    m = re.fullmatch(r"(\d+)s", duration)
    assert m, f"{duration!r}: write durations in seconds"
    return int(m[1])


def headless_service() -> dict:
    return one("Service", statefulset()["spec"]["serviceName"])


def test_objects_are_well_formed_and_namespace_less():
    for doc in documents():
        assert doc["apiVersion"] == KINDS[doc["kind"]], f"{doc['kind']} {doc['metadata']['name']}: {doc['apiVersion']}"
        assert doc["metadata"]["name"] and "namespace" not in doc["metadata"], "the overlay sets the namespace"
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "nats"
    sts = statefulset()
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    for service in (one("Service", "nats"), headless_service()):
        assert service["spec"]["selector"].items() <= labels.items()
        for port in service["spec"]["ports"]:
            assert ports(container())[port["targetPort"]] == port["port"], f"{service['metadata']['name']}: {port}"
    pod = sts["spec"]["template"]["spec"]
    volumes = {v["name"] for v in pod["volumes"]} | {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    assert {m["name"] for m in container()["volumeMounts"]} <= volumes
    assert all(len(name) <= 15 for name in ports(container())), "a port name is at most 15 characters"


def test_three_pods_started_together_behind_a_headless_service():
    sts = statefulset()
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["podManagementPolicy"] == "Parallel", "no pod is ready before the cluster has a quorum"
    headless = headless_service()
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    spread = sts["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == ["kubernetes.io/hostname"]


def test_routes_name_every_pod_through_the_headless_service_with_the_route_password():
    from mfscore.services.common import nats_auth

    sts, cluster, c = statefulset(), config()["cluster"], container()
    name, service = sts["metadata"]["name"], headless_service()["metadata"]["name"]
    assert cluster["port"] == ports(c)["cluster"]
    peers = [f"{name}-{i}.{service}:{cluster['port']}" for i in range(sts["spec"]["replicas"])]
    values = expanded(c)
    password = values["NATS_ROUTE_PASSWORD"]
    expected = nats_auth.cluster_config(cluster["name"], "unused:0", peers, password)
    assert cluster["authorization"] == {"user": nats_auth.ROUTE_USER, "password": "$NATS_ROUTE_PASSWORD"}
    assert [values[r[1:]] for r in cluster["routes"]] == expected["routes"], "every pod, dialled as the route user"
    ref = env(c)["NATS_ROUTE_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"]) == ("mfscore-nats-routes", "password")
    for weak in ("short-password", "sixteen+letters/and@more"):  # too short; not safe in a URL
        with pytest.raises(OptionError, match="route password"):
            nats_auth.cluster_config("c", "h:1", peers, weak)
    assert cluster["name"], "a cluster name"
    assert config()["server_name"] == "$POD_NAME", "a JetStream peer keeps its name across restarts"
    assert env(container())["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_users_and_permissions_are_nats_auths():
    nats_auth = pytest.importorskip("mfscore.services.common.nats_auth", reason="nats_auth.py needs the cluster extra")
    conf = config()
    users = conf["authorization"]["users"]
    names = [user["user"] for user in users]
    assert sorted(names) == ["aggregator", "scorer"]
    expected = json.loads(nats_auth.server_config({name: "p" * 16 for name in names}))
    for user in expected["authorization"]["users"]:
        user["password"] = f"$NATS_{user['user'].upper()}_PASSWORD"
    assert conf["authorization"] == expected["authorization"], \
        "nats.conf's users are not server_config's: write them again (the command in deploy/k8s/overlays/dev/nats.yaml)"
    for user in users:
        ref = env(container())[user["password"][1:]]["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (NATS_SECRET, user["user"])
    assert "no_auth_user" not in conf and not [a for a in container()["args"] if re.match(r"--?(user|pass|auth)", a)]


def test_lame_duck_ends_within_the_grace_period():
    conf, c = config(), container()
    pod = statefulset()["spec"]["template"]["spec"]
    lame_duck = seconds(conf["lame_duck_duration"]) + seconds(conf["lame_duck_grace_period"])
    assert seconds(conf["lame_duck_duration"]) >= 30, "nats-server's minimum"
    assert lame_duck < pod["terminationGracePeriodSeconds"]
    assert c["lifecycle"]["preStop"]["exec"]["command"] == ["nats-server", "--signal", f"ldm={conf['pid_file']}"]
    pid_dir = str(Path(conf["pid_file"]).parent)
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == pid_dir]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume, "the pid file is written on a read-only root file system"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


def test_jetstream_stores_on_a_volume_claim_per_pod():
    sts, conf = statefulset(), config()
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    (mount,) = [m for m in container()["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert mount["mountPath"] == conf["jetstream"]["store_dir"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    size = claim["spec"]["resources"]["requests"]["storage"]
    assert re.fullmatch(r"(\d+)Gi", size) and conf["jetstream"]["max_file_store"] < int(size[:-2]) << 30


def test_monitoring_port_serves_probes_keda_and_the_services():
    c = container()
    assert config()["http_port"] == ports(c)["monitor"] == MONITOR_PORT
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["port"] == "monitor" and c[probe]["httpGet"]["path"].startswith("/healthz")
    client = one("Service", "nats")
    assert {p["name"]: p["port"] for p in client["spec"]["ports"]} == {"client": CLIENT_PORT, "monitor": MONITOR_PORT}
    assert "port" not in config() and ports(c)["client"] == CLIENT_PORT, "clients on nats-server's default port"


def test_a_drain_takes_one_pod_at_a_time():
    pdb = one("PodDisruptionBudget", "nats")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": statefulset()["spec"]["selector"]}


def test_image_is_the_nats_server_the_tests_run():
    from mfscore.services.local.servers import find_executable

    said = subprocess.run([find_executable("nats-server"), "--version"], capture_output=True, text=True, timeout=30)
    version = re.search(r"v(\d+\.\d+\.\d+)", said.stdout)[1]
    assert container()["image"] == f"nats:{version}"


def test_nats_server_accepts_the_configuration(tmp_path):
    from mfscore.services.local.servers import find_executable

    path = tmp_path / "nats.conf"
    path.write_text(config_text())
    variables = expanded(container())
    checked = subprocess.run([find_executable("nats-server"), "-t", "-c", str(path)], capture_output=True, text=True,
                             env=variables, timeout=30)
    assert checked.returncode == 0, checked.stderr or checked.stdout
    for name in ("NATS_AGGREGATOR_PASSWORD", "NATS_ROUTE_PASSWORD", "NATS_ROUTE_2"):  # each one is needed
        without = {k: v for k, v in variables.items() if k != name}
        missing = subprocess.run([find_executable("nats-server"), "-t", "-c", str(path)], capture_output=True,
                                 text=True, env=without, timeout=30)
        assert missing.returncode != 0 and name in missing.stderr + missing.stdout


def test_production_deploys_it_and_replicates_on_all_three():
    kustomization = yaml.safe_load((PRODUCTION / "kustomization.yaml").read_text())
    assert (PRODUCTION / "../../nats").resolve() in {(PRODUCTION / r).resolve() for r in kustomization["resources"]}
    (patch,) = [d for d in yaml.safe_load_all((PRODUCTION / "configmap-patch.yaml").read_text()) if d]
    data = patch["data"]
    assert data["MFSCORE_STREAM_REPLICAS"] == str(statefulset()["spec"]["replicas"])
    assert data["MFSCORE_NATS_URL"] == f"nats://nats.{kustomization['namespace']}.svc.cluster.local:{CLIENT_PORT}"
