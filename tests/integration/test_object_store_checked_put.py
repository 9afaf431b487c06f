"""``ObjectStore.put_checked`` (the aggregator's store of an uploaded file held in memory, whose SHA-256 it checked)
against the real local S3 server (moto): one signed PUT on the thread's own kept connection, a connection the server
dropped replaced, and anything else answered as the SDK's path answers it."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import threading

import pytest

from integration.faults import FaultyProxy
from mfscore.services.common.metrics import REGISTRIES
from mfscore.services.common.object_store import ObjectStore, ObjectStoreRefused, ObjectStoreUnavailable

pytestmark = pytest.mark.integration


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put_attempts() -> float:
    return REGISTRIES["scorer"].get_sample_value("mfscore_s3_request_duration_seconds_count",
                                                 {"operation": "put"}) or 0.0


def puts_logged(s3_server, bucket: str, key: str) -> int:
    """PUT requests of ``key`` in the S3 server's log, whatever their answer."""
    return len(re.findall(rf'"(?:\x1b\[[\d;]*m)?PUT /{re.escape(bucket)}/{re.escape(key)} HTTP/',
                          s3_server.log_path.read_text(errors="replace")))


@pytest.fixture
def store(cluster_settings) -> ObjectStore:
    store = ObjectStore(cluster_settings)
    store.ensure_bucket()
    return store


def test_a_checked_put_is_one_request_on_one_kept_connection(store, s3_server):
    data = [os.urandom(100_000), b"", b"a table\n" * 10]
    keys = [f"objects/client/alice/{digest(d)}" for d in data]
    before = put_attempts()
    for key, d in zip(keys, data):
        store.put_checked(key, d, digest(d))
        if key == keys[0]:
            sock = store._direct._local.conn.sock
    assert store._direct._local.conn.sock is sock  # the thread's connection, kept for the three
    assert put_attempts() - before == 3
    for key, d in zip(keys, data):
        assert store.get_bytes(key, max_bytes=200_000) == d
        assert puts_logged(s3_server, store.bucket, key) == 1  # not sent again through the SDK


def test_each_thread_has_its_own_connection(store):
    data = [os.urandom(1000 + i) for i in range(8)]
    sockets = {}

    def put(d: bytes) -> None:
        store.put_checked(f"objects/client/bob/{digest(d)}", d, digest(d))
        sockets[threading.get_ident()] = store._direct._local.conn.sock

    threads = [threading.Thread(target=put, args=(d,)) for d in data]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(map(id, sockets.values()))) == len(sockets) == len(data)
    for d in data:
        assert store.get_bytes(f"objects/client/bob/{digest(d)}", max_bytes=2000) == d


def test_a_connection_the_server_dropped_is_replaced_before_the_put(store, cluster_settings, s3_server):
    proxy = FaultyProxy(("127.0.0.1", s3_server.port))
    try:
        direct = ObjectStore(dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint))
        first, second = b"first" * 100, b"second" * 100
        direct.put_checked(f"objects/client/carol/{digest(first)}", first, digest(first))
        proxy.refuse()  # cuts every connection through it, as a server closing idle ones does
        proxy.accept()
        key = f"objects/client/carol/{digest(second)}"
        direct.put_checked(key, second, digest(second))
        assert puts_logged(s3_server, store.bucket, key) == 1
        assert store.get_bytes(key, max_bytes=1000) == second
    finally:
        proxy.close()


def test_a_refused_key_is_refused_once_in_the_sdks_sentence(store, cluster_settings, s3_server):
    made_up = dataclasses.replace(cluster_settings, s3_access_key="AKIA" + secrets.token_hex(8).upper(),
                                  s3_secret_key=secrets.token_urlsafe(30))
    data = b"refused"
    key = f"objects/client/dave/{digest(data)}"
    before = put_attempts()
    with pytest.raises(ObjectStoreRefused) as refused:
        ObjectStore(made_up).put_checked(key, data, digest(data))
    assert put_attempts() - before == 1  # one attempt: not retried as a transient failure
    assert str(refused.value) == (
        f"S3 at {s3_server.url} refused put of {key!r} in bucket {store.bucket!r} to the access key "
        f"{made_up.s3_access_key!r} (InvalidAccessKeyId): the server knows no such access key; check "
        "MFSCORE_S3_ACCESS_KEY")
    assert not store.exists(key)


def test_a_key_to_escape_goes_through_the_sdk_and_reads_back(store, s3_server):
    data = b"named oddly"
    for key in ("objects/client/eve/with space", "objects/client/eve/ü"):
        assert not store._direct.usable(store.bucket, key)
        store.put_checked(key, data, digest(data))
        assert store.get_bytes(key, max_bytes=100) == data
    for key in ("objects/client/eve/../eve/x", "objects//x", "/objects/x", "objects/./x"):
        assert not store._direct.usable(store.bucket, key)  # a path a server might resolve to another key
    assert store._direct.usable(store.bucket, f"objects/client/eve/{digest(data)}")


def test_an_unreachable_server_fails_after_the_attempts(cluster_settings):
    from mfscore.services.local.servers import free_port

    dead = ObjectStore(dataclasses.replace(cluster_settings, s3_endpoint=f"127.0.0.1:{free_port()}"), attempts=2,
                       base_delay=0.01, connect_timeout=1.0)
    with pytest.raises(ObjectStoreUnavailable, match="failed put of 'objects/client/x/k' 2 times"):
        dead.put_checked("objects/client/x/k", b"k", digest(b"k"))
