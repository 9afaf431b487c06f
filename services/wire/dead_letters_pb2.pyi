import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mfscore.services.wire import jobs_pb2 as _jobs_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeadLetterJob(_message.Message):
    __slots__ = ("run_id", "task", "key")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    task: str
    key: _jobs_pb2.JobKey
    def __init__(self, run_id: _Optional[str] = ..., task: _Optional[str] = ..., key: _Optional[_Union[_jobs_pb2.JobKey, _Mapping]] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("sequence", "subject", "dead_lettered_at", "error", "job")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    subject: str
    dead_lettered_at: _timestamp_pb2.Timestamp
    error: str
    job: DeadLetterJob
    def __init__(self, sequence: _Optional[int] = ..., subject: _Optional[str] = ..., dead_lettered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ..., job: _Optional[_Union[DeadLetterJob, _Mapping]] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("dead_letters", "total")
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    total: int
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class PurgeDeadLettersRequest(_message.Message):
    __slots__ = ("up_to_sequence",)
    UP_TO_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    up_to_sequence: int
    def __init__(self, up_to_sequence: _Optional[int] = ...) -> None: ...

class PurgeDeadLettersResponse(_message.Message):
    __slots__ = ("purged",)
    PURGED_FIELD_NUMBER: _ClassVar[int]
    purged: int
    def __init__(self, purged: _Optional[int] = ...) -> None: ...
