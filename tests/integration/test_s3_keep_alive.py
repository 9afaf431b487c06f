"""The local S3 server (moto, services/local/s3_server.py) keeps connections alive between requests, as S3 does, and
what a response leaves unread of its request's body never becomes the next request: the same access checks answer
every request on a connection."""

from __future__ import annotations

import hashlib
import http.client
import socket
import time
import uuid
from urllib.parse import urlsplit

import pytest
from minio import time as minio_time
from minio.credentials import Credentials
from minio.signer import sign_v4_s3

from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.settings import Settings
from mfscore.services.local.s3_server import DRAIN_BYTES

pytestmark = pytest.mark.integration


@pytest.fixture
def store(s3_server) -> ObjectStore:
    store = ObjectStore(Settings(s3_endpoint=s3_server.url, s3_access_key=s3_server.service.access_key,
                                 s3_secret_key=s3_server.service.secret_key, bucket=f"test-{uuid.uuid4().hex[:16]}"))
    store.ensure_bucket()
    return store


def connection(s3_server) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", s3_server.port, timeout=10)


def ask(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None, **headers):
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response, response.read()


def signed(s3_server, method: str, path: str, body: bytes = b"") -> dict[str, str]:
    """The headers of a request signed (SigV4) with the service's key, as the ObjectStore's SDK signs it."""
    date = minio_time.utcnow()
    digest = hashlib.sha256(body).hexdigest()
    headers = {"Host": s3_server.endpoint, "x-amz-content-sha256": digest, "x-amz-date": minio_time.to_amz_date(date)}
    if body:
        headers["Content-Length"] = str(len(body))
    credentials = Credentials(s3_server.service.access_key, s3_server.service.secret_key)
    return sign_v4_s3(method=method, url=urlsplit(s3_server.url + path), region="us-east-1", headers=headers,
                      credentials=credentials, content_sha256=digest, date=date)


def test_two_signed_puts_and_a_get_go_over_one_connection(store, s3_server):
    conn = connection(s3_server)
    try:
        for name, body in (("a", b"a" * 100_000), ("b", b"b" * 100_000)):
            path = f"/{store.bucket}/objects/{name}"
            response, _ = ask(conn, "PUT", path, body, **signed(s3_server, "PUT", path, body))
            assert response.status == 200 and not response.will_close
            if name == "a":
                sock = conn.sock
        path = f"/{store.bucket}/objects/a"
        response, body = ask(conn, "GET", path, **signed(s3_server, "GET", path))
        assert response.status == 200 and body == b"a" * 100_000
        assert conn.sock is sock  # one TCP connection for the three requests
    finally:
        conn.close()
    assert store.get_bytes("objects/b", max_bytes=100_000) == b"b" * 100_000


def test_an_unsigned_put_is_refused_and_its_unread_body_does_not_become_the_next_request(s3_server, store):
    conn = connection(s3_server)
    try:
        smuggled = b"GET /moto-api/data.json HTTP/1.1\r\n\r\n" * 2000  # would be requests, were it not read past
        response, body = ask(conn, "PUT", f"/{store.bucket}/objects/u", smuggled)
        assert response.status == 403 and b"<Code>AccessDenied</Code>" in body
        assert not response.will_close
        sock = conn.sock
        response, body = ask(conn, "GET", f"/{store.bucket}?list-type=2")
        assert response.status == 403 and b"<Code>AccessDenied</Code>" in body  # its own answer, on the same socket
        assert conn.sock is sock
        response, body = ask(conn, "GET", "/moto-api/data.json")
        assert response.status == 403 and b"control API is disabled" in body
    finally:
        conn.close()
    assert not store.exists("objects/u")


def test_a_body_too_large_to_read_past_closes_the_connection_after_its_answer(s3_server, store):
    conn = connection(s3_server)
    try:
        conn.putrequest("PUT", f"/{store.bucket}/objects/big")
        conn.putheader("Content-Length", str(DRAIN_BYTES + 2))
        conn.endheaders(b"x" * 1000)  # the rest never comes: the server answers and closes, reading no more
        response = conn.getresponse()
        assert response.status == 403 and response.will_close
        response.read()
    finally:
        conn.close()


def test_a_client_saying_close_and_a_request_without_a_usable_length_are_answered_then_closed(s3_server):
    conn = connection(s3_server)
    try:
        response, _ = ask(conn, "GET", "/", Connection="close")
        assert response.status == 403 and response.will_close
    finally:
        conn.close()
    with socket.create_connection(("127.0.0.1", s3_server.port), timeout=10) as sock:
        sock.sendall(b"PUT /test-x/objects/y HTTP/1.1\r\nHost: s3\r\nContent-Length: 12abc\r\n\r\n"
                     b"GET / HTTP/1.1\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):  # the server closes after one answer: the rest is not read as a request
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 403 ") and answer.count(b"HTTP/1.1 ") == 1
    assert b"\r\nConnection: close\r\n" in answer


def test_a_small_answer_on_a_kept_connection_is_not_held_back(store, s3_server):
    """Headers, then a small body on a connection kept open: without TCP_NODELAY the body waits for the client's
    delayed ACK (40 ms on Linux) once the connection is past its first few segments; the median answer shows it."""
    path = f"/{store.bucket}/objects/small"
    store.put_bytes("objects/small", b"s" * 3000)
    conn = connection(s3_server)
    try:
        times = []
        for _ in range(40):
            started = time.perf_counter()
            response, body = ask(conn, "GET", path, **signed(s3_server, "GET", path))
            times.append(time.perf_counter() - started)
            assert response.status == 200 and body == b"s" * 3000 and not response.will_close
    finally:
        conn.close()
    assert sorted(times)[len(times) // 2] < 0.03, times
