"""A run's states without NATS (services/aggregator/run.py): every move of its table and every move the table lacks,
every way a record folds into a run, and the diagram in docs/architecture.md against the table."""

from __future__ import annotations

import logging
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from run_doubles import TASK, key, plan, record, run_in

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.records import encode_outcome
from mfscore.run.local import score_plan
from mfscore.sample_data.video import generate_temporal_dataset
from mfscore.services.aggregator.run import (
    CANCELLED,
    CREATED,
    DONE,
    FAILED,
    MOVES,
    REJECTED,
    REPORTING,
    SCORING,
    TERMINAL,
    UNFINISHED,
    VALIDATING,
    Folded,
    IllegalMove,
    Run,
    State,
)
from mfscore.services.common.messages import key_message
from mfscore.services.common.retry import one_line
from mfscore.services.wire import records_pb2, runs_pb2

ROOT = Path(__file__).resolve().parents[2]


def fold(run: Run, *records) -> list[Folded]:
    return [run.fold(r, describe=one_line) for r in records]


def planned_run(state=SCORING, *trials: int) -> Run:
    """A run in ``state`` holding a plan of jobs of ``trials`` trials (by default one job of one trial)."""
    run = run_in(VALIDATING if state == VALIDATING else SCORING)
    assert run.hold_plan(TASK, plan(*(trials or (1,))))
    if state == REPORTING:
        assert ready(run)
    return run


def ready(run: Run) -> bool:
    """Every planned job's record folded in, is the run ready?"""
    fold(run, *(record(ordinal) for ordinal in range(len(run.trials))))
    return run.ready()


def submit(run: Run) -> bool:
    spec = runs_pb2.RunSpec(run_id=run.run_id, task="tally")
    run.recorded(spec, run.submitted(spec))
    return True


def cancel(run: Run) -> bool:
    status = run.cancelled("cancelled by alice")
    if status is None:
        return False
    run.recorded_cancel(status)
    return True


# the transitions, each as a driver that makes it on a run and says whether the run moved
DRIVERS = {
    "submit": submit,
    "cancel": cancel,
    "resume": lambda run: run.resume() or True,
    "planned": lambda run: run.planned(),
    "ready": ready,
    "done": lambda run: run.done(),
}


def make(run: Run, by: str, to) -> bool:
    return run.end("it broke", to) if by == "end" else DRIVERS[by](run)


def ready_to(state) -> Run:
    """A run in ``state``, with what the moves out of it need (a plan, its records in for REPORTING)."""
    if state in (SCORING, REPORTING, VALIDATING):
        return planned_run(state)
    return run_in(state)


# ----------------------------------------------------------------------------------------- the table


@pytest.mark.parametrize("start, to, by", [(start, to, by) for start, moves in MOVES.items()
                                           for to, names in moves.items() for by in names])
def test_every_move_of_the_table_moves_the_run(start, to, by):
    run = ready_to(start)
    assert make(run, by, to)
    assert run.state == to == run.status.state == run.to_status().state


def illegal() -> list[tuple]:
    """Each (state, transition, target) the table has no arrow for, a run in that state not having ended."""
    targets = {"submit": [VALIDATING], "cancel": [CANCELLED], "planned": [SCORING], "done": [DONE],
               "end": [FAILED, REJECTED], "resume": [SCORING]}
    return [(start, by, to) for start in UNFINISHED for by, tos in targets.items() for to in tos
            if by not in MOVES[start].get(to, ()) and not (by == "resume" and any(
                "resume" in names for names in MOVES[start].values()))]


@pytest.mark.parametrize("start, by, to", illegal())
def test_a_move_the_table_lacks_raises(start, by, to):
    run = ready_to(start)
    before = run.to_status()
    with pytest.raises(IllegalMove, match=f"from {State.Name(start)} to {State.Name(to)}"):
        make(run, by, to)
    assert run.to_status() == before


def test_the_table_lacks_the_moves_it_should():
    assert set(illegal()) >= {
        (CREATED, "planned", SCORING), (CREATED, "done", DONE), (CREATED, "end", FAILED), (CREATED, "resume", SCORING),
        (SCORING, "submit", VALIDATING), (SCORING, "end", REJECTED), (SCORING, "done", DONE),
        (REPORTING, "planned", SCORING)}


def test_a_run_not_yet_scoring_or_missing_a_record_is_not_ready():
    validating = planned_run(VALIDATING)
    fold(validating, record(0))  # folded while its jobs are published: reported once it is SCORING
    missing = planned_run(SCORING, 1, 1)
    fold(missing, record(0))
    assert not validating.ready() and not missing.ready() and not run_in(CREATED).ready()
    assert (validating.state, missing.state) == (VALIDATING, SCORING)
    assert validating.planned() and validating.ready() and validating.state == REPORTING


@pytest.mark.parametrize("ended", sorted(TERMINAL))
def test_what_comes_after_a_runs_end_changes_nothing(ended):
    """A run cancelled while it was planned, scored or reported stays cancelled (not SCORING, REPORTING, DONE or
    FAILED); the runner's late steps report that nothing changed."""
    run = run_in(ended, message="as it ended", trials_received=2)
    before = run.to_status()
    assert not run.hold_plan(TASK, plan(1)) and run.task is None
    assert not run.scored({key(0): None}) and run.outcomes == {}
    assert not run.validated(runs_pb2.ValidationReport(valid=False))
    assert not run.reported(["a note"], "it failed", None)
    assert [run.planned(), run.ready(), run.done(), run.end("too late"), run.end("too", REJECTED)] == [False] * 5
    assert run.cancelled("cancelled by alice") is None
    assert fold(run, record(0), record(0, error="boom")) == [Folded.IGNORED] * 2
    assert run.to_status() == before and run.pending == []
    for by in ("submit", "resume"):  # never asked of a run that ended: a bug
        with pytest.raises(IllegalMove):
            DRIVERS[by](run)


def test_a_created_run_is_recorded_as_made_then_submitted():
    at = runs_pb2.RunStatus(submitted_at={"seconds": 5}).submitted_at
    spec = runs_pb2.RunSpec(run_id="r1")
    run = Run.created(spec, "alice", "client", at)
    assert run.new and (run.state, run.status.owner, run.status.owner_role) == (CREATED, "alice", "client")
    assert run.status.created_at == run.status.submitted_at == at
    run.recorded(spec, run.status)
    submitted = runs_pb2.RunSpec(run_id="r1", task="tally")
    status = run.submitted(submitted)
    assert run.state == CREATED and status.state == VALIDATING and status.task == "tally"  # not before it is recorded
    assert status.submitted_at.ToNanoseconds() > at.ToNanoseconds() and status.created_at == at
    run.recorded(submitted, status)
    assert (run.new, run.state, run.spec.task, run.state_name) == (False, VALIDATING, "tally", "validating")
    with pytest.raises(IllegalMove):
        run.recorded(submitted, status)  # submitted twice


@pytest.mark.parametrize("start", [SCORING, REPORTING])
def test_a_run_past_validation_resumes_scoring_its_counts_received_afresh(start):
    run = run_in(start, jobs_received=3, trials_received=7, trials_dead=1, trials_planned=9)
    assert not run.resume()
    assert (run.state, run.status.jobs_received, run.trials_received, run.status.trials_dead) == (SCORING, 0, 0, 1)


def test_a_validating_run_starts_over():
    run = run_in(VALIDATING)
    assert run.resume() and run.state == VALIDATING


def test_a_valid_submission_goes_on_an_invalid_one_is_rejected_saying_why():
    valid = run_in(VALIDATING)
    assert not valid.validated(runs_pb2.ValidationReport(valid=True)) and valid.state == VALIDATING
    assert valid.status.validation.valid
    rejected = run_in(VALIDATING)
    report = runs_pb2.ValidationReport(valid=False, findings=[
        runs_pb2.Finding(severity="error", code="x", message="the first is wrong"),
        runs_pb2.Finding(severity="error", code="y", message="so is the second"),
        runs_pb2.Finding(severity="error", code="report.truncated", message="and 3 more.")])
    assert rejected.validated(report)
    assert rejected.state == REJECTED and rejected.status.HasField("finished_at")
    assert rejected.status.message == ("the validator rejected the submission (2 error(s); and 3 more); the first: "
                                       "the first is wrong")


def test_a_report_keeps_its_notes_and_provenance_and_one_that_failed_ends_the_run():
    reported, failed = planned_run(REPORTING), planned_run(REPORTING)
    assert not reported.reported(["a note"], None, '{"runner": "cluster"}')
    assert reported.state == REPORTING and list(reported.status.notes) == ["a note"]
    assert reported.status.provenance_json == '{"runner": "cluster"}'
    assert reported.done() and reported.task is None and reported.outcomes == {}  # it keeps only its status
    assert failed.reported(["a note"], "the report broke", None)
    assert (failed.state, failed.status.message, list(failed.status.notes)) == (FAILED, "the report broke", ["a note"])
    assert failed.status.provenance_json == "" and failed.plan is None


# ----------------------------------------------------------------------------------------- folding


def test_a_repeated_record_adds_nothing():
    run = planned_run(SCORING, 3, 2)
    assert fold(run, record(0, 5), record(0, 5)) == [Folded.ADDED, Folded.REPEATED]
    assert (run.status.jobs_received, run.trials_received, run.status.jobs_planned, run.trials_planned) == (1, 3, 2, 5)
    assert fold(run, record(1)) == [Folded.ADDED] and run.trials_received == 5 and run.ready()


def test_two_different_records_for_a_job_end_the_run():
    run = planned_run(SCORING, 1, 1)
    assert fold(run, record(0, 5), record(0, 6)) == [Folded.ADDED, Folded.ENDED]
    assert run.state == FAILED and run.status.message == "two different records arrived for the job 0/r/0"
    assert run.trials_received == 1 and run.task is None and run.outcomes == {}


def test_a_record_of_a_job_that_could_not_be_scored_fails_the_run_counting_its_trials_dead():
    run = planned_run(SCORING, 1, 4)
    assert fold(run, record(1, error="failed on attempt 3 of 3: TypeError: x")) == [Folded.ENDED]
    assert (run.state, run.status.trials_dead, run.trials_received) == (FAILED, 4, 0)
    assert run.status.message == "the job 0/r/1 could not be scored: failed on attempt 3 of 3: TypeError: x"


def test_a_record_that_cannot_be_decoded_fails_the_run():
    run = planned_run(SCORING)
    assert fold(run, record(0, outcome=b"{not json")) == [Folded.ENDED]
    assert run.state == FAILED
    assert re.fullmatch(r"the record of the job 0/r/0 could not be decoded \(JSONDecodeError: .+\)", run.status.message)


def test_a_record_of_a_job_not_planned_or_of_another_task_is_dropped(caplog):
    run = planned_run(SCORING)
    with caplog.at_level(logging.WARNING, logger="mfscore.aggregator"):
        assert fold(run, record(7), record(0, task="mask")) == [Folded.DROPPED] * 2
    assert run.state == SCORING and run.outcomes == {} and run.trials_received == 0
    assert "dropped a tally record for the unplanned job 0/r/7" in caplog.text
    assert "dropped a mask record for the unplanned job 0/r/0" in caplog.text


def test_a_record_before_the_run_is_planned_waits_and_folds_once_it_is():
    run = run_in(SCORING)  # resumed: its records replay while it is planned again
    assert fold(run, record(1), record(0), record(1)) == [Folded.PENDING] * 3
    assert run.trials_received == 0
    assert run.hold_plan(TASK, plan(2, 3))
    assert fold(run, *run.take_pending()) == [Folded.ADDED, Folded.ADDED, Folded.REPEATED]
    assert run.pending == [] and run.trials_received == 5 and run.ready()


def test_a_record_after_the_end_is_ignored():
    run = planned_run(SCORING, 1, 1)
    fold(run, record(0))
    assert run.end("it broke")
    before = run.to_status()
    assert fold(run, record(1), record(0, 9)) == [Folded.IGNORED] * 2
    assert run.to_status() == before


def test_a_plan_scored_where_it_was_planned_counts_its_trials():
    run = planned_run(VALIDATING, 2, 3)
    assert run.scored({key(0): TASK.record_type(1), key(1): TASK.record_type(2)})
    assert (run.status.jobs_received, run.trials_received) == (2, 5)
    assert run.trials_in([key(1), key(9)]) == 4  # a key the plan does not know holds one trial
    assert run.planned() and run.ready()


def test_a_real_plans_records_fold_in_any_order_repeats_included(tmp_path):
    """video-temporal's plan of six probes: their records, shuffled and some twice, make the run ready; another
    probe's record for a job ends a run."""
    data = generate_temporal_dataset(tmp_path / "data", 6, seed=3)
    args = build_parser().parse_args(["video-temporal", *data.cli_args(), "-o", str(tmp_path / "out" / "x")])
    task = tasks.get("video-temporal")
    planned = task.plan(args.task_options(args).options)
    records = [records_pb2.TrialRecord(run_id="r1", task=task.name, key=key_message(job_key),
                                       outcome=encode_outcome(outcome))
               for job_key, outcome in score_plan(task, planned).items()]
    run, conflicting = run_in(SCORING), run_in(SCORING)
    assert run.hold_plan(task, planned) and conflicting.hold_plan(task, planned)
    folded = fold(run, *random.Random(5).sample(records + records[:3], len(records) + 3))
    assert folded.count(Folded.ADDED) == 6 and folded.count(Folded.REPEATED) == 3
    assert run.trials_received == run.trials_planned == 6 and run.ready()
    other = records_pb2.TrialRecord(run_id="r1", task=task.name, key=records[0].key, outcome=records[1].outcome)
    assert fold(conflicting, records[0], other) == [Folded.ADDED, Folded.ENDED]
    assert conflicting.status.message == "two different records arrived for the job 0/probe/0"


# ----------------------------------------------------------------------------------------- cancel racing


def test_a_cancel_counts_the_records_folded_while_it_was_recorded_and_none_after():
    run = planned_run(SCORING, 1, 2, 4)
    fold(run, record(0))
    status = run.cancelled("cancelled by alice")
    assert run.state == SCORING and status.state == CANCELLED and status.trials_received == 1
    fold(run, record(1))  # lands while the cancel is being written: the run took it
    assert run.recorded_cancel(status)  # its counts moved on: to record again
    assert (run.state, run.status.message, run.status.jobs_received, run.trials_received) == (
        CANCELLED, "cancelled by alice", 2, 3)
    assert fold(run, record(2)) == [Folded.IGNORED] and run.trials_received == 3


def test_a_cancel_with_nothing_folded_meanwhile_is_recorded_once():
    run = planned_run(SCORING)
    assert not run.recorded_cancel(run.cancelled("cancelled by alice"))
    assert run.state == CANCELLED and run.plan is None and run.trials == {}


def test_a_cancel_recorded_first_wins_over_a_move_not_yet_recorded():
    """The runner moved the run DONE in memory while the cancel's write was under way: the bucket took CANCELLED
    first, so the run is CANCELLED (the runner's write then records that)."""
    run = planned_run(REPORTING)
    status = run.cancelled("cancelled by alice")
    assert run.done() and run.state == DONE
    run.recorded_cancel(status)
    assert run.state == CANCELLED and run.status.message == "cancelled by alice"


# ----------------------------------------------------------------------------------------- status


def test_the_status_is_a_snapshot_built_once_per_change():
    run = planned_run(SCORING, 1, 1)
    first = run.status
    assert run.status is first  # read often (ListRuns, WatchRun): built once
    copy = run.to_status()
    copy.state = DONE
    first.trials_received = 99
    assert run.state == SCORING and run.trials_received == 0  # a reader writing its copy changes nothing
    fold(run, record(0))
    assert run.status is not first and run.status.trials_received == 1


# ----------------------------------------------------------------------------------------- elsewhere


def test_the_diagram_in_the_architecture_page_is_the_table():
    page = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## A run's states\n.*?```mermaid\nstateDiagram-v2\n(.*?)```", page, re.S).group(1)
    drawn = {}
    for line in block.splitlines():
        start, to, names = re.fullmatch(r"\s*(\S+) --> (\S+): (.+)", line).groups()
        if start != "[*]":
            drawn[(start, to)] = tuple(names.split(", "))
    name = lambda state: State.Name(state)[len("RUN_STATE_"):]  # noqa: E731
    assert drawn == {(name(start), name(to)): names for start, moves in MOVES.items() for to, names in moves.items()}
    assert {name(state) for state in TERMINAL} == {"REJECTED", "DONE", "FAILED", "CANCELLED"}


def test_the_run_imports_neither_grpc_nor_nats():
    found = subprocess.run([sys.executable, "-c", "import sys, mfscore.services.aggregator.run; print(sorted("
                            "{m.split('.')[0] for m in sys.modules} & {'grpc', 'nats'}))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]"


def test_only_the_run_decides_whether_a_run_has_ended_or_writes_its_status():
    """Outside run.py nothing asks ``in TERMINAL`` nor writes a field of a run's status (``status.state = ...``,
    ``status.finished_at.CopyFrom(...)``): the run's own methods do."""
    writes = re.compile(r"\bTERMINAL\b|\.status\.\w+(\[:\])? = |\.status\.\w+\.(CopyFrom|MergeFrom|append|extend)\(")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted((ROOT / "services").rglob("*.py")) if path.name != "run.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) if writes.search(line)]
    assert found == []
