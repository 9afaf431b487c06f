"""A finished run's report in the object store: written with a manifest of digests, served only as written.

``store_report`` puts every report file under ``runs/<id>/reports/`` and a ``ReportManifest`` (each file's name,
size and SHA-256, and what the command prints) beside them, and returns the manifest's SHA-256, which the
aggregator records in the run's state (``state.seal_report``). ``stream_report`` serves the manifest first and
then each file in chunks, checking every byte against it: a file that was changed, replaced or removed in the
store ends the stream with ``ReportTampered`` (the caller answers DATA_LOSS). Memory stays at a chunk whatever
the size of the files. ``read_file`` reads one file whole the same way (the results, for GetResults).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from mfscore.run.local import RESULTS_FILE
from mfscore.run_record import file_sha256
from mfscore.services.common.object_store import ObjectMissing, ObjectStore, ObjectTooLarge
from mfscore.services.common.run_layout import BadName, check_file_name, manifest_key, reports_prefix
from mfscore.services.common.status_codes import DataLoss
from mfscore.services.wire import runs_pb2

CHUNK_BYTES = 512 << 10
MAX_MANIFEST_BYTES = 64 << 20


class ReportTampered(DataLoss):
    """A stored report file, or the manifest, is not what the aggregator wrote."""


def file_digest(path: Path) -> runs_pb2.DeclaredFile:
    """A file's size and SHA-256, read a block at a time."""
    return runs_pb2.DeclaredFile(size=path.stat().st_size, sha256=file_sha256(str(path)))


def store_report(store: ObjectStore, run_id: str, out_dir: str, stdout: list[str], exit_status: int) -> str:
    """Store every file under ``out_dir`` and the manifest naming them (blocking; whole again after an S3 outage);
    the manifest's SHA-256."""
    root = Path(out_dir)
    manifest = runs_pb2.ReportManifest(stdout=stdout, exit_status=exit_status)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        declared = file_digest(path)
        declared.name = check_file_name(name, "report file name")
        store.put_file(reports_prefix(run_id) + name, path)
        manifest.files.append(declared)
    content = manifest.SerializeToString()
    store.put_bytes(manifest_key(run_id), content)
    return hashlib.sha256(content).hexdigest()


async def read_manifest(store: ObjectStore, run_id: str, seal: str) -> runs_pb2.ReportManifest:
    """The stored manifest, checked against the recorded ``seal``."""
    try:
        content = await asyncio.to_thread(store.get_bytes, manifest_key(run_id), max_bytes=MAX_MANIFEST_BYTES)
    except (ObjectMissing, ObjectTooLarge) as error:
        raise ReportTampered(f"the report manifest of run {run_id} is not the one the aggregator wrote: "
                             f"{error.sentence()}") from None
    if hashlib.sha256(content).hexdigest() != seal:
        raise ReportTampered(f"the report manifest of run {run_id} does not match the digest recorded when it was "
                             "written")
    manifest = runs_pb2.ReportManifest.FromString(content)
    try:
        for declared in manifest.files:
            check_file_name(declared.name, "report file name")
    except BadName as error:
        raise ReportTampered(error.sentence()) from None
    return manifest


async def stream_file(store: ObjectStore, run_id: str, declared: runs_pb2.DeclaredFile) -> AsyncIterator[bytes]:
    """The bytes of one report file, in chunks; ``ReportTampered`` once they differ from ``declared``."""
    key = reports_prefix(run_id) + declared.name
    digest, size = hashlib.sha256(), 0
    try:
        chunks = await asyncio.to_thread(store.chunks, key, max_bytes=declared.size, chunk_bytes=CHUNK_BYTES)
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            digest.update(chunk)
            size += len(chunk)
            yield chunk
    except (ObjectMissing, ObjectTooLarge):
        size = -1
    if size != declared.size or digest.hexdigest() != declared.sha256:
        raise ReportTampered(f"the report file {declared.name} of run {run_id} does not match the digest recorded "
                             "when it was written")


def results_file(manifest: runs_pb2.ReportManifest) -> runs_pb2.DeclaredFile | None:
    """The run's results among its report files: ``<prefix>_results.json`` (``results.json`` for reports without a
    prefix) in the output directory itself; None if the report has none."""
    return next((declared for declared in manifest.files if "/" not in declared.name
                 and (declared.name == RESULTS_FILE or declared.name.endswith("_" + RESULTS_FILE))), None)


async def read_file(store: ObjectStore, run_id: str, declared: runs_pb2.DeclaredFile) -> bytes:
    """One report file's bytes, checked against ``declared`` (``ReportTampered`` otherwise)."""
    return b"".join([chunk async for chunk in stream_file(store, run_id, declared)])


async def stream_report(store: ObjectStore, run_id: str, seal: str,
                        shown: Callable[[runs_pb2.ReportManifest], runs_pb2.ReportManifest] = lambda manifest: manifest
                        ) -> AsyncIterator[runs_pb2.FetchReportResponse]:
    """The manifest as the caller is ``shown`` it (``releasing.shown_manifest``), then each of its files' bytes in
    its order, each checked as it is sent."""
    manifest = shown(await read_manifest(store, run_id, seal))
    yield runs_pb2.FetchReportResponse(manifest=manifest)
    for declared in manifest.files:
        async for chunk in stream_file(store, run_id, declared):
            yield runs_pb2.FetchReportResponse(chunk=chunk)
