"""Invariants every registered task keeps, checked without naming any task (scikit-learn's test_common idea).

The registry (``mfscore.tasks.REGISTRY``) is the one list of tasks; every test here is parametrized by its
names, so a new task is held to all of them by its registry line alone:

- the task is declared once: its ``name`` is its registry key, it has a sub-command (``mfscore.cli.<module>``,
  restating neither its name nor whether it draws) and an example (``mfscore.sample_data.examples``), and
  the README shows its command;
- its ``resource`` is a class a scorer pool pulls (its ``resources`` in ``services/common/service_specs.py``) or
  ``PLANNER``: anything else passes the embedded run and fails only on a cluster;
- its options are checked where they are made: the example's options cross the wire
  (``mfscore.tasks.decode_options``) unchanged; bad JSON is refused; every option of a wrong type, and
  every bad value of each range-checked option, is refused by the options type itself and by
  ``decode_options`` with an ``OptionError`` naming the option (field name and flag); the flags the
  command line checks early are checked by the options type's own check.

Each task also runs on its generated example (``mfscore.sample_data.examples``):
- planning is deterministic (same keys, same work, the same files of its own, twice);
- a job's work, and each outcome, round-trip through the wire envelopes unchanged, and the
  round-tripped work scores to the same outcome (reading the plan's own files where a runner puts them);
- folding the outcomes shuffled, in shards, with repeats writes the same files and lines as
  folding them in plan order; a different outcome for a key already folded raises.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from pathlib import Path

import jsonschema
import pytest

from mfscore import options_schema, tasks
from mfscore.cli.arguments import checked
from mfscore.cli.main import build_parser, task_command
from mfscore.codec import decode, encode
from mfscore.errors import OptionError
from mfscore.options import conforms, fields_of
from mfscore.records import Problem, RecordConflictError, decode_outcome, encode_outcome, fold
from mfscore.run.local import report_into, write_generated
from mfscore.sample_data.examples import example, example_arguments
from mfscore.services.common.messages import job, job_message, outcome, record_message
from mfscore.tasks.base import PLANNER, with_generated
from output_files import tree

NAMES = tasks.names()
README = Path(__file__).resolve().parents[2] / "README.md"


# ----------------------------------------------------------------------------------- declared once

@pytest.mark.parametrize("name", NAMES)
def test_the_name_is_the_registry_key(name):
    assert tasks.get(name).name == name


def _subparsers(parser):
    return next(action for action in parser._actions if action.dest == "command").choices


@pytest.mark.parametrize("name", NAMES)
def test_the_task_has_a_command_restating_nothing(name):
    command = task_command(name)
    assert command.__name__ == f"mfscore.cli.{tasks.module_name(name)}"
    assert command.HELP and command.DESCRIPTION and callable(command.add_arguments) and callable(command.options)
    parser = _subparsers(build_parser([name]))[name]
    defaults = {action.dest: action.default for action in parser._actions} | parser._defaults
    assert defaults["task_name"] == name and defaults["task_options"] is command.options
    assert "draws" not in defaults  # whether a run draws is its options' draws() alone


@pytest.mark.parametrize("name", NAMES)
def test_the_task_has_an_example(name):
    assert callable(example(name))


@pytest.mark.parametrize("name", NAMES)
def test_the_readme_shows_the_command(name):
    assert f"mfscore {name} " in README.read_text()


def _pools() -> dict[str, tuple[str, ...]]:
    """Every scorer pool the services deploy (the registry, ``services/common/service_specs.py``): name -> classes."""
    from mfscore.services.common import service_specs

    return {spec.name: spec.resources for spec in service_specs.of_role(service_specs.SCORER)}


@pytest.mark.parametrize("name", NAMES)
def test_the_resource_is_a_pool_s_class_or_planner(name):
    from mfscore.services.common.subjects import job_kinds

    pools = _pools()
    assert pools, "no scorer pool in the service registry"
    resource = tasks.get(name).resource
    pulled = {kind for kinds in pools.values() for kind in kinds}
    assert resource == PLANNER or resource in pulled, \
        f"{name}: resource {resource!r} is neither PLANNER nor a class a scorer pool pulls ({pools})"
    assert resource == PLANNER or resource in job_kinds()


# ----------------------------------------------------------------------------------- options

def _options_fields(value, path=()):
    """(path of the field, the dataclass holding it, the field, its type) of every option, nested ones included."""
    for field, hint in fields_of(type(value)):
        inner = getattr(value, field.name)
        yield (*path, field.name), value, field, hint
        if dataclasses.is_dataclass(inner) and not isinstance(inner, type):
            yield from _options_fields(inner, (*path, field.name))


def _wrong_type(hint):
    """A value of neither the type ``hint`` nor its JSON form."""
    for value in ("text", 1.5, 7, True, None, [1], {"a": 1}):
        if not conforms(value, hint) and not conforms(value, hint, as_json=True):
            return value
    raise AssertionError(f"no wrong value for {hint}")


def _with(data: dict, path: tuple[str, ...], value) -> bytes:
    data = json.loads(json.dumps(data))
    node = data
    for name in path[:-1]:
        node = node[name]
    node[path[-1]] = value
    return json.dumps(data).encode()


def _assert_names(error: OptionError, field: dataclasses.Field):
    assert error.option == field.name, error
    flag = field.metadata.get("flag")
    assert flag == error.flag and (flag is None or flag in error.sentence()), error
    assert field.name in error.sentence(), error


def _refused_both_ways(task, options, path, owner, field, bad, *, by_schema: bool = True):
    """Refused by the options type, by ``decode_options`` and (``by_schema``) by the published options schema."""
    with pytest.raises(OptionError) as made:
        dataclasses.replace(owner, **{field.name: bad})
    _assert_names(made.value, field)
    data = _with(json.loads(encode(options)), path, bad)
    with pytest.raises(OptionError) as decoded:
        tasks.decode_options(task, data)
    _assert_names(decoded.value, field)
    if by_schema:
        errors = list(_options_validator(task.name).iter_errors(json.loads(data)))
        assert errors, f"{task.name}: the options schema accepts {'.'.join(path)} = {bad!r}"


@functools.cache
def _options_validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(options_schema.path(name).read_text()))


@pytest.mark.parametrize("name", NAMES)
def test_the_published_options_schema_is_the_generated_one(name):
    path = options_schema.path(name)
    assert path.is_file() and path.read_text() == options_schema.text(name), \
        f"{path} is missing or stale: python -m mfscore.results_schema"
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


@pytest.fixture(scope="module", params=NAMES)
def example_run(request, tmp_path_factory):
    """(task, its example's TaskRun, a directory for reports)."""
    name = request.param
    root = tmp_path_factory.mktemp(name)
    args = build_parser().parse_args([name, *example_arguments(name, root / "data", root / "out")])
    return tasks.get(args.task_name), args.task_options(args), root


def test_the_options_cross_the_wire_unchanged(example_run):
    task, run, _ = example_run
    assert isinstance(run.options, task.options_type)
    assert tasks.decode_options(task, encode(run.options)) == run.options
    assert list(_options_validator(task.name).iter_errors(json.loads(encode(run.options)))) == []


@pytest.mark.parametrize("data", [b"not json", b"", b"\xff\xfe", b"{", b"[1, 2]", b"null", b'"options"', b"[" * 100_000])
def test_bad_json_is_refused(example_run, data):
    with pytest.raises(OptionError):
        tasks.decode_options(example_run[0], data)


def test_an_unknown_or_missing_option_is_refused(example_run):
    task, run, _ = example_run
    data = json.loads(encode(run.options))
    with pytest.raises(OptionError, match="no option no_such_option") as unknown:
        tasks.decode_options(task, json.dumps({**data, "no_such_option": 1}).encode())
    assert unknown.value.option == "no_such_option"
    assert not _options_validator(task.name).is_valid({**data, "no_such_option": 1})
    required = [f.name for f, _ in fields_of(task.options_type)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    for name in required:
        with pytest.raises(OptionError, match=f"{name} is missing"):
            tasks.decode_options(task, json.dumps({k: v for k, v in data.items() if k != name}).encode())
        assert not _options_validator(task.name).is_valid({k: v for k, v in data.items() if k != name})


def test_every_option_of_a_wrong_type_is_refused_with_its_name(example_run):
    task, run, _ = example_run
    for path, owner, field, hint in _options_fields(run.options):
        _refused_both_ways(task, run.options, path, owner, field, _wrong_type(hint))


def test_every_bad_value_of_a_range_checked_option_is_refused_with_its_name(example_run):
    task, run, _ = example_run
    checked_options = [(path, owner, field) for path, owner, field, _ in _options_fields(run.options)
                       if field.metadata.get("check") is not None]
    for path, owner, field in checked_options:
        bad_values = field.metadata["check"].bad
        assert bad_values, f"{task.name}: the check of {'.'.join(path)} names no bad value"
        for bad in bad_values:  # the schema says what it can of a check (not a query's grammar, say)
            _refused_both_ways(task, run.options, path, owner, field, bad,
                               by_schema=bool(field.metadata["check"].schema))


@pytest.mark.parametrize("name", NAMES)
def test_the_flags_the_command_checks_early_are_checked_by_the_options_type(name):
    parser = _subparsers(build_parser([name]))[name]
    for action in parser._actions:
        if isinstance(action.type, checked):
            kind, field_name = action.type.resolve()
            field = dict((f.name, f) for f, _ in fields_of(kind))[field_name]
            assert field.metadata.get("check") is not None, (action.option_strings, kind, field_name)
            flag = field.metadata.get("flag") or ""
            assert set(flag.split("/")) & set(action.option_strings), (action.option_strings, flag)
            for bad in field.metadata["check"].bad:
                if not isinstance(bad, tuple):
                    with pytest.raises(SystemExit):
                        parser.parse_args([*_required(parser), action.option_strings[0], str(bad)])


def _required(parser) -> list[str]:
    """Values for the sub-command's required flags (so that only the flag under test can fail)."""
    return [arg for action in parser._actions if action.required for arg in (action.option_strings[0], "x")]


# ----------------------------------------------------------------------------------- the example run

@pytest.fixture(scope="module")
def planned(example_run):
    """(task, options, plan, outcomes in plan order, a directory for reports) of the task's example."""
    task, run, root = example_run
    plan = task.plan(run.options)
    write_generated(plan.generated, _generated(root))
    outcomes = [task.score(_placed(task, plan, j.work, root)) for j in plan.jobs]
    return task, run.options, plan, outcomes, root


def _generated(root: Path) -> Path:
    """Where the example's plan-made files (``Plan.generated``) are, as a runner would put them."""
    return root / "generated"


def _placed(task, plan, work, root: Path):
    return with_generated(task, work, plan.generated, str(_generated(root)))


def _report(task, plan, folded, out_dir):
    lines = report_into(task, plan, folded, str(out_dir / "run"))
    return tree(out_dir), lines.stdout, lines.stderr, lines.status


def test_planning_is_deterministic(planned):
    task, options, plan, _, _ = planned
    again = task.plan(options)
    assert [j.key for j in again.jobs] == [j.key for j in plan.jobs]
    assert [encode(j.work) for j in again.jobs] == [encode(j.work) for j in plan.jobs]
    assert again.generated == plan.generated
    assert len({j.key for j in plan.jobs}) == len(plan.jobs) > 1


def test_jobs_and_outcomes_round_trip_through_the_wire(planned):
    task, _, plan, outcomes, root = planned
    for planned_job, scored in zip(plan.jobs, outcomes):
        message = job_message("run1", task, planned_job, "runs/run1/inputs/")
        received = job(task, type(message).FromString(message.SerializeToString()))
        assert received.key == planned_job.key
        assert encode(received.work) == encode(planned_job.work)
        assert encode(decode(task.work_type, encode(planned_job.work))) == encode(planned_job.work)
        record = record_message(message, scored, "test")
        back = outcome(task, type(record).FromString(record.SerializeToString()))
        assert encode_outcome(back) == encode_outcome(scored)
        assert encode_outcome(task.score(_placed(task, plan, received.work, root))) == encode_outcome(scored)


def test_every_job_holds_at_least_one_trial_and_says_so_after_the_wire(planned):
    """``Task.trials`` (what a cluster's run counts as progress) is a positive int, the same for the work a worker
    decodes."""
    task, _, plan, _, _ = planned
    for planned_job in plan.jobs:
        count = task.trials(planned_job.work)
        assert isinstance(count, int) and count >= 1
        assert task.trials(decode(task.work_type, encode(planned_job.work))) == count


def test_shards_folded_in_any_order_with_repeats_report_the_same(planned):
    task, _, plan, outcomes, root = planned
    deliveries = list(zip((j.key for j in plan.jobs), outcomes))
    expected = _report(task, plan, fold(deliveries), root / "in-order")
    shuffled = deliveries + random.Random(7).sample(deliveries, k=max(1, len(deliveries) // 2))
    random.Random(11).shuffle(shuffled)
    folded = {}
    for start in range(0, len(shuffled), 3):
        fold(shuffled[start:start + 3], into=folded)
    got = _report(task, plan, folded, root / "shuffled")
    assert got[0] == expected[0] and got[0]
    assert got[1:] == expected[1:]


def test_a_different_outcome_for_a_folded_key_raises(planned):
    _, _, plan, outcomes, _ = planned
    key = plan.jobs[0].key
    folded = fold([(key, outcomes[0])])
    with pytest.raises(RecordConflictError, match=str(key)):
        fold([(key, Problem("the file x.png is unreadable"))], into=folded)


def test_a_problem_round_trips_with_the_record_it_counts_as(planned):
    task, _, _, outcomes, _ = planned
    counted = next((o for o in outcomes if not isinstance(o, Problem)), None)
    problem = Problem("the system mask file sys/x.png is unreadable", counts_as=counted, fatal=True)
    assert encode_outcome(decode_outcome(task.record_type, encode_outcome(problem))) == encode_outcome(problem)
