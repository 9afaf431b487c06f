"""DatasetService's gRPC API (proto/mfscore/v1/datasets.proto), served by the aggregator: datasets registered once,
and the caller's content-addressed objects they are made of (docs/datasets.md).

A caller reads its own datasets and the shared ones (an operator, every dataset); another caller's private dataset
is NOT_FOUND to every call. Objects are found only in the caller's own namespace, so no caller learns whether another
holds some bytes. Status codes as AIP-193 says, as AggregatorService's (``api``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import uuid

import grpc
import nats.errors

from mfscore.errors import MfscoreError
from mfscore.services.aggregator import paging, uploads
from mfscore.services.aggregator.api import PAGE_BYTES, _upload_code, caller_space, dataset_files, readable_dataset
from mfscore.services.aggregator.datasets import (
    DatasetBook,
    is_run_of,
    manifest_sha256,
    naming_refusal,
    owns,
    reference,
)
from mfscore.services.aggregator.lease import leader_only
from mfscore.services.aggregator.objects import Objects, dataset_keys
from mfscore.services.aggregator.quotas import QuotaExceeded, Quotas
from mfscore.services.aggregator.retry import one_line
from mfscore.services.aggregator.state import TERMINAL, RunBook, may_see, now
from mfscore.services.common.auth import caller
from mfscore.services.common.object_store import ObjectStore, ObjectStoreError
from mfscore.services.common.run_layout import BadName, check_dataset, object_key
from mfscore.services.common.settings import Settings
from mfscore.services.wire import datasets_pb2, datasets_pb2_grpc

FILES_PAGE, MAX_FILES_PAGE = 1000, 10000
_NOT_SHARED = "only an operator registers a shared dataset; register it without sharing it"
log = logging.getLogger("mfscore.aggregator")


class DatasetApi(datasets_pb2_grpc.DatasetServiceServicer):
    def __init__(self, settings: Settings, store: ObjectStore, book: RunBook, datasets: DatasetBook,
                 objects: Objects, quotas: Quotas):
        self.settings, self.store, self.book, self.datasets, self.objects = settings, store, book, datasets, objects
        self.quotas = quotas  # the AggregatorApi's: a caller's uploads count together

    @leader_only
    async def DeclareDatasetFiles(self, request, context):
        who = caller()
        if request.shared and not who.operator:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, _NOT_SHARED)
        if request.name or request.version:  # the dataset they are for: refused now rather than once uploaded
            name = await self._may_create(who, request, context)
            existing = self.datasets.datasets.get(name)
            if existing is not None and not owns(who, existing):
                await context.abort(grpc.StatusCode.ALREADY_EXISTS, _taken(name))
        await self._check_files(request.files, context)
        space = await caller_space(context)
        try:
            held = await asyncio.to_thread(self.objects.held, space, {f.sha256: f.size for f in request.files})
        except ObjectStoreError as error:
            await context.abort(_upload_code(error), error.sentence())
        return datasets_pb2.DeclareDatasetFilesResponse(missing=[f.name for f in request.files
                                                                 if f.sha256 not in held])

    @leader_only
    async def UploadObjects(self, request_iterator, context):
        space = await caller_space(context)
        stored = datasets_pb2.UploadObjectsResponse()

        async def put(declared, data):
            await asyncio.to_thread(self.objects.put, object_key(space, declared.sha256), data, declared.size)
            stored.files.append(declared)

        os.makedirs(self.settings.work_dir, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="objects-", dir=self.settings.work_dir) as spool_dir:
            try:
                with self.quotas.uploads.stream(caller()) as holding:
                    await uploads.receive(uploads.idle_bounded(request_iterator, self.settings.upload_idle_seconds),
                                          "", put, max_bytes=self.settings.max_upload_bytes, spool_dir=spool_dir,
                                          what="dataset file name", holding=holding)
            except MfscoreError as error:
                await context.abort(_upload_code(error), error.sentence())
        return stored

    @leader_only
    async def CreateDataset(self, request_iterator, context):
        who = caller()
        first = await anext(aiter(request_iterator), None)
        if first is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "CreateDataset's first message names the dataset")
        name = await self._may_create(who, first, context)
        files = {}
        message = first
        while message is not None:
            if (message.name, message.version) not in (("", ""), (first.name, first.version)):
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"one CreateDataset makes one dataset, {name}")
            try:
                self.quotas.check_dataset_files(len(files) + len(message.files))
            except QuotaExceeded as error:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, error.sentence())
            await self._check_files(message.files, context)
            for declared in message.files:
                if declared.name in files:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the dataset names {declared.name} twice")
                files[declared.name] = declared
            message = await anext(aiter(request_iterator), None)
        if not files:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the dataset {name} holds no file")
        ordered = [files[key] for key in sorted(files)]
        digest = manifest_sha256(ordered)
        space = await caller_space(context)
        async with self.objects.lock(space):
            existing = self.datasets.datasets.get(name)
            if existing is not None or name in self.datasets.creating:
                if existing is not None and owns(who, existing) and existing.manifest_sha256 == digest \
                        and existing.shared == first.shared:
                    return datasets_pb2.CreateDatasetResponse(dataset=existing, created=False)
                await context.abort(grpc.StatusCode.ALREADY_EXISTS, _taken(name))
            self.datasets.creating.add(name)  # reserved: a concurrent CreateDataset of another caller finds it taken
            try:
                dataset = await self._create(who, first, ordered, digest, space, context)
            finally:
                self.datasets.creating.discard(name)
        log.info("dataset %s: created by %s %s (%d files, %d bytes)", name, who.role, who.name, dataset.file_count,
                 dataset.total_bytes)
        return datasets_pb2.CreateDatasetResponse(dataset=dataset, created=True)

    async def _create(self, who, first, ordered, digest: str, space: str, context) -> datasets_pb2.Dataset:
        """Record the dataset once every file of it is an object of the caller's (its namespace's lock held)."""
        name = f"{first.name}@{first.version}"
        try:
            held = await asyncio.to_thread(self.objects.held, space, {f.sha256: f.size for f in ordered})
        except ObjectStoreError as error:
            await context.abort(_upload_code(error), error.sentence())
        lacking = [f for f in ordered if f.sha256 not in held]
        if lacking:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{len(lacking)} file(s) of the dataset {name} "
                                f"are not objects of yours, the first {lacking[0].name}: declare them "
                                "(DeclareDatasetFiles) and upload them (UploadObjects) first")
        dataset = datasets_pb2.Dataset(name=first.name, version=first.version, owner=who.name, owner_role=who.role,
                                       shared=first.shared, manifest_sha256=digest, file_count=len(ordered),
                                       total_bytes=sum(f.size for f in ordered), created_at=now(),
                                       creation_id=uuid.uuid4().hex)
        try:
            await self.datasets.add(dataset, ordered)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the dataset {name} could not be recorded now "
                                                             f"({one_line(error)}); try again")
        return dataset

    async def GetDataset(self, request, context):
        return datasets_pb2.GetDatasetResponse(dataset=await self._readable(request, context))

    async def ListDatasets(self, request, context):
        who = caller()
        try:
            size = paging.page_size(request.page_size)
            after = paging.read_page_token(request.page_token, 0, paging.DATASETS)
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except paging.BadPageToken as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        visible = (((dataset.created_at.ToNanoseconds(), name), dataset)
                   for name, dataset in list(self.datasets.datasets.items()) if self.datasets.readable(who, name))
        found, last = paging.page(visible, size, after, budget=PAGE_BYTES, cost=lambda dataset: dataset.ByteSize())
        return datasets_pb2.ListDatasetsResponse(
            datasets=found, next_page_token=paging.page_token(0, last, paging.DATASETS) if last is not None else "")

    async def ListDatasetFiles(self, request, context):
        dataset = await self._readable(request, context)
        try:
            size = paging.page_size(request.page_size, FILES_PAGE, MAX_FILES_PAGE)
            start = paging.read_files_token(request.page_token, dataset.manifest_sha256)
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except paging.BadPageToken as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        files = await dataset_files(self.datasets, dataset, context)
        page = files[start:start + size]
        more = start + size < len(files)
        return datasets_pb2.ListDatasetFilesResponse(
            files=page, next_page_token=paging.files_token(dataset.manifest_sha256, start + size) if more else "")

    @leader_only
    async def DeleteDataset(self, request, context):
        who = caller()
        dataset = await self._readable(request, context)
        name = reference(dataset)
        if not (owns(who, dataset) or who.operator):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"the dataset {name} is {dataset.owner}'s: only "
                                                                   "its owner or an operator deletes it")
        naming = [entry for entry in list(self.book.runs.values())
                  if is_run_of(entry.spec, dataset) and entry.status.state not in TERMINAL]
        if naming:
            seen = [entry.spec.run_id for entry in naming if may_see(who, entry.status)]
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{len(naming)} run(s) that have not ended name "
                                f"the dataset {name}" + (f", run {seen[0]} among them" if seen else "") +
                                "; delete it once they have ended (or cancel them)")
        try:
            candidates = dataset_keys(dataset, await self.datasets.files(dataset))
        except MfscoreError as error:  # its objects are left to the sweep
            log.warning("dataset %s: its objects are left to the sweep: %s", name, error.sentence())
            candidates = set()
        try:
            await self.datasets.remove(dataset)
        except (nats.errors.Error, TimeoutError, ObjectStoreError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the dataset {name} could not be deleted now "
                                                             f"({one_line(error)}); try again")
        log.info("dataset %s: deleted by %s %s", name, who.role, who.name)
        try:
            await self.objects.collect(candidates)
        except (MfscoreError, nats.errors.Error, TimeoutError) as error:
            log.warning("dataset %s: deleting its objects is left to the sweep: %s", name, one_line(error))
        return datasets_pb2.DeleteDatasetResponse()

    async def _readable(self, request, context) -> datasets_pb2.Dataset:
        return await readable_dataset(self.datasets, f"{request.name}@{request.version}", caller(), context)

    async def _may_create(self, who, request, context) -> str:
        """``name@version`` of the dataset ``request`` names, if ``who`` may create it as it asks (INVALID_ARGUMENT
        for a malformed name, PERMISSION_DENIED for a name of another's or a client sharing it)."""
        try:
            name = check_dataset(request.name, request.version)
        except BadName as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())
        refusal = naming_refusal(who, request.name)
        if refusal is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refusal)
        if request.shared and not who.operator:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, _NOT_SHARED)
        return name

    async def _check_files(self, files, context) -> None:
        try:
            for declared in files:
                uploads.check_declared(declared, self.settings.max_upload_bytes, "dataset file name")
        except MfscoreError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, error.sentence())


def _taken(name: str) -> str:
    return (f"the dataset {name} exists already, with other files, sharing or owner; a dataset never changes: "
            "register another version")
