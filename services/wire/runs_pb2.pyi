import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_VALIDATING: _ClassVar[RunState]
    RUN_STATE_REJECTED: _ClassVar[RunState]
    RUN_STATE_SCORING: _ClassVar[RunState]
    RUN_STATE_REPORTING: _ClassVar[RunState]
    RUN_STATE_DONE: _ClassVar[RunState]
    RUN_STATE_FAILED: _ClassVar[RunState]
    RUN_STATE_CREATED: _ClassVar[RunState]
    RUN_STATE_CANCELLED: _ClassVar[RunState]
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_VALIDATING: RunState
RUN_STATE_REJECTED: RunState
RUN_STATE_SCORING: RunState
RUN_STATE_REPORTING: RunState
RUN_STATE_DONE: RunState
RUN_STATE_FAILED: RunState
RUN_STATE_CREATED: RunState
RUN_STATE_CANCELLED: RunState

class RunSpec(_message.Message):
    __slots__ = ("task", "options", "tables", "input_prefix", "output_name", "submitted_by", "run_id", "skip_validation", "dataset", "dataset_creation_id", "package", "campaign", "competition", "phase", "late")
    TASK_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    INPUT_PREFIX_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_BY_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SKIP_VALIDATION_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    DATASET_CREATION_ID_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_FIELD_NUMBER: _ClassVar[int]
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    LATE_FIELD_NUMBER: _ClassVar[int]
    task: str
    options: bytes
    tables: _containers.RepeatedScalarFieldContainer[str]
    input_prefix: str
    output_name: str
    submitted_by: str
    run_id: str
    skip_validation: bool
    dataset: str
    dataset_creation_id: str
    package: str
    campaign: str
    competition: str
    phase: str
    late: bool
    def __init__(self, task: _Optional[str] = ..., options: _Optional[bytes] = ..., tables: _Optional[_Iterable[str]] = ..., input_prefix: _Optional[str] = ..., output_name: _Optional[str] = ..., submitted_by: _Optional[str] = ..., run_id: _Optional[str] = ..., skip_validation: _Optional[bool] = ..., dataset: _Optional[str] = ..., dataset_creation_id: _Optional[str] = ..., package: _Optional[str] = ..., campaign: _Optional[str] = ..., competition: _Optional[str] = ..., phase: _Optional[str] = ..., late: _Optional[bool] = ...) -> None: ...

class RunStatus(_message.Message):
    __slots__ = ("run_id", "task", "state", "trials_planned", "trials_received", "message", "notes", "submitted_at", "finished_at", "validation", "trials_dead", "owner", "owner_role", "provenance_json", "jobs_planned", "jobs_received", "created_at")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRIALS_PLANNED_FIELD_NUMBER: _ClassVar[int]
    TRIALS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_FIELD_NUMBER: _ClassVar[int]
    TRIALS_DEAD_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    OWNER_ROLE_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_JSON_FIELD_NUMBER: _ClassVar[int]
    JOBS_PLANNED_FIELD_NUMBER: _ClassVar[int]
    JOBS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    task: str
    state: RunState
    trials_planned: int
    trials_received: int
    message: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    submitted_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    validation: ValidationReport
    trials_dead: int
    owner: str
    owner_role: str
    provenance_json: str
    jobs_planned: int
    jobs_received: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, run_id: _Optional[str] = ..., task: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., trials_planned: _Optional[int] = ..., trials_received: _Optional[int] = ..., message: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., validation: _Optional[_Union[ValidationReport, _Mapping]] = ..., trials_dead: _Optional[int] = ..., owner: _Optional[str] = ..., owner_role: _Optional[str] = ..., provenance_json: _Optional[str] = ..., jobs_planned: _Optional[int] = ..., jobs_received: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Finding(_message.Message):
    __slots__ = ("severity", "code", "message", "file", "line")
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    severity: str
    code: str
    message: str
    file: str
    line: int
    def __init__(self, severity: _Optional[str] = ..., code: _Optional[str] = ..., message: _Optional[str] = ..., file: _Optional[str] = ..., line: _Optional[int] = ...) -> None: ...

class ValidationReport(_message.Message):
    __slots__ = ("valid", "findings")
    VALID_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    findings: _containers.RepeatedCompositeFieldContainer[Finding]
    def __init__(self, valid: _Optional[bool] = ..., findings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ...) -> None: ...

class CreateRunRequest(_message.Message):
    __slots__ = ("dataset", "campaign", "competition")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    campaign: str
    competition: str
    def __init__(self, dataset: _Optional[str] = ..., campaign: _Optional[str] = ..., competition: _Optional[str] = ...) -> None: ...

class CreateRunResponse(_message.Message):
    __slots__ = ("run_id", "input_prefix")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_PREFIX_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    input_prefix: str
    def __init__(self, run_id: _Optional[str] = ..., input_prefix: _Optional[str] = ...) -> None: ...

class DeclaredFile(_message.Message):
    __slots__ = ("name", "size", "sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    size: int
    sha256: str
    def __init__(self, name: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class UploadInputsRequest(_message.Message):
    __slots__ = ("run_id", "file", "chunk")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    file: DeclaredFile
    chunk: bytes
    def __init__(self, run_id: _Optional[str] = ..., file: _Optional[_Union[DeclaredFile, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class UploadInputsResponse(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[DeclaredFile]
    def __init__(self, files: _Optional[_Iterable[_Union[DeclaredFile, _Mapping]]] = ...) -> None: ...

class DeclareInputsRequest(_message.Message):
    __slots__ = ("run_id", "files")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    files: _containers.RepeatedCompositeFieldContainer[DeclaredFile]
    def __init__(self, run_id: _Optional[str] = ..., files: _Optional[_Iterable[_Union[DeclaredFile, _Mapping]]] = ...) -> None: ...

class DeclareInputsResponse(_message.Message):
    __slots__ = ("missing",)
    MISSING_FIELD_NUMBER: _ClassVar[int]
    missing: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, missing: _Optional[_Iterable[str]] = ...) -> None: ...

class InputFile(_message.Message):
    __slots__ = ("name", "size", "sha256", "key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    size: int
    sha256: str
    key: str
    def __init__(self, name: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class InputManifest(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[InputFile]
    def __init__(self, files: _Optional[_Iterable[_Union[InputFile, _Mapping]]] = ...) -> None: ...

class SubmitRunRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: RunSpec
    def __init__(self, spec: _Optional[_Union[RunSpec, _Mapping]] = ...) -> None: ...

class SubmitRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunStatus
    def __init__(self, run: _Optional[_Union[RunStatus, _Mapping]] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunStatus
    def __init__(self, run: _Optional[_Union[RunStatus, _Mapping]] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class WatchRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunStatus
    def __init__(self, run: _Optional[_Union[RunStatus, _Mapping]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("state", "page_size", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: RunState
    page_size: int
    page_token: str
    def __init__(self, state: _Optional[_Union[RunState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[RunStatus]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[RunStatus, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunStatus
    def __init__(self, run: _Optional[_Union[RunStatus, _Mapping]] = ...) -> None: ...

class DeleteRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class DeleteRunResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FetchReportRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class ReportManifest(_message.Message):
    __slots__ = ("files", "stdout", "exit_status")
    FILES_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[DeclaredFile]
    stdout: _containers.RepeatedScalarFieldContainer[str]
    exit_status: int
    def __init__(self, files: _Optional[_Iterable[_Union[DeclaredFile, _Mapping]]] = ..., stdout: _Optional[_Iterable[str]] = ..., exit_status: _Optional[int] = ...) -> None: ...

class FetchReportResponse(_message.Message):
    __slots__ = ("manifest", "chunk")
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    manifest: ReportManifest
    chunk: bytes
    def __init__(self, manifest: _Optional[_Union[ReportManifest, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...
