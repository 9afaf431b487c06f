"""Datasets as the aggregator keeps them (docs/datasets.md): ``name@version``, immutable, a manifest of files whose
objects are in the owner's namespace.

A name is an operator's (``eval``) or a client's, after its owner's name (``alice/masks``): ``naming_refusal``
keeps each caller to its own names. Each CreateDataset gives the dataset a fresh ``creation_id`` that its runs
record (``RunSpec.dataset_creation_id``), so a dataset deleted and registered again under the same name is another
dataset: ``is_run_of`` never counts the first one's runs as the second's.

A dataset's description (``Dataset``) is in the runs' key-value bucket under ``dataset.<name>=<version>`` (the run
book's restore reads only its own ``spec.``, ``status.`` and ``report.`` keys) and in memory; its files
(``DatasetFiles``, in name order) are in the object store at ``datasets/<name>@<version>/files.pb``, checked against
the description's manifest digest whenever they are read, so a list changed in the store is refused
(``DatasetTampered``), never taken for the dataset.

A dataset's release (``DatasetRelease``, docs/release.md) says what a reader that neither owns it nor operates
receives: short of OPEN, its reference is sealed to that reader (``sealed_view``: no digest, count or size).
``ReleaseDataset`` sets ``released_at`` once, recording the description again under its key.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterable

from google.protobuf.timestamp_pb2 import Timestamp

from mfscore.errors import MfscoreError
from mfscore.services.common.auth import Caller
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import DATASETS, check_dataset, dataset_files_key, dataset_owner, namespace
from mfscore.services.common.status_codes import DataLoss
from mfscore.services.common.streams import bucket_keys
from mfscore.services.wire import datasets_pb2, runs_pb2

KEY_PREFIX = "dataset."
MAX_FILES_BYTES = 256 << 20  # a dataset's stored list of files: 10^6 files of long names
log = logging.getLogger("mfscore.aggregator")


class DatasetTampered(DataLoss):
    """A dataset's stored list of files does not match the manifest digest recorded when it was created."""


def manifest_sha256(files: Iterable[runs_pb2.DeclaredFile]) -> str:
    """The dataset's manifest digest: the SHA-256 of the lines ``<sha256>  <name>\\n`` of its files in name order
    (what ``sha256sum`` prints, so ``sha256sum -c`` checks a copy)."""
    digest = hashlib.sha256()
    for file in sorted(files, key=lambda file: file.name):
        digest.update(f"{file.sha256}  {file.name}\n".encode())
    return digest.hexdigest()


def reference(dataset: datasets_pb2.Dataset) -> str:
    """``name@version``: how runs and the command line name it."""
    return f"{dataset.name}@{dataset.version}"


def kv_key(name: str, version: str) -> str:
    """The dataset's key in the bucket ('@' is no key character; '=' is, and no name holds it)."""
    check_dataset(name, version)
    return f"{KEY_PREFIX}{name}={version}"


def owner_space(dataset: datasets_pb2.Dataset) -> str:
    """The namespace its objects are in: its owner's."""
    return namespace(dataset.owner_role, dataset.owner)


def owns(who: Caller, dataset: datasets_pb2.Dataset) -> bool:
    return dataset.owner == who.name and dataset.owner_role == who.role


def may_read(who: Caller, dataset: datasets_pb2.Dataset) -> bool:
    """Its owner, an operator, and anyone for a shared dataset."""
    return dataset.shared or who.operator or owns(who, dataset)


def release_of(dataset: datasets_pb2.Dataset) -> int:
    """Its effective ``DatasetRelease``: UNSPECIFIED (a dataset recorded before releases were) is OPEN."""
    return dataset.release or datasets_pb2.DATASET_RELEASE_OPEN


def may_read_reference(who: Caller, dataset: datasets_pb2.Dataset) -> bool:
    """Whether ``who`` may read the dataset's reference (its files, sizes, digests): a reader that owns it,
    operates, or finds it OPEN."""
    return may_read(who, dataset) and (owns(who, dataset) or who.operator
                                       or release_of(dataset) == datasets_pb2.DATASET_RELEASE_OPEN)


def sealed_view(dataset: datasets_pb2.Dataset, who: Caller) -> datasets_pb2.Dataset:
    """The dataset as ``who`` sees it: itself if ``who`` may read its reference, else a copy without the manifest
    digest, file count and total size (each would tell something of the reference)."""
    if may_read_reference(who, dataset):
        return dataset
    view = datasets_pb2.Dataset()
    view.CopyFrom(dataset)
    view.ClearField("manifest_sha256")
    view.ClearField("file_count")
    view.ClearField("total_bytes")
    return view


def released(dataset: datasets_pb2.Dataset) -> bool:
    """Whether ReleaseDataset opened its runs' full reports to their owners."""
    return dataset.HasField("released_at")


def release_name(release: int) -> str:
    """How the command line and messages name a release: ``aggregate``, ``per-trial``, ``open``."""
    release = release or datasets_pb2.DATASET_RELEASE_OPEN
    if release not in datasets_pb2.DatasetRelease.values():
        return f"release {release}"
    return datasets_pb2.DatasetRelease.Name(release)[len("DATASET_RELEASE_"):].lower().replace("_", "-")


def naming_refusal(who: Caller, name: str) -> str | None:
    """Why ``who`` may not create a dataset called ``name`` (a name already checked by ``check_dataset``); None if
    it may: an operator's names have no owner part, a client's start with its own name and '/'."""
    owner = dataset_owner(name)
    if who.operator:
        return None if owner is None else (f"the dataset name {name!r} is a client's (it starts with {owner}/); an "
                                           "operator's dataset names have no owner part")
    if owner != who.name:
        return (f"the dataset name {name!r} is not yours: a client's datasets are named after it, "
                f"{who.name}/{name.rpartition('/')[2]}")
    return None


def is_run_of(spec: runs_pb2.RunSpec, dataset: datasets_pb2.Dataset) -> bool:
    """Whether the run ``spec`` names this very dataset: its name and the creation CreateRun found."""
    return spec.dataset == reference(dataset) and spec.dataset_creation_id == dataset.creation_id


class DatasetBook:
    """Every dataset by ``name@version``: in memory, in the bucket, and their files in the object store."""

    def __init__(self, kv, store: ObjectStore):
        self.kv, self.store = kv, store
        self.datasets: dict[str, datasets_pb2.Dataset] = {}
        self.creating: set[str] = set()  # names reserved by a CreateDataset, ReleaseDataset or DeleteDataset under way
        self._files: dict[str, tuple[str, list[runs_pb2.DeclaredFile]]] = {}  # name -> (manifest digest, files)

    async def restore(self) -> None:
        """Read every dataset's description from the bucket."""
        keys = await bucket_keys(self.kv)
        found = {}
        for key in keys:
            if key.startswith(KEY_PREFIX):
                dataset = datasets_pb2.Dataset.FromString((await self.kv.get(key)).value)
                found[reference(dataset)] = dataset
        self.datasets.clear()
        self.datasets.update(found)
        log.info("restored %d dataset(s)", len(self.datasets))

    def take_change(self, key: str, value: bytes | None) -> None:
        """A standby's book takes a change of the bucket: ``key`` now holds ``value`` (None: deleted)."""
        if not key.startswith(KEY_PREFIX):
            return
        name, _, version = key[len(KEY_PREFIX):].partition("=")
        if value is None:
            self.datasets.pop(f"{name}@{version}", None)
        else:
            dataset = datasets_pb2.Dataset.FromString(value)
            self.datasets[reference(dataset)] = dataset

    def readable(self, who: Caller, name: str) -> datasets_pb2.Dataset | None:
        """The dataset ``name`` (``name@version``) if ``who`` may read it; else None, as for no dataset at all."""
        dataset = self.datasets.get(name)
        return dataset if dataset is not None and may_read(who, dataset) else None

    def owned_by(self, space: str) -> list[datasets_pb2.Dataset]:
        """The datasets whose objects are in the namespace ``space``."""
        return [dataset for dataset in list(self.datasets.values()) if _space_or_none(dataset) == space]

    async def files(self, dataset: datasets_pb2.Dataset) -> list[runs_pb2.DeclaredFile]:
        """The dataset's files, in name order, checked against its manifest digest (cached: a dataset never
        changes); ``DatasetTampered`` when they do not match it."""
        name = reference(dataset)
        cached = self._files.get(name)
        if cached is not None and cached[0] == dataset.manifest_sha256:
            return cached[1]
        content = await asyncio.to_thread(self.store.get_bytes, dataset_files_key(dataset.name, dataset.version),
                                          max_bytes=MAX_FILES_BYTES)
        files = list(datasets_pb2.DatasetFiles.FromString(content).files)
        if manifest_sha256(files) != dataset.manifest_sha256 or len(files) != dataset.file_count:
            raise DatasetTampered(f"the stored files of the dataset {name} do not match the manifest digest recorded "
                                  "when it was created")
        self._files[name] = (dataset.manifest_sha256, files)
        return files

    async def add(self, dataset: datasets_pb2.Dataset, files: list[runs_pb2.DeclaredFile]) -> None:
        """Store a new dataset: its files first, then its description (once that is recorded, it exists)."""
        await asyncio.to_thread(self.store.put_bytes, dataset_files_key(dataset.name, dataset.version),
                                datasets_pb2.DatasetFiles(files=files).SerializeToString())
        await self.kv.put(kv_key(dataset.name, dataset.version), dataset.SerializeToString())
        self.datasets[reference(dataset)] = dataset
        self._files[reference(dataset)] = (dataset.manifest_sha256, files)

    async def release(self, dataset: datasets_pb2.Dataset, at: Timestamp) -> datasets_pb2.Dataset:
        """Record the dataset released at ``at``: its description again under its key (a restarted or standby
        aggregator reads it back), then in memory; the released dataset."""
        opened = datasets_pb2.Dataset()
        opened.CopyFrom(dataset)
        opened.released_at.CopyFrom(at)
        await self.kv.put(kv_key(opened.name, opened.version), opened.SerializeToString())
        self.datasets[reference(opened)] = opened
        return opened

    async def remove(self, dataset: datasets_pb2.Dataset) -> None:
        """Forget a dataset: gone from memory at once (no run may name it from now on), then its description and its
        list of files. Raises (NATS or S3 away) with the dataset back in place, for another try."""
        name = reference(dataset)
        self.datasets.pop(name, None)
        self.creating.add(name)  # no CreateDataset of the name until its old list of files is gone
        try:
            try:
                await self.kv.purge(kv_key(dataset.name, dataset.version))
            except BaseException:
                self.datasets[name] = dataset
                raise
            self._files.pop(name, None)
            await asyncio.to_thread(self.store.delete_prefix, f"{DATASETS}{name}/")
        finally:
            self.creating.discard(name)

    async def sweep(self, written_before: float) -> int:
        """Delete the lists of files of no dataset (a CreateDataset that could not record its description) once
        nothing was written under them since ``written_before``; how many."""
        deleted = 0
        for folder in await self._folders():
            name = folder[len(DATASETS):].rstrip("/")
            if name in self.datasets or name in self.creating:
                continue
            deleted += await asyncio.to_thread(self.store.delete_prefix, folder, written_before=written_before)
        return deleted

    async def _folders(self) -> list[str]:
        """Every dataset's folder, ``datasets/<name>@<version>/``: a folder without '@' holds a client's
        (``datasets/alice/``), and is never one to delete whole."""
        found = []
        for folder in await asyncio.to_thread(self.store.folders, DATASETS):
            if "@" in folder:
                found.append(folder)
            else:
                found += await asyncio.to_thread(self.store.folders, folder)
        return found


def _space_or_none(dataset: datasets_pb2.Dataset) -> str | None:
    try:
        return owner_space(dataset)
    except MfscoreError:
        return None
