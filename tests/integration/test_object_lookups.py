"""Which declared files a namespace holds (``Objects.held``), listed or asked object by object, against a real S3
server (SeaweedFS) through minio: both ways answer alike, and neither sees another namespace's objects."""

from __future__ import annotations

import hashlib

import pytest

from mfscore.services.aggregator.objects import Objects
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import object_key

pytestmark = pytest.mark.integration


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def objects(cluster_settings) -> Objects:
    store = ObjectStore(cluster_settings)
    store.ensure_bucket()
    return Objects(store, None, None)


def test_listing_and_asking_one_by_one_agree(objects):
    contents = [f"file {i}".encode() for i in range(6)]
    for data in contents[:4]:
        objects.store.put_bytes(object_key("client/alice", digest(data)), data)
    objects.store.put_bytes(object_key("client/alice2", digest(contents[4])), contents[4])  # a longer name
    wanted = {digest(data): len(data) for data in contents}
    wanted[digest(contents[3])] += 1  # held, but not with the size declared

    expected = {digest(data) for data in contents[:3]}
    assert objects.held_one_by_one("client/alice", wanted) == expected
    assert objects.held("client/alice", wanted) == expected  # 4 objects, 6 wanted: listed
    assert objects.held("client/alice", {digest(contents[0]): len(contents[0])}) == {digest(contents[0])}  # asked
    assert objects.held("client/alice2", wanted) == {digest(contents[4])}
    assert objects.held("client/bob", wanted) == set()
    assert objects.held("client/alice", {}) == set()


def test_a_listing_stops_past_its_limit(objects):
    space = "client/carol"
    for i in range(3):
        data = f"object {i}".encode()
        objects.store.put_bytes(object_key(space, digest(data)), data)
    assert objects.store.sizes_under(f"objects/{space}/", limit=3) is not None
    assert objects.store.sizes_under(f"objects/{space}/", limit=2) is None
    assert len(objects.store.sizes_under(f"objects/{space}/", limit=3)) == 3


def test_an_object_found_lacking_is_written_without_asking_once(objects):
    key = object_key("client/dave", digest(b"abc"))
    objects.lacking("run1", [key])
    assert not objects.take_lacking("run2", key)
    assert objects.take_lacking("run1", key)
    assert not objects.take_lacking("run1", key)  # a stream sent again asks S3
