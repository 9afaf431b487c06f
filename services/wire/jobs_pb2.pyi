from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobKey(_message.Message):
    __slots__ = ("query", "role", "ordinal")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    query: int
    role: str
    ordinal: int
    def __init__(self, query: _Optional[int] = ..., role: _Optional[str] = ..., ordinal: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("run_id", "task", "key", "input_prefix", "work", "objects")
    class ObjectsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_PREFIX_FIELD_NUMBER: _ClassVar[int]
    WORK_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    task: str
    key: JobKey
    input_prefix: str
    work: bytes
    objects: _containers.ScalarMap[str, str]
    def __init__(self, run_id: _Optional[str] = ..., task: _Optional[str] = ..., key: _Optional[_Union[JobKey, _Mapping]] = ..., input_prefix: _Optional[str] = ..., work: _Optional[bytes] = ..., objects: _Optional[_Mapping[str, str]] = ...) -> None: ...
