"""The aggregator's run book without a cluster: ListRuns' pages and tokens, the states a run moves through
(cancelled, ended for good), DeleteRun's deletion, the results as typed messages, and trials counted as trials.

NATS' key-value bucket and the object store are small in-memory doubles here; tests/integration has the real ones.
"""

from __future__ import annotations

import asyncio
import base64
import math
import random

import nats.errors
import pytest
from run_doubles import TASK, plan, record

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.results import HIGHER, LOWER, NEITHER, Curve, MetricSpec, Records, Results, Row
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.services.aggregator import paging, state
from mfscore.services.aggregator.retention import Retention
from mfscore.services.aggregator.run import TERMINAL, Run
from mfscore.services.aggregator.state import NotRecorded, RunBook, State, created_ns, status_key
from mfscore.services.common.results_wire import results_from_message, results_message
from mfscore.services.common.retry import one_line
from mfscore.services.common.settings import Settings
from mfscore.services.wire import results_pb2, runs_pb2

# ----------------------------------------------------------------------------------------- ListRuns' pages


def test_page_size_defaults_caps_and_refuses_a_negative_size():
    assert paging.page_size(0) == paging.DEFAULT_PAGE_SIZE == 100
    assert paging.page_size(7) == 7
    assert paging.page_size(5000) == paging.MAX_PAGE_SIZE == 1000
    with pytest.raises(ValueError, match="^page_size is -1; it must be 0"):
        paging.page_size(-1)


def test_a_token_round_trips_and_is_bound_to_its_filter():
    place = (1_700_000_000_123_456_789, "0123abcd" * 4)
    token = paging.page_token(State.RUN_STATE_DONE, place)
    assert paging.read_page_token(token, State.RUN_STATE_DONE) == place
    assert paging.read_page_token("", State.RUN_STATE_DONE) is None
    assert place[1] not in token  # opaque: not the run id in clear
    with pytest.raises(paging.BadPageToken, match="another state filter"):
        paging.read_page_token(token, State.RUN_STATE_UNSPECIFIED)


@pytest.mark.parametrize("token", [
    "not a token", "%%%", "====", base64.urlsafe_b64encode(b"v1/0/12/../x").decode(),
    base64.urlsafe_b64encode(b"v1/0/-5/abc").decode(), base64.urlsafe_b64encode(b"v2/0/5/abc").decode(),
    base64.urlsafe_b64encode(b"v1/0/5/" + b"a" * 65).decode(), base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    base64.urlsafe_b64encode(b"v1/0/5/abc\n").decode(),
])
def test_a_token_listruns_did_not_make_is_refused(token):
    with pytest.raises(paging.BadPageToken, match="^page_token is not a token ListRuns gave"):
        paging.read_page_token(token, 0)


def test_paging_through_lists_every_run_once_in_creation_order_while_runs_are_added():
    """25 runs, pages of 4; after each page a run is created: it comes later, and nothing is listed twice or
    skipped (a run's place is its creation, which never changes)."""
    rng = random.Random(3)
    runs = {f"run{i:02d}": rng.randrange(10**18) for i in range(25)}
    listed, after, pages = [], None, 0
    while True:
        items = [((created, run_id), run_id) for run_id, created in runs.items()]
        rng.shuffle(items)
        page, after = paging.page(items, 4, after)
        listed += page
        pages += 1
        assert len(page) <= 4
        if after is None:
            break
        token = paging.page_token(0, after)  # through the token, as a caller pages
        after = paging.read_page_token(token, 0)
        runs[f"late{pages:02d}"] = 10**18 + pages  # created now: after every run before it
    assert sorted(listed) == sorted(runs) and len(listed) == len(set(listed))
    assert listed == sorted(runs, key=lambda run_id: (runs[run_id], run_id))


def test_a_page_stops_at_its_byte_budget_but_always_holds_one_run():
    items = [((i, f"r{i}"), size) for i, size in enumerate([5, 5, 5, 20, 1])]
    assert paging.page(items, 10, None, budget=12, cost=lambda size: size) == ([5, 5], (1, "r1"))
    assert paging.page(items, 10, (2, "r2"), budget=12, cost=lambda size: size) == ([20], (3, "r3"))
    assert paging.page(items, 10, (3, "r3"), budget=12, cost=lambda size: size) == ([1], None)
    assert paging.page([], 10, None) == ([], None)


def test_a_run_recorded_before_created_at_is_placed_by_its_submission():
    status = runs_pb2.RunStatus(run_id="r")
    status.submitted_at.FromNanoseconds(5)
    assert created_ns(status) == 5
    status.created_at.FromNanoseconds(3)
    assert created_ns(status) == 3


# ----------------------------------------------------------------------------------------- states


class Entry:
    def __init__(self, value: bytes):
        self.value = value


class FakeKv:
    """The runs bucket: put, get, purge, keys; ``down`` makes every call fail as NATS being away does."""

    def __init__(self):
        self.data: dict[str, bytes] = {}
        self.down = False
        self.writes: list[tuple[str, bytes]] = []

    def _check(self):
        if self.down:
            raise nats.errors.ConnectionClosedError()

    async def put(self, key, value):
        self._check()
        await asyncio.sleep(0)  # a round trip: other tasks run meanwhile
        self.data[key] = value
        self.writes.append((key, value))

    async def get(self, key):
        self._check()
        return Entry(self.data[key])

    async def purge(self, key):
        self._check()
        self.data.pop(key, None)

    def state(self, run_id: str):
        return runs_pb2.RunStatus.FromString(self.data[status_key(run_id)]).state


def book_with(run_state, run_id: str = "r1") -> tuple[RunBook, Run, FakeKv, list]:
    kv = FakeKv()
    book = RunBook(kv)
    ended = []

    async def on_end(entry):
        ended.append(entry.spec.run_id)

    book.on_end = on_end
    entry = Run(runs_pb2.RunSpec(run_id=run_id), runs_pb2.RunStatus(run_id=run_id, state=run_state,
                                                                   trials_received=4), new=False)
    if run_state in (State.RUN_STATE_VALIDATING, State.RUN_STATE_SCORING):
        entry.hold_plan(TASK, plan(*[1] * 10))
    book.runs[run_id] = entry
    return book, entry, kv, ended


@pytest.mark.parametrize("run_state", [State.RUN_STATE_CREATED, State.RUN_STATE_VALIDATING, State.RUN_STATE_SCORING,
                                       State.RUN_STATE_REPORTING])
def test_a_run_that_has_not_ended_is_cancelled_recorded_and_cleaned_up(run_state):
    async def scenario():
        book, entry, kv, ended = book_with(run_state)
        assert await book.cancel(entry, "cancelled by alice")
        await asyncio.sleep(0)  # the clean-up task runs
        return entry, kv, ended

    entry, kv, ended = asyncio.run(scenario())
    assert entry.status.state == State.RUN_STATE_CANCELLED == kv.state("r1")
    assert entry.status.message == "cancelled by alice" and entry.status.HasField("finished_at")
    assert entry.status.trials_received == 4  # the progress it had
    assert ended == ["r1"] and entry.plan is None and entry.trials == {}  # it keeps only its status


def test_records_folded_while_the_cancel_is_written_count_in_the_cancelled_status():
    """A record folded during the cancel's write was taken by the run: the status it ends with, in memory and in the
    bucket, counts it, as the trials-received counter does."""
    async def scenario():
        book, entry, kv, _ = book_with(State.RUN_STATE_SCORING)
        put = kv.put

        async def put_while_a_record_folds(key, value):
            kv.put = put  # one record, during the cancel's own write
            entry.fold(record(0), describe=one_line)
            await put(key, value)

        kv.put = put_while_a_record_folds
        assert await book.cancel(entry, "cancelled by alice")
        return entry, kv

    entry, kv = asyncio.run(scenario())
    stored = runs_pb2.RunStatus.FromString(kv.data[status_key("r1")])
    assert entry.status.trials_received == stored.trials_received == 5 and stored.state == State.RUN_STATE_CANCELLED


@pytest.mark.parametrize("run_state", sorted(TERMINAL))
def test_a_run_that_has_ended_is_not_cancelled(run_state):
    async def scenario():
        book, entry, kv, ended = book_with(run_state)
        return await book.cancel(entry, "cancelled by alice"), entry, kv, ended

    cancelled, entry, kv, ended = asyncio.run(scenario())
    assert not cancelled and entry.status.state == run_state and kv.writes == [] and ended == []


def test_a_cancel_nats_does_not_take_leaves_the_run_as_it_was():
    async def scenario():
        book, entry, kv, ended = book_with(State.RUN_STATE_SCORING)
        kv.down = True
        with pytest.raises(NotRecorded):
            await book.cancel(entry, "cancelled by alice")
        return entry, ended

    entry, ended = asyncio.run(scenario())
    assert entry.status.state == State.RUN_STATE_SCORING and ended == [] and len(entry.trials) == 10


def test_a_run_that_ended_stays_as_it_ended():
    """What the runner does after a cancel (its report stored, a failure) changes nothing: the run stays cancelled,
    with the cancel's message, and is cleaned up once."""
    async def scenario():
        book, entry, kv, ended = book_with(State.RUN_STATE_REPORTING)
        assert await book.cancel(entry, "cancelled by alice")
        writes = len(kv.writes)
        assert not entry.done() and not entry.end("the job x could not be scored")  # nothing for the book to record
        await asyncio.sleep(0)
        return entry, kv, ended, writes

    entry, kv, ended, writes = asyncio.run(scenario())
    assert entry.status.state == State.RUN_STATE_CANCELLED == kv.state("r1")
    assert entry.status.message == "cancelled by alice" and len(kv.writes) == writes and ended == ["r1"]


def test_a_state_change_in_flight_when_the_cancel_lands_records_the_cancel():
    """The runner marks the run DONE in memory, then writes it under the run's lock: a cancel after that sees the run
    ended; a cancel whose write is under way first wins, and the runner's write then records CANCELLED too."""
    async def done(book, entry):  # as the runner does
        if entry.done():
            await book.save(entry)

    async def scenario(cancel_first: bool):
        book, entry, kv, ended = book_with(State.RUN_STATE_REPORTING)
        first, second = ((book.cancel(entry, "cancelled by alice"), done(book, entry)) if cancel_first else
                         (done(book, entry), book.cancel(entry, "cancelled by alice")))
        started = asyncio.create_task(first)
        await asyncio.sleep(0)  # it is writing, its lock held
        results = await asyncio.gather(started, second)
        cancelled = results[0] if cancel_first else results[1]
        return cancelled, entry.status.state, kv.state("r1")

    assert asyncio.run(scenario(cancel_first=False)) == (False, State.RUN_STATE_DONE, State.RUN_STATE_DONE)
    assert asyncio.run(scenario(cancel_first=True)) == (True, State.RUN_STATE_CANCELLED, State.RUN_STATE_CANCELLED)


class FakeStore:
    def __init__(self):
        self.deleted: list[str] = []
        self.fail = False

    def delete_prefix(self, prefix, written_before=None):
        if self.fail:
            from mfscore.services.common.object_store import ObjectStoreUnavailable
            raise ObjectStoreUnavailable("S3 is away")
        self.deleted.append(prefix)
        return 1


def test_deleting_a_run_removes_its_objects_state_and_entry(tmp_path):
    async def scenario():
        book, entry, kv, _ = book_with(State.RUN_STATE_DONE)
        entry.cleaned = True
        for key in (state.spec_key("r1"), state.status_key("r1"), state.seal_key("r1")):
            kv.data[key] = b"x"
        store = FakeStore()
        retention = Retention(Settings(work_dir=str(tmp_path)), store, js=None, book=book)
        store.fail = True
        with pytest.raises(Exception, match="S3 is away"):
            await retention.delete(entry, "as alice asked")
        assert "r1" in book.runs and kv.data  # nothing of it is forgotten: try again
        store.fail = False
        await retention.delete(entry, "as alice asked")
        return book, kv, store

    book, kv, store = asyncio.run(scenario())
    assert "r1" not in book.runs and kv.data == {} and store.deleted == ["runs/r1/"]


# ----------------------------------------------------------------------------------------- results


def sample_results() -> Results:
    return Results(
        task="detection", primary="AUC",
        metrics=(MetricSpec("AUC", HIGHER, "area under the ROC"), MetricSpec("EER", LOWER, "equal error rate"),
                 MetricSpec("TRR", NEITHER, "trial response rate")),
        rows=(Row("", {"AUC": 0.75, "EER": None, "TRR": 1.0}, {"targets": 3, "nontargets": 4},
                  {"AUC": (0.5, 0.9), "EER": (None, None)}),
              Row("Purpose=='add'", {"AUC": None, "EER": 0.0, "TRR": 0.5}, {"targets": 0, "nontargets": 2})),
        curves=(Curve("", (0.0, 0.5, 1.0), (0.0, 0.75, 1.0)),),
        records=Records("x_outMeta.csv", ("TrialID",)))


def test_results_cross_the_wire_as_the_results_file_reads_them():
    results = sample_results()
    message = results_message(results, '{"runner": "cluster"}')
    back = results_pb2.Results.FromString(message.SerializeToString())
    assert back.provenance_json == '{"runner": "cluster"}'
    assert [m.better for m in back.metrics] == [results_pb2.BETTER_HIGHER, results_pb2.BETTER_LOWER,
                                              results_pb2.BETTER_NEITHER]
    whole = back.rows[0].values
    assert (whole["AUC"].value, whole["AUC"].lower, whole["AUC"].upper, whole["AUC"].interval) == (0.75, 0.5, 0.9, True)
    assert not whole["EER"].HasField("value") and whole["EER"].interval and not whole["EER"].HasField("lower")
    assert not whole["TRR"].interval and not whole["TRR"].HasField("lower")
    assert dict(back.rows[1].counts) == {"targets": 0, "nontargets": 2}
    assert results_from_message(back) == Results.from_json(results.to_json())  # a map keeps no order: counts' aside


def test_results_without_records_or_curves_cross_the_wire():
    results = Results("mask", "OptimumMCC", (MetricSpec("OptimumMCC", HIGHER, "MCC at the best threshold"),),
                      (Row("", {"OptimumMCC": math.nan}),))
    back = results_from_message(results_message(results))
    assert not results_message(results).HasField("records")
    assert back == Results.from_json(results.to_json()) and back.records is None and back.curves == ()


# ----------------------------------------------------------------------------------------- trials


def test_a_detection_run_counts_its_trials_not_its_jobs(tmp_path):
    """A detection job holds many trials (``Task.trials``): the plan's jobs count every scored row once."""
    data = generate_detection_dataset(tmp_path / "data", 2500)
    args = build_parser().parse_args(["detection", "--refDir", str(data.directory), "-r", data.reference, "-x",
                                      data.index, "--sysDir", str(data.directory), "-s", data.system, "-o",
                                      str(tmp_path / "out" / "x")])
    task = tasks.get("detection")
    plan = task.plan(args.task_options(args).options)
    assert sum(task.trials(job.work) for job in plan.jobs) == len(plan.prepared.table.trials) == 2500 > len(plan.jobs)
