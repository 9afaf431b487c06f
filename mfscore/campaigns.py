"""Evaluation campaigns: teams submit packages to competitions in phases, with quotas, a public/private split of the
probes and leaderboards (docs/campaigns.md).

Pure: ``load_campaign`` reads and checks a campaign file (JSON, or YAML), against the published JSON Schema
(``schema()``, ``mfscore/formats/schemas/campaign.json``) and then the rules no schema says (names unique, tasks and
datasets, options, goals, phase windows); ``with_split`` and ``add_split_column`` make a run score the public and
the private probes as two rows of one run (``split_rows``); ``board`` ranks a phase's entries with
``mfscore.leaderboard``'s ranking and lists the entries it does not rank with their mark. The cluster calls these;
nothing here reads or writes anything but the reference table ``add_split_column`` is given.

Regenerate the schema file with ``python -m mfscore.campaigns``.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

from mfscore import tasks
from mfscore.errors import OptionError
from mfscore.results import ALL, HIGHER, LOWER, Results, Row, number

SPLIT_COLUMN = "CampaignSplit"
PUBLIC, PRIVATE = "public", "private"

_SCHEMA = "mfscore.campaign/1"
_BOARD_SCHEMA = "mfscore.campaign-board/1"
_SCHEMA_PATH = Path(__file__).parent / "formats" / "schemas" / "campaign.json"
_NAME = "^[a-z0-9][a-z0-9._-]{0,63}$"
_LOWER = r"[a-z0-9](?:[a-z0-9_-]|\.(?!\.)){0,63}(?<!\.)"
_DATASET = re.compile(rf"(?:{_LOWER}/)?{_LOWER}@[1-9][0-9]{{0,8}}")  # services/common/run_layout.py check_dataset
_PROBE = "ProbeFileID"
_PLACEHOLDERS = {"system output": "package/x.csv", "package directory": "package"}  # tasks.base package kinds
_LATE = ("refuse", "mark")
_BOARDS = ("public", "team", "hidden")
_RELEASES = ("aggregate", "per-trial", "open")
_PARTITION = f"{SPLIT_COLUMN}==['{PUBLIC}','{PRIVATE}']"
_MARKS = ("baseline", "late", "unscored", "contrastive", "superseded")


class CampaignError(OptionError):
    """A campaign file, or a call on a campaign, refused: one sentence naming the field path
    (``phases[1].end: the phase ends before it starts (...)``)."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}", option=where, reason=reason)

    def __reduce__(self):
        return type(self), (self.option, self.reason)


# --------------------------------------------------------------------------------------------------- values

@dataclass(frozen=True)
class Team:
    name: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class Goal:
    """Met when the metric's value is at least ``threshold`` (``better`` "higher") or at most it ("lower")."""

    metric: str
    threshold: float
    better: str

    def met(self, value: float | None) -> bool:
        if value is None:
            return False
        return value >= self.threshold if self.better == HIGHER else value <= self.threshold


@dataclass(frozen=True)
class Competition:
    """A task on a dataset (``name@version``); ``options`` are the task's options as canonical JSON field names,
    without the fields a package fills in (``Task.package_fields``)."""

    name: str
    task: str
    dataset: str
    options: dict
    primary: str | None
    goal: Goal | None


@dataclass(frozen=True)
class Split:
    """Which probes are public: by "hash" of ``salt`` and the probe id in ``column`` (below ``fraction``), or by
    "column" (the row's ``column`` value is one of ``public``)."""

    by: str
    fraction: float | None
    salt: str
    column: str
    public: tuple[str, ...]

    def is_public(self, value: str) -> bool:
        if self.by == "column":
            return value in self.public
        digest = hashlib.sha256((self.salt + value).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.fraction


@dataclass(frozen=True)
class Phase:
    """A window of submissions, ``start`` inclusive and ``end`` exclusive (aware UTC datetimes)."""

    name: str
    start: datetime
    end: datetime
    quota_per_day: int | None
    quota_per_phase: int | None
    late: str
    board: str
    split: Split | None
    release: str

    def holds(self, when: datetime) -> bool:
        return self.start <= when < self.end


@dataclass(frozen=True)
class Campaign:
    name: str
    teams: tuple[Team, ...]
    competitions: tuple[Competition, ...]
    phases: tuple[Phase, ...]

    def team_of(self, member: str) -> Team | None:
        return next((team for team in self.teams if member in team.members), None)

    def competition(self, name: str) -> Competition | None:
        return next((c for c in self.competitions if c.name == name), None)

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def phase_at(self, when: datetime) -> Phase | None:
        """The phase whose window holds ``when``."""
        when = _aware(when)
        return next((p for p in self.phases if p.holds(when)), None)

    def last_ended(self, when: datetime) -> Phase | None:
        """The latest phase that ended at or before ``when``."""
        when = _aware(when)
        ended = [p for p in self.phases if p.end <= when]
        return max(ended, key=lambda p: p.end) if ended else None

    def to_json(self) -> bytes:
        """Canonical bytes (sorted keys, one line) that ``load_campaign`` reads back to an equal campaign."""
        return _canonical(_campaign_dict(self))

    def public_view(self) -> dict:
        """What a team may see: names, dates, quotas, late policy, board visibility and release, the competitions'
        task, dataset, primary metric and goal; no split details, no options, no team's members."""
        return {
            "name": self.name,
            "teams": [team.name for team in self.teams],
            "competitions": [{"name": c.name, "task": c.task, "dataset": c.dataset, "primary": c.primary,
                              "goal": _goal_dict(c.goal)} for c in self.competitions],
            "phases": [{"name": p.name, "start": _time_text(p.start), "end": _time_text(p.end),
                        "quota_per_day": p.quota_per_day, "quota_per_phase": p.quota_per_phase, "late": p.late,
                        "board": p.board, "release": p.release, "split": p.split is not None}
                       for p in self.phases],
        }


def _aware(when: datetime) -> datetime:
    if when.tzinfo is None:
        raise CampaignError("when", f"{when.isoformat()} has no time zone (give an aware datetime)")
    return when.astimezone(timezone.utc)


def _time_text(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _canonical(data) -> bytes:
    return (json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            + "\n").encode()


def _goal_dict(goal: Goal | None) -> dict | None:
    return None if goal is None else {"metric": goal.metric, "threshold": goal.threshold, "better": goal.better}


def _campaign_dict(campaign: Campaign) -> dict:
    def split(s: Split | None) -> dict | None:
        if s is None:
            return None
        if s.by == "hash":
            return {"by": s.by, "fraction": s.fraction, "salt": s.salt, "column": s.column}
        return {"by": s.by, "column": s.column, "public": list(s.public)}

    return {
        "schema": _SCHEMA, "name": campaign.name,
        "teams": [{"name": t.name, "members": list(t.members)} for t in campaign.teams],
        "competitions": [{"name": c.name, "task": c.task, "dataset": c.dataset, "options": c.options,
                          "primary": c.primary, "goal": _goal_dict(c.goal)} for c in campaign.competitions],
        "phases": [{"name": p.name, "start": _time_text(p.start), "end": _time_text(p.end),
                    "quota_per_day": p.quota_per_day, "quota_per_phase": p.quota_per_phase, "late": p.late,
                    "board": p.board, "split": split(p.split), "release": p.release} for p in campaign.phases],
    }


# --------------------------------------------------------------------------------------------------- schema

def schema() -> dict:
    """The JSON Schema of a campaign file (draft 2020-12): its structure; ``load_campaign`` checks the rest."""
    def obj(properties: dict, required: list[str]) -> dict:
        return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}

    name = {"type": "string", "pattern": _NAME}
    optional_count = {"type": ["integer", "null"], "minimum": 1}
    goal = obj({"metric": {"type": "string", "minLength": 1}, "threshold": {"type": "number"},
                "better": {"enum": [HIGHER, LOWER]}}, ["metric", "threshold", "better"])
    split = {
        **obj({"by": {"enum": ["hash", "column"]},
               "fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
               "salt": {"type": "string", "minLength": 1},
               "column": {"type": "string", "minLength": 1, "not": {"const": SPLIT_COLUMN}},
               "public": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}}},
              ["by"]),
        "type": ["object", "null"],
        "if": {"properties": {"by": {"const": "hash"}}},
        "then": {"required": ["fraction", "salt"], "properties": {"public": False}},
        "else": {"required": ["column", "public"], "properties": {"fraction": False, "salt": False}},
    }
    time = {"type": "string", "format": "date-time"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://mfscore.invalid/schemas/campaign.json",
        "title": "mfscore campaign",
        "description": "An evaluation campaign (docs/campaigns.md): its teams, competitions and phases. mfscore "
                       "also checks what a schema cannot say: unique names and members, the dataset's grammar, "
                       "the options as the task's, goal metrics, ordered phases.",
        **obj({
            "schema": {"const": _SCHEMA},
            "name": name,
            "teams": {"type": "array", "items": obj({
                "name": name,
                "members": {"type": "array", "minItems": 1,
                            "items": {"type": "string", "minLength": 1, "maxLength": 256}}}, ["name", "members"])},
            "competitions": {"type": "array", "minItems": 1, "items": obj({
                "name": name, "task": {"enum": list(tasks.names())},
                "dataset": {"type": "string", "minLength": 3, "maxLength": 140},
                "options": {"type": "object"},
                "primary": {"type": ["string", "null"], "minLength": 1},
                "goal": {**goal, "type": ["object", "null"]}}, ["name", "task", "dataset", "options"])},
            "phases": {"type": "array", "minItems": 1, "items": obj({
                "name": name, "start": time, "end": time,
                "quota_per_day": optional_count, "quota_per_phase": optional_count,
                "late": {"enum": list(_LATE)}, "board": {"enum": list(_BOARDS)},
                "split": split,
                "release": {"enum": list(_RELEASES)}}, ["name", "start", "end", "late", "board", "release"])},
        }, ["name", "teams", "competitions", "phases"]),
    }


def _schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def _field_path(parts: Iterable) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "campaign"


# --------------------------------------------------------------------------------------------------- loading

def load_campaign(data: bytes, *, source: str = "campaign file") -> Campaign:
    """The campaign in ``data`` (JSON, or YAML when it is not JSON), checked against ``schema()`` and then the
    rules of docs/campaigns.md; ``CampaignError`` naming the field path of the first refusal."""
    raw = _parse(data, source)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(raw))
    if error is not None:
        raise CampaignError(_field_path(error.absolute_path), _schema_reason(error))
    teams = _teams(raw["teams"])
    competitions = tuple(_competition(c, f"competitions[{i}]") for i, c in enumerate(raw["competitions"]))
    phases = _phases(raw["phases"])
    _unique([c.name for c in competitions], "competitions", "competition")
    if any(p.split is not None for p in phases):
        for i, competition in enumerate(competitions):
            _splittable(competition, f"competitions[{i}]")
    return Campaign(raw["name"], teams, competitions, phases)


def _schema_reason(error: jsonschema.ValidationError) -> str:
    """The schema's refusal in words where jsonschema's own are obscure."""
    shown = repr(error.instance)[:80]
    if error.validator == "pattern" and error.schema.get("pattern") == _NAME:
        return f"{shown} is not a name: 1-64 lowercase letters, digits, '.', '_' or '-' starting with a letter or digit"
    if error.validator == "not" and error.schema.get("not") == {"const": SPLIT_COLUMN}:
        return f"{SPLIT_COLUMN} is the column the split writes: read another"
    if error.validator is None and error.schema is False:
        return f"{shown} has no place in this kind of split (hash: fraction and salt; column: public)"
    return error.message


def _parse(data: bytes, source: str):
    try:
        return json.loads(data)
    except (ValueError, TypeError, RecursionError):
        pass
    try:
        import yaml
    except ImportError:
        raise CampaignError(source, "it is not JSON, and reading YAML needs PyYAML (pip install pyyaml)") from None

    class Loader(yaml.SafeLoader):
        """YAML without its timestamps: a phase's times stay text, read as JSON's are."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    try:
        raw = yaml.load(data, Loader=Loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise CampaignError(source, f"it is neither JSON nor YAML (YAML error{line}: "
                            f"{getattr(error, 'problem', None) or error})") from None
    if not isinstance(raw, dict):
        raise CampaignError(source, "a campaign is an object (a mapping), not " + type(raw).__name__)
    return raw


def _unique(names: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise CampaignError(f"{where}[{i}].name", f"the {what} {name!r} is named twice")
        seen.add(name)


def _teams(raw: list[dict]) -> tuple[Team, ...]:
    _unique([t["name"] for t in raw], "teams", "team")
    owner: dict[str, str] = {}
    for i, team in enumerate(raw):
        for j, member in enumerate(team["members"]):
            if member in owner:
                raise CampaignError(f"teams[{i}].members[{j}]",
                                    f"{member!r} is a member of team {owner[member]!r} already")
            owner[member] = team["name"]
    return tuple(Team(t["name"], tuple(t["members"])) for t in raw)


def _competition(raw: dict, where: str) -> Competition:
    task = tasks.get(raw["task"])
    if not _DATASET.fullmatch(raw["dataset"]):
        raise CampaignError(f"{where}.dataset", f"{raw['dataset'][:80]!r} is not name@version (a name of 1-64 "
                            "lowercase letters, digits, '.', '_' or '-' starting with a letter or digit, optionally "
                            "after its owner's name and '/'; a version 1, 2, 3, ...)")
    _typed_options(task, raw["options"], f"{where}.options")
    metrics = re.compile(f"(?:{task.metric_names})")
    primary = raw.get("primary")
    if primary is not None and not metrics.fullmatch(primary):
        raise CampaignError(f"{where}.primary", f"{primary!r} is no metric of the {task.name} task")
    goal = raw.get("goal")
    if goal is not None:
        if not metrics.fullmatch(goal["metric"]):
            raise CampaignError(f"{where}.goal.metric", f"{goal['metric']!r} is no metric of the {task.name} task")
        goal = Goal(goal["metric"], float(goal["threshold"]), goal["better"])
    return Competition(raw["name"], raw["task"], raw["dataset"], dict(raw["options"]), primary, goal)


def _typed_options(task, options: dict, where: str):
    """The task's options value of ``options`` with the package fields filled with placeholders."""
    for name in task.package_fields:
        if name in options:
            raise CampaignError(f"{where}.{name}", "a submitted package fills this option in: leave it out")
    filled = {**options, **{name: _PLACEHOLDERS[kind] for name, kind in task.package_fields.items()}}
    try:
        return tasks.decode_options(task, json.dumps(filled).encode())
    except OptionError as error:
        raise CampaignError(where, error.sentence()) from None


def competition_options(competition: Competition):
    """The competition's typed options, its package fields still placeholders (a package run fills them)."""
    return _typed_options(tasks.get(competition.task), competition.options, "options")


def _splittable(competition: Competition, where: str) -> None:
    from mfscore.release import selecting_options
    from mfscore.tasks.reference_layout import ReferenceLayout

    task = tasks.get(competition.task)
    if not issubclass(task.options_type, ReferenceLayout):
        raise CampaignError(f"{where}.task", f"a phase splits the probes, and the {task.name} task cannot score a "
                            "split (detection, mask and video-spatial can)")
    flags = selecting_options(_typed_options(task, competition.options, f"{where}.options"))
    if flags:
        raise CampaignError(f"{where}.options", f"a phase splits the probes, which {', '.join(flags)} would "
                            "choose among: leave them out")


def _time(text: str, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CampaignError(where, f"{text[:80]!r} is not an ISO 8601 time (2026-01-02T00:00:00Z)") from None
    if when.tzinfo is None:
        raise CampaignError(where, f"{text!r} has no time zone (write {text}Z for UTC)")
    return when.astimezone(timezone.utc)


def _phases(raw: list[dict]) -> tuple[Phase, ...]:
    _unique([p["name"] for p in raw], "phases", "phase")
    phases: list[Phase] = []
    for i, item in enumerate(raw):
        where = f"phases[{i}]"
        start, end = _time(item["start"], f"{where}.start"), _time(item["end"], f"{where}.end")
        if end <= start:
            raise CampaignError(f"{where}.end", f"the phase ends before it starts "
                                f"({_time_text(end)} <= {_time_text(start)})")
        if phases and start < phases[-1].end:
            raise CampaignError(f"{where}.start", f"the phase starts before phase {phases[-1].name!r} ends "
                                f"({_time_text(start)} < {_time_text(phases[-1].end)})")
        split = item.get("split")
        if split is not None:
            split = Split(split["by"], None if split.get("fraction") is None else float(split["fraction"]),
                          split.get("salt", ""), split.get("column", _PROBE), tuple(split.get("public", ())))
        phases.append(Phase(item["name"], start, end, item.get("quota_per_day"), item.get("quota_per_phase"),
                            item["late"], item["board"], split, item["release"]))
    return tuple(phases)


# --------------------------------------------------------------------------------------------------- the split

def with_split(task_name: str, options):
    """``options`` (the task's typed options) with the query partition ``CampaignSplit==['public','private']``:
    the run scores the public and the private probes as two rows (``split_rows``)."""
    from mfscore.release import selecting_options

    flags = selecting_options(options)
    if flags:
        raise CampaignError("options", f"a split run cannot also choose trials with {', '.join(flags)}")
    if task_name == "detection":
        scoring = dataclasses.replace(options.scoring, query_mode="qp", queries=(_PARTITION,))
        return dataclasses.replace(options, scoring=scoring)
    if task_name == "mask":
        return dataclasses.replace(options, report=dataclasses.replace(options.report, partition=_PARTITION))
    if task_name == "video-spatial":
        return dataclasses.replace(options, query_partition=_PARTITION)
    raise CampaignError("task", f"the {task_name} task cannot score a split (detection, mask and video-spatial can)")


def add_split_column(reference_path: str, split: Split) -> None:
    """Rewrite the ``|``-separated reference table in place with a last column ``CampaignSplit`` (public or private
    per row, from ``split``); the other fields' text is kept."""
    path = Path(reference_path)
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file, delimiter="|"))
    if not rows:
        raise CampaignError("split.column", f"{path} is empty: it has no column {split.column}")
    header = rows[0]
    if SPLIT_COLUMN in header:
        raise CampaignError("split", f"{path} has a column {SPLIT_COLUMN} already")
    if split.column not in header:
        raise CampaignError("split.column", f"{path} has no column {split.column}")
    position = header.index(split.column)
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise CampaignError("split", f"{path}, line {line}: {len(row)} fields where the header has "
                                f"{len(header)}")
        row.append(PUBLIC if split.is_public(row[position]) else PRIVATE)
    header.append(SPLIT_COLUMN)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", newline="", encoding="utf-8") as file:
            csv.writer(file, delimiter="|", lineterminator="\n").writerows(rows)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _split_query(split: str) -> str:
    return f"{SPLIT_COLUMN}=='{split}'"


def split_rows(results: Results) -> dict[str, Row]:
    """The results' row of each split: ``{"public": row, "private": row}``."""
    found = {}
    for split in (PUBLIC, PRIVATE):
        try:
            found[split] = results.row(_split_query(split))
        except KeyError:
            rows = ", ".join(repr(row.query) for row in results.rows) or "none"
            raise CampaignError("results", f"no row is the {split} split's (the rows: {rows}): was the run "
                                "made with with_split?") from None
    return found


# --------------------------------------------------------------------------------------------------- boards

@dataclass(frozen=True)
class Entry:
    """A submission: ``system`` is its SubID's SYS (``p-...``, ``c-...``), ``version`` its VERSION; ``results``
    None until it is scored."""

    run_id: str
    team: str
    member: str
    system: str
    version: int
    submitted_at: datetime
    late: bool
    baseline: bool
    results: Results | None
    description: str


@dataclass(frozen=True)
class _Line:
    """A board's line: ``rank`` None and a ``mark`` for a line listed, not ranked; ``goal_met`` None without a
    goal."""

    rank: int | None
    team: str
    member: str
    system: str
    version: int
    run_id: str
    submitted_at: datetime
    value: float | None
    interval: tuple[float, float] | None
    overlaps_next: bool | None
    goal_met: bool | None
    mark: str
    description: str


@dataclass(frozen=True)
class CampaignBoard:
    """A phase's board of one competition on one split (None: the whole run, in a phase without a split)."""

    campaign: str
    competition: str
    task: str
    dataset: str
    phase: str
    visibility: str
    split: str | None
    metric: str
    better: str
    goal: Goal | None
    ranked: tuple[_Line, ...]
    listed: tuple[_Line, ...]


def board(campaign: Campaign, competition: Competition, phase: Phase, entries: Iterable[Entry],
          split: str | None) -> CampaignBoard:
    """Each team's primary system at its highest version scored and on time, ranked by the competition's primary
    metric (or the results') on ``split``'s row; every other entry listed with its mark (``_MARKS``)."""
    from mfscore import leaderboard as lb
    from mfscore.validation.findings import ValidationReport
    from mfscore.validation.submission_names import check_subid

    entries = list(entries)
    if phase.split is None and split is not None:
        raise CampaignError("split", f"phase {phase.name!r} has no split: rank the whole run (None)")
    if phase.split is not None and split not in (PUBLIC, PRIVATE):
        raise CampaignError("split", f"phase {phase.name!r} splits the probes: rank {PUBLIC!r} or {PRIVATE!r}, "
                            f"not {split!r}")
    for i, entry in enumerate(entries):
        report = ValidationReport()
        check_subid(report, f"{entry.system}_{entry.version}", file=entry.run_id, what="system")
        if report.errors:
            raise CampaignError(f"entries[{i}]", report.errors[0].message)
    query = ALL if split is None else _split_query(split)
    marks = _marks(entries)
    candidates = [e for e in entries if not marks[e.run_id]]
    metric = competition.primary or next((e.results.primary for e in candidates), None) or next(
        (e.results.primary for e in entries if e.results is not None), "")
    ranked_entries = [lb.Entry(e.run_id, e.team, _time_text(e.submitted_at), e.system, dataclasses.replace(
        e.results, rows=tuple(row for row in e.results.rows if row.query == query))) for e in candidates]
    try:
        ranking = lb.leaderboard(ranked_entries, dataset=competition.dataset, task=competition.task,
                                 metric=metric or None)
    except ValueError as error:
        raise CampaignError("entries", str(error)) from None
    better = ranking.better if candidates else _better(entries, metric)
    by_run = {e.run_id: e for e in entries}
    lines = ranking.rankings[0].lines if ranking.rankings else ()
    ranked = tuple(_line(by_run[line.run], query, competition.goal, metric, line.rank, line.value, line.interval,
                         line.overlaps_next, "") for line in lines)
    ranked += tuple(_line(e, query, competition.goal, metric, None, None, None, None, "")
                    for e in candidates if e.run_id not in {line.run for line in lines})  # no row of the split
    listed = tuple(_line(e, query, competition.goal, metric, None, *_value(e, query, metric), None, marks[e.run_id])
                   for e in sorted((e for e in entries if marks[e.run_id]),
                                   key=lambda e: (e.team, e.system, -e.version, e.submitted_at, e.run_id)))
    return CampaignBoard(campaign.name, competition.name, competition.task, competition.dataset, phase.name,
                         phase.board, split, metric, better, competition.goal, ranked, listed)


def _marks(entries: list[Entry]) -> dict[str, str]:
    """Each entry's mark ('' for the one primary system a team ranks)."""
    marks = {}
    for entry in entries:
        if entry.baseline:
            marks[entry.run_id] = "baseline"
        elif entry.late:
            marks[entry.run_id] = "late"
        elif entry.results is None:
            marks[entry.run_id] = "unscored"
        elif entry.system.startswith("c-"):
            marks[entry.run_id] = "contrastive"
        else:
            marks[entry.run_id] = ""
    best: dict[str, Entry] = {}
    for entry in entries:
        if not marks[entry.run_id]:
            held = best.get(entry.team)
            if held is None or _newer(entry, held):
                best[entry.team] = entry
    for entry in entries:
        if not marks[entry.run_id] and best[entry.team] is not entry:
            marks[entry.run_id] = "superseded"
    return marks


def _newer(entry: Entry, other: Entry) -> bool:
    return (entry.version, entry.submitted_at, entry.run_id) > (other.version, other.submitted_at, other.run_id)


def _better(entries: list[Entry], metric: str) -> str:
    for entry in entries:
        if entry.results is not None:
            for spec in entry.results.metrics:
                if spec.name == metric:
                    return spec.better
    return HIGHER


def _row(entry: Entry, query: str) -> Row | None:
    if entry.results is None:
        return None
    return next((row for row in entry.results.rows if row.query == query), None)


def _value(entry: Entry, query: str, metric: str) -> tuple[float | None, tuple[float, float] | None]:
    row = _row(entry, query)
    if row is None:
        return None, None
    value = number(row.values.get(metric))
    bounds = row.intervals.get(metric)
    if value is None or bounds is None or number(bounds[0]) is None or number(bounds[1]) is None:
        return value, None
    return value, (float(bounds[0]), float(bounds[1]))


def _line(entry: Entry, query: str, goal: Goal | None, metric: str, rank, value, interval, overlaps_next,
          mark: str) -> _Line:
    met = None
    if goal is not None:
        row = _row(entry, query)
        met = goal.met(None if row is None else number(row.values.get(goal.metric)))
    return _Line(rank, entry.team, entry.member, entry.system, entry.version, entry.run_id,
                 entry.submitted_at.astimezone(timezone.utc), value, interval, overlaps_next, met, mark,
                 entry.description)


def _line_dict(line: _Line) -> dict:
    return {"rank": line.rank, "team": line.team, "member": line.member, "system": line.system,
            "version": line.version, "run_id": line.run_id, "submitted_at": _time_text(line.submitted_at),
            "value": number(line.value),
            "interval": None if line.interval is None else [line.interval[0], line.interval[1]],
            "overlaps_next": line.overlaps_next, "goal_met": line.goal_met, "mark": line.mark,
            "description": line.description}


def _line_from(data: dict) -> _Line:
    interval = data["interval"]
    return _Line(data["rank"], data["team"], data["member"], data["system"], int(data["version"]), data["run_id"],
                 _time(data["submitted_at"], "submitted_at"), number(data["value"]),
                 None if interval is None else (float(interval[0]), float(interval[1])), data["overlaps_next"],
                 data["goal_met"], data["mark"], data["description"])


def board_json(board: CampaignBoard) -> bytes:
    """The board as canonical JSON (``board_from_json`` reads it back)."""
    return _canonical({
        "schema": _BOARD_SCHEMA, "campaign": board.campaign, "competition": board.competition, "task": board.task,
        "dataset": board.dataset, "phase": board.phase, "visibility": board.visibility, "split": board.split,
        "metric": board.metric, "better": board.better, "goal": _goal_dict(board.goal),
        "ranked": [_line_dict(line) for line in board.ranked], "listed": [_line_dict(line) for line in board.listed],
    })


def board_from_json(data: bytes | str) -> CampaignBoard:
    raw = json.loads(data)
    if not isinstance(raw, dict) or raw.get("schema") != _BOARD_SCHEMA:
        raise CampaignError("board", f"not a campaign board ({_BOARD_SCHEMA})")
    goal = raw["goal"]
    return CampaignBoard(raw["campaign"], raw["competition"], raw["task"], raw["dataset"], raw["phase"],
                         raw["visibility"], raw["split"], raw["metric"], raw["better"],
                         None if goal is None else Goal(goal["metric"], float(goal["threshold"]), goal["better"]),
                         tuple(map(_line_from, raw["ranked"])), tuple(map(_line_from, raw["listed"])))


def _cell(value) -> str:
    value = number(value)
    return "" if value is None else repr(value)


def _yes(flag: bool | None) -> str:
    return "" if flag is None else "Y" if flag else "N"


def board_csv(board: CampaignBoard, *, descriptions: bool) -> str:
    """A ``|``-separated table, as the report tables are: the ranked lines best first, then the listed ones with
    their Mark; GoalMet and OverlapsNext Y/N (empty: not known); the systems' descriptions as a last column when
    ``descriptions``. Members are not shown."""
    import io

    out = io.StringIO()
    writer = csv.writer(out, delimiter="|", lineterminator="\n")
    metric = board.metric
    extra = ["Description"] if descriptions else []
    writer.writerow(["Rank", "Team", "System", "Version", "Run", "Submitted", metric, f"{metric}_CI_LOWER",
                     f"{metric}_CI_UPPER", "OverlapsNext", "GoalMet", "Mark", *extra])
    for line in (*board.ranked, *board.listed):
        low, high = line.interval if line.interval is not None else (None, None)
        writer.writerow(["" if line.rank is None else line.rank, line.team, line.system, line.version, line.run_id,
                         _time_text(line.submitted_at), _cell(line.value), _cell(low), _cell(high),
                         _yes(line.overlaps_next), _yes(line.goal_met), line.mark]
                        + ([line.description] if descriptions else []))
    return out.getvalue()


def _title(board: CampaignBoard) -> str:
    return f"{board.campaign}: {board.competition}, phase {board.phase}"


def _summary(board: CampaignBoard) -> str:
    split = "the whole run" if board.split is None else f"the {board.split} probes"
    goal = "" if board.goal is None else (f"; goal {board.goal.metric} {'>=' if board.goal.better == HIGHER else '<='} "
                                          f"{board.goal.threshold:g}")
    return (f"{board.task} on {board.dataset}, ranked by {board.metric} ({board.better} is better) on {split}{goal}; "
            f"board {board.visibility}")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _interval(line: _Line) -> str:
    return "" if line.interval is None else f"[{_number(line.interval[0])}, {_number(line.interval[1])}]"


def _goal(line: _Line) -> str:
    return "" if line.goal_met is None else "met" if line.goal_met else "not met"


def board_lines(board: CampaignBoard) -> list[str]:
    """The board for a terminal: a title, what it ranks by, the ranked lines (``~``: not separable from the next
    line), then the lines listed with their mark."""
    lines = [_title(board), _summary(board)]
    header = ["rank", "team", "system", "version", "run", board.metric, "CI", "", "goal"]
    body = [[str(line.rank or "-"), line.team, line.system, str(line.version), line.run_id, _number(line.value),
             _interval(line), "~" if line.overlaps_next else "", _goal(line)] for line in board.ranked]
    lines += _aligned([header, *body], {0, 3, 5}) if body else ["  no system to rank"]
    if any(line.overlaps_next for line in board.ranked):
        lines.append("~ its interval overlaps the next line's: the two are not separable on this data")
    if board.listed:
        table = [["mark", "team", "system", "version", "run", board.metric, "goal"]]
        table += [[line.mark, line.team, line.system, str(line.version), line.run_id, _number(line.value),
                   _goal(line)] for line in board.listed]
        lines += ["", "not ranked:", *_aligned(table, {3, 5})]
    return lines


def _aligned(table: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(cell.rjust(width) if i in right else cell.ljust(width)
                             for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in table]


def board_html(board: CampaignBoard) -> str:
    """One self-contained page (``mfscore.reports.html_report``'s look; no script needed to read it): the ranked
    table (``data-table="leaderboard"``) and the listed one (``data-table="listed"``); every text escaped."""
    from mfscore.reports import html_report as page

    ranked = [[str(line.rank or "-"), line.team, line.system, str(line.version), _number(line.value),
               _interval(line), _yes(line.overlaps_next), _goal(line), _time_text(line.submitted_at),
               line.description] for line in board.ranked]
    values = [[{}, {}, {}, {}, {"data-value": "" if line.value is None else repr(line.value)}]
              for line in board.ranked]
    listed = [[line.mark, line.team, line.system, str(line.version), _number(line.value), _goal(line),
               _time_text(line.submitted_at), line.description] for line in board.listed]
    sections = [
        page.section("Ranking", f'<p>{page.escape(_summary(board))}.</p>\n' + page.table(
            ["Rank", "Team", "System", "Version", board.metric, "CI", "OverlapsNext", "Goal", "Submitted",
             "Description"], ranked, sortable=False, cell_attributes=values, max_rows=max(1, len(ranked)),
            caption="OverlapsNext Y: not separable from the next line", attributes={"data-table": "leaderboard"}),
            "ranking"),
        page.section("Not ranked", page.table(
            ["Mark", "Team", "System", "Version", board.metric, "Goal", "Submitted", "Description"], listed,
            sortable=False, max_rows=max(1, len(listed)),
            caption="baseline, late, unscored, contrastive (c-) or superseded (an older version)",
            attributes={"data-table": "listed"}), "listed"),
    ]
    return page.page(_title(board), sections).decode("utf-8")


def _main() -> None:
    """Write the published schema (``mfscore/formats/schemas/campaign.json``)."""
    _SCHEMA_PATH.write_text(_schema_text())
    print(_SCHEMA_PATH)


if __name__ == "__main__":
    _main()
