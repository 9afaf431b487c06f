"""A run's life through AggregatorService on a local cluster (real nats-server and S3 server), as another system
drives it: ListRuns page by page, CancelRun, DeleteRun, GetResults, and report files larger than a default gRPC
client's 4 MiB message limit fetched by such a client (docs/distributed.md "The API").
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
from pathlib import Path

import grpc
import pytest

from integration.test_outages import messages_of
from integration.uploads import upload
from mfscore.cli.main import main
from mfscore.results import Results
from mfscore.run.local import RESULTS_FILE
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.sample_data.examples import example_arguments
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.commands.report import fetch_and_write
from mfscore.services.common.auth import client_channel
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.results_wire import results_from_message
from mfscore.services.common.run_layout import reports_prefix, run_prefix
from mfscore.services.wire import results_pb2, runs_pb2, services_pb2_grpc
from output_files import tree

pytestmark = pytest.mark.integration

State = runs_pb2.RunState
CREATED_LINE = re.compile(r"mfscore: run ([0-9a-f]{32}) created\n")
DEFAULT_LIMIT = 4 << 20  # a gRPC client's largest message unless it raises grpc.max_receive_message_length


@dataclasses.dataclass
class Client:
    name: str
    file: Path
    config: ClusterConfig

    def stub(self, channel) -> services_pb2_grpc.AggregatorServiceStub:
        return services_pb2_grpc.AggregatorServiceStub(channel)


@pytest.fixture(scope="module")
def clients(local_cluster, tmp_path_factory) -> dict[str, Client]:
    """dora, erin and pat (who pages): clients of the shared local cluster, each with a cluster file of its own."""
    _, config = local_cluster
    made = {}
    for name in ("dora", "erin", "pat"):
        path = tmp_path_factory.mktemp(name) / "cluster.json"
        commands.add_caller(config, f"{name}-lifecycle", "client", out=path)
        made[name] = Client(name, path, ClusterConfig.read(path))
    time.sleep(1.5)  # the services read the tokens file again within a second
    return made


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value


def service_store(config: ClusterConfig) -> ObjectStore:
    return ObjectStore(commands.service_s3_settings(config))


def submitted(client: Client, task: str, arguments: list[str], capsys) -> str:
    """``mfscore submit TASK ARGUMENTS`` with the client's cluster file; the run id it names in full, first."""
    capsys.readouterr()
    assert main(["submit", "--cluster", str(client.file), task, *arguments]) == 0
    return CREATED_LINE.match(capsys.readouterr().err).group(1)


def said(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    status = main(argv)
    return status, capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- ListRuns


def test_pages_list_every_run_once_in_creation_order(clients, capsys):
    pat = clients["pat"]
    with pat.config.channel() as channel:
        stub = pat.stub(channel)
        created = [stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=10).run_id for _ in range(105)]
        listed, token, pages = [], "", 0
        while True:
            page = stub.ListRuns(runs_pb2.ListRunsRequest(page_size=20, page_token=token), timeout=10)
            assert 0 < len(page.runs) <= 20
            listed += [run.run_id for run in page.runs]
            pages += 1
            if pages == 2:  # created while the caller pages: listed last, nothing else moves
                created.append(stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=10).run_id)
            token = page.next_page_token
            if not token:
                break
        assert listed == created and pages == 6  # 106 runs: five pages of 20 and one of 6

        first = stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=10)
        assert len(first.runs) == 100 and first.next_page_token  # the default page
        assert len(stub.ListRuns(runs_pb2.ListRunsRequest(page_size=5000), timeout=10).runs) == 106  # at most 1000
        assert stub.ListRuns(runs_pb2.ListRunsRequest(state=State.RUN_STATE_DONE), timeout=10).runs == []

        for request, said_ in ((runs_pb2.ListRunsRequest(page_size=-1), "page_size is -1"),
                                (runs_pb2.ListRunsRequest(page_token="not-a-token"), "page_token is not a token"),
                                (runs_pb2.ListRunsRequest(state=State.RUN_STATE_CREATED, page_token=token or
                                                          first.next_page_token), "another state filter")):
            error = refused(lambda: stub.ListRuns(request, timeout=10))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and said_ in error.details(), error.details()

    capsys.readouterr()
    assert main(["report", "--list", "--cluster", str(pat.file)]) == 0  # every page, in order
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["RUN", "TASK", "STATE", "TRIALS"] and lines[-1] == "106 run(s)"
    assert [line.split()[0] for line in lines[1:-1]] == created
    assert all(line.split()[1:4] == ["-", "created", "0/0"] for line in lines[1:-1])

    with pat.config.channel() as channel:  # cancelled (a created run can be), then deleted: none left
        stub = pat.stub(channel)
        for run_id in created:
            assert stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=10).run.state == \
                State.RUN_STATE_CANCELLED
        cancelled = stub.ListRuns(runs_pb2.ListRunsRequest(state=State.RUN_STATE_CANCELLED, page_size=1000),
                                  timeout=10).runs
        assert [run.run_id for run in cancelled] == created
        assert all(run.message == "cancelled by pat-lifecycle" and run.HasField("finished_at") for run in cancelled)
        for run_id in created:
            stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=30)
        assert stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=10) == runs_pb2.ListRunsResponse()


# ----------------------------------------------------------------------------------------------- CancelRun


def test_a_run_cancelled_while_scoring_stops_and_is_then_deleted(clients, local_cluster, tmp_path, capsys):
    """400 probes for the cluster's one mask scorer; cancelled with a few records in (mfscore cancel): it ends at
    once, its queued jobs are dropped, and what arrives later changes nothing; deleted (mfscore delete), nothing of
    it is left."""
    _, config = local_cluster
    dora = clients["dora"]
    data = generate_mask_dataset(tmp_path / "data", 400)
    run = upload(dora.config, "mask", ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                                       "-s", str(data.directory / data.system), "-oR", "unused/x"])
    with dora.config.channel() as channel:
        stub = dora.stub(channel)
        stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=run.spec(run_id=run.run_id)), timeout=10)
        for reply in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run.run_id), timeout=300):
            if reply.run.state == State.RUN_STATE_SCORING and reply.run.trials_received >= 3:
                break
        scoring = reply.run
        planned = len(run.plan.jobs)  # a mask job is one trial
        assert (scoring.state, scoring.trials_planned, scoring.jobs_planned) == (State.RUN_STATE_SCORING, planned,
                                                                                 planned) and planned > 300

        status, err = said(["delete", run.run_id, "--cluster", str(dora.file)], capsys)
        assert status == 1 and f"run {run.run_id} is scoring: it has not ended; cancel it first" in err
        for call in (lambda: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run.run_id), timeout=10)),
                     lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=run.run_id), timeout=10)):
            assert refused(call).code() == grpc.StatusCode.FAILED_PRECONDITION

        status, err = said(["cancel", run.run_id, "--cluster", str(dora.file)], capsys)
        assert status == 0, err
        found = re.fullmatch(rf"mfscore: run {run.run_id} cancelled with (\d+) of {planned} trial\(s\) scored\n",
                             err)
        assert found and 3 <= int(found.group(1)) < planned
        cancelled = stub.GetRun(runs_pb2.GetRunRequest(run_id=run.run_id), timeout=10).run
        assert cancelled.state == State.RUN_STATE_CANCELLED and cancelled.message == "cancelled by dora-lifecycle"
        final = [r.run for r in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run.run_id), timeout=30)]
        assert [s.state for s in final] == [State.RUN_STATE_CANCELLED]  # a watch ends with the run

        deadline = time.monotonic() + 30
        while messages_of(config, run.run_id)[1]:  # its queued jobs, purged by the clean-up
            assert time.monotonic() < deadline, "the cancelled run's jobs are still queued"
            time.sleep(0.5)
        time.sleep(2)  # a job in a scorer's hands when the run was cancelled: its record is ignored
        later = stub.GetRun(runs_pb2.GetRunRequest(run_id=run.run_id), timeout=10).run
        assert (later.state, later.trials_received) == (State.RUN_STATE_CANCELLED, cancelled.trials_received)
        assert int(found.group(1)) <= cancelled.trials_received < planned

        error = refused(lambda: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run.run_id), timeout=10))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "it has ended" in error.details()

        status, err = said(["delete", run.run_id, "--cluster", str(dora.file)], capsys)
        assert (status, err) == (0, f"mfscore: run {run.run_id} deleted\n")
        error = refused(lambda: stub.GetRun(runs_pb2.GetRunRequest(run_id=run.run_id), timeout=10))
        assert error.code() == grpc.StatusCode.NOT_FOUND
    assert service_store(config).list_keys(run_prefix(run.run_id)) == []


# ----------------------------------------------------------------------------------------------- DeleteRun


def test_a_finished_run_is_deleted_with_its_reports(clients, local_cluster, tmp_path, capsys):
    _, config = local_cluster
    erin = clients["erin"]
    data = generate_mask_dataset(tmp_path / "data", 5)
    run_id = submitted(erin, "mask", ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "-s",
                                      str(data.directory / data.system), "-oR", str(tmp_path / "out" / "x")], capsys)
    store = service_store(config)
    assert store.list_keys(reports_prefix(run_id))
    with erin.config.channel() as channel:
        stub = erin.stub(channel)
        done = stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=10).run
        assert done.state == State.RUN_STATE_DONE and done.trials_received == done.trials_planned == 5
        error = refused(lambda: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run_id), timeout=10))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "is done: it has ended" in error.details()
        assert stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=30) == runs_pb2.DeleteRunResponse()
        for call in (lambda: stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=10),
                     lambda: list(stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id), timeout=10)),
                     lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=10),
                     lambda: stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=run_id), timeout=10)):
            assert refused(call).code() == grpc.StatusCode.NOT_FOUND
        assert run_id not in {run.run_id for run in stub.ListRuns(runs_pb2.ListRunsRequest(), timeout=10).runs}
    assert store.list_keys(run_prefix(run_id)) == []
    status, err = said(["report", run_id, "--cluster", str(erin.file), "-o", str(tmp_path / "again")], capsys)
    assert status == 1 and f"there is no run '{run_id}'" in err and not (tmp_path / "again").exists()


# ----------------------------------------------------------------------------------------------- GetResults


@pytest.mark.parametrize("task", ["detection", "mask"])
def test_get_results_is_the_embedded_runs_results(task, clients, local_cluster, tmp_path, capsys):
    _, config = local_cluster
    erin = clients["erin"]
    arguments = example_arguments(task, tmp_path / "data", tmp_path / "out")
    assert main([task, *arguments[:-1], str(tmp_path / "embedded" / Path(arguments[-1]).name)]) == 0
    (embedded_file,) = (tmp_path / "embedded").glob(f"*{RESULTS_FILE}")
    embedded = Results.from_json(embedded_file.read_bytes())
    run_id = submitted(erin, task, arguments, capsys)
    with erin.config.channel() as channel:
        stub = erin.stub(channel)
        got = stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=30).results
        assert results_from_message(got) == embedded
        assert got.provenance_json == stub.GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=10).run.provenance_json
        assert got.primary == embedded.primary and got.rows and (task != "detection" or got.curves)

        store = service_store(config)
        key = reports_prefix(run_id) + embedded_file.name
        original = store.get_bytes(key, max_bytes=1 << 24)
        try:
            store.put_bytes(key, original.replace(b'"task"', b'"TASK"', 1))  # the results file tampered with
            error = refused(lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id), timeout=30))
            assert error.code() == grpc.StatusCode.DATA_LOSS and embedded_file.name in error.details()
        finally:
            store.put_bytes(key, original)
        assert results_from_message(stub.GetResults(results_pb2.GetResultsRequest(run_id=run_id),
                                                    timeout=30).results) == embedded

        created = stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=10).run_id
        error = refused(lambda: stub.GetResults(results_pb2.GetResultsRequest(run_id=created), timeout=10))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "is created, not done" in error.details()
        stub.CancelRun(runs_pb2.CancelRunRequest(run_id=created), timeout=10)
        stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=created), timeout=30)


# ----------------------------------------------------------------------------------------------- no size cliff


def test_a_report_file_over_4_mib_reaches_a_client_with_default_limits(clients, tmp_path, capsys):
    """Detection of 20,000 trials with --outMeta: <prefix>_allmeta.csv is over 4 MiB, one file; a channel with
    gRPC's default options (no raised message limit) fetches it, byte-identical to the embedded command's."""
    erin = clients["erin"]
    data = generate_detection_dataset(tmp_path / "data", 20_000)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir",
                 str(data.directory), "-s", data.system, "--outMeta", "--noPlot"]
    assert main(["detection", *arguments, "-o", str(tmp_path / "embedded" / "x")]) == 0
    embedded = tree(tmp_path / "embedded")
    largest = max(embedded, key=lambda name: len(embedded[name]))
    assert len(embedded[largest]) > DEFAULT_LIMIT, (largest, len(embedded[largest]))
    run_id = submitted(erin, "detection", [*arguments, "-o", str(tmp_path / "submitted" / "x")], capsys)

    with client_channel(erin.config.aggregator_address, token=erin.config.token, tls_ca=erin.config.tls_ca) as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)  # default options: 4 MiB a message at most
        replies = stub.FetchReport(runs_pb2.FetchReportRequest(run_id=run_id), timeout=120)
        assert max(reply.ByteSize() for reply in replies) <= DEFAULT_LIMIT
        fetched = fetch_and_write(stub, run_id, str(tmp_path / "fetched" / "x"), out=io.StringIO())
    assert fetched.status == 0
    assert tree(tmp_path / "fetched") == embedded  # the provenance, whose times differ, left out
    print(f"\nFetchReport over a default-limit channel: {largest} of {len(embedded[largest]):,} bytes, "
          f"{len(embedded)} files, byte-identical to embedded")
