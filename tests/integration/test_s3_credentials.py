"""S3 credentials against the real local server (SeaweedFS): only the key generated for it works, its other ports
are closed to anyone without that key, a refusal reaches the user as one sentence naming no secret, and no
secret is in code, in the cluster file (which holds no S3 key: clients upload through the aggregator), or in any
log."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import socket
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from mfscore.errors import OptionError
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.common.metrics import REGISTRIES
from mfscore.services.common.object_store import ObjectStore, ObjectStoreRefused
from mfscore.services.local.servers import start_s3_server
from mfscore.services.common.settings import Settings

pytestmark = pytest.mark.integration

OLD_FIXED = {"mfscore", "mfscore-secret", "mfscore-local"}
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def settings_for(s3_server, credentials, **overrides) -> Settings:
    return Settings(s3_endpoint=s3_server.url, s3_access_key=credentials.access_key,
                    s3_secret_key=credentials.secret_key, bucket=f"test-{uuid.uuid4().hex[:16]}", **overrides)


def attempts(operation: str) -> float:
    return REGISTRIES["scorer"].get_sample_value("mfscore_s3_request_duration_seconds_count", {"operation": operation}) or 0.0


@pytest.fixture
def service_store(s3_server) -> ObjectStore:
    store = ObjectStore(settings_for(s3_server, s3_server.service))
    store.ensure_bucket()
    return store


def test_the_generated_service_key_creates_the_bucket_puts_gets_and_lists(service_store):
    service_store.put_bytes("runs/r1/inputs/ref/a.png", b"a")
    service_store.put_bytes("runs/r1/reports/x.csv", b"x")
    assert service_store.get_bytes("runs/r1/inputs/ref/a.png", max_bytes=10) == b"a"
    assert service_store.list_keys("runs/r1/") == ["runs/r1/inputs/ref/a.png", "runs/r1/reports/x.csv"]
    assert service_store.exists("runs/r1/reports/x.csv")
    assert service_store.delete_prefix("runs/r1/") == 2  # retention
    assert service_store.list_keys("runs/r1/") == []


def test_a_made_up_access_key_is_refused_once_in_one_sentence(s3_server, service_store):
    made_up = dataclasses.replace(s3_server.service, access_key="AKIA" + secrets.token_hex(8).upper(),
                                  secret_key=secrets.token_urlsafe(30))
    store = ObjectStore(dataclasses.replace(settings_for(s3_server, made_up), bucket=service_store.bucket))
    before = attempts("put")
    with pytest.raises(ObjectStoreRefused) as refused:
        store.put_bytes("runs/r2/inputs/a.png", b"a")
    assert attempts("put") - before == 1  # not retried as a transient failure
    sentence = str(refused.value)
    assert sentence == (f"S3 at {s3_server.url} refused put of 'runs/r2/inputs/a.png' in bucket "
                        f"{service_store.bucket!r} to the access key {made_up.access_key!r} (InvalidAccessKeyId): "
                        "the server knows no such access key; check MFSCORE_S3_ACCESS_KEY")
    assert made_up.secret_key not in sentence
    with pytest.raises(ObjectStoreRefused, match=r"refused head_bucket .*\(AccessDenied\)"):
        store.ensure_bucket()
    assert not service_store.exists("runs/r2/inputs/a.png")


def test_the_right_key_with_a_wrong_secret_is_refused(s3_server, service_store):
    secret = s3_server.service.secret_key
    wrong = dataclasses.replace(s3_server.service, secret_key=secret[:-1] + ("y" if secret.endswith("x") else "x"))
    assert wrong.secret_key != secret and len(wrong.secret_key) == len(secret)  # wrong every time, not 63 in 64
    store = ObjectStore(dataclasses.replace(settings_for(s3_server, wrong), bucket=service_store.bucket))
    service_store.put_bytes("runs/r3/inputs/a.png", b"a")
    before = attempts("get")
    with pytest.raises(ObjectStoreRefused, match=r"\(SignatureDoesNotMatch\): the secret key does not match the "
                                                 r"access key; check MFSCORE_S3_SECRET_KEY$") as refused:
        store.get_bytes("runs/r3/inputs/a.png", max_bytes=10)
    assert attempts("get") - before == 1
    assert wrong.secret_key not in str(refused.value) and s3_server.service.secret_key not in str(refused.value)
    with pytest.raises(ObjectStoreRefused, match="SignatureDoesNotMatch"):
        store.put_bytes("runs/r3/inputs/b.png", b"b")
    assert not service_store.exists("runs/r3/inputs/b.png")


def test_without_credentials_nothing_is_sent_and_the_variables_are_named(s3_server):
    with pytest.raises(OptionError, match=r"^no S3 credentials for http://127\.0\.0\.1:\d+: set MFSCORE_S3_ACCESS_KEY "
                                          r"and MFSCORE_S3_SECRET_KEY$"):
        ObjectStore(Settings(s3_endpoint=s3_server.url))
    with pytest.raises(OptionError, match=r": set MFSCORE_S3_SECRET_KEY$"):
        ObjectStore(Settings.from_env({"MFSCORE_S3_ENDPOINT": s3_server.url, "MFSCORE_S3_ACCESS_KEY": "AKIAEXAMPLE"}))


def test_a_service_without_credentials_fails_at_start_in_one_sentence(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MFSCORE_")}
    env.update(MFSCORE_GRPC_PORT="0", MFSCORE_METRICS_PORT="0", MFSCORE_WORK_DIR=str(tmp_path / "work"),
               MFSCORE_S3_ENDPOINT="http://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-m", "mfscore", "serve", "mask-scorer"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "mfscore: error: no S3 credentials for http://127.0.0.1:9: set MFSCORE_S3_ACCESS_KEY and MFSCORE_S3_SECRET_KEY")


def port_of(server, flag: str) -> int:
    return int(next(arg for arg in server.popen.args if arg.startswith(f"-{flag}=")).split("=", 1)[1])


def test_the_stores_own_ports_are_closed_to_anyone_without_the_key(s3_server, service_store):
    service_store.put_bytes("runs/r5/inputs/a.png", b"secret bytes")
    filer = f"http://127.0.0.1:{port_of(s3_server, 'filer.port')}"
    bucket = service_store.bucket
    for method, path, body in [("GET", f"/buckets/{bucket}/runs/r5/inputs/a.png", None), ("GET", "/buckets/", None),
                               ("PUT", f"/buckets/{bucket}/runs/r5/inputs/a.png", b"replaced"),
                               ("DELETE", f"/buckets/{bucket}/runs/r5/inputs/a.png", None)]:
        with pytest.raises(urllib.error.HTTPError) as refused:
            DIRECT.open(urllib.request.Request(filer + path, data=body, method=method), timeout=5)
        assert refused.value.code == 401, (method, path)
        assert b"secret bytes" not in refused.value.read()
    for flag in ("master.port.grpc", "volume.port.grpc", "filer.port.grpc", "s3.port.grpc"):
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # no client certificate to present
        with socket.create_connection(("127.0.0.1", port_of(s3_server, flag)), timeout=5) as sock:
            with pytest.raises((ssl.SSLError, ConnectionError)):
                with context.wrap_socket(sock) as tls:
                    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                    assert tls.recv(1)  # a TLS 1.3 server refuses the missing certificate after the handshake
    assert service_store.get_bytes("runs/r5/inputs/a.png", max_bytes=100) == b"secret bytes"
    made_up = dataclasses.replace(s3_server.service, access_key="AKIA" + secrets.token_hex(8).upper())
    with pytest.raises(ObjectStoreRefused, match="InvalidAccessKeyId"):
        ObjectStore(settings_for(s3_server, made_up)).put_bytes("runs/r5/a", b"a")


def test_an_unsigned_request_is_refused_as_access_denied_not_as_an_outage(s3_server, service_store):
    bucket = service_store.bucket
    for method, path in [("GET", f"/{bucket}?list-type=2"), ("PUT", f"/{bucket}/runs/r6/a")]:
        request = urllib.request.Request(s3_server.url + path, data=b"a" if method == "PUT" else None, method=method)
        with pytest.raises(urllib.error.HTTPError) as refused:
            DIRECT.open(request, timeout=5)
        assert refused.value.code == 403
        assert b"<Code>AccessDenied</Code>" in refused.value.read()
    assert not service_store.exists("runs/r6/a")


def test_each_server_generates_its_own_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative data directory, as 'local-cluster up --cluster out/c.json' gives
    keys = []
    for n in range(2):
        with start_s3_server(data_dir=Path(f"stores/{n}")) as server:
            assert (tmp_path / "stores" / str(n) / "s3.json").is_file() and server.data_dir.is_absolute()
            keys.append(server)
            assert server.service.secret_key not in repr(server.service)
    (a, b) = keys
    made = {a.service.access_key, a.service.secret_key, b.service.access_key, b.service.secret_key}
    assert len(made) == 4 and not made & OLD_FIXED
    assert all(len(server.service.secret_key) >= 40 for server in keys)


def test_the_cluster_file_holds_no_s3_key_and_no_log_holds_a_secret(local_cluster):
    path, config = local_cluster
    written = ClusterConfig.read(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    service = json.loads((Path(config.state_dir) / "secrets" / "s3-service.json").read_text())
    assert stat.S_IMODE(os.stat(Path(config.state_dir) / "secrets" / "s3-service.json").st_mode) == 0o600
    assert not {service["access_key"], service["secret_key"]} & OLD_FIXED
    assert not {"s3_access_key", "s3_secret_key"} & set(json.loads(path.read_text()))  # clients upload via the aggregator
    with pytest.raises(OptionError, match="no S3 credentials"):
        ObjectStore(written.settings())

    logs = sorted((Path(config.state_dir) / "logs").iterdir())
    assert {p.name.split("-")[0] for p in logs} >= {"seaweedfs", "validator", "aggregator", "mask", "provenance"}
    for log in logs:
        text = log.read_text(errors="replace")
        assert service["secret_key"] not in text, log
