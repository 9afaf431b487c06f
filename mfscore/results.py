"""The results model: what a run found, as typed values that every face reads (docs/results.md).

A task's report returns one ``Results`` beside MediScore's report files (which it leaves as they are): the
headline metrics it declares (``MetricSpec``: name, better direction, one sentence), one ``Row`` of their values
per query or partition, the ROC points where the task has them, and where its per-trial records are (what a
paired comparison of two systems needs). The terminal summary, ``--json``, the ``<prefix>_results.json`` file,
the cluster's run status and the Python API all read this one value.

``to_json`` is canonical: keys in a fixed order, floats as ``repr`` writes them, NaN as ``null``; the same
results give the same bytes embedded and on the cluster (``text=True``: the same document as a ``str``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Literal, overload

SCHEMA = "mfscore.results/1"
HIGHER, LOWER, NEITHER = "higher", "lower", "neither"  # which way a metric is better ("neither": a count, a rate)
ALL = ""  # the row of the whole run (no query)


@dataclass(frozen=True)
class MetricSpec:
    """A headline metric a task reports: its name (as in the report files), which way is better, and what it is."""

    name: str
    better: str
    description: str


@dataclass(frozen=True)
class Row:
    """One query's, partition's or the whole run's metrics (``query`` is ``ALL`` for the whole run).

    ``values`` maps a metric's name to its value (None where it is undefined); ``intervals`` maps it to its
    confidence bounds, where they were asked for; ``counts`` says how much was scored (trials, probes, ...).
    """

    query: str
    values: dict[str, float | None]
    counts: dict[str, int] = field(default_factory=dict)
    intervals: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Curve:
    """An ROC curve of one query: false-alarm rates ``x`` and detection rates ``y``, in increasing x."""

    query: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    kind: str = "roc"


@dataclass(frozen=True)
class Records:
    """Where the per-trial records are: ``file`` in the run's reports (``where="reports"``) or its inputs
    (``"inputs"``, named by its key ``sys/...``), one row per trial identified by the ``key`` columns."""

    file: str
    key: tuple[str, ...]
    where: str = "reports"


@dataclass(frozen=True)
class Results:
    """A run's results; ``primary`` names the metric its evaluation plan ranks systems by.

    ``row(query)`` is a query's ``Row`` (the whole run's by default), ``primary_value(query)`` its primary
    metric, ``spec(name)`` a metric's ``MetricSpec``; ``to_dict``/``from_dict`` and ``to_json``/``from_json``
    convert to and from the results file's JSON (docs/results.md).

    Examples
    --------
    >>> from mfscore.results import MetricSpec, Results, Row
    >>> results = Results("detection", "AUC", (MetricSpec("AUC", "higher", "area under the ROC curve"),),
    ...                   (Row("", {"AUC": 0.8}, {"targets": 190, "nontargets": 210}),))
    >>> results.primary_value(), results.row().counts["targets"], results.spec("AUC").better
    (0.8, 190, 'higher')
    >>> text = results.to_json(text=True)
    >>> text[:51]
    '{"schema": "mfscore.results/1", "task": "detection"'
    >>> Results.from_json(text) == results == Results.from_json(results.to_json())
    True
    """

    task: str
    primary: str
    metrics: tuple[MetricSpec, ...]
    rows: tuple[Row, ...]
    curves: tuple[Curve, ...] = ()
    records: Records | None = None

    def __post_init__(self):
        names = [m.name for m in self.metrics]
        if self.primary not in names:
            raise ValueError(f"the primary metric {self.primary!r} is not one of the task's metrics {names}")

    def spec(self, name: str) -> MetricSpec:
        """The declaration of the metric ``name``; ``KeyError`` if the task reports no such metric."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(name)

    def row(self, query: str = ALL) -> Row:
        """The row of ``query`` (the whole run's by default); ``KeyError`` if the run has none."""
        for row in self.rows:
            if row.query == query:
                return row
        raise KeyError(query)

    def primary_value(self, query: str = ALL) -> float | None:
        """The primary metric's value in the row of ``query`` (the whole run's by default); None where it is
        undefined; ``KeyError`` if the run has no such row."""
        return self.row(query).values.get(self.primary)

    def to_dict(self, run: dict | None = None) -> dict:
        """The results as JSON-able data; with ``run`` (a run's provenance, ``mfscore.run_record``) under "run"."""
        data = {
            "schema": SCHEMA,
            "task": self.task,
            "primary": self.primary,
            "metrics": [{"name": m.name, "better": m.better, "description": m.description} for m in self.metrics],
            "rows": [_row_dict(row, self.metrics) for row in self.rows],
            "curves": [{"query": c.query, "kind": c.kind, "x": [number(v) for v in c.x], "y": [number(v) for v in c.y]}
                       for c in self.curves],
            "records": None if self.records is None else {"file": self.records.file, "key": list(self.records.key),
                                                          "where": self.records.where},
        }
        if run is not None:
            data["run"] = run
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Results:
        """The results ``to_dict`` gave (a ``"run"`` key is ignored); ``ValueError`` for another schema."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not mfscore results ({SCHEMA}): schema {data.get('schema')!r}")
        records = data.get("records")
        return cls(
            task=data["task"], primary=data["primary"],
            metrics=tuple(MetricSpec(m["name"], m["better"], m["description"]) for m in data["metrics"]),
            rows=tuple(Row(r["query"], _floats(r["values"]), dict(r["counts"]),
                           {k: (number(v[0]), number(v[1])) for k, v in r["intervals"].items()}) for r in data["rows"]),
            curves=tuple(Curve(c["query"], tuple(map(_float, c["x"])), tuple(map(_float, c["y"])), c["kind"])
                         for c in data["curves"]),
            records=None if records is None else Records(records["file"], tuple(records["key"]), records["where"]))

    @overload
    def to_json(self, run: dict | None = None, *, text: Literal[False] = False) -> bytes: ...

    @overload
    def to_json(self, run: dict | None = None, *, text: Literal[True]) -> str: ...

    def to_json(self, run: dict | None = None, *, text: bool = False) -> bytes | str:
        """The canonical bytes of the results file (``<prefix>_results.json``; with ``run``, of ``--json``); with
        ``text``, the same document as a ``str``."""
        data = dumps(self.to_dict(run))
        return data.decode() if text else data

    @classmethod
    def from_json(cls, data: bytes | str) -> Results:
        """The results in JSON ``data`` (bytes or ``str``, as ``to_json`` gives them)."""
        return cls.from_dict(json.loads(data))


def dumps(data) -> bytes:
    """One line of JSON (curves have thousands of points; ``jq .`` indents it), keys in the order given, no NaN
    (``json.dumps`` would write the non-JSON ``NaN``)."""
    return (json.dumps(data, allow_nan=False, ensure_ascii=False) + "\n").encode()


def _row_dict(row: Row, metrics: tuple[MetricSpec, ...]) -> dict:
    order = [m.name for m in metrics]
    return {
        "query": row.query,
        "counts": {k: int(v) for k, v in row.counts.items()},
        "values": {name: number(row.values[name]) for name in order if name in row.values},
        "intervals": {name: [number(row.intervals[name][0]), number(row.intervals[name][1])]
                      for name in order if name in row.intervals},
    }


def number(value) -> float | None:
    """A metric's value (or a report cell) as the model keeps it: a float, or None where it is undefined (None, NaN, an empty cell)."""
    if value is None or value == "":
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _float(value) -> float:
    return math.nan if value is None else float(value)


def _floats(values: dict) -> dict[str, float | None]:
    return {k: (None if v is None else float(v)) for k, v in values.items()}
