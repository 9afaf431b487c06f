"""A run's input manifest: every file the run reads, by its name in the run, with its size, SHA-256 and the object
holding its bytes (docs/datasets.md).

The aggregator records it under ``runs/<id>/uploads/``, one ``InputManifest`` per DeclareInputs call and per
UploadInputs stream, named in time order so that a later record of a name wins. Planning (the aggregator and the
validator) fetches the run's tables through it, a job names the object of each file it reads from it, and the run's
provenance takes its digests from it, reading no input file again. It lives as long as the run: the objects it
names are kept while it does (``keys``).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterable

from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import OBJECTS, input_prefix, uploads_prefix
from mfscore.services.wire import runs_pb2

MAX_RECORD_BYTES = 64 << 20

Inputs = dict[str, runs_pb2.InputFile]  # name in the run -> the file as recorded


def record_key(run_id: str) -> str:
    """Where one record goes: names in time order, so that a later record of a name wins."""
    return f"{uploads_prefix(run_id)}{time.time_ns():020d}-{secrets.token_hex(4)}.pb"


def write(store: ObjectStore, run_id: str, files: Iterable[runs_pb2.InputFile]) -> None:
    """Record ``files`` in the run's manifest (blocking)."""
    store.put_bytes(record_key(run_id), runs_pb2.InputManifest(files=files).SerializeToString())


def read(store: ObjectStore, run_id: str) -> Inputs:
    """The run's manifest, every record read in order (blocking). A record written before objects existed (an
    ``UploadInputsResponse``, the same wire form) names no object: its files are under the run's input prefix."""
    inputs: Inputs = {}
    for key in sorted(store.list_keys(uploads_prefix(run_id))):
        record = runs_pb2.InputManifest.FromString(store.get_bytes(key, max_bytes=MAX_RECORD_BYTES))
        for file in record.files:
            if not file.key:
                file.key = input_prefix(run_id) + file.name
            inputs[file.name] = file
    return inputs


def stored_key(prefix: str, inputs: Inputs, name: str) -> str:
    """Where the bytes of the file ``name`` are: its object, or (a file the manifest does not name, such as one the
    aggregator made) under the run's input ``prefix``."""
    found = inputs.get(name)
    return found.key if found is not None else prefix + name


def objects_for(inputs: Inputs, paths: Iterable[str], input_dir: str) -> dict[str, str]:
    """Name in the run -> object, for each of ``paths`` (a job's files as planned, under ``input_dir``) that the
    manifest holds as an object: what a job carries (``Job.objects``) for a scorer to fetch."""
    found = {}
    for path in paths:
        name = os.path.relpath(path, input_dir).replace(os.sep, "/") if path else ""
        if name in inputs and inputs[name].key.startswith(OBJECTS):
            found[name] = inputs[name].key
    return found


def digests(inputs: Inputs) -> dict[str, str]:
    """Name -> SHA-256 of every file the run reads: what its provenance records."""
    return {name: file.sha256 for name, file in inputs.items()}


def keys(inputs: Inputs) -> set[str]:
    """The objects the manifest names: kept while the run is."""
    return {file.key for file in inputs.values()}
