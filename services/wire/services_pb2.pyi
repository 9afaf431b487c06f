from mfscore.services.wire import jobs_pb2 as _jobs_pb2
from mfscore.services.wire import records_pb2 as _records_pb2
from mfscore.services.wire import runs_pb2 as _runs_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ValidateRequest(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: _runs_pb2.RunSpec
    def __init__(self, run: _Optional[_Union[_runs_pb2.RunSpec, _Mapping]] = ...) -> None: ...
