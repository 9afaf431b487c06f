"""The results model (``mfscore.results``) as the typed messages of proto/mfscore/v1/results.proto, and back.

The core knows no protobuf; this is the one place the two meet. A metric's value and its interval travel together
(``MetricValue``): an absent value is an undefined metric (the model's None), ``interval`` says whether the run
computed an interval, whose absent bounds are then undefined. A metric with an interval has a value (defined or
not), as every task reports them. Back from the wire the model equals the one ``Results.from_json`` reads from the
results file (``Results.__eq__``: an undefined bound is None, an undefined curve point ``math.nan``, on both sides).
"""

from __future__ import annotations

import math

from mfscore.results import HIGHER, LOWER, NEITHER, Curve, MetricSpec, Records, Results, Row
from mfscore.services.wire import results_pb2

_BETTER = {HIGHER: results_pb2.BETTER_HIGHER, LOWER: results_pb2.BETTER_LOWER, NEITHER: results_pb2.BETTER_NEITHER}
_FROM_BETTER = {value: name for name, value in _BETTER.items()}


def results_message(results: Results, provenance_json: str = "") -> results_pb2.Results:
    """``results`` (with the run's provenance, as JSON) as a ``Results`` message."""
    return results_pb2.Results(
        task=results.task, primary=results.primary,
        metrics=[results_pb2.MetricSpec(name=m.name, better=_BETTER[m.better], description=m.description)
                 for m in results.metrics],
        rows=[_row_message(row) for row in results.rows],
        curves=[results_pb2.Curve(query=c.query, kind=c.kind, x=c.x, y=c.y) for c in results.curves],
        records=None if results.records is None else results_pb2.Records(
            file=results.records.file, key=results.records.key, where=results.records.where),
        provenance_json=provenance_json)


def _row_message(row: Row) -> results_pb2.ResultRow:
    message = results_pb2.ResultRow(query=row.query, counts={k: int(v) for k, v in row.counts.items()})
    for name in {**row.values, **row.intervals}:
        value = message.values[name]
        if _defined(row.values.get(name)):
            value.value = row.values[name]
        if name in row.intervals:
            value.interval = True
            lower, upper = row.intervals[name]
            if _defined(lower):
                value.lower = lower
            if _defined(upper):
                value.upper = upper
    return message


def _defined(bound) -> bool:
    return bound is not None and not math.isnan(bound)


def results_from_message(message: results_pb2.Results) -> Results:
    """The model a ``Results`` message carries (its provenance_json aside)."""
    rows = []
    for row in message.rows:
        values = {name: (v.value if v.HasField("value") else None) for name, v in row.values.items()}
        intervals = {name: (v.lower if v.HasField("lower") else None, v.upper if v.HasField("upper") else None)
                     for name, v in row.values.items() if v.interval}
        rows.append(Row(row.query, values, dict(row.counts), intervals))
    return Results(
        task=message.task, primary=message.primary,
        metrics=tuple(MetricSpec(m.name, _FROM_BETTER[m.better], m.description) for m in message.metrics),
        rows=tuple(rows),
        curves=tuple(Curve(c.query, tuple(map(_nan_once, c.x)), tuple(map(_nan_once, c.y)), c.kind)
                     for c in message.curves),
        records=Records(message.records.file, tuple(message.records.key), message.records.where)
        if message.HasField("records") else None)


def _nan_once(value: float) -> float:
    """NaN as ``math.nan`` itself, as ``Results.from_dict`` reads it, so equal curves compare equal."""
    return math.nan if math.isnan(value) else value


def leaderboard_message(board) -> results_pb2.Leaderboard:
    """A ``mfscore.leaderboard.Leaderboard`` as a ``Leaderboard`` message (the lines' ISO submission times as
    timestamps; an undefined value, bound or overlap absent)."""
    from datetime import datetime

    from google.protobuf.timestamp_pb2 import Timestamp

    def line_message(line) -> results_pb2.LeaderboardLine:
        submitted = Timestamp()
        submitted.FromDatetime(datetime.fromisoformat(line.submitted))
        message = results_pb2.LeaderboardLine(rank=line.rank, run_id=line.run, owner=line.owner, label=line.label,
                                              submitted_at=submitted, ci_source=line.ci or "")
        if _defined(line.value):
            message.value = line.value
        if line.interval is not None:
            if _defined(line.interval[0]):
                message.lower = line.interval[0]
            if _defined(line.interval[1]):
                message.upper = line.interval[1]
        if line.overlaps_next is not None:
            message.overlaps_next = line.overlaps_next
        return message

    return results_pb2.Leaderboard(
        dataset=board.dataset, task=board.task, metric=board.metric, better=_BETTER[board.better], level=board.level,
        rankings=[results_pb2.LeaderboardRanking(query=r.query, lines=[line_message(line) for line in r.lines])
                  for r in board.rankings])
