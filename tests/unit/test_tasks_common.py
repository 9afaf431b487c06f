"""Invariants every registered task keeps, checked without naming any task (scikit-learn's test_common idea).

Each task runs on its generated example (``mfscore.sample_data.examples``):
- planning is deterministic (same keys, same work, twice);
- a job's work, and each outcome, round-trip through the wire envelopes unchanged, and the
  round-tripped work scores to the same outcome;
- folding the outcomes shuffled, in shards, with repeats writes the same files and lines as
  folding them in plan order; a different outcome for a key already folded raises.
"""

from __future__ import annotations

import random

import pytest

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.codec import decode, encode
from mfscore.records import Problem, RecordConflictError, decode_outcome, encode_outcome, fold
from mfscore.run.local import report_into
from mfscore.sample_data.examples import EXAMPLES, example_arguments
from mfscore.services.common.messages import job, job_message, outcome, record_message
from output_files import tree


def test_every_task_has_an_example():
    assert sorted(EXAMPLES) == sorted(tasks.names())


@pytest.fixture(scope="module", params=tasks.names())
def planned(request, tmp_path_factory):
    """(task, options, plan, outcomes in plan order, a directory for reports) of the task's example."""
    name = request.param
    root = tmp_path_factory.mktemp(name)
    args = build_parser().parse_args([name, *example_arguments(name, root / "data", root / "out")])
    run = args.task_options(args)
    task = tasks.get(args.task_name)
    plan = task.plan(run.options)
    outcomes = [task.score(j.work) for j in plan.jobs]
    return task, run.options, plan, outcomes, root


def _report(task, plan, folded, out_dir):
    lines = report_into(task, plan, folded, str(out_dir / "run"))
    return tree(out_dir), lines.stdout, lines.stderr, lines.status


def test_planning_is_deterministic(planned):
    task, options, plan, _, _ = planned
    again = task.plan(options)
    assert [j.key for j in again.jobs] == [j.key for j in plan.jobs]
    assert [encode(j.work) for j in again.jobs] == [encode(j.work) for j in plan.jobs]
    assert len({j.key for j in plan.jobs}) == len(plan.jobs) > 1


def test_jobs_and_outcomes_round_trip_through_the_wire(planned):
    task, _, plan, outcomes, _ = planned
    for planned_job, scored in zip(plan.jobs, outcomes):
        message = job_message("run1", task, planned_job, "runs/run1/inputs/")
        received = job(task, type(message).FromString(message.SerializeToString()))
        assert received.key == planned_job.key
        assert encode(received.work) == encode(planned_job.work)
        assert encode(decode(task.work_type, encode(planned_job.work))) == encode(planned_job.work)
        record = record_message(message, scored, "test")
        back = outcome(task, type(record).FromString(record.SerializeToString()))
        assert encode_outcome(back) == encode_outcome(scored)
        assert encode_outcome(task.score(received.work)) == encode_outcome(scored)


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
