"""ObjectStore against a real S3 server (SeaweedFS) through minio; faults come from a TCP proxy in front of it."""

from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from mfscore.services.local.faulty_proxy import FaultyProxy
from integration.raw_s3 import put_raw
from mfscore.errors import OptionError
from mfscore.services.common.metrics import REGISTRIES
from mfscore.services.common.object_store import (
    ObjectMissing,
    ObjectStore,
    ObjectStoreUnavailable,
    ObjectTooLarge,
    UnsafePath,
)
from mfscore.services.local.servers import free_port
from mfscore.services.common.settings import Settings

pytestmark = pytest.mark.integration


def sample(name: str, **labels: str) -> float:
    return REGISTRIES["scorer"].get_sample_value(name, labels) or 0.0


def get_attempts() -> float:
    return sample("mfscore_s3_request_duration_seconds_count", operation="get")


@pytest.fixture
def store(cluster_settings) -> ObjectStore:
    store = ObjectStore(cluster_settings)
    store.ensure_bucket()
    return store


def write_tree(root, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


TREE = {
    "index.csv": b"TaskID|ProbeFileID\nmanipulation|p1\n",
    "masks/p1.png": bytes(range(256)) * 40,
    "masks/deep/p2 with space.png": os.urandom(70_000),
    "masks/deep/p2.json": b"{}",
}


def test_upload_tree_then_download_prefix_round_trips_bytes_and_layout(store, tmp_path):
    source = tmp_path / "source"
    write_tree(source, TREE)
    (source / "masks" / "alias.png").symlink_to(source / "masks" / "p1.png")

    assert store.upload_tree(source, "run-1/input", threads=4) == len(TREE) + 1
    assert store.list_keys("run-1/input/") == sorted(
        f"run-1/input/{relative}" for relative in [*TREE, "masks/alias.png"]
    )

    target = tmp_path / "target"
    written = store.download_prefix("run-1/input", target, max_bytes=1 << 20)
    assert sorted(written) == sorted(str(target / relative) for relative in [*TREE, "masks/alias.png"])
    for relative, data in TREE.items():
        assert (target / relative).read_bytes() == data
    assert (target / "masks" / "alias.png").read_bytes() == TREE["masks/p1.png"]

    pngs = store.download_prefix("run-1/input/", tmp_path / "pngs", suffixes=(".PNG",), max_bytes=1 << 20)
    assert sorted(os.path.relpath(p, tmp_path / "pngs") for p in pngs) == [
        "masks/alias.png", "masks/deep/p2 with space.png", "masks/p1.png",
    ]


def test_upload_tree_refuses_a_symlink_escaping_the_directory_and_uploads_nothing(store, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("not yours")
    source = tmp_path / "source"
    write_tree(source, {"a.png": b"a"})
    (source / "leak.txt").symlink_to(outside)

    with pytest.raises(UnsafePath, match="outside"):
        store.upload_tree(source, "run-2")
    assert store.list_keys("run-2") == []


def test_a_dotdot_key_is_refused_by_the_store_and_by_the_download(store, s3_server, cluster_settings, tmp_path):
    store.put_bytes("run-3/in/good.png", b"good")
    # minio refuses to write such a key, but another S3 client will try: PUT it over plain HTTP. AWS S3 keeps it
    # as it is; SeaweedFS refuses it (400 InvalidRequest), so a listing of ours never holds one.
    status, answer = put_raw(cluster_settings, "run-3/in/../../escaped.txt", b"evil")
    assert status == 400 and b"<Code>InvalidRequest</Code>" in answer
    assert store.list_keys("run-3/") == ["run-3/in/good.png"]

    # what a store that keeps such keys would list reaches the same check, before any download
    target = tmp_path / "deep" / "target"
    for hostile_name in ("../../escaped.txt", "a/../../escaped.txt", "./good.png"):
        with pytest.raises(UnsafePath, match=r"'\.\.'"):
            store.download_keys("run-3/in", ["good.png", hostile_name], target, max_bytes=100)
    assert list(target.iterdir()) == []
    assert not (tmp_path / "escaped.txt").exists()


def test_an_empty_key_part_is_refused_by_the_download_and_collapsed_by_the_store(store, tmp_path):
    # AWS S3 keeps "in//x" (an empty part, which would make the name absolute); SeaweedFS stores it as "in/x"
    store.put_bytes("run-4/in//tmp-escape.txt", b"x")
    assert store.list_keys("run-4/") == ["run-4/in/tmp-escape.txt"]
    assert store.get_bytes("run-4/in//tmp-escape.txt", max_bytes=10) == b"x"
    with pytest.raises(UnsafePath, match="empty"):
        store.download_keys("run-4/in/", ["/tmp-escape.txt"], tmp_path / "target", max_bytes=100)
    assert list((tmp_path / "target").iterdir()) == []


def test_too_large_objects_are_refused_before_a_byte_is_read(store, tmp_path):
    data = os.urandom(1000)
    store.put_bytes("big.bin", data)
    read_before = sample("mfscore_s3_bytes_total", direction="read")

    with pytest.raises(ObjectTooLarge, match="1000 bytes, over the limit of 999 bytes"):
        store.get_bytes("big.bin", max_bytes=999)
    with pytest.raises(ObjectTooLarge):
        store.download_file("big.bin", tmp_path / "big.bin", max_bytes=999)
    assert sample("mfscore_s3_bytes_total", direction="read") == read_before
    assert list(tmp_path.iterdir()) == []

    assert store.get_bytes("big.bin", max_bytes=1000) == data
    assert sample("mfscore_s3_bytes_total", direction="read") == read_before + 1000


def test_download_file_replaces_the_target_only_when_complete(store, tmp_path):
    store.put_bytes("mask.png", b"new contents")
    target = tmp_path / "out" / "mask.png"
    target.parent.mkdir()
    target.write_bytes(b"old")

    store.download_file("mask.png", target, max_bytes=100)
    assert target.read_bytes() == b"new contents"
    assert os.listdir(target.parent) == ["mask.png"]


def test_a_file_name_at_the_length_limit_downloads(store, tmp_path):
    """A mask named with 255 bytes scores embedded, so it must download too (its temporary name is short)."""
    name = "m" * 251 + ".png"
    store.put_bytes(f"sys/{name}", b"png bytes")
    store.download_file(f"sys/{name}", tmp_path / name, max_bytes=100)
    assert (tmp_path / name).read_bytes() == b"png bytes"
    assert os.listdir(tmp_path) == [name]


def test_a_missing_object_is_one_clear_error_and_not_retried(store, tmp_path):
    attempts_before = get_attempts()
    with pytest.raises(ObjectMissing) as raised:
        store.get_bytes("run-5/nope.png", max_bytes=10)
    assert get_attempts() == attempts_before + 1
    assert str(raised.value) == f"object 'run-5/nope.png' does not exist in bucket '{store.bucket}'"
    with pytest.raises(ObjectMissing):
        store.download_file("run-5/nope.png", tmp_path / "nope.png", max_bytes=10)
    assert not store.exists("run-5/nope.png")
    store.put_bytes("run-5/yes.png", b"y")
    assert store.exists("run-5/yes.png")


def test_an_unreachable_server_fails_after_the_configured_attempts(cluster_settings):
    dead = dataclasses.replace(cluster_settings, s3_endpoint=f"127.0.0.1:{free_port()}")
    store = ObjectStore(dead, attempts=3, base_delay=0.05, connect_timeout=1.0)
    attempts_before = get_attempts()
    started = time.monotonic()
    with pytest.raises(ObjectStoreUnavailable, match="failed get of 'k' 3 times"):
        store.get_bytes("k", max_bytes=10)
    elapsed = time.monotonic() - started
    assert get_attempts() == attempts_before + 3
    assert 0.15 <= elapsed < 5


@pytest.mark.parametrize("fault", ["reset", "slowdown"])
def test_transient_failures_are_retried_until_the_server_answers(store, cluster_settings, s3_server, fault):
    store.put_bytes("run-6/mask.png", b"\x89PNG payload")
    proxy = FaultyProxy(("127.0.0.1", s3_server.port), fault, faults=2)
    try:
        via_proxy = dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint)
        assert ObjectStore(via_proxy, attempts=3, base_delay=0.01).get_bytes("run-6/mask.png", max_bytes=100) == (
            b"\x89PNG payload"
        )
        assert proxy.connections >= 3
    finally:
        proxy.close()


@pytest.mark.parametrize("fault", ["reset", "slowdown"])
def test_transient_failures_beyond_the_attempts_raise_unavailable(store, cluster_settings, s3_server, fault):
    store.put_bytes("run-7/mask.png", b"data")
    proxy = FaultyProxy(("127.0.0.1", s3_server.port), fault, faults=2)
    try:
        via_proxy = dataclasses.replace(cluster_settings, s3_endpoint=proxy.endpoint)
        with pytest.raises(ObjectStoreUnavailable, match="2 times"):
            ObjectStore(via_proxy, attempts=2, base_delay=0.01).get_bytes("run-7/mask.png", max_bytes=100)
        assert proxy.connections == 2
    finally:
        proxy.close()


def test_settings_parse_the_endpoint_and_name_a_bad_integer():
    assert Settings.from_env({"MFSCORE_S3_ENDPOINT": "minio:9000"}).s3_endpoint == "http://minio:9000"
    assert not Settings.from_env({"MFSCORE_S3_ENDPOINT": "minio:9000"}).s3_secure
    secure = Settings.from_env({"MFSCORE_S3_ENDPOINT": "https://s3.example.org:443"})
    assert (secure.s3_secure, secure.s3_host) == (True, "s3.example.org:443")
    assert Settings.from_env({"MFSCORE_MAX_DELIVER": "7"}, max_deliver=2).max_deliver == 2
    assert Settings.from_env({"MFSCORE_ACK_WAIT": " 30 "}).ack_wait_seconds == 30
    with pytest.raises(OptionError, match=r"^MFSCORE_GRPC_PORT must be an integer, not 'fifty'$"):
        Settings.from_env({"MFSCORE_GRPC_PORT": "fifty"})
    with pytest.raises(OptionError, match="MFSCORE_MAX_DELIVER must be at least 1"):
        Settings.from_env({"MFSCORE_MAX_DELIVER": "0"})
    with pytest.raises(OptionError, match="MFSCORE_S3_ENDPOINT"):
        Settings.from_env({"MFSCORE_S3_ENDPOINT": "ftp://minio:9000"})


def test_a_listing_over_a_thousand_keys_is_whole_once_each_and_in_byte_order(store):
    # S3 pages a listing 1,000 keys at a time; SeaweedFS keeps keys as a tree of folders, so its own order is a
    # walk of that tree ('order/a/b' before 'order/a-b'), not S3's byte order ('-' < '.' < '/')
    names = [f"order/{i:04d}" for i in range(1_000)] + ["order/a/b", "order/a-b", "order/a.b", "order/a0", "order/a/c"]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: store.put_bytes(key, key.encode()), names))
    assert store.list_keys("order/") == sorted(names)
    assert [key for key, _, _ in store.list_objects("order/a")] == ["order/a-b", "order/a.b", "order/a/b",
                                                                   "order/a/c", "order/a0"]
    sizes = store.sizes_under("order/", limit=len(names))
    assert sizes == {key: len(key) for key in names}
    assert store.sizes_under("order/", limit=len(names) - 1) is None
    assert store.folders("order/") == ["order/a/"]
    assert store.delete_prefix("order/") == len(names) and store.list_keys("order/") == []


def test_an_object_over_the_multipart_threshold_round_trips(store, tmp_path):
    # the SDK sends a file over 5 MiB as a multipart upload (parts of at least 5 MiB but the last)
    data = os.urandom(12 * (1 << 20) + 12345)
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    store.put_file("big/one.bin", source)
    assert store.size_of("big/one.bin") == len(data)
    store.download_file("big/one.bin", tmp_path / "back.bin", max_bytes=len(data))
    assert (tmp_path / "back.bin").read_bytes() == data
    assert b"".join(store.chunks("big/one.bin", max_bytes=len(data))) == data
