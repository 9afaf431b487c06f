from mfscore.services.wire import dead_letters_pb2 as _dead_letters_pb2
from mfscore.services.wire import jobs_pb2 as _jobs_pb2
from mfscore.services.wire import records_pb2 as _records_pb2
from mfscore.services.wire import results_pb2 as _results_pb2
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

class ValidateResponse(_message.Message):
    __slots__ = ("report",)
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: _runs_pb2.ValidationReport
    def __init__(self, report: _Optional[_Union[_runs_pb2.ValidationReport, _Mapping]] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _jobs_pb2.Job
    def __init__(self, job: _Optional[_Union[_jobs_pb2.Job, _Mapping]] = ...) -> None: ...

class ScoreResponse(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: _records_pb2.TrialRecord
    def __init__(self, record: _Optional[_Union[_records_pb2.TrialRecord, _Mapping]] = ...) -> None: ...
