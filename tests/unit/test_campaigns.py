"""Evaluation campaigns (``mfscore.campaigns``, docs/campaigns.md): the campaign file and its rules, the public/private
split through real detection and mask runs, and the boards."""

from __future__ import annotations

import copy
import csv
import hashlib
import html.parser
import io
import json
import pickle
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest

from mfscore import campaigns, tasks
from mfscore.campaigns import (PRIVATE, PUBLIC, SPLIT_COLUMN, Campaign, CampaignError, Entry, Goal, Split, board,
                               board_csv, board_from_json, board_html, board_json, board_lines, load_campaign,
                               split_rows, with_split)
from mfscore.cli.main import main
from mfscore.results import HIGHER, LOWER, MetricSpec, Results, Row
from mfscore.run.local import run_local
from mfscore.sample_data.masks import generate_mask_dataset

UTC = timezone.utc
REFERENCE = "reference/manipulation/MFC-manipulation-ref.csv"
INDEX = "indexes/MFC-manipulation-index.csv"
SYSTEM = "system/mfscore-demo-mask-system.csv"
SALT = "s3cret-salt"

GOOD = {
    "name": "mfc-2026",
    "teams": [{"name": "alpha", "members": ["amelia", "arthur"]}, {"name": "beta", "members": ["bob"]}],
    "competitions": [
        {"name": "det", "task": "detection", "dataset": "mfc-eval@1",
         "options": {"ref_dir": "ref", "reference": REFERENCE, "index": INDEX, "kind": "manipulation",
                     "plot": {"enabled": False}},
         "primary": "AUC", "goal": {"metric": "AUC", "threshold": 0.75, "better": "higher"}},
        {"name": "loc", "task": "mask", "dataset": "alice/masks@2",
         "options": {"ref_dir": "ref", "reference": REFERENCE, "index": INDEX}, "primary": None, "goal": None},
    ],
    "phases": [
        {"name": "dev", "start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z", "quota_per_day": 3,
         "quota_per_phase": None, "late": "refuse", "board": "public",
         "split": {"by": "hash", "fraction": 0.5, "salt": SALT, "column": "ProbeFileID"}, "release": "aggregate"},
        {"name": "final", "start": "2026-02-01T00:00:00Z", "end": "2026-03-01T00:00:00+00:00", "quota_per_day": None,
         "quota_per_phase": 2, "late": "mark", "board": "team",
         "split": {"by": "column", "column": "Collection", "public": ["Nimble-SCI"]}, "release": "per-trial"},
    ],
}

GOOD_YAML = f"""
name: mfc-2026
teams:
  - {{name: alpha, members: [amelia, arthur]}}
  - {{name: beta, members: [bob]}}
competitions:
  - name: det
    task: detection
    dataset: mfc-eval@1
    options:
      ref_dir: ref
      reference: {REFERENCE}
      index: {INDEX}
      kind: manipulation
      plot: {{enabled: false}}
    primary: AUC
    goal: {{metric: AUC, threshold: 0.75, better: higher}}
  - name: loc
    task: mask
    dataset: alice/masks@2
    options: {{ref_dir: ref, reference: {REFERENCE}, index: {INDEX}}}
    primary: null
    goal: null
phases:
  - name: dev
    start: 2026-01-01T00:00:00Z
    end: 2026-02-01T00:00:00Z
    quota_per_day: 3
    quota_per_phase: null
    late: refuse
    board: public
    split: {{by: hash, fraction: 0.5, salt: {SALT}, column: ProbeFileID}}
    release: aggregate
  - name: final
    start: 2026-02-01T00:00:00Z
    end: 2026-03-01T00:00:00+00:00
    late: mark
    quota_per_phase: 2
    board: team
    split: {{by: column, column: Collection, public: [Nimble-SCI]}}
    release: per-trial
"""


def _load(data: dict) -> Campaign:
    return load_campaign(json.dumps(data).encode())


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# ------------------------------------------------------------------------------------------------ the file

def test_the_published_schema_is_the_generated_one():
    path = Path(campaigns.__file__).parent / "formats" / "schemas" / "campaign.json"
    assert path.is_file(), f"{path} is missing: python -m mfscore.campaigns writes it"
    assert path.read_text() == json.dumps(campaigns.schema(), indent=2, ensure_ascii=False) + "\n", (
        f"{path} is stale: python -m mfscore.campaigns")
    published = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(published)
    assert list(jsonschema.Draft202012Validator(published).iter_errors(GOOD)) == []
    assert published["properties"]["competitions"]["items"]["properties"]["task"]["enum"] == list(tasks.names())


def test_a_good_campaign_loads_from_json_and_from_yaml():
    campaign = _load(GOOD)
    assert campaign.name == "mfc-2026"
    assert [t.name for t in campaign.teams] == ["alpha", "beta"]
    det, loc = campaign.competitions
    assert det.goal == Goal("AUC", 0.75, HIGHER) and loc.goal is None and loc.primary is None
    assert det.options == GOOD["competitions"][0]["options"]
    dev, final = campaign.phases
    assert dev.start == datetime(2026, 1, 1, tzinfo=UTC) and dev.end == final.start
    assert dev.split == Split("hash", 0.5, SALT, "ProbeFileID", ())
    assert final.split == Split("column", None, "", "Collection", ("Nimble-SCI",))
    assert (dev.quota_per_day, dev.quota_per_phase, final.quota_per_day, final.quota_per_phase) == (3, None, None, 2)
    assert load_campaign(GOOD_YAML.encode(), source="campaign.yaml") == campaign
    assert campaign.team_of("arthur").name == "alpha" and campaign.team_of("carol") is None
    assert campaign.competition("loc") is loc and campaign.competition("nope") is None
    assert campaign.phase("final") is final and campaign.phase("nope") is None


def _set(path: str, value):
    """A change of GOOD: ``path`` ('phases.1.end') set to ``value`` (``_DROP``: removed)."""
    def change(data):
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        key = int(last) if last.isdigit() else last
        if value is _DROP:
            del node[key]
        else:
            node[key] = value
    return change


_DROP = object()


def _both(*changes):
    def change(data):
        for one in changes:
            one(data)
    return change


_NO_SPLIT = _both(_set("phases.0.split", None), _set("phases.1.split", None))
_TEMPORAL = {"name": "tmp", "task": "video-temporal", "dataset": "vt@1",
             "options": {"index": "i.csv", "journal_mask": "j.csv", "probe_journal_join": "p.csv"}}

REFUSED = [
    ("campaign name", _set("name", "MFC 2026"), "name: 'MFC 2026' is not a name: 1-64 lowercase"),
    ("unknown field", _set("owner", "x"), "campaign: Additional properties"),
    ("team name", _set("teams.0.name", "-alpha"), "teams[0].name: "),
    ("long team name", _set("teams.0.name", "a" * 65), "teams[0].name: "),
    ("team twice", _set("teams.1.name", "alpha"), "teams[1].name: the team 'alpha' is named twice"),
    ("member twice", _set("teams.1.members", ["amelia"]), "teams[1].members[0]: 'amelia' is a member of team 'alpha'"),
    ("no member", _set("teams.1.members", []), "teams[1].members: "),
    ("competition twice", _set("competitions.1.name", "det"), "competitions[1].name: the competition 'det'"),
    ("unknown task", _set("competitions.0.task", "speech"), "competitions[0].task: "),
    ("upper-case dataset", _set("competitions.0.dataset", "MFC@1"), "competitions[0].dataset: 'MFC@1' is not"),
    ("dataset version", _set("competitions.0.dataset", "mfc@01"), "competitions[0].dataset: "),
    ("dataset without version", _set("competitions.0.dataset", "mfc"), "competitions[0].dataset: "),
    ("dataset '..'", _set("competitions.0.dataset", "a..b@1"), "competitions[0].dataset: "),
    ("option missing", _set("competitions.0.options.kind", _DROP),
     "competitions[0].options: the option kind is missing"),
    ("option out of range", _set("competitions.0.options.scoring", {"far_stop": 5}),
     "competitions[0].options: --farStop 5"),
    ("unknown option", _set("competitions.1.options.colour", 1), "competitions[1].options: there is no option colour"),
    ("package field", _set("competitions.0.options.system", "s.csv"),
     "competitions[0].options.system: a submitted package fills this option in"),
    ("split of a task that cannot", lambda d: d["competitions"].append(copy.deepcopy(_TEMPORAL)),
     "competitions[2].task: a phase splits the probes"),
    ("split with a selecting option", _set("competitions.1.options.manipulation_queries", ["Purpose=='add'"]),
     "competitions[1].options: a phase splits the probes, which -qm/--queryManipulation"),
    ("primary of another task", _set("competitions.1.primary", "CDR@FAR"),
     "competitions[1].primary: 'CDR@FAR' is no metric of the mask task"),
    ("goal metric", _set("competitions.0.goal.metric", "OptimumMCC"),
     "competitions[0].goal.metric: 'OptimumMCC' is no metric of the detection task"),
    ("goal direction", _set("competitions.0.goal.better", "more"), "competitions[0].goal.better: "),
    ("phase twice", _set("phases.1.name", "dev"), "phases[1].name: the phase 'dev' is named twice"),
    ("phase ends before it starts", _both(_set("phases.1.start", "2026-03-02T00:00:00Z"),
                                          _set("phases.1.end", "2026-03-01T00:00:00Z")),
     "phases[1].end: the phase ends before it starts (2026-03-01T00:00:00Z <= 2026-03-02T00:00:00Z)"),
    ("empty phase", _set("phases.0.end", "2026-01-01T00:00:00Z"), "phases[0].end: the phase ends before it starts"),
    ("overlapping phases", _set("phases.1.start", "2026-01-31T23:59:59Z"),
     "phases[1].start: the phase starts before phase 'dev' ends"),
    ("phases out of order", _both(_set("phases.0.start", "2026-03-01T00:00:00Z"),
                                  _set("phases.0.end", "2026-04-01T00:00:00Z")), "phases[1].start: "),
    ("time without zone", _set("phases.0.start", "2026-01-01T00:00:00"),
     "phases[0].start: '2026-01-01T00:00:00' has no time zone"),
    ("not a time", _set("phases.0.end", "February"), "phases[0].end: 'February' is not an ISO 8601 time"),
    ("daily quota 0", _set("phases.0.quota_per_day", 0), "phases[0].quota_per_day: "),
    ("phase quota -1", _set("phases.1.quota_per_phase", -1), "phases[1].quota_per_phase: "),
    ("late policy", _set("phases.0.late", "accept"), "phases[0].late: "),
    ("board visibility", _set("phases.0.board", "everyone"), "phases[0].board: "),
    ("release", _set("phases.0.release", "full"), "phases[0].release: "),
    ("fraction 0", _set("phases.0.split.fraction", 0), "phases[0].split.fraction: "),
    ("fraction 1", _set("phases.0.split.fraction", 1.0), "phases[0].split.fraction: "),
    ("hash without salt", _set("phases.0.split.salt", _DROP), "phases[0].split: 'salt' is a required property"),
    ("column split without values", _set("phases.1.split.public", _DROP),
     "phases[1].split: 'public' is a required property"),
    ("the split's own column", _set("phases.0.split.column", SPLIT_COLUMN),
     f"phases[0].split.column: {SPLIT_COLUMN} is the column the split writes"),
    ("hash split with values", _set("phases.0.split.public", ["a"]), "phases[0].split: ['a'] has no place"),
    ("column split with a salt", _set("phases.1.split.salt", "x"), "phases[1].split: 'x' has no place"),
]


@pytest.mark.parametrize("change, expected", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_each_rule_is_refused_naming_its_field(change, expected):
    data = copy.deepcopy(GOOD)
    change(data)
    with pytest.raises(CampaignError) as refused:
        _load(data)
    assert str(refused.value).startswith(expected), str(refused.value)
    assert "\n" not in str(refused.value)


def test_without_a_split_any_task_and_selecting_options_are_accepted():
    data = copy.deepcopy(GOOD)
    _NO_SPLIT(data)
    data["competitions"].append(copy.deepcopy(_TEMPORAL))
    data["competitions"][1]["options"]["manipulation_queries"] = ["Purpose=='add'"]
    assert [c.task for c in _load(data).competitions] == ["detection", "mask", "video-temporal"]


def test_bytes_neither_json_nor_yaml_are_refused_naming_the_source():
    with pytest.raises(CampaignError, match=r"^campaign.yaml: it is neither JSON nor YAML"):
        load_campaign(b"name: [unclosed", source="campaign.yaml")
    with pytest.raises(CampaignError, match=r"^campaign file: a campaign is an object"):
        load_campaign(b"- just\n- a list\n")
    with pytest.raises(CampaignError) as refused:
        _load({**GOOD, "name": "Bad"})
    again = pickle.loads(pickle.dumps(refused.value))  # it crosses processes as it is
    assert (str(again), again.option) == (str(refused.value), "name")


def test_to_json_round_trips_and_is_canonical():
    campaign = _load(GOOD)
    data = campaign.to_json()
    assert load_campaign(data) == campaign
    assert load_campaign(data).to_json() == data
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert json.loads(data)["phases"][1]["end"] == "2026-03-01T00:00:00Z"
    assert load_campaign(GOOD_YAML.encode()).to_json() == data


def test_the_public_view_hides_the_split_the_options_and_the_members():
    view = _load(GOOD).public_view()
    text = json.dumps(view)
    for secret in (SALT, "fraction", "Collection", "Nimble-SCI", "ProbeFileID", "amelia", "arthur", "bob",
                   REFERENCE, "salt"):
        assert secret not in text, secret
    assert view["teams"] == ["alpha", "beta"]
    assert [p["name"] for p in view["phases"]] == ["dev", "final"]
    assert view["phases"][0] == {"name": "dev", "start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z",
                                 "quota_per_day": 3, "quota_per_phase": None, "late": "refuse", "board": "public",
                                 "release": "aggregate", "split": True}
    assert view["competitions"][0] == {"name": "det", "task": "detection", "dataset": "mfc-eval@1", "primary": "AUC",
                                       "goal": {"metric": "AUC", "threshold": 0.75, "better": "higher"}}


def test_phase_at_and_last_ended_at_the_boundaries():
    campaign = _load(GOOD)
    tick = timedelta(microseconds=1)
    dev, final = campaign.phases
    assert campaign.phase_at(_at("2026-01-01T00:00:00Z") - tick) is None
    assert campaign.phase_at(_at("2026-01-01T00:00:00Z")) is dev           # start inclusive
    assert campaign.phase_at(_at("2026-02-01T00:00:00Z") - tick) is dev
    assert campaign.phase_at(_at("2026-02-01T00:00:00Z")) is final         # end exclusive
    assert campaign.phase_at(_at("2026-02-01T01:00:00+01:00")) is final    # another zone, the same instant
    assert campaign.phase_at(_at("2026-03-01T00:00:00Z")) is None
    assert campaign.last_ended(_at("2026-02-01T00:00:00Z") - tick) is None
    assert campaign.last_ended(_at("2026-02-01T00:00:00Z")) is dev         # ended at: counts
    assert campaign.last_ended(_at("2026-03-01T00:00:00Z") - tick) is dev
    assert campaign.last_ended(_at("2026-03-01T00:00:00Z")) is final
    assert campaign.last_ended(_at("2030-01-01T00:00:00Z")) is final
    with pytest.raises(CampaignError, match="^when: "):
        campaign.phase_at(datetime(2026, 1, 5))


# ------------------------------------------------------------------------------------------------ the split

IDS = [f"{(i * 2654435761 + 7) % (1 << 32):08x}" for i in range(10_000)]


def test_the_hash_split_is_deterministic_and_near_its_fraction():
    """On 10,000 ids the public share is within 0.015 of the fraction: about 3.3 binomial standard deviations
    (sqrt(0.3 * 0.7 / 10,000) = 0.0046)."""
    split = Split("hash", 0.3, SALT, "ProbeFileID", ())
    public = [probe for probe in IDS if split.is_public(probe)]
    assert public == [probe for probe in IDS if Split("hash", 0.3, SALT, "ProbeFileID", ()).is_public(probe)]
    assert abs(len(public) / len(IDS) - 0.3) <= 0.015
    oracle = [p for p in IDS if int(hashlib.sha256((SALT + p).encode()).hexdigest()[:16], 16) < 0.3 * 2**64]
    assert public == oracle
    resalted = [probe for probe in IDS if Split("hash", 0.3, "other", "ProbeFileID", ()).is_public(probe)]
    assert resalted != public and abs(len(resalted) / len(IDS) - 0.3) <= 0.015
    wider = {probe for probe in IDS if Split("hash", 0.6, SALT, "ProbeFileID", ()).is_public(probe)}
    assert set(public) < wider  # a larger fraction keeps every probe public that was


def test_the_column_split():
    split = Split("column", None, "", "Collection", ("Nimble-SCI", "Nimble-WEB"))
    assert split.is_public("Nimble-SCI") and split.is_public("Nimble-WEB")
    assert not split.is_public("MFC18") and not split.is_public("")


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as file:
        return list(csv.reader(file, delimiter="|"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A generated mask dataset whose reference carries the hash split's column."""
    data = generate_mask_dataset(tmp_path_factory.mktemp("campaign") / "data", 40, width=96, height=72,
                                 non_target_share=0.3, seed=11)
    path = data.directory / REFERENCE
    before = _rows(path)
    campaigns.add_split_column(str(path), _load(GOOD).phases[0].split)
    return data, before


def test_add_split_column_appends_the_split_and_keeps_the_rest(dataset):
    data, before = dataset
    after = _rows(data.directory / REFERENCE)
    assert after[0] == before[0] + [SPLIT_COLUMN]
    assert [row[:-1] for row in after] == before
    split = Split("hash", 0.5, SALT, "ProbeFileID", ())
    probe = before[0].index("ProbeFileID")
    assert [row[-1] for row in after[1:]] == [PUBLIC if split.is_public(row[probe]) else PRIVATE for row in before[1:]]
    assert {row[-1] for row in after[1:]} == {PUBLIC, PRIVATE}


def test_add_split_column_refuses_a_missing_column_and_a_second_split(dataset, tmp_path):
    data, _ = dataset
    with pytest.raises(CampaignError, match=f"^split: .* has a column {SPLIT_COLUMN} already"):
        campaigns.add_split_column(str(data.directory / REFERENCE), Split("hash", 0.5, SALT, "ProbeFileID", ()))
    other = tmp_path / "ref.csv"
    other.write_text("TaskID|ProbeFileID\nmanipulation|a\n")
    with pytest.raises(CampaignError, match=r"^split.column: .* has no column Collection"):
        campaigns.add_split_column(str(other), Split("column", None, "", "Collection", ("x",)))
    assert other.read_text() == "TaskID|ProbeFileID\nmanipulation|a\n"


def _split_run(data, competition, out: Path) -> Results:
    """The competition's options with the package's system output filled in, split, and run embedded."""
    task = tasks.get(competition.task)
    options = {**competition.options, "ref_dir": str(data.directory), "system": str(data.directory / SYSTEM)}
    typed = with_split(competition.task, tasks.decode_options(task, json.dumps(options).encode()))
    lines = run_local(task, typed, str(out / "run"), processes=1, out=io.StringIO(), progress=False)
    assert lines.status == 0, lines.stderr
    return lines.results


def _restricted(task: str, data, split: str, out: Path, capsys, *extra: str) -> Results:
    """An independent run: the embedded command with -q on the split's rows."""
    system = ["--sysDir", str(data.directory), "-s", SYSTEM] if task == "detection" else ["-s",
                                                                                          str(data.directory / SYSTEM)]
    output = ["-o", str(out / "run")] if task == "detection" else ["-oR", str(out / "run")]
    capsys.readouterr()
    assert main([task, "--refDir", str(data.directory), "-r", REFERENCE, "-x", INDEX, *system, *output,
                 "-q", f"{SPLIT_COLUMN}=='{split}'", "--json", *extra]) == 0
    return Results.from_json(capsys.readouterr().out)


@pytest.mark.parametrize("competition, extra", [("det", ("-t", "manipulation", "--noPlot")), ("loc", ())])
def test_a_split_run_gives_the_rows_of_runs_restricted_to_each_split(dataset, tmp_path, capsys, competition, extra):
    data, _ = dataset
    chosen = _load(GOOD).competition(competition)
    results = _split_run(data, chosen, tmp_path / "split")
    rows = split_rows(results)
    assert [row.query for row in results.rows] == [f"{SPLIT_COLUMN}=='{PUBLIC}'", f"{SPLIT_COLUMN}=='{PRIVATE}'"]
    for split in (PUBLIC, PRIVATE):
        alone = _restricted(chosen.task, data, split, tmp_path / split, capsys, *extra)
        assert alone.primary == results.primary
        assert rows[split].values == alone.row(rows[split].query).values
        assert rows[split].counts == alone.row(rows[split].query).counts
    assert rows[PUBLIC].values[results.primary] is not None and rows[PRIVATE].values[results.primary] is not None
    assert rows[PUBLIC].values != rows[PRIVATE].values


def test_with_split_sets_each_task_s_partition_and_refuses_the_rest():
    det = tasks.decode_options(tasks.get("detection"), json.dumps(
        {"ref_dir": "r", "reference": "a.csv", "index": "i.csv", "system": "s.csv", "kind": "manipulation"}).encode())
    split = with_split("detection", det)
    assert (split.scoring.query_mode, split.scoring.queries) == ("qp", ("CampaignSplit==['public','private']",))
    layout = {"ref_dir": "r", "reference": "a.csv", "index": "i.csv", "system": "s.csv"}
    mask = tasks.decode_options(tasks.get("mask"), json.dumps(layout).encode())
    assert with_split("mask", mask).report.partition == "CampaignSplit==['public','private']"
    video = tasks.decode_options(tasks.get("video-spatial"), json.dumps(layout).encode())
    assert with_split("video-spatial", video).query_partition == "CampaignSplit==['public','private']"
    with pytest.raises(CampaignError, match="^options: a split run cannot also choose trials with -q/--query"):
        with_split("video-spatial", with_split("video-spatial", video).__class__(**{**layout, "query": ("a==1",)}))
    with pytest.raises(CampaignError, match="^task: the video-temporal task cannot score a split"):
        with_split("video-temporal", mask)
    with pytest.raises(CampaignError, match="^results: no row is the public split's"):
        split_rows(Results("mask", "OptimumMCC", (MetricSpec("OptimumMCC", HIGHER, "m"),),
                           (Row("", {"OptimumMCC": 0.5}),)))


# ------------------------------------------------------------------------------------------------ boards

METRICS = (MetricSpec("AUC", HIGHER, "area under the ROC"), MetricSpec("EER", LOWER, "equal error rate"))


def _results(public: tuple[float, float, float, float], private: tuple[float, float]) -> Results:
    """AUC with its interval on the public probes (value, low, high, EER), AUC and EER on the private ones."""
    auc, low, high, eer = public
    return Results("detection", "AUC", METRICS, (
        Row("CampaignSplit=='public'", {"AUC": auc, "EER": eer}, {"targets": 10}, {"AUC": (low, high)}),
        Row("CampaignSplit=='private'", {"AUC": private[0], "EER": private[1]}, {"targets": 10})))


def _entry(run, team, system, version, results, *, day=1, late=False, baseline=False, description="") -> Entry:
    return Entry(run, team, f"{team}-member", system, version, datetime(2026, 1, day, 12, tzinfo=UTC), late,
                 baseline, results, description)


ENTRIES = [
    _entry("r1", "alpha", "p-main", 1, _results((0.80, 0.75, 0.85, 0.3), (0.70, 0.35)), day=2),
    _entry("r2", "alpha", "p-main", 2, _results((0.85, 0.80, 0.90, 0.2), (0.72, 0.30)), day=3,
           description="fusion | of <b>two</b> nets\nsecond line"),
    _entry("r3", "alpha", "c-alt", 1, _results((0.95, 0.90, 0.99, 0.1), (0.99, 0.01)), day=3),
    _entry("r4", "beta", "p-b", 1, _results((0.70, 0.65, 0.82, 0.4), (0.90, 0.10)), day=2),
    _entry("r5", "beta", "p-b", 2, None, day=4),
    _entry("r6", "gamma", "p-g", 1, _results((0.99, 0.98, 1.00, 0.0), (0.99, 0.0)), day=5, late=True),
    _entry("r7", "delta", "p-d", 1, _results((0.50, 0.40, 0.55, 0.5), (0.50, 0.50)), day=1),
    _entry("r8", "organizers", "p-baseline", 1, _results((0.60, 0.55, 0.65, 0.45), (0.60, 0.45)), baseline=True),
]


def _board(split=PUBLIC, entries=ENTRIES, primary="AUC"):
    campaign = _load(GOOD)
    competition = campaign.competition("det")
    if primary != "AUC":
        import dataclasses
        competition = dataclasses.replace(competition, primary=primary)
    return board(campaign, competition, campaign.phase("dev"), entries, split)


def test_the_board_ranks_each_team_s_latest_scored_primary_and_lists_the_rest():
    found = _board()
    assert (found.metric, found.better, found.split, found.visibility) == ("AUC", HIGHER, PUBLIC, "public")
    assert [(line.rank, line.team, line.run_id, line.value) for line in found.ranked] == [
        (1, "alpha", "r2", 0.85), (2, "beta", "r4", 0.70), (3, "delta", "r7", 0.50)]
    assert [line.overlaps_next for line in found.ranked] == [True, False, None]
    assert [line.interval for line in found.ranked] == [(0.80, 0.90), (0.65, 0.82), (0.40, 0.55)]
    assert [line.goal_met for line in found.ranked] == [True, False, False]
    marks = {line.run_id: line.mark for line in found.listed}
    assert marks == {"r1": "superseded", "r3": "contrastive", "r5": "unscored", "r6": "late", "r8": "baseline"}
    assert all(line.rank is None for line in found.listed)
    assert {line.run_id: line.goal_met for line in found.listed}["r3"] is True
    assert {line.run_id: line.value for line in found.listed}["r5"] is None


def test_the_board_ranks_on_the_chosen_split_and_metric_direction():
    private = _board(PRIVATE)
    assert [line.run_id for line in private.ranked] == ["r4", "r2", "r7"]
    assert [line.value for line in private.ranked] == [0.90, 0.72, 0.50]
    assert all(line.interval is None and line.overlaps_next is None for line in private.ranked)
    lower = _board(PUBLIC, primary="EER")
    assert (lower.metric, lower.better) == ("EER", LOWER)
    assert [(line.run_id, line.value) for line in lower.ranked] == [("r2", 0.2), ("r4", 0.4), ("r7", 0.5)]
    assert [line.goal_met for line in lower.ranked] == [True, False, False]  # the goal is still AUC >= 0.75


def test_the_board_refuses_a_split_the_phase_does_not_have_and_a_bad_system():
    with pytest.raises(CampaignError, match="^split: phase 'dev' splits the probes"):
        _board(None)
    campaign = _load(GOOD)
    bad = [_entry("r9", "alpha", "x-main", 1, ENTRIES[0].results)]
    with pytest.raises(CampaignError, match=r"^entries\[0\]: The system ID 'x-main'"):
        board(campaign, campaign.competitions[0], campaign.phases[0], bad, PUBLIC)


def test_board_json_round_trips():
    found = _board()
    data = board_json(found)
    assert board_from_json(data) == found
    assert board_json(board_from_json(data)) == data
    assert json.loads(data)["ranked"][0]["submitted_at"] == "2026-01-03T12:00:00Z"
    with pytest.raises(CampaignError):
        board_from_json(b'{"schema": "mfscore.leaderboard/1"}')


def test_board_csv_lists_ranked_then_listed_with_marks_and_optional_descriptions():
    found = _board()
    rows = list(csv.reader(io.StringIO(board_csv(found, descriptions=False)), delimiter="|"))
    assert rows[0] == ["Rank", "Team", "System", "Version", "Run", "Submitted", "AUC", "AUC_CI_LOWER", "AUC_CI_UPPER",
                       "OverlapsNext", "GoalMet", "Mark"]
    assert [row[:3] + row[6:7] + row[9:] for row in rows[1:4]] == [
        ["1", "alpha", "p-main", "0.85", "Y", "Y", ""], ["2", "beta", "p-b", "0.7", "N", "N", ""],
        ["3", "delta", "p-d", "0.5", "", "N", ""]]
    assert [(row[4], row[11]) for row in rows[4:]] == [(line.run_id, line.mark) for line in found.listed]
    assert all(row[0] == "" for row in rows[4:])
    described = list(csv.reader(io.StringIO(board_csv(found, descriptions=True)), delimiter="|"))
    assert described[0][-1] == "Description"
    assert described[1][-1] == "fusion | of <b>two</b> nets\nsecond line"
    assert "alpha-member" not in board_csv(found, descriptions=True)


class _Tables(html.parser.HTMLParser):
    """The text of each cell of each ``data-table`` table's body rows."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table = self._row = self._cell = None
        self._body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("data-table", ""), [])
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._body:
            self._row = []
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tbody":
            self._body = False
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_board_html_shows_the_ranked_and_the_listed_lines_escaped():
    page = board_html(_board())
    assert page.startswith("<!DOCTYPE html>") and "<b>two</b>" not in page and "&lt;b&gt;two&lt;/b&gt;" in page
    assert "http" not in page.replace("http-equiv", "").replace("https://", "")  # nothing fetched
    parser = _Tables()
    parser.feed(page)
    ranked = parser.tables["leaderboard"]
    assert [row[:5] for row in ranked] == [["1", "alpha", "p-main", "2", "0.8500"], ["2", "beta", "p-b", "1", "0.7000"],
                                          ["3", "delta", "p-d", "1", "0.5000"]]
    assert [row[6:8] for row in ranked] == [["Y", "met"], ["N", "not met"], ["", "not met"]]
    assert [(row[0], row[1]) for row in parser.tables["listed"]] == [
        ("contrastive", "alpha"), ("superseded", "alpha"), ("unscored", "beta"), ("late", "gamma"),
        ("baseline", "organizers")]
    assert "AUC (higher is better) on the public probes" in page


def test_board_lines_are_a_terminal_table():
    lines = board_lines(_board())
    assert lines[0] == "mfc-2026: det, phase dev"
    assert "ranked by AUC (higher is better) on the public probes; goal AUC >= 0.75" in lines[1]
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    assert [line.split()[1] for line in lines[header + 1:header + 4]] == ["alpha", "beta", "delta"]
    assert "~" in lines[header + 1] and "~" not in lines[header + 2]
    assert any(line.startswith("~ ") for line in lines)
    listed = lines[lines.index("not ranked:") + 2:]
    assert [line.split()[0] for line in listed] == ["contrastive", "superseded", "unscored", "late", "baseline"]
    assert board_lines(_board(entries=[]))[2] == "  no system to rank"
