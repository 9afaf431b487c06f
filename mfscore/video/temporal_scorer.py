"""The Video Temporal Localization scorer: the input tables to one record per (query, probe) (docs/video.md §A.2–§A.4).

Which probes are scored (docs/video.md §A.3): the probe-journal join ⋈ journal mask ⋈ index; each query selects
rows of that table (``*`` selects all), its probes in order of first appearance; a probe is scored
when its system ``ProbeStatus`` is ``Processed`` (every probe with ``no_opt_out``).

What a probe is scored on (docs/video.md §A.4): the reference is the union of the ``VideoFrame`` lists of the
selected journal rows; the system is the union of its ``VideoFrameSegments``; the system no-score
set the union of ``VideoFrameOptOutSegments`` (unless ``video_opt_out`` is off). The counts come
from ``temporal_counts`` over ``[1, FrameCount]``.

Truncation (docs/video.md §A.6): MediScore always clips system and no-score intervals at FrameCount, whatever
``--truncate`` says. mfscore follows the flag: with ``truncate`` (or ``mediscore_compat``) they are
clipped; without it an interval ending after FrameCount is bad input. An interval starting before
frame 1, or a reference interval outside the video, is bad input in every mode (MediScore's range
assertion).

Everything here reads files and checks them; the arithmetic is in ``interval_algebra`` and
``temporal_confusion``. Bad input raises ``InputFileError``/``QueryError``/``OptionError`` with one
sentence naming the file and line, before any output exists.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mfscore import query as query_parser
from mfscore.errors import InputFileError, QueryError
from mfscore.formats.intervals import IntervalSyntaxError, parse_interval_list
from mfscore.formats.tables import NA_TEXTS, file_line, read_header, read_table, read_text_columns, reads_as_text
from mfscore.video.interval_algebra import (
    Interval,
    collars,
    drop_zero_length,
    truncate,
    union,
)
from mfscore.video.options import ALL, TemporalOptions
from mfscore.video.temporal_confusion import TemporalCounts, temporal_counts

if TYPE_CHECKING:
    import pandas as pd

PROCESSED = "Processed"       # docs/video.md §A.3.4: the only status scored under opt-out
JOURNAL_KEYS = ["JournalName", "StartNodeID", "EndNodeID"]
SYSTEM = "VideoFrameSegments"
OPT_OUT = "VideoFrameOptOutSegments"
REFERENCE = "VideoFrame"
# Row positions carried through the joins. Names that start and end with "__" are refused by the
# query parser, so a query can never see them.
_JOURNAL_LINE = "__journal_line__"
_INDEX_LINE = "__index_line__"
_SYSTEM_LINE = "__system_line__"


@dataclass(frozen=True)
class TemporalInputs:
    """Where the input tables are (docs/video.md §A.1): ``reference`` is only checked to exist; MediScore uses none of it."""

    index: Path
    journal_mask: Path
    probe_journal_join: Path
    system: Path
    reference: Path | None = None


@dataclass(frozen=True)
class ProbeRecord:
    """One probe scored under one query: what the report (or a distributed aggregator) needs.

    ``ordinal`` is the probe's position among the query's probes (first appearance in the joined
    table), so records merged in any order sort back into MediScore's row order.
    """

    query: int
    ordinal: int
    probe_id: str
    counts: TemporalCounts

    @property
    def mcc(self) -> float:
        return self.counts.mcc

    def to_dict(self) -> dict:
        return {"query": self.query, "ordinal": self.ordinal, "ProbeFileID": self.probe_id,
                **self.counts.to_dict(), "MCC": self.mcc}

    @classmethod
    def from_dict(cls, data: dict) -> ProbeRecord:
        """The inverse of ``to_dict``; ``MCC`` is derived from the counts, so a stored one is ignored."""
        return cls(query=int(data["query"]), ordinal=int(data["ordinal"]), probe_id=str(data["ProbeFileID"]),
                   counts=TemporalCounts.from_dict(data))


@dataclass(frozen=True)
class ProbeIntervals:
    """One probe under one query, as scored: its interval sets after union and truncation.

    The work of a video-temporal job, and what the log and the timeline plots show. ``ordinal`` is
    the probe's position among the query's scored probes; ``collars`` are derived from ``reference``
    and ``collar``. ``confusion_codes((1, frame_count), reference, system, collar=collar,
    no_score=no_score)`` gives the record's coding.
    """

    query: int
    ordinal: int
    probe_id: str
    frame_count: int
    collar: int | None
    reference: tuple[Interval, ...]
    system: tuple[Interval, ...]
    collars: tuple[Interval, ...]
    no_score: tuple[Interval, ...]


@dataclass
class TemporalSelection:
    """What planning found: one ``ProbeIntervals`` per (query, scored probe), in MediScore's row order."""

    queries: tuple[str, ...]
    probes: list[ProbeIntervals] = field(default_factory=list)
    not_scored: dict[str, str] = field(default_factory=dict)  # probe -> its ProbeStatus, when opted out


# --------------------------------------------------------------------------------------------------
# Reading


def _with_lines(table: pd.DataFrame, column: str) -> pd.DataFrame:
    table = table.copy()
    table[column] = [file_line(i) for i in range(len(table))]
    return table


def _one_row_per_probe(table: pd.DataFrame, path: Path, line_column: str, what: str) -> pd.DataFrame:
    """Drop lines repeated verbatim (harmless: MediScore unions them); two different lines for one probe are an error."""
    content = [c for c in table.columns if c != line_column]
    table = table.loc[~table.duplicated(subset=content)]
    clash = table["ProbeFileID"].duplicated(keep=False)
    if clash.any():
        rows = table.loc[clash]
        probe = rows["ProbeFileID"].iloc[0]
        lines = rows.loc[rows["ProbeFileID"] == probe, line_column].tolist()
        raise InputFileError(f"probe {probe} has {len(lines)} different {what} rows (lines "
                             f"{', '.join(map(str, lines))}); keep one", path=str(path), line=lines[1])
    return table


def _parse_cell(text: object, *, path: Path, line: int, column: str, probe: str) -> list[Interval]:
    # docs/video.md §A.2: interval lists such as [[1,61]] or []; JSON only (formats/intervals.py)
    if not isinstance(text, str):
        raise InputFileError(f"the {column} cell of probe {probe} is empty; write [] for no interval",
                             path=str(path), line=line)
    try:
        return parse_interval_list(text)
    except IntervalSyntaxError as exc:
        raise InputFileError(f"the {column} cell of probe {probe} is not a JSON list of integer frame pairs "
                             f"({exc})", path=str(path), line=line) from None


def _frame_count(value: object, *, path: Path, line: int, probe: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number == int(number) and number >= 1):
        raise InputFileError(f"FrameCount {value!r} of probe {probe} is not a positive whole number of frames",
                             path=str(path), line=line)
    return int(number)


def _evaluate(node: query_parser.Node, merged: pd.DataFrame, text: str, inputs: TemporalInputs):
    try:
        return query_parser.evaluate(node, merged, text=text)
    except QueryError as exc:
        raise QueryError(f"{exc.message}; a query sees the columns of {inputs.probe_journal_join}, "
                         f"{inputs.journal_mask} and {inputs.index}") from None


def _parse_queries(texts: tuple[str, ...]) -> list[query_parser.Node | None]:
    return [None if text.strip() == ALL else query_parser.parse(text) for text in texts]


# --------------------------------------------------------------------------------------------------
# Checking interval bounds (the truncation decision, docs/video.md §A.6)


@dataclass(frozen=True)
class _OutOfRange:
    line: int
    probe: str
    column: str
    interval: Interval
    before_first: bool   # starts before frame 1 (bad in every mode)


def _out_of_range(intervals: list[Interval], frame_count: int, clips: bool) -> tuple[Interval, bool] | None:
    for a, b in intervals:
        low, high = min(a, b), max(a, b)
        if low < 1:
            return (a, b), True
        if high > frame_count and not clips:
            return (a, b), False
    return None


def _bounds_error(problems: list[_OutOfRange], system_path: Path, frame_counts: dict[str, int]) -> InputFileError:
    first = problems[0]
    rows = len({p.line for p in problems})
    a, b = first.interval
    where = f"probe {first.probe} has the interval [{a}, {b}] in {first.column}"
    if first.before_first:
        return InputFileError(f"{where}, which starts before frame 1 (frames are numbered from 1; {rows} row(s) "
                              "have intervals outside the video)", path=str(system_path), line=first.line)
    return InputFileError(f"{where}, which ends after the video's last frame (FrameCount "
                          f"{frame_counts[first.probe]}); {rows} row(s) have intervals past FrameCount: "
                          "rerun with --truncate to clip them at FrameCount", path=str(system_path), line=first.line)


# --------------------------------------------------------------------------------------------------
# Scoring


@dataclass(frozen=True)
class _Tables:
    """M (docs/video.md §A.3.1) and the index and system rows by probe (with their file lines), read with or
    without pandas. ``joined`` holds M's probe, reference and journal-line columns; ``rows_of`` gives a query's
    rows of M (positions) and its probes in order of first appearance, or None when it cannot say (on text)."""

    joined: dict[str, list]
    index_rows: dict[str, dict]
    system_rows: dict[str, dict]
    rows_of: Callable[[str, query_parser.Node | None], tuple[Sequence[int], list[str]] | None]


class _NotPlain(Exception):
    """The tables, or a query, are not read here without pandas: ``_frame_tables`` reads them."""


def _system_required(options: TemporalOptions) -> tuple[str, ...]:
    return ("ProbeFileID", SYSTEM, *(("ProbeStatus",) if options.opt_out else ()),
            *((OPT_OUT,) if options.video_opt_out else ()))


def _frame_tables(inputs: TemporalInputs, options: TemporalOptions) -> _Tables:
    """The tables read by pandas: every table the library parses, every cell typed as pandas types it."""
    import pandas as pd

    from mfscore.formats.joins import join

    if inputs.reference is not None:
        read_header(inputs.reference)  # docs/video.md §A.1: read but unused; it must still be a readable table
    index = _with_lines(read_table(inputs.index, required=("ProbeFileID", "FrameCount")), _INDEX_LINE)
    index = _one_row_per_probe(index, inputs.index, _INDEX_LINE, "index")
    journal = _with_lines(read_table(inputs.journal_mask, required=(*JOURNAL_KEYS, REFERENCE)), _JOURNAL_LINE)
    if "ProbeFileID" in journal.columns:
        raise InputFileError("the journal mask has a ProbeFileID column; it is joined by "
                             f"{', '.join(JOURNAL_KEYS)} alone and must not name probes", path=str(inputs.journal_mask))
    probe_join = read_table(inputs.probe_journal_join, required=("ProbeFileID", *JOURNAL_KEYS))
    system = _with_lines(read_table(inputs.system, raw_text=True, required=_system_required(options)), _SYSTEM_LINE)
    system = _one_row_per_probe(system, inputs.system, _SYSTEM_LINE, "system output")
    # docs/video.md §A.3.1: M = probejournaljoin ⋈ journalmask ⋈ index (inner joins)
    merged = join(join(probe_join, journal, JOURNAL_KEYS, "inner"), index, ["ProbeFileID"], "inner")

    def rows_of(text: str, node: query_parser.Node | None) -> tuple[Sequence[int], list[str]]:
        if node is None:
            return range(len(merged)), list(pd.unique(merged["ProbeFileID"]))
        hits = _evaluate(node, merged, text, inputs)
        return hits.nonzero()[0].tolist(), list(pd.unique(merged["ProbeFileID"].loc[hits]))

    return _Tables({name: merged[name].tolist() for name in ("ProbeFileID", REFERENCE, _JOURNAL_LINE)},
                   dict(zip(index["ProbeFileID"], index.to_dict("records"))),
                   dict(zip(system["ProbeFileID"], system.to_dict("records"))), rows_of)


_WHOLE_NUMBER = re.compile(r"[0-9]{1,15}\Z")


def _text_rows(table: dict[str, list[str]], line_column: str) -> dict[str, dict]:
    """``_one_row_per_probe`` on text: lines repeated verbatim dropped; two different lines for a probe are left
    to pandas (which may still find them equal as values, and otherwise words the error)."""
    rows: dict[str, dict] = {}
    seen: set[tuple[str, ...]] = set()
    for position, cells in enumerate(zip(*table.values())):
        if cells not in seen:
            seen.add(cells)
            row = {**dict(zip(table, cells)), line_column: file_line(position)}
            if row["ProbeFileID"] in rows:
                raise _NotPlain
            rows[row["ProbeFileID"]] = row
    return rows


def _keys(table: dict[str, list[str]], keys: list[str]) -> list[tuple[str, ...]]:
    """Each row's join key; ``_NotPlain`` for a missing-value spelling in one (pandas reads it as NaN, and NaN
    keys match each other)."""
    cells = list(zip(*(table[k] for k in keys)))
    if any(c in NA_TEXTS for key in cells for c in key):
        raise _NotPlain
    return cells


def _text_tables(inputs: TemporalInputs, options: TemporalOptions) -> _Tables:
    """The tables as text (``read_text_columns``), where pandas would read the values used as this very text;
    ``_NotPlain`` otherwise. Bad input raises as usual; the caller then leaves both to ``_frame_tables``."""
    if inputs.reference is not None:
        read_text_columns(inputs.reference)
    index = read_text_columns(inputs.index, required=("ProbeFileID", "FrameCount"))
    journal = read_text_columns(inputs.journal_mask, required=(*JOURNAL_KEYS, REFERENCE))
    probe_join = read_text_columns(inputs.probe_journal_join, required=("ProbeFileID", *JOURNAL_KEYS))
    system = read_text_columns(inputs.system, required=_system_required(options))
    if not all(map(_WHOLE_NUMBER.match, index["FrameCount"])) or "" in system["ProbeFileID"]:
        raise _NotPlain  # a FrameCount pandas reads as another number; a system row pandas reads with no probe
    journal_only, index_only = set(journal) - set(JOURNAL_KEYS), set(index) - {"ProbeFileID"}
    if set(probe_join) & journal_only or (set(probe_join) | journal_only) & index_only or "ProbeFileID" in journal:
        raise _NotPlain  # pandas would suffix the names the joined tables share
    index_rows = _text_rows(index, _INDEX_LINE)
    if NA_TEXTS.intersection(index_rows):
        raise _NotPlain  # a probe pandas reads as NaN
    journal_at = {key: position for position, key in enumerate(_keys(journal, JOURNAL_KEYS))}
    if len(journal_at) != len(journal[REFERENCE]):
        raise _NotPlain  # a journal edge on two rows: pandas' merge orders the matches

    # docs/video.md §A.3.1: M = probejournaljoin ⋈ journalmask ⋈ index (inner joins), in the probe-journal join's order
    matches = [(p, journal_at[key[1:]], index_rows[key[0]])
               for p, key in enumerate(_keys(probe_join, ["ProbeFileID", *JOURNAL_KEYS]))
               if key[1:] in journal_at and key[0] in index_rows]
    joined = {name: [cells[p] for p, _, _ in matches] for name, cells in probe_join.items()}
    joined |= {name: [journal[name][j] for _, j, _ in matches] for name in journal_only}
    joined |= {name: [row[name] for _, _, row in matches] for name in index_only}
    joined[_JOURNAL_LINE] = [file_line(j) for _, j, _ in matches]
    files = {**journal, **index, **probe_join}  # the file column each of M's columns came from

    def rows_of(text: str, node: query_parser.Node | None) -> tuple[Sequence[int], list[str]] | None:
        if node is None:
            return range(len(matches)), list(dict.fromkeys(joined["ProbeFileID"]))
        # a query sees the columns it names as pandas types the whole file column each came from
        as_text = {name: joined[name] for name in query_parser.column_names(node)
                   if name in joined and name in files and reads_as_text(name, files[name])}
        hits = query_parser.evaluate_text(node, as_text, len(matches))
        if hits is None:
            return None
        rows = [p for p, hit in enumerate(hits) if hit]
        return rows, list(dict.fromkeys(joined["ProbeFileID"][p] for p in rows))

    return _Tables(joined, index_rows, _text_rows(system, _SYSTEM_LINE), rows_of)


def _selected(tables: _Tables, options: TemporalOptions, nodes: list[query_parser.Node | None],
              inputs: TemporalInputs) -> list[tuple[Sequence[int], list[str]]]:
    """Each query's rows of M and its probes by first appearance, all in the system output (docs/video.md §A.3.2–§A.3.3)."""
    selections = []
    for q, (text, node) in enumerate(zip(options.queries, nodes)):
        selection = tables.rows_of(text, node)
        if selection is None:
            raise _NotPlain
        probes = selection[1]
        missing = [p for p in probes if p not in tables.system_rows]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise InputFileError(f"probe {missing[0]}{more}, selected by query {q} ({text}), "
                                 "is missing from the system output", path=str(inputs.system))
        selections.append(selection)
    return selections


def _system_sets(scored: dict[str, int], system_rows: dict[str, dict], options: TemporalOptions,
                 path: Path) -> dict[tuple[str, str], list[Interval]]:
    """The system and no-score sets of each scored probe, unioned, then clipped or checked (docs/video.md §A.4, §A.6)."""
    columns = (SYSTEM, OPT_OUT) if options.video_opt_out else (SYSTEM,)
    raw: dict[tuple[str, str], list[Interval]] = {}
    problems: list[_OutOfRange] = []
    for probe, frame_count in scored.items():
        row = system_rows[probe]
        for column in columns:
            raw[probe, column] = _parse_cell(row[column], path=path, line=row[_SYSTEM_LINE], column=column,
                                             probe=probe)
            bad = _out_of_range(raw[probe, column], frame_count, options.clips)
            if bad is not None:
                problems.append(_OutOfRange(row[_SYSTEM_LINE], probe, column, *bad))
    if problems:
        raise _bounds_error(problems, path, scored)
    # docs/video.md §A.4 / §A.6: MediScore always truncates; mfscore only with --truncate or --mediscore-compat
    return {(probe, column): truncate(union(raw.get((probe, column), [])), frame_count) if options.clips
            else union(raw.get((probe, column), []))
            for probe, frame_count in scored.items() for column in (SYSTEM, OPT_OUT)}


def _references(tables: _Tables, rows: Sequence[int], scored: dict[str, int], path: Path,
                parsed: dict[int, list[Interval]]) -> dict[str, list[Interval]]:
    """The reference intervals of each scored probe: its selected journal rows' VideoFrame lists (docs/video.md §A.4).

    ``parsed`` caches the lists by journal-mask line across queries."""
    found: dict[str, list[Interval]] = {}
    probes, texts, lines = (tables.joined[name] for name in ("ProbeFileID", REFERENCE, _JOURNAL_LINE))
    for probe, text, line in ((probes[r], texts[r], lines[r]) for r in rows):
        if probe not in scored:
            continue
        if line not in parsed:
            parsed[line] = _parse_cell(text, path=path, line=line, column=REFERENCE, probe=probe)
        bad = _out_of_range(parsed[line], scored[probe], clips=False)
        if bad is not None:
            (a, b), _ = bad
            raise InputFileError(f"the reference interval [{a}, {b}] of probe {probe} lies outside the video's "
                                 f"frames [1, {scored[probe]}]", path=str(path), line=line)
        found.setdefault(probe, []).extend(parsed[line])
    return found


def _probe_intervals(query: int, ordinal: int, probe: str, frame_count: int, reference: list[Interval],
                     system: list[Interval], no_score: list[Interval], collar: int | None) -> ProbeIntervals:
    ref = union(reference)
    zone = union(collars(ref, collar, frame_count)) if collar is not None else []
    return ProbeIntervals(query=query, ordinal=ordinal, probe_id=probe, frame_count=frame_count, collar=collar,
                          reference=tuple(ref), system=tuple(system), collars=tuple(drop_zero_length(zone)),
                          no_score=tuple(no_score))


def select_video_temporal(inputs: TemporalInputs, options: TemporalOptions) -> TemporalSelection:
    """Read and check the tables; the interval sets of each (query, scored probe), in MediScore's row order.

    Plain tables are read and joined as text, without pandas (issue 28: pandas' import is most of the
    command); any table, query or bad input not decided that way is read by pandas, which gives the
    answer or the error (tests compare both ways on the same inputs)."""
    nodes = _parse_queries(options.queries)  # a query outside the grammar fails before any file is read
    try:
        return _selection(_text_tables(inputs, options), options, nodes, inputs)
    except (_NotPlain, InputFileError):
        return _selection(_frame_tables(inputs, options), options, nodes, inputs)


def _selection(tables: _Tables, options: TemporalOptions, nodes: list[query_parser.Node | None],
               inputs: TemporalInputs) -> TemporalSelection:
    selections = _selected(tables, options, nodes, inputs)
    selected = TemporalSelection(queries=tuple(options.queries))

    # docs/video.md §A.3.4: opt-out; scored maps each scored probe to its FrameCount
    scored: dict[str, int] = {}
    for probe in (p for _, probes in selections for p in probes):
        status = tables.system_rows[probe].get("ProbeStatus")
        if options.opt_out and status != PROCESSED:
            selected.not_scored[probe] = status if isinstance(status, str) else ""
        elif probe not in scored:
            row = tables.index_rows[probe]
            scored[probe] = _frame_count(row["FrameCount"], path=inputs.index, line=row[_INDEX_LINE], probe=probe)
    sets = _system_sets(scored, tables.system_rows, options, inputs.system)

    parsed: dict[int, list[Interval]] = {}
    for q, (rows, probes) in enumerate(selections):
        references = _references(tables, rows, scored, inputs.journal_mask, parsed)
        for ordinal, probe in enumerate(p for p in probes if p in scored):
            selected.probes.append(_probe_intervals(q, ordinal, probe, scored[probe], references.get(probe, []),
                                                    sets[probe, SYSTEM], sets[probe, OPT_OUT], options.collar))
    return selected


def score_probe(probe: ProbeIntervals) -> ProbeRecord:
    """The probe's record (docs/video.md §A.5); the sets are unioned already, so the counts are the raw lists'."""
    counts = temporal_counts(probe.frame_count, probe.reference, probe.system, collar=probe.collar,
                             no_score=probe.no_score)
    return ProbeRecord(query=probe.query, ordinal=probe.ordinal, probe_id=probe.probe_id, counts=counts)
