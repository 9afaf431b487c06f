"""Receiving files from an UploadInputs or UploadObjects stream: each checked against its declaration, then stored.

A client declares a file (name, size, SHA-256) and sends its bytes in chunks; they are spooled (in memory up to
SPOOL_MEMORY_BYTES, on disk beyond) and hashed as they arrive, and the file is stored (as an object of the caller's,
``objects.Objects``) only once its size and digest match. A file that does not match, or breaks a limit, is refused
with one sentence naming it, and nothing of it is stored. So is a file whose name is a directory of another file's
in the stream (``sys/a`` and ``sys/a/b``), and one whose declared size is over what the caller may have under way
(``holding``, its quota). A stream read through ``idle_bounded`` ends (``UploadIdle``) once it sends nothing for
``idle_seconds``, the bytes of its current file dropped. What an UploadInputs stream stored is recorded in the run's
input manifest (``mfscore.services.common.input_manifest``), so the run's provenance knows every job file's SHA-256
without reading it (``uploaded_digests``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import re
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import BinaryIO

from mfscore.errors import MfscoreError
from mfscore.services.common import metrics
from mfscore.services.common import input_manifest
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import check_file_name
from mfscore.services.common.status_codes import DeadlineExceeded, InvalidArgument
from mfscore.services.wire import runs_pb2

SPOOL_MEMORY_BYTES = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")

Store = Callable[[runs_pb2.DeclaredFile, BinaryIO], Awaitable[None]]


class UploadRefused(InvalidArgument):
    """An uploaded file is not as declared, or breaks a limit; nothing of it was stored."""


class UploadIdle(DeadlineExceeded, UploadRefused):
    """An upload stream sent nothing for too long; the file it was sending was dropped."""


class Names:
    """The file names of one run, refusing a name of which one is a directory of another (``sys/a`` and
    ``sys/a/b``): both cannot be files of one run."""

    def __init__(self, names: Iterable[str] = ()):
        self.files: set[str] = set()
        self.dirs: dict[str, str] = {}  # a directory -> a file under it
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        parents = list(_parents(name))
        for parent in parents:
            if parent in self.files:
                raise _conflict(parent, name)
        if name in self.dirs:
            raise _conflict(name, self.dirs[name])
        self.files.add(name)
        for parent in parents:
            self.dirs.setdefault(parent, name)


def _parents(name: str):
    end = name.find("/")
    while end != -1:
        yield name[:end]
        end = name.find("/", end + 1)


def _conflict(file: str, under: str) -> UploadRefused:
    return UploadRefused(f"{file} and {under} are both named, so {file} would be a file and a directory; "
                         "rename one")


async def idle_bounded(messages: AsyncIterator, idle_seconds: float) -> AsyncIterator:
    """``messages`` as they come, ``UploadIdle`` once none has come for ``idle_seconds``."""
    iterator = aiter(messages)
    while True:
        try:
            async with asyncio.timeout(idle_seconds):
                message = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise UploadIdle(f"nothing arrived for {idle_seconds:g} s (MFSCORE_UPLOAD_IDLE_SECONDS), so the upload "
                             "was ended; the file it was sending was dropped") from None
        yield message


def check_declared(declared: runs_pb2.DeclaredFile, max_bytes: int, what: str = "input file name") -> None:
    check_file_name(declared.name, what)
    if not _SHA256.fullmatch(declared.sha256):
        raise UploadRefused(f"the SHA-256 declared for {declared.name} is not 64 lowercase hexadecimal digits")
    if not 0 <= declared.size <= max_bytes:
        raise UploadRefused(f"{declared.name} is declared as {declared.size} bytes; a file may have 0 to {max_bytes} "
                            "(MFSCORE_MAX_UPLOAD_BYTES)")


class _Spool:
    """One declared file's bytes as they arrive: counted, hashed and kept, in memory when it is declared as at most
    SPOOL_MEMORY_BYTES (its chunks as they came, joined only if there are several), on disk beyond."""

    def __init__(self, declared: runs_pb2.DeclaredFile, spool_dir: str):
        self.declared = declared
        self.chunks: list[bytes] = []
        self.file = tempfile.TemporaryFile(dir=spool_dir) if declared.size > SPOOL_MEMORY_BYTES else None
        self.received = 0
        self.digest = hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self.declared.size:
            raise UploadRefused(f"more bytes of {self.declared.name} arrived than the {self.declared.size} declared")
        self.digest.update(chunk)
        if self.file is None:
            self.chunks.append(chunk)
        else:
            self.file.write(chunk)

    def check(self) -> None:
        if self.received != self.declared.size:
            raise UploadRefused(f"{self.declared.name} was declared as {self.declared.size} bytes but "
                                f"{self.received} arrived")
        if self.digest.hexdigest() != self.declared.sha256:
            raise UploadRefused(f"the bytes of {self.declared.name} do not match the SHA-256 declared for it")

    def data(self) -> BinaryIO:
        """The bytes received, readable from the start."""
        if self.file is None:
            return io.BytesIO(self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks))
        self.file.seek(0)
        return self.file

    def close(self) -> None:
        self.chunks = []
        if self.file is not None:
            self.file.close()


def _unbounded(size: int) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext()


async def receive(messages: AsyncIterator, run_id: str, store: Store, *, max_bytes: int, spool_dir: str,
                  what: str = "input file name",
                  holding: Callable[[int], contextlib.AbstractContextManager] = _unbounded,
                  ) -> list[runs_pb2.DeclaredFile]:
    """Store every file of the stream (UploadInputsRequest messages, the first one naming ``run_id``, or
    UploadObjectsRequest messages, which name no run) with ``store(declared, data)`` once it is complete and as
    declared; the files stored, in order. ``UploadRefused`` stops at the first file that is not. Each file's
    declared size is held (``holding(size)``, which may refuse it) from its declaration until it is stored."""
    stored: list[runs_pb2.DeclaredFile] = []
    current: _Spool | None = None
    names = Names()
    held = contextlib.ExitStack()

    async def finish() -> None:
        current.check()
        await store(current.declared, current.data())
        metrics.UPLOADED_BYTES.inc(current.declared.size)
        stored.append(current.declared)
        current.close()
        held.close()

    try:
        async for message in messages:
            if getattr(message, "run_id", "") not in ("", run_id):
                raise UploadRefused(f"one upload carries files of one run, {run_id}, not also {message.run_id[:80]!r}")
            part = message.WhichOneof("part")
            if part == "file":
                if current is not None:
                    await finish()
                    current = None
                check_declared(message.file, max_bytes, what)
                names.add(message.file.name)
                held.enter_context(holding(message.file.size))
                current = _Spool(message.file, spool_dir)
            elif part == "chunk":
                if current is None:
                    raise UploadRefused("bytes arrived before any file was declared")
                current.write(message.chunk)
        if current is not None:
            await finish()
    except MfscoreError:
        metrics.UPLOADS_REFUSED.inc()
        raise
    finally:
        if current is not None:
            current.close()
        held.close()
    return stored


def uploaded_digests(store: ObjectStore, run_id: str) -> dict[str, str]:
    """Every file of the run's input manifest (its name in the run) -> the SHA-256 checked when it was declared or
    stored (blocking). The run's provenance names its job files by these, reading none of them again."""
    return input_manifest.digests(input_manifest.read(store, run_id))
