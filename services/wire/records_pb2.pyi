from mfscore.services.wire import jobs_pb2 as _jobs_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TrialRecord(_message.Message):
    __slots__ = ("run_id", "task", "key", "outcome", "scorer", "error")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SCORER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    task: str
    key: _jobs_pb2.JobKey
    outcome: bytes
    scorer: str
    error: str
    def __init__(self, run_id: _Optional[str] = ..., task: _Optional[str] = ..., key: _Optional[_Union[_jobs_pb2.JobKey, _Mapping]] = ..., outcome: _Optional[bytes] = ..., scorer: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...
