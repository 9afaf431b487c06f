"""DatasetService's gRPC API (proto/mfscore/v1/datasets.proto), served by the aggregator: datasets registered once,
and the caller's content-addressed objects they are made of (docs/datasets.md).

A caller reads its own datasets and the shared ones (an operator, every dataset); another caller's private dataset
is NOT_FOUND to every call. A shared dataset's reference is sealed to a client unless its release is OPEN: GetDataset
and ListDatasets answer it without digest, count or size, and ListDatasetFiles is PERMISSION_DENIED. Objects are found
only in the caller's own namespace, so no caller learns whether another holds some bytes. A handler raises a
refusal, which ``status_codes`` answers with its code as AIP-193 says.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import uuid

import nats.errors

from mfscore.errors import MfscoreError
from mfscore.services.aggregator import paging, uploads
from mfscore.services.aggregator.access import caller_space, dataset_files, readable_dataset
from mfscore.services.aggregator.datasets import (
    DatasetBook,
    is_run_of,
    manifest_sha256,
    may_read_reference,
    naming_refusal,
    owns,
    reference,
    release_name,
    release_of,
    released,
    sealed_view,
)
from mfscore.services.aggregator.lease import leader_only
from mfscore.services.aggregator.objects import Objects, dataset_keys
from mfscore.services.aggregator.quotas import Quotas
from mfscore.services.aggregator.run import now
from mfscore.services.aggregator.state import RunBook, may_see
from mfscore.services.common.auth import caller
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError
from mfscore.services.common.retry import one_line
from mfscore.services.common.run_layout import check_dataset, object_key
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    Unavailable,
    answers,
)
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc

FILES_PAGE, MAX_FILES_PAGE = 1000, 10000
_NOT_SHARED = "only an operator registers a shared dataset; register it without sharing it"
log = logging.getLogger("mfscore.aggregator")


class DatasetApi(datasets_pb2_grpc.DatasetServiceServicer):
    def __init__(self, settings: Settings, store: ObjectStore, book: RunBook, datasets: DatasetBook,
                 objects: Objects, quotas: Quotas):
        self.settings, self.store, self.book, self.datasets, self.objects = settings, store, book, datasets, objects
        self.quotas = quotas  # the AggregatorApi's: a caller's uploads count together

    @answers
    @leader_only
    async def DeclareDatasetFiles(self, request, context):
        who = caller()
        if request.shared and not who.operator:
            raise PermissionDenied(_NOT_SHARED)
        if request.name or request.version:  # the dataset they are for: refused now rather than once uploaded
            name = self._may_create(who, request)
            existing = self.datasets.datasets.get(name)
            if existing is not None and not owns(who, existing):
                raise AlreadyExists(_taken(name))
        self._check_files(request.files)
        space = caller_space()
        held = await asyncio.to_thread(self.objects.held, space, {f.sha256: f.size for f in request.files})
        return datasets_pb2.DeclareDatasetFilesResponse(missing=[f.name for f in request.files
                                                                 if f.sha256 not in held])

    @answers
    @leader_only
    async def UploadObjects(self, request_iterator, context):
        space = caller_space()
        stored = datasets_pb2.UploadObjectsResponse()

        async def put(declared, data):
            await asyncio.to_thread(self.objects.put, object_key(space, declared.sha256), data, declared.size,
                                    declared.sha256)
            stored.files.append(declared)

        os.makedirs(self.settings.work_dir, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="objects-", dir=self.settings.work_dir) as spool_dir:
            with self.quotas.uploads.stream(caller()) as holding:
                await uploads.receive(uploads.idle_bounded(request_iterator, self.settings.upload_idle_seconds),
                                      "", put, max_bytes=self.settings.max_upload_bytes, spool_dir=spool_dir,
                                      what="dataset file name", holding=holding)
        return stored

    @answers
    @leader_only
    async def CreateDataset(self, request_iterator, context):
        who = caller()
        first = await anext(aiter(request_iterator), None)
        if first is None:
            raise InvalidArgument("CreateDataset's first message names the dataset")
        name = self._may_create(who, first)
        release = _release(name, first)
        files = {}
        message = first
        while message is not None:
            if (message.name, message.version) not in (("", ""), (first.name, first.version)):
                raise InvalidArgument(f"one CreateDataset makes one dataset, {name}")
            self.quotas.check_dataset_files(len(files) + len(message.files))
            self._check_files(message.files)
            for declared in message.files:
                if declared.name in files:
                    raise InvalidArgument(f"the dataset names {declared.name} twice")
                files[declared.name] = declared
            message = await anext(aiter(request_iterator), None)
        if not files:
            raise InvalidArgument(f"the dataset {name} holds no file")
        ordered = [files[key] for key in sorted(files)]
        digest = manifest_sha256(ordered)
        space = caller_space()
        async with self.objects.lock(space):
            existing = self.datasets.datasets.get(name)
            if existing is not None or name in self.datasets.creating:
                if existing is not None and owns(who, existing) and existing.manifest_sha256 == digest \
                        and existing.shared == first.shared and release_of(existing) == release:
                    return datasets_pb2.CreateDatasetResponse(dataset=existing, created=False)
                raise AlreadyExists(_taken(name))
            self.datasets.creating.add(name)  # reserved: a concurrent CreateDataset of another caller finds it taken
            try:
                dataset = await self._create(who, first, release, ordered, digest, space)
            finally:
                self.datasets.creating.discard(name)
        log.info("dataset %s: created by %s %s (%d files, %d bytes, release %s)", name, who.role, who.name,
                 dataset.file_count, dataset.total_bytes, release_name(release))
        return datasets_pb2.CreateDatasetResponse(dataset=dataset, created=True)

    async def _create(self, who, first, release: int, ordered, digest: str, space: str) -> datasets_pb2.Dataset:
        """Record the dataset once every file of it is an object of the caller's (its namespace's lock held)."""
        name = f"{first.name}@{first.version}"
        held = await asyncio.to_thread(self.objects.held, space, {f.sha256: f.size for f in ordered})
        lacking = [f for f in ordered if f.sha256 not in held]
        if lacking:
            raise FailedPrecondition(f"{len(lacking)} file(s) of the dataset {name} are not objects of yours, the "
                                     f"first {lacking[0].name}: declare them (DeclareDatasetFiles) and upload them "
                                     "(UploadObjects) first")
        dataset = datasets_pb2.Dataset(name=first.name, version=first.version, owner=who.name, owner_role=who.role,
                                       shared=first.shared, manifest_sha256=digest, file_count=len(ordered),
                                       total_bytes=sum(f.size for f in ordered), created_at=now(),
                                       creation_id=uuid.uuid4().hex, release=release)
        try:
            await self.datasets.add(dataset, ordered)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            raise Unavailable(f"the dataset {name} could not be recorded now ({one_line(error)}); "
                              "try again") from error
        return dataset

    @answers
    async def GetDataset(self, request, context):
        return datasets_pb2.GetDatasetResponse(dataset=sealed_view(self._readable(request), caller()))

    @answers
    async def ListDatasets(self, request, context):
        who = caller()
        size = paging.page_size(request.page_size)
        after = paging.read_page_token(request.page_token, 0, paging.DATASETS)
        visible = (((dataset.created_at.ToNanoseconds(), name), sealed_view(dataset, who))
                   for name, dataset in list(self.datasets.datasets.items()) if self.datasets.readable(who, name))
        found, last = paging.page(visible, size, after, budget=paging.PAGE_BYTES,
                                  cost=lambda dataset: dataset.ByteSize())
        return datasets_pb2.ListDatasetsResponse(
            datasets=found, next_page_token=paging.page_token(0, last, paging.DATASETS) if last is not None else "")

    @answers
    async def ListDatasetFiles(self, request, context):
        dataset = self._readable(request)
        if not may_read_reference(caller(), dataset):
            name = reference(dataset)
            raise PermissionDenied(f"the reference of {name} is sealed: its owner releases "
                                   f"{release_name(release_of(dataset))} results only; submit a package "
                                   f"(mfscore submit --dataset {name} --package DIR)")
        size = paging.page_size(request.page_size, FILES_PAGE, MAX_FILES_PAGE)
        start = paging.read_files_token(request.page_token, dataset.manifest_sha256)
        files = await dataset_files(self.datasets, dataset)
        page = files[start:start + size]
        more = start + size < len(files)
        return datasets_pb2.ListDatasetFilesResponse(
            files=page, next_page_token=paging.files_token(dataset.manifest_sha256, start + size) if more else "")

    @answers
    @leader_only
    async def ReleaseDataset(self, request, context):
        who, dataset, name = self._owned(request, "releases")
        if released(dataset):
            return datasets_pb2.ReleaseDatasetResponse(dataset=dataset)
        if name in self.datasets.creating:
            raise Unavailable(f"the dataset {name} is being changed now; try again")
        self.datasets.creating.add(name)  # no DeleteDataset of it while its description is written again
        try:
            dataset = await self.datasets.release(dataset, now())
        except (nats.errors.Error, TimeoutError) as error:
            raise Unavailable(f"the dataset {name} could not be released now ({one_line(error)}); "
                              "try again") from error
        finally:
            self.datasets.creating.discard(name)
        log.info("dataset %s: released by %s %s", name, who.role, who.name)
        return datasets_pb2.ReleaseDatasetResponse(dataset=dataset)

    @answers
    @leader_only
    async def DeleteDataset(self, request, context):
        who, dataset, name = self._owned(request, "deletes")
        if name in self.datasets.creating:
            raise Unavailable(f"the dataset {name} is being changed now; try again")
        naming = [entry for entry in list(self.book.runs.values())
                  if is_run_of(entry.spec, dataset) and not entry.ended]
        if naming:
            seen = [entry.spec.run_id for entry in naming if may_see(who, entry.status)]
            raise FailedPrecondition(f"{len(naming)} run(s) that have not ended name the dataset {name}"
                                     + (f", run {seen[0]} among them" if seen else "")
                                     + "; delete it once they have ended (or cancel them)")
        try:
            candidates = dataset_keys(dataset, await self.datasets.files(dataset))
        except MfscoreError as error:  # its objects are left to the sweep
            log.warning("dataset %s: its objects are left to the sweep: %s", name, error.sentence())
            candidates = set()
        try:
            await self.datasets.remove(dataset)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            raise Unavailable(f"the dataset {name} could not be deleted now ({one_line(error)}); "
                              "try again") from error
        log.info("dataset %s: deleted by %s %s", name, who.role, who.name)
        try:
            await self.objects.collect(candidates)
        except (MfscoreError, nats.errors.Error, TimeoutError) as error:
            log.warning("dataset %s: deleting its objects is left to the sweep: %s", name, one_line(error))
        return datasets_pb2.DeleteDatasetResponse()

    def _owned(self, request, verb: str):
        """(the caller, the dataset it names, its ``name@version``) when the caller owns it or is an operator;
        PERMISSION_DENIED for another reader, NOT_FOUND for one who may not read it (``_readable``)."""
        who = caller()
        dataset = self._readable(request)
        name = reference(dataset)
        if not (owns(who, dataset) or who.operator):
            raise PermissionDenied(f"the dataset {name} is {dataset.owner}'s: only its owner or an operator {verb} it")
        return who, dataset, name

    def _readable(self, request) -> datasets_pb2.Dataset:
        return readable_dataset(self.datasets, f"{request.name}@{request.version}", caller())

    def _may_create(self, who, request) -> str:
        """``name@version`` of the dataset ``request`` names, if ``who`` may create it as it asks (INVALID_ARGUMENT
        for a malformed name, PERMISSION_DENIED for a name of another's or a client sharing it)."""
        name = check_dataset(request.name, request.version)
        refusal = naming_refusal(who, request.name)
        if refusal is not None:
            raise PermissionDenied(refusal)
        if request.shared and not who.operator:
            raise PermissionDenied(_NOT_SHARED)
        return name

    def _check_files(self, files) -> None:
        """INVALID_ARGUMENT for a file declared with a bad name, SHA-256 or size."""
        for declared in files:
            uploads.check_declared(declared, self.settings.max_upload_bytes, "dataset file name")


def _release(name: str, first) -> int:
    """The release the first CreateDataset message asks, made effective: UNSPECIFIED is AGGREGATE for a shared
    dataset and OPEN for a private one; INVALID_ARGUMENT for a private one asked anything but OPEN."""
    if first.release not in datasets_pb2.DatasetRelease.values():
        raise InvalidArgument(f"the release {first.release} of the dataset {name} is none of aggregate, per-trial "
                              "and open")
    if first.shared:
        return first.release or datasets_pb2.DATASET_RELEASE_AGGREGATE
    if first.release not in (datasets_pb2.DATASET_RELEASE_UNSPECIFIED, datasets_pb2.DATASET_RELEASE_OPEN):
        raise InvalidArgument(f"the dataset {name} is not shared, so its release is open (only its owner and the "
                              f"operators score against it, and they receive everything), not "
                              f"{release_name(first.release)}; leave the release out")
    return datasets_pb2.DATASET_RELEASE_OPEN


def _taken(name: str) -> str:
    return (f"the dataset {name} exists already, with other files, sharing, release or owner; a dataset never "
            "changes: register another version")
