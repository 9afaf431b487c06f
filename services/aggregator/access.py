"""What a caller of the aggregator's APIs reaches (``api``, ``dataset_api``): its namespace of objects, the datasets
it may read and their files; a refusal (``status_codes``) when it reaches none."""

from __future__ import annotations

import logging

from mfscore.services.aggregator.datasets import DatasetBook, DatasetTampered
from mfscore.services.common.auth import Caller, caller
from mfscore.services.common.object_store import ObjectStoreError
from mfscore.services.common.run_layout import BadName, namespace, parse_dataset
from mfscore.services.common.status_codes import FailedPrecondition, NotFound, restated
from mfscore.services.wire import datasets_pb2, runs_pb2

log = logging.getLogger("mfscore.aggregator")


def caller_space() -> str:
    """The caller's namespace of objects; FAILED_PRECONDITION for a caller whose name cannot be one."""
    who = caller()
    try:
        return namespace(who.role, who.name)
    except BadName as error:
        raise FailedPrecondition(f"{error.sentence()}; such a caller stores nothing (its name in the tokens file "
                                 "must change)") from error


def readable_dataset(datasets: DatasetBook, name: str, who: Caller) -> datasets_pb2.Dataset:
    """The dataset ``name`` (``name@version``) the caller may read: INVALID_ARGUMENT for a malformed name, NOT_FOUND
    for none, or another caller's private one (never PERMISSION_DENIED, which would say it exists)."""
    parse_dataset(name)
    dataset = datasets.readable(who, name)
    if dataset is None:
        raise NotFound(f"there is no dataset {name!r}")
    return dataset


async def dataset_files(datasets: DatasetBook, dataset: datasets_pb2.Dataset) -> list[runs_pb2.DeclaredFile]:
    """The dataset's files; DATA_LOSS (logged) when the stored list is not what was recorded, UNAVAILABLE when S3
    is away."""
    try:
        return await datasets.files(dataset)
    except DatasetTampered as error:
        log.error("%s", error.sentence())
        raise
    except ObjectStoreError as error:
        raise restated(error, f"the files of the dataset cannot be read now: {error.sentence()}") from error
