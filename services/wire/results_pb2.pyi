import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Better(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BETTER_UNSPECIFIED: _ClassVar[Better]
    BETTER_HIGHER: _ClassVar[Better]
    BETTER_LOWER: _ClassVar[Better]
    BETTER_NEITHER: _ClassVar[Better]
BETTER_UNSPECIFIED: Better
BETTER_HIGHER: Better
BETTER_LOWER: Better
BETTER_NEITHER: Better

class MetricSpec(_message.Message):
    __slots__ = ("name", "better", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BETTER_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    better: Better
    description: str
    def __init__(self, name: _Optional[str] = ..., better: _Optional[_Union[Better, str]] = ..., description: _Optional[str] = ...) -> None: ...

class MetricValue(_message.Message):
    __slots__ = ("value", "lower", "upper", "interval")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    value: float
    lower: float
    upper: float
    interval: bool
    def __init__(self, value: _Optional[float] = ..., lower: _Optional[float] = ..., upper: _Optional[float] = ..., interval: _Optional[bool] = ...) -> None: ...

class ResultRow(_message.Message):
    __slots__ = ("query", "counts", "values")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MetricValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MetricValue, _Mapping]] = ...) -> None: ...
    QUERY_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    query: str
    counts: _containers.ScalarMap[str, int]
    values: _containers.MessageMap[str, MetricValue]
    def __init__(self, query: _Optional[str] = ..., counts: _Optional[_Mapping[str, int]] = ..., values: _Optional[_Mapping[str, MetricValue]] = ...) -> None: ...

class Curve(_message.Message):
    __slots__ = ("query", "kind", "x", "y")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    query: str
    kind: str
    x: _containers.RepeatedScalarFieldContainer[float]
    y: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, query: _Optional[str] = ..., kind: _Optional[str] = ..., x: _Optional[_Iterable[float]] = ..., y: _Optional[_Iterable[float]] = ...) -> None: ...

class Records(_message.Message):
    __slots__ = ("file", "key", "where")
    FILE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    file: str
    key: _containers.RepeatedScalarFieldContainer[str]
    where: str
    def __init__(self, file: _Optional[str] = ..., key: _Optional[_Iterable[str]] = ..., where: _Optional[str] = ...) -> None: ...

class Results(_message.Message):
    __slots__ = ("task", "primary", "metrics", "rows", "curves", "records", "provenance_json")
    TASK_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    CURVES_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_JSON_FIELD_NUMBER: _ClassVar[int]
    task: str
    primary: str
    metrics: _containers.RepeatedCompositeFieldContainer[MetricSpec]
    rows: _containers.RepeatedCompositeFieldContainer[ResultRow]
    curves: _containers.RepeatedCompositeFieldContainer[Curve]
    records: Records
    provenance_json: str
    def __init__(self, task: _Optional[str] = ..., primary: _Optional[str] = ..., metrics: _Optional[_Iterable[_Union[MetricSpec, _Mapping]]] = ..., rows: _Optional[_Iterable[_Union[ResultRow, _Mapping]]] = ..., curves: _Optional[_Iterable[_Union[Curve, _Mapping]]] = ..., records: _Optional[_Union[Records, _Mapping]] = ..., provenance_json: _Optional[str] = ...) -> None: ...

class GetResultsRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetResultsResponse(_message.Message):
    __slots__ = ("results", "json")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    results: Results
    json: str
    def __init__(self, results: _Optional[_Union[Results, _Mapping]] = ..., json: _Optional[str] = ...) -> None: ...

class GetLeaderboardRequest(_message.Message):
    __slots__ = ("dataset", "task", "metric")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    task: str
    metric: str
    def __init__(self, dataset: _Optional[str] = ..., task: _Optional[str] = ..., metric: _Optional[str] = ...) -> None: ...

class LeaderboardLine(_message.Message):
    __slots__ = ("rank", "run_id", "owner", "label", "submitted_at", "value", "lower", "upper", "ci_source", "overlaps_next")
    RANK_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    CI_SOURCE_FIELD_NUMBER: _ClassVar[int]
    OVERLAPS_NEXT_FIELD_NUMBER: _ClassVar[int]
    rank: int
    run_id: str
    owner: str
    label: str
    submitted_at: _timestamp_pb2.Timestamp
    value: float
    lower: float
    upper: float
    ci_source: str
    overlaps_next: bool
    def __init__(self, rank: _Optional[int] = ..., run_id: _Optional[str] = ..., owner: _Optional[str] = ..., label: _Optional[str] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., value: _Optional[float] = ..., lower: _Optional[float] = ..., upper: _Optional[float] = ..., ci_source: _Optional[str] = ..., overlaps_next: _Optional[bool] = ...) -> None: ...

class LeaderboardRanking(_message.Message):
    __slots__ = ("query", "lines")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    query: str
    lines: _containers.RepeatedCompositeFieldContainer[LeaderboardLine]
    def __init__(self, query: _Optional[str] = ..., lines: _Optional[_Iterable[_Union[LeaderboardLine, _Mapping]]] = ...) -> None: ...

class Leaderboard(_message.Message):
    __slots__ = ("dataset", "task", "metric", "better", "level", "rankings")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    BETTER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    RANKINGS_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    task: str
    metric: str
    better: Better
    level: float
    rankings: _containers.RepeatedCompositeFieldContainer[LeaderboardRanking]
    def __init__(self, dataset: _Optional[str] = ..., task: _Optional[str] = ..., metric: _Optional[str] = ..., better: _Optional[_Union[Better, str]] = ..., level: _Optional[float] = ..., rankings: _Optional[_Iterable[_Union[LeaderboardRanking, _Mapping]]] = ...) -> None: ...

class GetLeaderboardResponse(_message.Message):
    __slots__ = ("leaderboard", "json", "metrics")
    LEADERBOARD_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    leaderboard: Leaderboard
    json: str
    metrics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, leaderboard: _Optional[_Union[Leaderboard, _Mapping]] = ..., json: _Optional[str] = ..., metrics: _Optional[_Iterable[str]] = ...) -> None: ...
