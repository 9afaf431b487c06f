"""A PUT signed with the SHA-256 its caller checked (``ObjectStore.put_stream(sha256=...)``) against real SeaweedFS:
the bytes stored are the bytes given, the SDK hashes none of them again, and what it cannot sign so (a multipart
upload, or no digest given) is hashed by the SDK as before."""

from __future__ import annotations

import hashlib
import io
import os

import minio.api
import pytest

from mfscore.services.common.object_store import PART_BYTES, ObjectStore

pytestmark = pytest.mark.integration


@pytest.fixture
def store(cluster_settings) -> ObjectStore:
    store = ObjectStore(cluster_settings)
    store.ensure_bucket()
    return store


@pytest.fixture
def hashed(monkeypatch) -> list[int]:
    """The length of every payload the SDK hashes for a request's signature."""
    lengths: list[int] = []
    sdk_hash = minio.api.sha256_hash

    def counting(data):
        lengths.append(len(data or b""))
        return sdk_hash(data)

    monkeypatch.setattr(minio.api, "sha256_hash", counting)
    return lengths


@pytest.mark.parametrize("size", [0, 108_000, PART_BYTES])
def test_a_put_signed_with_the_checked_digest_stores_the_bytes_and_hashes_none_again(store, hashed, size):
    data = os.urandom(size)
    store.put_stream("objects/client/a/x", io.BytesIO(data), size, sha256=hashlib.sha256(data).hexdigest())
    assert store.get_bytes("objects/client/a/x", max_bytes=size) == data
    assert size == 0 or size not in hashed


def test_without_a_digest_the_sdk_hashes_the_payload(store, hashed):
    data = os.urandom(5000)
    store.put_stream("objects/client/a/y", io.BytesIO(data), len(data))
    assert store.get_bytes("objects/client/a/y", max_bytes=len(data)) == data
    assert len(data) in hashed


def test_a_multipart_upload_is_signed_part_by_part_by_the_sdk(store, hashed):
    data = os.urandom(PART_BYTES + 1000)
    store.put_stream("objects/client/a/z", io.BytesIO(data), len(data), sha256=hashlib.sha256(data).hexdigest())
    assert hashlib.sha256(store.get_bytes("objects/client/a/z", max_bytes=len(data))).digest() == \
        hashlib.sha256(data).digest()
    assert {PART_BYTES, 1000} <= set(hashed)
