"""Leaderboards: submissions of one task on one dataset, ranked by the task's primary metric (docs/results.md
"Leaderboards").

``leaderboard(entries, dataset=..., task=...)`` ranks ``Entry`` values (a run, its owner, when it was submitted,
a label, its ``Results``) by the primary metric of their results, for the whole run and for every query their
rows hold; every line carries the metric's confidence interval where there is one, and says whether it overlaps
the next line's, so that a reader does not read more into a ranking than the data supports. The ranking is pure:
the local command (``mfscore leaderboard OUTDIR...``) and the cluster build their entries and call it, and both
write the board with ``to_text``, ``to_csv`` and ``to_json``; ``read_trials`` is the one reader, at the edge.

Conventions, stated once:

- **Order.** Better values first (descending for a higher-is-better metric, ascending for a lower-is-better
  one, as its ``MetricSpec.better`` says); undefined values (None) last. Equal values share a rank, the
  competition ranking "1, 2, 2, 4" (the undefined share the last one). Within a rank, the earlier submission
  comes first, then the smaller run id: the order is total, so the same entries always give the same board.
- **Intervals.** A run's own interval where its results have one (``Row.intervals``: detection with ``--ci``);
  otherwise, given the entry's per-trial values of that query (``Entry.trials``), a percentile bootstrap
  interval of their mean (``bootstrap_interval``: ``N_RESAMPLES`` resamples from ``numpy.random.default_rng(SEED)``,
  level ``LEVEL``, the bounds at detection's quantile positions, docs/detection.md §6.6); otherwise none.
- **Separability.** ``Line.overlaps_next`` is True when the line's interval and the next line's share a point,
  False when they do not, None when either has no interval (or for the last line).
- **Systems.** A label is its owner's: a line is shown as ``owner/label`` (``Line.system``), so no team presents
  another's label as its own.
- **One board per metric.** ``leaderboard`` ranks entries that agree on the metric. Where entries come from many
  callers (a cluster), ``primaries`` lists the boards they make and ``reporting`` picks the entries of one, so a run
  ranked by another metric is on that metric's board and never breaks this one.

``paired_bootstrap`` compares two systems on the same trials (what ``mfscore compare`` needs): the difference
of a statistic, its percentile interval and a two-sided bootstrap p-value, from one set of resampled trials.
``trials_from_table`` maps a run's per-trial records file to ``Entry.trials`` (``read_trials`` reads it).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from mfscore.detection.bootstrap import quantile_positions
from mfscore.results import ALL, HIGHER, LOWER, Results, dumps, number

SCHEMA = "mfscore.leaderboard/1"
N_RESAMPLES = 1000   # bootstrap resamples of the per-trial values
SEED = 77            # numpy.random.default_rng(SEED), afresh for every interval (the detection bootstrap's seed)
LEVEL = 0.9          # the confidence level of a bootstrap interval (the default of detection's --ciLevel)
CHUNK = 1 << 22      # resampled values held at once (resamples × trials): 32 MiB of indexes
RUN, BOOTSTRAP = "run", "bootstrap"  # where a line's interval comes from: the run's results, or resampled trials
MATCH = 1e-6         # how far the mean of a records file's values may lie from the row's value (rounding)


@dataclass(frozen=True)
class Entry:
    """One submission: its run id, its owner (team), when it was submitted (ISO 8601), a label (the system's
    name), its results, and optionally its per-trial values of the primary metric per query (``trials``:
    query -> values, an array or a ``pandas.Series`` keyed by trial), from which an interval can be drawn."""

    run: str
    owner: str
    submitted: str
    label: str
    results: Results
    trials: Mapping[str, np.ndarray] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Line:
    """One entry's place in a ranking: ``value`` of the ranked metric (None: undefined, or no row for the query),
    ``interval`` (None: none), ``ci`` where it comes from (``RUN``, ``BOOTSTRAP`` or None), ``overlaps_next``
    whether the interval overlaps the next line's (None: not known), ``counts`` what the row scored."""

    rank: int
    run: str
    owner: str
    label: str
    submitted: str
    value: float | None
    interval: tuple[float, float] | None = None
    ci: str | None = None
    overlaps_next: bool | None = None
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def system(self) -> str:
        """How the board names the entry: ``owner/label``, or the label alone where there is no owner (local)."""
        return f"{self.owner}/{self.label}" if self.owner else self.label


@dataclass(frozen=True)
class Ranking:
    """The ranking of one query's rows (``ALL``: the whole run's)."""

    query: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Leaderboard:
    """Every ranking of a dataset's submissions of one task: the whole run's first (where the runs have one),
    then each other query in the order the entries first name it. ``level``, ``resamples`` and ``seed`` are
    those of the bootstrap intervals."""

    dataset: str
    task: str
    metric: str
    better: str
    rankings: tuple[Ranking, ...]
    level: float = LEVEL
    resamples: int = N_RESAMPLES
    seed: int = SEED

    def ranking(self, query: str = ALL) -> Ranking:
        """The ranking of ``query`` (the whole run's by default); ``KeyError`` if no entry has that row."""
        for ranking in self.rankings:
            if ranking.query == query:
                return ranking
        raise KeyError(query)


# ------------------------------------------------------------------------------------------------ ranking

def leaderboard(entries: Iterable[Entry], *, dataset: str, task: str, metric: str | None = None,
                level: float = LEVEL, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Leaderboard:
    """Rank ``entries`` (all of task ``task``) by ``metric``, by default the primary metric of their results.

    Refuses (``ValueError``) entries of another task, two entries of one run id, entries whose primary metrics
    differ (a detection run with ``--semafor`` ranks by pD@FAR, one without by AUC: name a ``metric`` both
    report), a metric an entry does not report or reports with another direction, and a metric with no better
    direction. The order and the intervals are the module's conventions.
    """
    entries = list(entries)
    if not 0 < level < 1 or n_resamples < 1:
        raise ValueError(f"the bootstrap needs a level between 0 and 1 and at least 1 resample "
                         f"(given {level} and {n_resamples})")
    _check_entries(entries, task)
    name, better = _ranked_metric(entries, metric)
    ordered = sorted(entries, key=_submission_order)
    rankings = []
    for query in _queries(ordered):
        lines = [_line(entry, query, name, level, n_resamples, seed) for entry in ordered]
        rankings.append(Ranking(query, _ranked(lines, better)))
    return Leaderboard(dataset, task, name, better, tuple(rankings), level, n_resamples, seed)


def primaries(entries: Iterable[Entry]) -> list[str]:
    """Every primary metric of ``entries``, the one most owners rank by first (then by name): the boards they
    make. Owners, not runs, so one caller's many runs cannot move another caller's default board."""
    owners: dict[str, set[str]] = {}
    for entry in entries:
        owners.setdefault(entry.results.primary, set()).add(entry.owner)
    return sorted(owners, key=lambda metric: (-len(owners[metric]), metric))


def reporting(entries: Iterable[Entry], metric: str) -> list[Entry]:
    """The entries whose results report ``metric``: those the board of ``metric`` ranks."""
    return [entry for entry in entries if any(spec.name == metric for spec in entry.results.metrics)]


def _check_entries(entries: list[Entry], task: str) -> None:
    others = sorted({e.results.task for e in entries} - {task})
    if others:
        runs = ", ".join(e.run for e in entries if e.results.task != task)
        raise ValueError(f"a {task} leaderboard takes {task} runs only; given {', '.join(others)} ({runs})")
    runs = [e.run for e in entries]
    twice = sorted({run for run in runs if runs.count(run) > 1})
    if twice:
        raise ValueError(f"run {', '.join(twice)} is given more than once")


def _ranked_metric(entries: list[Entry], metric: str | None) -> tuple[str, str]:
    if metric is None:
        primaries = {}
        for entry in entries:
            primaries.setdefault(entry.results.primary, []).append(entry.run)
        if len(primaries) > 1:
            named = "; ".join(f"{p} ({', '.join(runs)})" for p, runs in primaries.items())
            raise ValueError(f"the runs rank by different primary metrics: {named}; name one metric they all report")
        if not primaries:
            return "", HIGHER
        metric = next(iter(primaries))
    directions = set()
    for entry in entries:
        specs = {spec.name: spec for spec in entry.results.metrics}
        if metric not in specs:
            raise ValueError(f"run {entry.run} does not report {metric} (it reports {', '.join(specs)})")
        directions.add(specs[metric].better)
    if len(directions) > 1:
        raise ValueError(f"the runs disagree on which way {metric} is better: {', '.join(sorted(directions))}")
    better = directions.pop() if directions else HIGHER
    if better not in (HIGHER, LOWER):
        raise ValueError(f"{metric} has no better direction ({better}): it cannot rank runs")
    return metric, better


def _submission_order(entry: Entry) -> tuple[datetime, str]:
    """The tie-break: earlier submission first, then the smaller run id."""
    try:
        when = datetime.fromisoformat(entry.submitted)
    except ValueError:
        raise ValueError(f"run {entry.run}: submitted {entry.submitted!r} is not an ISO 8601 time") from None
    return (when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)), entry.run  # naive: UTC


def _queries(entries: list[Entry]) -> list[str]:
    """Every query the entries' rows hold: the whole run's first, then in the order they are first named."""
    queries = list(dict.fromkeys(row.query for entry in entries for row in entry.results.rows))
    return sorted(queries, key=lambda q: q != ALL)  # a stable sort: only ALL moves


def _line(entry: Entry, query: str, metric: str, level: float, n_resamples: int, seed: int) -> Line:
    row = next((r for r in entry.results.rows if r.query == query), None)
    value = None if row is None else number(row.values.get(metric))
    interval, source = None, None
    if value is not None:
        bounds = row.intervals.get(metric)
        if bounds is not None and number(bounds[0]) is not None and number(bounds[1]) is not None:
            interval, source = (float(bounds[0]), float(bounds[1])), RUN
        elif entry.trials is not None and query in entry.trials and len(entry.trials[query]):
            interval = bootstrap_interval(np.asarray(entry.trials[query], dtype=float), level=level,
                                          n_resamples=n_resamples, seed=seed)
            source = BOOTSTRAP
    return Line(0, entry.run, entry.owner, entry.label, entry.submitted, value, interval, source,
                counts={} if row is None else dict(row.counts))


def _ranked(lines: list[Line], better: str) -> tuple[Line, ...]:
    """Lines (in submission order) sorted best first, with competition ranks and the overlap flags."""
    sign = -1.0 if better == HIGHER else 1.0
    ordered = sorted(lines, key=lambda line: (line.value is None, 0.0 if line.value is None else sign * line.value))
    ranked = []
    for position, line in enumerate(ordered):
        tied = position > 0 and ordered[position - 1].value == line.value  # None == None: the undefined share a rank
        rank = ranked[-1].rank if tied else position + 1
        following = ordered[position + 1] if position + 1 < len(ordered) else None
        ranked.append(dataclasses.replace(line, rank=rank, overlaps_next=_overlap(line, following)))
    return tuple(ranked)


def _overlap(line: Line, following: Line | None) -> bool | None:
    if following is None or line.interval is None or following.interval is None:
        return None
    (low, high), (other_low, other_high) = line.interval, following.interval
    return low <= other_high and other_low <= high


# ---------------------------------------------------------------------------------------------- bootstrap

def bootstrap_interval(values: np.ndarray, *, statistic: Callable = np.mean, level: float = LEVEL,
                       n_resamples: int = N_RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over ``values`` (one per trial).

    Resample b draws n trial positions with replacement, row b of ``default_rng(seed).integers(0, n, (B, n))``;
    the bounds are the replicate values at detection's quantile positions of ``level`` (docs/detection.md §6.6:
    at level 0.9 and 1,000 resamples the 51st and 951st smallest). ``statistic`` reduces an array along
    ``axis=-1`` (``np.mean``, ``np.median``). NaN in ``values`` is refused: drop the undefined trials first.
    """
    values = _trial_values(values, "values")
    (replicates,) = _replicates((values,), statistic, n_resamples, seed)
    return _percentile_interval(replicates, level)


@dataclass(frozen=True)
class PairedDifference:
    """``statistic(a) - statistic(b)`` on the same trials, its percentile interval and two-sided p-value."""

    difference: float
    interval: tuple[float, float]
    p_value: float
    trials: int
    resamples: int
    seed: int
    level: float


def paired_bootstrap(a: np.ndarray, b: np.ndarray, *, statistic: Callable = np.mean, level: float = LEVEL,
                     n_resamples: int = N_RESAMPLES, seed: int = SEED) -> PairedDifference:
    """Compare two systems on the same trials: ``a[i]`` and ``b[i]`` are their values on trial i (the caller
    aligns them, e.g. with ``aligned``).

    Each resample draws trial positions as ``bootstrap_interval`` does and takes the difference d*_b of the
    statistic of both systems on those same trials. The interval is the percentile interval of the d*_b; the
    p-value of "no difference" is the share of the d*_b, centred on the observed d, at least as far from 0 as d:
    ``(1 + #{b: |d*_b − d| ≥ |d|}) / (B + 1)`` (never 0; 1 when d is 0).
    """
    a, b = _trial_values(a, "a"), _trial_values(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold the same trials: {a.size} and {b.size} values")
    difference = float(statistic(a, axis=-1) - statistic(b, axis=-1))
    first, second = _replicates((a, b), statistic, n_resamples, seed)
    replicates = first - second
    extreme = int(np.count_nonzero(np.abs(replicates - difference) >= abs(difference)))
    return PairedDifference(difference, _percentile_interval(replicates, level), (1 + extreme) / (n_resamples + 1),
                            int(a.size), n_resamples, seed, level)


def aligned(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Two systems' per-trial values (Series keyed by trial, as ``trials_from_table`` gives them) on the trials
    both have, in key order: the arrays ``paired_bootstrap`` takes."""
    common = a.index.intersection(b.index).sort_values()
    return a.loc[common].to_numpy(dtype=float), b.loc[common].to_numpy(dtype=float)


def _trial_values(values, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-trial values (shape {values.shape})")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} holds NaN or infinite values: drop the undefined trials first")
    return values


def _replicates(columns: tuple[np.ndarray, ...], statistic: Callable, n_resamples: int, seed: int):
    """``statistic`` of every column over each of ``n_resamples`` resamples of the same trial positions, drawn
    a chunk of resamples at a time (the draws are the same as one ``integers(0, n, (B, n))`` call)."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1 (given {n_resamples})")
    n = columns[0].size
    rng = np.random.default_rng(seed)
    out = [np.empty(n_resamples) for _ in columns]
    step = max(1, CHUNK // n)
    for start in range(0, n_resamples, step):
        stop = min(start + step, n_resamples)
        positions = rng.integers(0, n, size=(stop - start, n))
        for column, replicates in zip(columns, out):
            replicates[start:stop] = statistic(column[positions], axis=-1)
    return out


def _percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1 (given {level})")
    ordered = np.sort(replicates[~np.isnan(replicates)])
    if ordered.size == 0:
        return math.nan, math.nan
    low, high = quantile_positions(level, ordered.size)
    return float(ordered[low]), float(ordered[min(high, ordered.size - 1)])


# ------------------------------------------------------------------------------ per-trial records (the edge)

def read_trials(results_file: str | Path, results: Results) -> dict[str, pd.Series]:
    """The per-trial values of ``results``' primary metric, per query, from the records file its results name
    (``Results.records``, relative to the results file's directory); ``{}`` where the task has none in its
    reports (detection: its primary is not a mean over trials) or the file is not there. A records file named
    outside that directory, or one that cannot be read, is an ``InputFileError``."""
    from mfscore.formats.tables import read_table

    from mfscore.errors import InputFileError

    records = results.records
    if records is None or records.where != "reports" or results.task not in TRIAL_VALUES:
        return {}
    directory = Path(results_file).parent.resolve()
    path = (directory / records.file).resolve()  # an absolute name, '..' or a symbolic link may lead out
    if not path.is_relative_to(directory):
        raise InputFileError(f"the records file {records.file!r} is outside the run's directory", path=str(results_file))
    if not path.is_file():
        return {}
    return trials_from_table(results, read_table(path))


def trials_from_table(results: Results, table: pd.DataFrame) -> dict[str, pd.Series]:
    """The per-trial values of the primary metric in a run's records table (``Results.records``), per query of
    the results' rows, keyed by trial; undefined values are left out, as the row's mean leaves them out.

    A query is given values only where the table's trials are the row's and the mean of the values equals the
    row's value (within ``MATCH``: the file holds rounded values): anything else (a ``-q`` query of a mask run,
    whose trials the per-image table does not mark; values rounded to fewer than 6 digits) gets none.
    """
    read = TRIAL_VALUES.get(results.task)
    if read is None or results.records is None:
        return {}
    found = {}
    for query, values in read(results, table).items():
        values = values[values.notna()].astype(float)
        try:
            expected = results.primary_value(query)
        except KeyError:
            continue
        if expected is not None and len(values) and abs(float(values.mean()) - expected) <= MATCH:
            found[query] = values
    return found


def _keyed(table: pd.DataFrame, column: str, key: Iterable[str]) -> pd.Series:
    """``column`` as numbers, keyed by the trial's key columns (a MultiIndex for more than one)."""
    key = [k for k in key if k in table.columns]
    values = pd.to_numeric(table[column], errors="coerce")
    return pd.Series(values.to_numpy(), index=pd.MultiIndex.from_frame(table[key].astype(str)) if len(key) > 1
                     else pd.Index(table[key[0]].astype(str), name=key[0]), name=column)


_QUERY_DIRECTORY = re.compile(r"^index_\d+/")


def _mask_like(results: Results, table: pd.DataFrame) -> dict[str, pd.Series]:
    """Masks (``_mask_scores_perimage.csv``) and video spatial (``_pervideo.csv``): the primary metric's column
    over the scored trials (``Scored``, or ``ProbeScored`` for a splice run's probe masks). The file is the
    whole run's, or with ``-qm`` the first query's (``index_0/``): the values are the whole run's row, or the
    first row's."""
    scored = "ProbeScored" if results.primary == "pOptimumMCC" else "Scored"
    if results.primary not in table or scored not in table:
        return {}
    rows = table[table[scored] == "Y"]
    query = results.rows[0].query if _QUERY_DIRECTORY.match(results.records.file) and results.rows else ALL
    return {query: _keyed(rows, results.primary, results.records.key)}


def _video_temporal(results: Results, table: pd.DataFrame) -> dict[str, pd.Series]:
    """``scores_probes.csv``: ``MCC`` per probe, ``query`` the 0-based position of the run's query, whose row is
    the results' row at that position."""
    if "MCC" not in table or "query" not in table:
        return {}
    positions = pd.to_numeric(table["query"], errors="coerce")
    return {row.query: _keyed(table[positions == i], "MCC", ("ProbeFileID",))
            for i, row in enumerate(results.rows)}


def _provenance_filtering(results: Results, table: pd.DataFrame) -> dict[str, pd.Series]:
    """``trial_scores.csv``: the primary ``NodeRecallAt<k>`` per probe and node type; ``All`` is the whole run."""
    if results.primary not in table or "NodeType" not in table:
        return {}
    return {ALL if kind == "All" else kind: _keyed(table[table["NodeType"] == kind], results.primary,
                                                   ("ProvenanceProbeFileID",))
            for kind in dict.fromkeys(table["NodeType"].astype(str))}


def _provenance_graph(results: Results, table: pd.DataFrame) -> dict[str, pd.Series]:
    """``trial_scores.csv``: ``SimNLO`` per probe (the primary is its mean, ``MeanSimNLO``)."""
    column = results.primary.removeprefix("Mean")
    return {ALL: _keyed(table, column, results.records.key)} if column in table else {}


# task -> its records file's per-trial values of the primary metric. Detection has none: its records are the
# system output, and AUC or pD@FAR is no mean over trials (its intervals come from --ci).
TRIAL_VALUES: dict[str, Callable[[Results, pd.DataFrame], dict[str, pd.Series]]] = {
    "mask": _mask_like,
    "video-spatial": _mask_like,
    "video-temporal": _video_temporal,
    "provenance-filtering": _provenance_filtering,
    "provenance-graph": _provenance_graph,
}


# ------------------------------------------------------------------------------------------------ writers

def to_dict(board: Leaderboard) -> dict:
    """The board as JSON-able data, keys in a fixed order (``from_dict`` reads it back)."""
    return {
        "schema": SCHEMA, "dataset": board.dataset, "task": board.task, "metric": board.metric,
        "better": board.better,
        "bootstrap": {"level": board.level, "resamples": board.resamples, "seed": board.seed},
        "rankings": [{"query": ranking.query, "lines": [_line_dict(line) for line in ranking.lines]}
                     for ranking in board.rankings],
    }


def _line_dict(line: Line) -> dict:
    return {"rank": line.rank, "run": line.run, "owner": line.owner, "label": line.label,
            "submitted": line.submitted, "value": number(line.value),
            "interval": None if line.interval is None else [number(line.interval[0]), number(line.interval[1])],
            "ci": line.ci, "overlaps_next": line.overlaps_next,
            "counts": {name: int(count) for name, count in line.counts.items()}}


def from_dict(data: dict) -> Leaderboard:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not an mfscore leaderboard ({SCHEMA}): schema {data.get('schema')!r}")
    bootstrap = data["bootstrap"]
    return Leaderboard(
        data["dataset"], data["task"], data["metric"], data["better"],
        tuple(Ranking(r["query"], tuple(_line_from(line) for line in r["lines"])) for r in data["rankings"]),
        float(bootstrap["level"]), int(bootstrap["resamples"]), int(bootstrap["seed"]))


def _line_from(data: dict) -> Line:
    interval = data["interval"]
    return Line(int(data["rank"]), data["run"], data["owner"], data["label"], data["submitted"],
                None if data["value"] is None else float(data["value"]),
                None if interval is None else (_float(interval[0]), _float(interval[1])),
                data["ci"], data["overlaps_next"], {k: int(v) for k, v in data["counts"].items()})


def _float(value) -> float:
    return math.nan if value is None else float(value)


def to_json(board: Leaderboard) -> bytes:
    """One line of JSON, the same bytes for the same board (``mfscore.results.dumps``)."""
    return dumps(to_dict(board))


def from_json(data: bytes | str) -> Leaderboard:
    return from_dict(json.loads(data))


CSV_SEPARATOR = "|"  # as the report tables (mfscore.formats.tables): MediScore's readers take it


def to_csv(board: Leaderboard) -> str:
    """A ``|``-separated table as the reports are (header; empty cells for none; floats as ``repr``; Y/N): a line
    per query and entry, best first within a query; ``Query`` empty for the whole run. Columns: Query, Rank,
    System, Owner, Run, Submitted, the metric, ``<metric>_CI_LOWER``, ``<metric>_CI_UPPER``, CISource
    (run, bootstrap), OverlapsNext."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=CSV_SEPARATOR, lineterminator="\n")
    metric = board.metric
    writer.writerow(["Query", "Rank", "System", "Owner", "Run", "Submitted", metric, f"{metric}_CI_LOWER",
                     f"{metric}_CI_UPPER", "CISource", "OverlapsNext"])
    for ranking in board.rankings:
        for line in ranking.lines:
            low, high = line.interval if line.interval is not None else (None, None)
            writer.writerow([ranking.query, line.rank, line.label, line.owner, line.run, line.submitted,
                             _cell(line.value), _cell(low), _cell(high), line.ci or "",
                             "" if line.overlaps_next is None else "Y" if line.overlaps_next else "N"])
    return out.getvalue()


def _cell(value) -> str:
    value = number(value)
    return "" if value is None else repr(value)


def to_text(board: Leaderboard) -> list[str]:
    """The board for a terminal: a title, the first ranking (the whole run's) as an aligned table of systems
    (``Line.system``), a mark ``~`` where a line's interval overlaps the next line's, and with more queries a table
    of query × system (value and rank)."""
    arrow = "↑" if board.better == HIGHER else "↓"
    title = (f"{board.task} leaderboard, dataset {board.dataset}: {board.metric} {arrow} "
             f"({board.better} is better)")
    if not board.rankings:
        return [title, "  no run to rank"]
    first = board.rankings[0]
    header = ["rank", "system", "run", "submitted", board.metric, "CI", ""]
    body = []
    for line in first.lines:
        interval = "" if line.interval is None else f"[{_number(line.interval[0])}, {_number(line.interval[1])}]"
        body.append([str(line.rank), line.system, line.run, line.submitted,
                     _number(line.value), interval + (f" {line.ci}" if line.ci else ""),
                     "~" if line.overlaps_next else ""])
    lines = [title, f"query: {_query(first.query)}", *_aligned([header, *body], {0, len(header) - 3})]
    if any(line.overlaps_next for line in first.lines):
        lines.append("~ its interval overlaps the next line's: the two are not separable on this data")
    if len(board.rankings) > 1:
        table = [["query", *(line.system for line in first.lines)]]  # the systems in the first ranking's order
        for ranking in board.rankings:
            by_run = {line.run: line for line in ranking.lines}
            table.append([_query(ranking.query), *(f"{_number(by_run[line.run].value)} ({by_run[line.run].rank})"
                                                  for line in first.lines)])
        lines += ["", f"per query: {board.metric} (rank)", *_aligned(table, set(range(1, len(table[0]))))]
    return lines


def _aligned(table: list[list[str]], numbers: set[int]) -> list[str]:
    """Each column padded to one width: the ``numbers`` columns right-aligned, the others left-aligned."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(cell.rjust(width) if i in numbers else cell.ljust(width)
                             for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in table]


def _query(text: str, most: int = 40) -> str:
    if text == ALL:
        return "all"
    return text if len(text) <= most else text[:most - 1] + "…"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
