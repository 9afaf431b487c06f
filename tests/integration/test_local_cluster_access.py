"""Who can reach a local cluster's state and services: every file it keeps is its owner's alone, a caller's
token comes in a cluster file of its own holding no S3 or NATS credential, a name keeps one role, and with
``--tls`` every service speaks TLS checked against the cluster's own CA."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import grpc
import pytest
import trustme

from mfscore.cli.main import main
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.wire import runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration


def modes(root: Path) -> dict[str, int]:
    """Every file and directory under ``root`` (and ``root``), by path, with its permission bits."""
    found = {str(root): stat.S_IMODE(root.stat().st_mode)}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = os.path.join(directory, name)
            found[path] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def test_every_file_a_local_cluster_keeps_is_its_owners_alone(local_cluster):
    path, config = local_cluster
    state = Path(config.state_dir)
    found = modes(state)
    kinds = {Path(p).relative_to(state).parts[0] for p in found if p != str(state)}
    assert kinds >= {"logs", "secrets", "jetstream", "work", "s3"}
    assert any(p.endswith(".log") and "seaweedfs" in p for p in found)  # the S3 server's log
    # SeaweedFS makes some of its files 0644 and its socket 0700: its directory, 0700, keeps them its own
    store = str(state / "s3") + os.sep
    wrong = {p: oct(m) for p, m in found.items()
             if m != (0o700 if os.path.isdir(p) else 0o600) and not (p.startswith(store) and m & 0o077 == m & 0o044)}
    assert not wrong
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_callers_token_keeps_its_name_to_one_role_and_comes_in_a_file_of_its_own(local_cluster, tmp_path, capsys):
    path, config = local_cluster
    tokens = Path(config.state_dir) / "secrets" / "tokens"
    before = tokens.read_text()
    assert main(["local-cluster", "token", "--cluster", str(path), "--name", "operator", "--role", "client"]) == 1
    error = capsys.readouterr().err.strip()
    assert "'operator' already has the role operator in this cluster" in error and len(error.splitlines()) == 1
    assert tokens.read_text() == before
    assert main(["local-cluster", "token", "--cluster", str(path), "--name", "carol", "--out", str(path)]) == 1
    assert "the cluster's own file" in capsys.readouterr().err

    out = tmp_path / "carol.json"
    assert main(["local-cluster", "token", "--cluster", str(path), "--name", "carol", "--out", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    written = json.loads(out.read_text())
    assert written["token"] and written["token"] not in capsys.readouterr().out
    assert {k: written[k] for k in ("nats_url", "state_dir", "processes")} == {"nats_url": "", "state_dir": "",
                                                                               "processes": []}
    assert not {"s3_access_key", "s3_secret_key"} & set(written)
    assert (written["aggregator_address"], written["validator_address"], written["tls_ca"]) == \
        (config.aggregator_address, config.validator_address, config.tls_ca)
    assert main(["local-cluster", "token", "--cluster", str(path), "--name", "carol"]) == 0  # a second key
    assert len(capsys.readouterr().out.strip()) >= 32

    time.sleep(1.5)  # the services read the tokens file again within a second
    with ClusterConfig.read(out).channel() as channel:
        services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=10)


def test_a_tls_cluster_answers_only_clients_trusting_its_ca(tls_cluster, tmp_path):
    path, config = tls_cluster
    state = Path(config.state_dir)
    assert config.tls_ca == str(state / "tls" / "ca.pem")
    assert config.nats_url.startswith("tls://") and config.s3_endpoint.startswith("https://")
    assert {stat.S_IMODE((state / "tls" / name).stat().st_mode) for name in ("ca.pem", "server.pem",
                                                                            "server.key")} == {0o600}
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    for process in [p for p in config.processes if "grpc_port" in p]:  # every service
        address = f"127.0.0.1:{process['grpc_port']}"
        assert commands.health(address, timeout=5, tls_ca=config.tls_ca) == "SERVING"
        assert commands.health(address, timeout=5) == "unreachable (UNAVAILABLE)"
        assert commands.health(address, timeout=5, tls_ca=str(other_ca)) == "unreachable (UNAVAILABLE)"
    with config.channel() as channel:
        services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=10)
    with grpc.insecure_channel(config.aggregator_address) as channel:
        with pytest.raises(grpc.RpcError) as error:
            services_pb2_grpc.AggregatorServiceStub(channel).ListRuns(runs_pb2.ListRunsRequest(), timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    assert commands.status(path) == 0
