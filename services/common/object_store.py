"""One bucket of S3-compatible object storage (MinIO in production), read with the ``minio`` SDK.

Keys are untrusted: downloads are confined to the target directory and reads are size-limited
before a byte is read. Transient failures (connection errors, S3 5xx, SlowDown) are retried here
with the ``S3`` backoff of services/common/retry.py; the SDK's own retries are switched off, so a request is
retried by this layer alone.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO, TypeVar

import certifi
import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import InvalidResponseError, S3Error, ServerError

from mfscore.errors import MfscoreError
from mfscore.services.common.metrics import S3_BYTES, S3_ERRORS, S3_REQUEST_DURATION
from mfscore.services.common.retry import S3, Backoff, one_line
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import Internal, Unavailable

T = TypeVar("T")
PAYLOAD_SHA256 = "x-amz-content-sha256"
CHUNK_BYTES = 1 << 20
PART_BYTES = 8 << 20  # a multipart upload's part: what one upload holds in memory
TRANSIENT_S3_CODES = frozenset({"SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "OperationAborted"})
MISSING_S3_CODES = frozenset({"NoSuchKey", "NoSuchObject", "NoSuchVersion"})
REFUSED_S3_CODES = {  # the request's credentials or their permissions; what to check, by code
    "InvalidAccessKeyId": "the server knows no such access key; check MFSCORE_S3_ACCESS_KEY",
    "SignatureDoesNotMatch": "the secret key does not match the access key; check MFSCORE_S3_SECRET_KEY",
    "AccessDenied": "the key may not do this, or MFSCORE_S3_ACCESS_KEY or MFSCORE_S3_SECRET_KEY is wrong",
    "InvalidToken": "the session token is not valid",
    "ExpiredToken": "the credentials have expired",
    "AllAccessDisabled": "all access to this resource is disabled",
}


class ObjectStoreError(Internal):
    """An S3 request failed for a reason that retrying will not fix."""


class ObjectMissing(ObjectStoreError):
    """The object does not exist."""

    def __init__(self, key: str, *, bucket: str | None = None):
        self.key = key
        where = f" in bucket {bucket!r}" if bucket else ""
        super().__init__(f"object {key!r} does not exist{where}")


class ObjectTooLarge(ObjectStoreError):
    """The object is larger than the caller allows; nothing was read."""

    def __init__(self, key: str, size: int | None, max_bytes: int):
        self.key = key
        self.size = size
        self.max_bytes = max_bytes
        what = f"{size} bytes" if size is not None else "larger than stated"
        super().__init__(f"object {key!r} is {what}, over the limit of {max_bytes} bytes")


class UnsafePath(ObjectStoreError):
    """A key or a local file would land outside its directory or prefix."""


class ObjectStoreUnavailable(Unavailable, ObjectStoreError):
    """The S3 server kept failing with transient errors until the attempts ran out."""


class ObjectStoreRefused(ObjectStoreError):
    """The S3 server refused a request for its credentials or their permissions; retrying will not help."""


class _Minio(Minio):
    """The SDK's client, except that a request whose headers carry its payload's SHA-256 (``PAYLOAD_SHA256``, which
    the caller checked against these very bytes) is signed with that digest as given. The SDK would hash the payload
    again over HTTP, or compute its MD5 over HTTPS: 0.2 ms of CPU of a 420 kB PUT's 0.9 ms. An S3 server that checks
    payloads (S3, MinIO) refuses a body that does not match the digest; SeaweedFS does not check it."""

    def _build_headers(self, host, headers=None, body=None, creds=None):
        given = (headers or {}).get(PAYLOAD_SHA256)
        if given is None or creds is None:
            return super()._build_headers(host, headers, body, creds)
        others = {name: value for name, value in headers.items() if name != PAYLOAD_SHA256}
        built, date = super()._build_headers(host, others, None, creds)  # no body: nothing hashed
        built[PAYLOAD_SHA256] = given
        if body:
            built["Content-Length"] = str(len(body))
        return built, date


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, S3Error):
        status = getattr(exc.response, "status", 0) or 0
        return exc.code in TRANSIENT_S3_CODES or status >= 500
    if isinstance(exc, ServerError):
        return exc.status_code >= 500 or exc.status_code == 429
    if isinstance(exc, InvalidResponseError):
        status = getattr(exc, "_code", 0) or 0
        return status >= 500 or status == 429
    return isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))


def _folder(prefix: str) -> str:
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


def _join_key(prefix: str, relative: str) -> str:
    return _folder(prefix) + relative


class ObjectStore:
    """A bucket, with bounded reads, confined downloads and retried requests.

    ``attempts`` requests at most per operation, sleeping ``base_delay * 2**n`` (capped at
    ``max_delay``; ``retry.S3`` by default) between them.
    """

    def __init__(
        self, settings: Settings, *, attempts: int = 4, base_delay: float = S3.first, max_delay: float = S3.most,
        connect_timeout: float = 5.0, read_timeout: float = 60.0, pool_size: int = 16,
    ):
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        settings.require_s3_credentials()
        self.bucket = settings.bucket
        self.access_key = settings.s3_access_key
        self.endpoint = settings.s3_endpoint
        self.attempts = attempts
        self.backoff = Backoff(base_delay, max_delay)
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            maxsize=pool_size,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where(),
        )
        self._client = _Minio(
            settings.s3_host,
            access_key=settings.s3_access_key,
            secret_key=settings.s3_secret_key,
            secure=settings.s3_secure,
            region=settings.s3_region,
            http_client=http,
        )

    def _call(self, operation: str, key: str, request: Callable[[], T]) -> T:
        for attempt in range(1, self.attempts + 1):
            started = time.perf_counter()
            try:
                return request()
            except S3Error as exc:
                if exc.code in MISSING_S3_CODES:
                    raise ObjectMissing(key, bucket=self.bucket) from None
                S3_ERRORS.labels(operation).inc()
                if exc.code in REFUSED_S3_CODES:
                    raise ObjectStoreRefused(
                        f"S3 at {self.endpoint} refused {operation} of {key!r} in bucket {self.bucket!r} to the "
                        f"access key {self.access_key!r} ({exc.code}): {REFUSED_S3_CODES[exc.code]}"
                    ) from None
                if not _is_transient(exc):
                    raise ObjectStoreError(
                        f"S3 {operation} of {key!r} in bucket {self.bucket!r} failed: {exc.code}: {exc.message}"
                    ) from exc
                failure = exc
            except MfscoreError:
                raise
            except Exception as exc:
                S3_ERRORS.labels(operation).inc()
                if not _is_transient(exc):
                    raise
                failure = exc
            finally:
                S3_REQUEST_DURATION.labels(operation).observe(time.perf_counter() - started)
            if attempt < self.attempts:
                time.sleep(self.backoff.delay(attempt - 1))
        raise ObjectStoreUnavailable(f"S3 at {self.endpoint} failed {operation} of {key!r} {self.attempts} times: "
                                     f"{one_line(failure, typed=False)}") from failure

    def ensure_bucket(self) -> None:
        """Create the bucket unless it exists."""
        if self._call("head_bucket", self.bucket, lambda: self._client.bucket_exists(self.bucket)):
            return
        try:
            self._call("make_bucket", self.bucket, lambda: self._client.make_bucket(self.bucket))
        except ObjectStoreError as exc:
            if not isinstance(exc.__cause__, S3Error) or exc.__cause__.code not in (
                "BucketAlreadyOwnedByYou", "BucketAlreadyExists",
            ):
                raise

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        self._call("put", key, lambda: self._client.put_object(self.bucket, key, io.BytesIO(data), len(data)))
        S3_BYTES.labels("written").inc(len(data))

    def put_file(self, key: str, path: str | os.PathLike) -> None:
        """Store the file at ``path`` under ``key``."""
        size = os.stat(path).st_size
        self._call("put", key, lambda: self._client.fput_object(self.bucket, key, os.fspath(path)))
        S3_BYTES.labels("written").inc(size)

    def put_stream(self, key: str, data: BinaryIO, length: int, *, sha256: str | None = None) -> None:
        """Store ``length`` bytes read from the seekable ``data`` under ``key``: one request up to a part's size,
        multipart beyond it, so memory stays at a part (PART_BYTES) whatever the length. ``sha256``, the bytes' digest
        as the caller checked it, signs the one request instead of a digest computed again (``_Minio``)."""
        given = {PAYLOAD_SHA256: sha256} if sha256 is not None and length <= PART_BYTES else None

        def put() -> None:
            data.seek(0)
            self._client.put_object(self.bucket, key, data, length, part_size=PART_BYTES, metadata=given)

        self._call("put", key, put)
        S3_BYTES.labels("written").inc(length)

    def chunks(self, key: str, *, max_bytes: int, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The object's bytes, ``chunk_bytes`` at a time; the GET is retried, a failure part-way raises
        ``ObjectStoreUnavailable``; more than ``max_bytes`` raises ``ObjectTooLarge``."""
        response = self._call("get", key, lambda: self._client.get_object(self.bucket, key))
        try:
            received = 0
            try:
                for chunk in response.stream(chunk_bytes):
                    received += len(chunk)
                    S3_BYTES.labels("read").inc(len(chunk))
                    if received > max_bytes:
                        raise ObjectTooLarge(key, None, max_bytes)
                    yield chunk
            except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as exc:
                raise ObjectStoreUnavailable(f"S3 at {self.endpoint} broke off reading {key!r}: "
                                             f"{one_line(exc, typed=False)}") from exc
        finally:
            response.close()
            response.release_conn()

    def upload_tree(self, local_dir: str | os.PathLike, prefix: str, *, threads: int = 8) -> int:
        """Upload every regular file under ``local_dir`` to ``prefix/<relative path>``; returns the count.

        Symbolic links that point outside ``local_dir`` are refused before anything is uploaded.
        """
        root = Path(local_dir).resolve(strict=True)
        files = _tree_files(root)
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda rel: self.put_file(_join_key(prefix, rel), root / rel), files))
        return len(files)

    def _stream(self, key: str, max_bytes: int, sink: Callable[[bytes], None]) -> None:
        """One GET; its Content-Length is checked against ``max_bytes`` before any byte of the body is read."""
        response = self._client.get_object(self.bucket, key)
        try:
            declared = response.headers.get("Content-Length")
            if declared is None or not declared.isdigit() or int(declared) > max_bytes:
                raise ObjectTooLarge(key, int(declared) if declared and declared.isdigit() else None, max_bytes)
            received = 0
            for chunk in response.stream(CHUNK_BYTES):
                received += len(chunk)
                S3_BYTES.labels("read").inc(len(chunk))
                if received > max_bytes:
                    raise ObjectTooLarge(key, None, max_bytes)
                sink(chunk)
        finally:
            response.close()
            response.release_conn()

    def get_bytes(self, key: str, *, max_bytes: int) -> bytes:
        """The object's bytes; ``ObjectTooLarge`` (before reading) when it exceeds ``max_bytes``."""

        def read() -> bytes:
            buffer = bytearray()
            self._stream(key, max_bytes, buffer.extend)
            return bytes(buffer)

        return self._call("get", key, read)

    def download_file(self, key: str, path: str | os.PathLike, *, max_bytes: int) -> None:
        """Stream the object to a temporary file beside ``path``, renamed to ``path`` once complete."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)

        def fetch() -> None:
            # A short name: the target's own may already be near the 255-byte limit on a file name.
            handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".download-", suffix=".part", delete=False)
            try:
                with handle:
                    self._stream(key, max_bytes, handle.write)
                os.replace(handle.name, target)
            except BaseException:
                os.unlink(handle.name)
                raise

        self._call("get", key, fetch)

    def download_prefix(
        self, prefix: str, local_dir: str | os.PathLike, *, suffixes: tuple[str, ...] | None = None,
        max_bytes: int, threads: int = 8,
    ) -> list[str]:
        """Download the keys under ``prefix`` (a folder) into ``local_dir``, keeping the layout.

        ``suffixes`` (case-insensitive) keeps only matching keys. Every key is checked before any
        download: one with ``..``, ``.``, empty or absolute parts or a backslash raises ``UnsafePath``.
        Returns the local paths, in key order.
        """
        folder = _folder(prefix)
        wanted = tuple(s.lower() for s in suffixes) if suffixes else None
        relatives = [key[len(folder):] for key in self.list_keys(folder)]
        return self.download_keys(folder, [r for r in relatives if r and (not wanted or r.lower().endswith(wanted))],
                                  local_dir, max_bytes=max_bytes, threads=threads)

    def download_keys(self, prefix: str, relatives: list[str], local_dir: str | os.PathLike, *, max_bytes: int,
                      threads: int = 8) -> list[str]:
        """Download ``prefix + r`` for each ``r`` of ``relatives`` to ``local_dir/r``; every name is checked
        (``confined``) before any download. Returns the local paths, in the given order."""
        return self.download_objects({relative: _join_key(prefix, relative) for relative in relatives}, local_dir,
                                     max_bytes=max_bytes, threads=threads)

    def download_objects(self, keys: dict[str, str], local_dir: str | os.PathLike, *, max_bytes: int,
                         threads: int = 8) -> list[str]:
        """Download the object ``keys[r]`` to ``local_dir/r`` for each relative name ``r``; every name is checked
        (``confined``) before any download. Returns the local paths, in the given order."""
        root = Path(local_dir)
        root.mkdir(parents=True, exist_ok=True)
        root = root.resolve()
        plan = [(key, confined(root, relative)) for relative, key in keys.items()]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda item: self.download_file(item[0], item[1], max_bytes=max_bytes), plan))
        return [str(target) for _, target in plan]

    def list_keys(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        return self._call(
            "list", prefix,
            lambda: sorted(o.object_name for o in self._client.list_objects(self.bucket, prefix=prefix, recursive=True)),
        )

    def exists(self, key: str) -> bool:
        """Whether ``key`` exists."""
        return self.size_of(key) is not None

    def size_of(self, key: str) -> int | None:
        """The size of the object ``key``; None when there is none."""
        try:
            return self._call("stat", key, lambda: self._client.stat_object(self.bucket, key)).size
        except ObjectMissing:
            return None

    def list_objects(self, prefix: str) -> list[tuple[str, int, float]]:
        """(key, size, last modified as a Unix time) of every object whose key starts with ``prefix``, by key."""
        return self._call("list", prefix, lambda: sorted(
            (o.object_name, o.size or 0, o.last_modified.timestamp() if o.last_modified else 0.0)
            for o in self._client.list_objects(self.bucket, prefix=prefix, recursive=True)))

    def sizes_under(self, prefix: str, limit: int) -> dict[str, int] | None:
        """Every object whose key starts with ``prefix`` -> its size, listed, when there are at most ``limit`` of them;
        None when there are more (the listing stops there: it never reads more than ``limit`` + 1 keys)."""

        def listed() -> dict[str, int] | None:
            sizes: dict[str, int] = {}
            for found in self._client.list_objects(self.bucket, prefix=prefix, recursive=True):
                if len(sizes) == limit:
                    return None
                sizes[found.object_name] = found.size or 0
            return sizes

        return self._call("list", prefix, listed)

    def delete_keys(self, keys: list[str]) -> int:
        """Delete the objects ``keys`` (a missing one is no error); how many were asked for."""

        def remove() -> None:
            failed = list(self._client.remove_objects(self.bucket, [DeleteObject(key) for key in keys]))
            if failed:
                raise ObjectStoreError(f"S3 could not delete {len(failed)} object(s) in bucket {self.bucket!r}, the "
                                       f"first {failed[0].name!r}: {failed[0].code}")

        if keys:
            self._call("delete", keys[0], remove)
        return len(keys)

    def folders(self, prefix: str) -> list[str]:
        """The folders directly under the folder ``prefix`` (``runs/`` gives ``runs/<id>/``, ...), sorted."""
        folder = _folder(prefix)
        return self._call("list", folder, lambda: sorted(
            o.object_name for o in self._client.list_objects(self.bucket, prefix=folder) if o.is_dir))

    def delete_prefix(self, prefix: str, *, written_before: float | None = None) -> int:
        """Delete every object under the folder ``prefix``; returns how many. With ``written_before`` (a Unix
        time), delete nothing unless every object is older: an upload under way is left alone."""
        folder = _folder(prefix)
        if not folder.strip("/"):
            raise UnsafePath("refusing to delete every object of the bucket")
        objects = self._call("list", folder, lambda: list(
            self._client.list_objects(self.bucket, prefix=folder, recursive=True)))
        if written_before is not None and any(
                o.last_modified is None or o.last_modified.timestamp() >= written_before for o in objects):
            return 0
        keys = [o.object_name for o in objects]

        def remove() -> None:
            failed = list(self._client.remove_objects(self.bucket, [DeleteObject(key) for key in keys]))
            if failed:
                raise ObjectStoreError(f"S3 could not delete {len(failed)} object(s) under {folder!r} in bucket "
                                       f"{self.bucket!r}, the first {failed[0].name!r}: {failed[0].code}")

        if keys:
            self._call("delete", folder, remove)
        return len(keys)


def confined(root: str | os.PathLike, relative: str) -> Path:
    """``root/relative`` for a '/'-separated key name; one with ``..``, ``.``, empty parts, a backslash or a
    NUL, or that resolves outside ``root``, raises ``UnsafePath``."""
    root = Path(root).resolve()
    parts = relative.split("/")
    if "\\" in relative or "\x00" in relative or any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(f"object key {relative!r} has an empty, '.', '..' or backslash part and cannot be "
                         "downloaded safely")
    target = root.joinpath(*parts)
    if not target.resolve().is_relative_to(root):
        raise UnsafePath(f"object key {relative!r} would be written outside {str(root)!r}")
    return target


def _tree_files(root: Path) -> list[str]:
    """Relative '/'-separated paths of the regular files under ``root``; refuses escaping links."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                raise UnsafePath(f"{path} is a symbolic link to {path.resolve()}, outside {root}")
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file():
                files.append(path.relative_to(root).as_posix())
    return sorted(files)
