"""What each registered task releases to a submitter (``mfscore.release``), checked on its example run without naming
the task:

- every aggregate pattern (``Task.aggregate_reports``) matches a file of the example's reports, and no file it
  matches is the per-trial records file, the results file, the run's provenance or a figure or page;
- no aggregate file holds a probe id of the example's index, while some other report does (so the check can fail);
- ``released_reports`` and ``released_results`` per tier;
- every option holding a query is declared ``selects``, a task with queries has one, and ``selecting_options``
  names an option set by its flag and nothing at the defaults.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from types import SimpleNamespace

import pytest

from mfscore import release, tasks
from mfscore.cli.main import build_parser, main
from mfscore.errors import OptionError, QueryOptionError
from mfscore.options import conforms, fields_of
from mfscore.results import ALL, HIGHER, Curve, MetricSpec, Records, Results, Row
from mfscore.run.local import RESULTS_FILE, is_provenance
from mfscore.sample_data.examples import example_arguments
from mfscore.tasks.reference_layout import ReferenceLayout

NAMES = tasks.names()
MORE = {"detection": ["--outMeta"]}  # its example writes no per-trial report: the scored table is one
FIGURES = (".png", ".pdf", ".html")
QUERY = "Purpose==['add']"


@dataclass(frozen=True)
class Example:
    task: object
    options: object
    names: list[str]     # the report files, '/'-separated, relative to the output directory
    out: Path
    results: Results
    results_file: str
    ids: set[str]        # the probe ids of the example's index


def _index(options) -> Path:
    if isinstance(options, ReferenceLayout):
        return Path(options.ref_dir) / options.index
    return Path(getattr(options, "index_file", None) or options.index)


def _ids(index: Path) -> set[str]:
    """The values of the index's ``...FileID`` columns (``ProbeFileID``, ``ProvenanceProbeFileID``)."""
    with open(index, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|"))
    return {row[column] for row in rows for column in row if column.endswith("FileID") and row[column]}


@pytest.fixture(scope="module", params=NAMES)
def example(request, tmp_path_factory) -> Example:
    name = request.param
    root = tmp_path_factory.mktemp(name)
    arguments = [name, *example_arguments(name, root / "data", root / "out"), *MORE.get(name, []), "--quiet"]
    args = build_parser().parse_args(arguments)
    assert main(arguments) == 0
    out = root / "out"
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    (results_file,) = [n for n in names if "/" not in n and (n == RESULTS_FILE or n.endswith("_" + RESULTS_FILE))]
    options = args.task_options(args).options
    return Example(tasks.get(name), options, names, out, Results.from_json((out / results_file).read_bytes()),
                   results_file, _ids(_index(options)))


# ----------------------------------------------------------------------------------- the aggregate reports

def test_every_aggregate_pattern_matches_a_report(example):
    assert example.task.aggregate_reports
    for pattern in example.task.aggregate_reports:
        assert any(fnmatchcase(name, pattern) for name in example.names), (pattern, example.names)


def test_no_aggregate_file_is_per_trial_results_provenance_or_a_figure(example):
    records = example.results.records
    for name in release.released_reports(example.task, example.names, release.AGGREGATE):
        assert records is None or records.where != "reports" or name != records.file
        assert name != example.results_file
        assert not is_provenance(name)
        assert not name.endswith(FIGURES), name


def test_aggregate_files_hold_no_probe_id_that_another_report_holds(example):
    assert example.ids
    aggregate = release.released_reports(example.task, example.names, release.AGGREGATE)

    def holding(name: str) -> list[str]:
        data = (example.out / name).read_bytes()
        return [probe for probe in example.ids if probe.encode() in data]

    for name in aggregate:
        assert holding(name) == [], name
    assert any(holding(name) for name in example.names if name not in aggregate)


# ----------------------------------------------------------------------------------- the tiers

def test_released_reports_per_tier(example):
    task, names = example.task, example.names
    assert release.released_reports(task, names, release.FULL) == names
    per_trial = release.released_reports(task, names, release.PER_TRIAL)
    assert per_trial == [name for name in names if not is_provenance(name)]
    assert len(per_trial) == len(names) - 1
    aggregate = release.released_reports(task, names, release.AGGREGATE)
    assert aggregate and set(aggregate) < set(per_trial)
    assert release.released_reports(task, names[::-1], release.AGGREGATE) == aggregate[::-1]


def test_released_results_per_tier(example):
    task, results = example.task, example.results
    for tier in (release.FULL, release.PER_TRIAL):
        assert release.released_results(task, results, tier) is results
    aggregate = release.released_results(task, results, release.AGGREGATE)
    assert (aggregate.task, aggregate.primary, aggregate.metrics) == (results.task, results.primary, results.metrics)
    assert aggregate.rows == results.rows and aggregate.rows
    assert aggregate.curves == () and aggregate.records is None


def test_every_task_declares_known_parts_and_keeps_no_curve():
    for name in NAMES:
        kept = tasks.get(name).aggregate_results
        assert set(kept) <= set(release.PARTS) and "rows" in kept and "curves" not in kept, name


def test_the_aggregate_tier_drops_every_part_not_declared():
    task = tasks.get(NAMES[0])
    spec = MetricSpec("AUC", HIGHER, "the primary metric")
    curve = Curve(ALL, (0.0, 0.5, 1.0), (0.0, 1.0, 1.0))
    results = Results(task.name, spec.name, (spec,), (Row(ALL, {spec.name: 0.5}, {"trials": 3}),), curves=(curve,),
                      records=Records("run_trials.csv", ("Id",)))
    every_part = SimpleNamespace(aggregate_results=release.PARTS)
    assert release.released_results(every_part, results, release.AGGREGATE) == results
    dropped = release.released_results(SimpleNamespace(aggregate_results=()), results, release.AGGREGATE)
    assert (dropped.task, dropped.primary, dropped.metrics) == (results.task, results.primary, results.metrics)
    assert (dropped.rows, dropped.curves, dropped.records) == ((), (), None)
    assert release.released_results(task, results, release.AGGREGATE) == dataclasses.replace(results, curves=(),
                                                                                               records=None)


def test_an_unknown_tier_is_refused_naming_the_tiers():
    task = tasks.get(NAMES[0])
    with pytest.raises(OptionError) as refused:
        release.released_reports(task, ["run_run.json"], "open")
    assert all(tier in refused.value.sentence() for tier in release.TIERS)
    with pytest.raises(OptionError):
        release.released_results(task, None, "sealed")


# ----------------------------------------------------------------------------------- the selecting options

def _fields(options, path=()):
    """(path of field names, field, hint, value) of every field of ``options``, nested option dataclasses walked."""
    for field, hint in fields_of(type(options)):
        value = getattr(options, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            yield from _fields(value, (*path, field.name))
        else:
            yield (*path, field.name), field, hint, value


def _replaced(options, path, value):
    inner = value if len(path) == 1 else _replaced(getattr(options, path[0]), path[1:], value)
    return dataclasses.replace(options, **{path[0]: inner})


def _default(field):
    return field.default if field.default is not dataclasses.MISSING else field.default_factory()


def _at_defaults(options):
    """``options`` with every ``selects`` option at its default."""
    for path, field, _, _ in list(_fields(options)):
        if field.metadata.get("selects"):
            options = _replaced(options, path, _default(field))
    return options


def _setting(hint, default):
    """A value of type ``hint`` other than ``default`` that chooses trials."""
    for value in (not default, (QUERY,), QUERY):
        if conforms(value, hint) and value != default:
            return value
    raise AssertionError(f"no value to set for {hint}")


def test_every_query_option_is_declared_selecting_and_only_a_task_with_queries_has_one(example):
    fields = [(path, field) for path, field, _, _ in _fields(example.options)]
    queries = [path for path, field in fields if issubclass(getattr(field.metadata.get("check"), "error", type),
                                                            QueryOptionError)]
    selecting = [path for path, field in fields if field.metadata.get("selects")]
    assert set(queries) <= set(selecting)
    assert bool(selecting) == bool(queries)


def test_selecting_options_names_each_set_option_by_its_flag_and_nothing_at_the_defaults(example):
    baseline = _at_defaults(example.options)
    assert release.selecting_options(baseline) == []
    for path, field, hint, value in _fields(baseline):
        if field.metadata.get("selects"):
            flag = field.metadata["flag"]
            assert flag.startswith("-")
            assert release.selecting_options(_replaced(baseline, path, _setting(hint, value))) == [flag], path
