"""Each caller's quotas (services/aggregator/quotas.py), the run book's counts they read (state.py), the uploads'
own bounds (a stream gone quiet, a file over the bytes allowed, names that are a file and a directory) and the
callers' names (auth.py), without a cluster; tests/integration/test_abuse_quotas.py has them over gRPC."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from mfscore.errors import OptionError
from mfscore.services.aggregator import uploads
from mfscore.services.aggregator.quotas import InFlight, QuotaExceeded, Quotas, RateLimit
from mfscore.services.aggregator.run import Run
from mfscore.services.aggregator.state import RunBook, State
from mfscore.services.common import metrics
from mfscore.services.common.auth import Caller, Callers, check_name, new_token, tokens_line
from mfscore.services.common.settings import Settings
from mfscore.services.wire import runs_pb2

ALICE, BOB = Caller("alice", "client"), Caller("bob", "client")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_creates_runs_at_its_rate_and_no_faster_another_unhindered():
    clock = Clock()
    limit = RateLimit("quota_create_run_per_minute", 50, clock)
    taken = refused = 0
    for _ in range(200):  # a burst: the bucket's 50, then nothing
        try:
            limit.take(ALICE, "alice called CreateRun")
            taken += 1
        except QuotaExceeded as error:
            refused += 1
            said = error.sentence()
    assert (taken, refused) == (50, 150)
    assert said == ("alice called CreateRun more than 50 times a minute: the quota "
                    "MFSCORE_QUOTA_CREATE_RUN_PER_MINUTE is 50")
    limit.take(BOB, "bob called CreateRun")  # bob has his own bucket
    clock.now += 6.0  # 6 s refill 5 tokens at 50 a minute
    for _ in range(5):
        limit.take(ALICE, "again")
    with pytest.raises(QuotaExceeded):
        limit.take(ALICE, "again")


def test_upload_streams_and_bytes_in_flight_are_bounded_per_caller_and_given_back():
    flight = InFlight(max_streams=2, max_bytes=100)
    with flight.stream(ALICE) as holding, flight.stream(ALICE):
        with pytest.raises(QuotaExceeded, match="MFSCORE_QUOTA_UPLOAD_STREAMS is 2$"):
            with flight.stream(ALICE):
                pass
        with flight.stream(BOB):
            pass
        with holding(60):
            with pytest.raises(QuotaExceeded, match="a file of 41 bytes, with the 60 bytes .* the quota "
                                                    "MFSCORE_QUOTA_UPLOAD_BYTES is 100$"):
                with holding(41):
                    pass
            with holding(40):
                assert flight.bytes[ALICE] == 100
    assert flight.streams == {} and flight.bytes == {}  # nothing left behind once they end


def test_run_quotas_name_their_setting_and_value():
    quotas = Quotas(Settings(quota_created_runs=3, quota_runs_in_flight=2))
    quotas.check_runs(ALICE, 2, 1, submitting=False)
    with pytest.raises(QuotaExceeded, match="alice has 3 run.* the quota MFSCORE_QUOTA_CREATED_RUNS is 3$"):
        quotas.check_runs(ALICE, 3, 0, submitting=False)
    with pytest.raises(QuotaExceeded, match="the quota MFSCORE_QUOTA_RUNS_IN_FLIGHT is 2$"):
        quotas.check_runs(ALICE, 0, 2, submitting=True)
    quotas.check_dataset_files(100_000)
    with pytest.raises(QuotaExceeded, match="the quota MFSCORE_QUOTA_DATASET_FILES is 100000$"):
        quotas.check_dataset_files(100_001)


class NoScan(dict):
    """A run book's runs that refuse to be walked: what counting one run must not need."""

    def values(self):
        raise AssertionError("the whole book was walked")

    items = __iter__ = values


def status(run_id: str, who: Caller, state) -> runs_pb2.RunStatus:
    return runs_pb2.RunStatus(run_id=run_id, state=state, owner=who.name, owner_role=who.role)


def entry(run_id: str, who: Caller, state) -> Run:
    return Run(runs_pb2.RunSpec(run_id=run_id), status(run_id, who, state))


def gauge(state) -> float:
    return metrics.RUNS.labels(state=State.Name(state))._value.get()


def test_counting_a_runs_state_reads_that_run_only_and_counts_by_owner():
    book = RunBook(kv=None)
    book.runs = NoScan()
    runs = [entry(f"r{i}", ALICE if i % 4 else BOB, State.RUN_STATE_CREATED) for i in range(1000)]
    for run in runs:
        book.runs[run.spec.run_id] = run
        book.count_states(run)
    assert book.held(ALICE) == (750, 0) and book.held(BOB) == (250, 0)
    assert gauge(State.RUN_STATE_CREATED) == 1000
    runs[1].mirror(runs[1].spec, status("r1", ALICE, State.RUN_STATE_SCORING))  # as a standby's book takes a change
    runs[2].mirror(runs[2].spec, status("r2", ALICE, State.RUN_STATE_DONE))
    book.count_states(runs[1], runs[2])
    book.count_states(runs[1])  # counted twice, counted once
    assert book.held(ALICE) == (748, 1)
    assert (gauge(State.RUN_STATE_CREATED), gauge(State.RUN_STATE_SCORING), gauge(State.RUN_STATE_DONE)) == (998, 1, 1)
    del book.runs["r1"]
    book.count_states(runs[1])  # gone from the book: uncounted
    assert book.held(ALICE) == (748, 0) and gauge(State.RUN_STATE_SCORING) == 0


def test_a_run_recorded_through_the_book_is_counted_without_walking_it():
    class Kv:
        async def put(self, key, value):
            pass

    async def scenario():
        book = RunBook(Kv())
        book.runs = NoScan()
        new = entry("r1", ALICE, State.RUN_STATE_CREATED)
        await book.record(new, new.spec, new.status)
        await book.record(new, new.spec, new.submitted(new.spec))
        return book.held(ALICE)

    assert asyncio.run(scenario()) == (0, 1)


@pytest.mark.parametrize("names, said", [
    (["sys/a", "sys/a/b"], "sys/a and sys/a/b are both named, so sys/a would be a file and a directory"),
    (["x/y/z", "x/y"], "x/y and x/y/z are both named"),
    (["r/a", "r/a-b", "r/a/c"], "r/a and r/a/c are both named"),
])
def test_a_name_that_is_a_directory_of_another_is_refused(names, said):
    with pytest.raises(uploads.UploadRefused, match=f"^{said}"):
        uploads.Names(names)


def test_names_side_by_side_are_fine():
    assert uploads.Names(["sys/a", "sys/ab", "sys/a-b", "sys/a.b/c", "sys/a"]).files == {
        "sys/a", "sys/ab", "sys/a-b", "sys/a.b/c"}


def upload(name: str, content: bytes, size: int | None = None):
    declared = runs_pb2.DeclaredFile(name=name, size=len(content) if size is None else size,
                                     sha256=hashlib.sha256(content).hexdigest())
    return [runs_pb2.UploadInputsRequest(run_id="r1", file=declared), runs_pb2.UploadInputsRequest(chunk=content)]


async def stream(messages, then_wait: float = 0.0):
    for message in messages:
        yield message
    await asyncio.sleep(then_wait)


def receive(messages, tmp_path, **bounds):
    stored = []

    async def store(declared, data):
        stored.append((declared.name, data.read()))

    async def scenario():
        await uploads.receive(messages, "r1", store, max_bytes=1 << 30, spool_dir=str(tmp_path), **bounds)
    try:
        asyncio.run(scenario())
    finally:
        assert list(tmp_path.iterdir()) == []  # no spooled byte left behind
    return stored


def test_a_stream_gone_quiet_is_ended_and_its_file_dropped(tmp_path):
    content = b"x" * (2 << 20)  # spooled on disk
    messages = upload("sys/a.png", content, size=len(content) + 1)
    with pytest.raises(uploads.UploadIdle, match=r"^nothing arrived for 0.2 s \(MFSCORE_UPLOAD_IDLE_SECONDS\)"):
        receive(uploads.idle_bounded(stream(messages, then_wait=60), 0.2), tmp_path)


def test_a_file_over_the_bytes_allowed_is_refused_before_a_byte_is_kept(tmp_path):
    flight = InFlight(max_streams=1, max_bytes=1000)
    written = []

    def spooled(*args, **kwargs):
        written.append(args)
        raise AssertionError("spooled")

    with flight.stream(ALICE) as holding, pytest.MonkeyPatch.context() as patch:
        patch.setattr(uploads._Spool, "write", spooled)
        with pytest.raises(QuotaExceeded, match="MFSCORE_QUOTA_UPLOAD_BYTES is 1000$"):
            receive(stream(upload("big.bin", b"y" * 10, size=1001)), tmp_path, holding=holding)
    assert written == [] and flight.bytes == {}
    with flight.stream(ALICE) as holding:
        assert receive(stream(upload("small.bin", b"y" * 10) + upload("small2.bin", b"z" * 10)), tmp_path,
                       holding=holding) == [("small.bin", b"y" * 10), ("small2.bin", b"z" * 10)]
        assert flight.bytes == {}


def test_one_stream_naming_a_file_and_its_directory_is_refused(tmp_path):
    with pytest.raises(uploads.UploadRefused, match="^sys/a and sys/a/b are both named"):
        receive(stream(upload("sys/a", b"1") + upload("sys/a/b", b"2")), tmp_path)


@pytest.mark.parametrize("name", ["ａｌｉｃｅ", "Alice", "alice bob", "al\u0131ce", ".alice", "alice.", "a..b", "a" * 64,
                                  "", "alice/x", "alice#1"])
def test_a_callers_name_outside_the_alphabet_is_refused_wherever_tokens_are_made_or_read(name, tmp_path):
    with pytest.raises(OptionError, match="is not 1 to 63 of a-z, 0-9"):
        check_name(name)
    with pytest.raises(OptionError):
        tokens_line(name, "client", new_token())
    with pytest.raises(OptionError):
        Callers.of_tokens({new_token(): Caller(name, "client")})
    path = tmp_path / "tokens"
    path.write_text(f"ok client {'0' * 64}\n{name or 'x y'} client {'1' * 64}\n", encoding="utf-8")
    with pytest.raises(OptionError, match=":2:|line 2"):
        Callers.read(str(path))


@pytest.mark.parametrize("name", ["alice", "bob-2", "team.a_b", "0", "a" * 63, "nora-datasets"])
def test_a_callers_name_inside_the_alphabet_is_taken(name):
    assert check_name(name) == name
    Callers.of_tokens({new_token(): Caller(name, "client")})
