import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mfscore.services.wire import runs_pb2 as _runs_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DatasetRelease(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATASET_RELEASE_UNSPECIFIED: _ClassVar[DatasetRelease]
    DATASET_RELEASE_AGGREGATE: _ClassVar[DatasetRelease]
    DATASET_RELEASE_PER_TRIAL: _ClassVar[DatasetRelease]
    DATASET_RELEASE_OPEN: _ClassVar[DatasetRelease]
DATASET_RELEASE_UNSPECIFIED: DatasetRelease
DATASET_RELEASE_AGGREGATE: DatasetRelease
DATASET_RELEASE_PER_TRIAL: DatasetRelease
DATASET_RELEASE_OPEN: DatasetRelease

class Dataset(_message.Message):
    __slots__ = ("name", "version", "owner", "owner_role", "shared", "manifest_sha256", "file_count", "total_bytes", "created_at", "creation_id", "release", "released_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    OWNER_ROLE_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_SHA256_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATION_ID_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RELEASED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    owner: str
    owner_role: str
    shared: bool
    manifest_sha256: str
    file_count: int
    total_bytes: int
    created_at: _timestamp_pb2.Timestamp
    creation_id: str
    release: DatasetRelease
    released_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., owner: _Optional[str] = ..., owner_role: _Optional[str] = ..., shared: _Optional[bool] = ..., manifest_sha256: _Optional[str] = ..., file_count: _Optional[int] = ..., total_bytes: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., creation_id: _Optional[str] = ..., release: _Optional[_Union[DatasetRelease, str]] = ..., released_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DatasetFiles(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[_runs_pb2.DeclaredFile]
    def __init__(self, files: _Optional[_Iterable[_Union[_runs_pb2.DeclaredFile, _Mapping]]] = ...) -> None: ...

class DeclareDatasetFilesRequest(_message.Message):
    __slots__ = ("name", "version", "shared", "files")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    shared: bool
    files: _containers.RepeatedCompositeFieldContainer[_runs_pb2.DeclaredFile]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., shared: _Optional[bool] = ..., files: _Optional[_Iterable[_Union[_runs_pb2.DeclaredFile, _Mapping]]] = ...) -> None: ...

class DeclareDatasetFilesResponse(_message.Message):
    __slots__ = ("missing",)
    MISSING_FIELD_NUMBER: _ClassVar[int]
    missing: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, missing: _Optional[_Iterable[str]] = ...) -> None: ...

class UploadObjectsRequest(_message.Message):
    __slots__ = ("file", "chunk")
    FILE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    file: _runs_pb2.DeclaredFile
    chunk: bytes
    def __init__(self, file: _Optional[_Union[_runs_pb2.DeclaredFile, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class UploadObjectsResponse(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[_runs_pb2.DeclaredFile]
    def __init__(self, files: _Optional[_Iterable[_Union[_runs_pb2.DeclaredFile, _Mapping]]] = ...) -> None: ...

class CreateDatasetRequest(_message.Message):
    __slots__ = ("name", "version", "shared", "files", "release")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    shared: bool
    files: _containers.RepeatedCompositeFieldContainer[_runs_pb2.DeclaredFile]
    release: DatasetRelease
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., shared: _Optional[bool] = ..., files: _Optional[_Iterable[_Union[_runs_pb2.DeclaredFile, _Mapping]]] = ..., release: _Optional[_Union[DatasetRelease, str]] = ...) -> None: ...

class CreateDatasetResponse(_message.Message):
    __slots__ = ("dataset", "created")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    dataset: Dataset
    created: bool
    def __init__(self, dataset: _Optional[_Union[Dataset, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetDatasetRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class GetDatasetResponse(_message.Message):
    __slots__ = ("dataset",)
    DATASET_FIELD_NUMBER: _ClassVar[int]
    dataset: Dataset
    def __init__(self, dataset: _Optional[_Union[Dataset, _Mapping]] = ...) -> None: ...

class ListDatasetsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDatasetsResponse(_message.Message):
    __slots__ = ("datasets", "next_page_token")
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    datasets: _containers.RepeatedCompositeFieldContainer[Dataset]
    next_page_token: str
    def __init__(self, datasets: _Optional[_Iterable[_Union[Dataset, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListDatasetFilesRequest(_message.Message):
    __slots__ = ("name", "version", "page_size", "page_token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    page_size: int
    page_token: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDatasetFilesResponse(_message.Message):
    __slots__ = ("files", "next_page_token")
    FILES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[_runs_pb2.DeclaredFile]
    next_page_token: str
    def __init__(self, files: _Optional[_Iterable[_Union[_runs_pb2.DeclaredFile, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ReleaseDatasetRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class ReleaseDatasetResponse(_message.Message):
    __slots__ = ("dataset",)
    DATASET_FIELD_NUMBER: _ClassVar[int]
    dataset: Dataset
    def __init__(self, dataset: _Optional[_Union[Dataset, _Mapping]] = ...) -> None: ...

class DeleteDatasetRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class DeleteDatasetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
