"""What operators see, on real services: each process of a local cluster exports its own role's families and no
other's; gRPC calls are counted by method and code; jobs by task; runs of each kind (scored by a pool, scored in
the aggregator, cancelled part-way) leave the backlog at 0 and the trial counters reconciled; a pool's queue-lag
gauges follow a real JetStream consumer; and a job's log line is DEBUG, a JSON object with its run and key."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.js import api
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from integration.test_jobstream_worker import mask_job, scored, worker
from integration.uploads import upload
from mfscore.cli.main import main
from mfscore.sample_data.examples import example_arguments
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.common import json_logs, metrics
from mfscore.services.common.queue_lag import read_lag, watch_lag
from mfscore.services.common.streams import publish_job
from mfscore.services.common.subjects import DEAD_STREAM, JOBS_STREAM, dead_subject, job_filter
from mfscore.services.wire import runs_pb2, services_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

ROLE_OF = {"validator": "validator", "aggregator": "aggregator", "mask-scorer": "scorer",
           "provenance-scorer": "scorer", "detection-scorer": "scorer"}
State = runs_pb2.RunState
CREATED_LINE = re.compile(r"mfscore: run ([0-9a-f]{32}) created\n")


def scrape(config, service: str) -> dict[tuple[str, frozenset], float]:
    """The first process of ``service``'s samples: (name, labels) -> value."""
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == service)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples, name: str, **labels) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def families(config, service: str) -> set[str]:
    port = next(p["metrics_port"] for p in config.processes if p.get("service") == service)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


@pytest.mark.parametrize("service", sorted(ROLE_OF))
def test_each_service_exports_its_roles_families_alone(service, local_cluster):
    _, config = local_cluster
    exported = families(config, service)
    for family in metrics.FAMILIES:
        assert (family.name in exported) == (ROLE_OF[service] in family.roles), (service, family.name)
    samples = scrape(config, service)
    (build,) = [ls for (n, ls), _ in samples.items() if n == "mfscore_build_info"]
    assert dict(build)["version"] and re.fullmatch(r"3\.\d+\.\d+", dict(build)["python"])


def test_grpc_calls_are_counted_by_method_and_code(local_cluster):
    _, config = local_cluster
    address = next(f"127.0.0.1:{p['grpc_port']}" for p in config.processes if p.get("service") == "validator")
    labels = {"grpc_service": "grpc.health.v1.Health", "grpc_method": "Check", "grpc_type": "unary"}
    validate = {"grpc_service": "mfscore.v1.ValidatorService", "grpc_method": "Validate", "grpc_type": "unary"}
    before = scrape(config, "validator")
    with grpc.insecure_channel(address) as channel:
        for _ in range(3):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as refused:
                services_pb2_grpc.ValidatorServiceStub(channel).Validate(services_pb2.ValidateRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError):
            channel.unary_unary("/mfscore.v1.ValidatorService/MadeUp")(b"", timeout=5)
    expected = {("grpc_server_started_total", "Check", "OK"): 3, ("grpc_server_handled_total", "Check", "OK"): 3,
                ("grpc_server_handling_seconds_count", "Check", "OK"): 3,
                ("grpc_server_handled_total", "Validate", "UNAUTHENTICATED"): 2,
                ("grpc_server_handled_total", "unknown", "UNAUTHENTICATED"): 1}

    def grown(after) -> dict:
        """How much each expected count grew (a call is counted as its handler returns, just after its reply)."""
        def grew(name: str, method: str, code: str) -> float:
            wanted = ({**labels} if method == "Check" else {**validate} if method == "Validate"
                      else {"grpc_service": "unknown", "grpc_method": "unknown"})
            if name == "grpc_server_handled_total":
                wanted["grpc_code"] = code
            return value(after, name, **wanted) - value(before, name, **wanted)
        return {key: grew(*key) for key in expected}

    deadline = time.monotonic() + 5
    while grown(after := scrape(config, "validator")) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert grown(after) == expected
    assert not any("MadeUp" in dict(ls).get("grpc_method", "") for _, ls in after)


def submitted(config_file, task: str, arguments: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(["submit", "--cluster", str(config_file), task, *arguments]) == 0
    return CREATED_LINE.match(capsys.readouterr().err).group(1)


@pytest.mark.parametrize("task, scored_by", [("mask", "mask-scorer"), ("detection", "aggregator")])
def test_a_done_run_leaves_no_backlog_and_counts_its_trials_and_jobs_by_task(task, scored_by, local_cluster,
                                                                             tmp_path, capsys):
    path, config = local_cluster
    before = {service: scrape(config, service) for service in ("aggregator", "validator", "mask-scorer")}
    run_id = submitted(path, task, example_arguments(task, tmp_path / "data", tmp_path / "out"), capsys)
    with config.channel() as channel:
        run = services_pb2_grpc.AggregatorServiceStub(channel).GetRun(runs_pb2.GetRunRequest(run_id=run_id),
                                                                     timeout=10).run
    assert run.state == State.RUN_STATE_DONE and run.trials_planned > 0
    after = {service: scrape(config, service) for service in ("aggregator", "validator", "mask-scorer")}

    def grew(service: str, name: str, **labels) -> float:
        return value(after[service], name, **labels) - value(before[service], name, **labels)

    assert grew("aggregator", "mfscore_trials_planned_total") == run.trials_planned
    assert grew("aggregator", "mfscore_trials_received_total") == run.trials_planned
    assert value(after["aggregator"], "mfscore_trials_outstanding") == 0
    assert grew("validator", "mfscore_validations_total", task=task, outcome="valid") == 1
    assert grew("validator", "mfscore_validation_duration_seconds_count", task=task) == 1
    pool_jobs = grew("mask-scorer", "mfscore_jobs_total", task=task, outcome="done")
    assert pool_jobs == (run.jobs_planned if scored_by == "mask-scorer" else 0)
    assert grew("aggregator", "grpc_server_handled_total", grpc_service="mfscore.v1.AggregatorService",
                grpc_method="SubmitRun", grpc_code="OK") == 1


def test_a_cancelled_run_leaves_no_backlog_and_its_unreceived_trials_explain_the_counters(local_cluster, tmp_path):
    _, config = local_cluster
    data = generate_mask_dataset(tmp_path / "data", 400)
    run = upload(config, "mask", ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                                  "-s", str(data.directory / data.system), "-oR", "unused/x"])
    before = scrape(config, "aggregator")
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        stub.SubmitRun(runs_pb2.SubmitRunRequest(spec=run.spec(run_id=run.run_id)), timeout=10)
        for reply in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run.run_id), timeout=300):
            if reply.run.state == State.RUN_STATE_SCORING and reply.run.trials_received >= 3:
                break
        assert scrape(config, "aggregator")[("mfscore_trials_outstanding", frozenset())] > 0
        stub.CancelRun(runs_pb2.CancelRunRequest(run_id=run.run_id), timeout=10)
        time.sleep(2)  # a record in flight at the cancel is ignored
        ended = stub.GetRun(runs_pb2.GetRunRequest(run_id=run.run_id), timeout=10).run
    after = scrape(config, "aggregator")
    assert ended.state == State.RUN_STATE_CANCELLED and 3 <= ended.trials_received < ended.trials_planned
    planned = value(after, "mfscore_trials_planned_total") - value(before, "mfscore_trials_planned_total")
    received = value(after, "mfscore_trials_received_total") - value(before, "mfscore_trials_received_total")
    assert value(after, "mfscore_trials_outstanding") == 0
    assert (planned, received) == (ended.trials_planned, ended.trials_received)


def test_the_lag_gauges_follow_a_real_consumer_and_are_withdrawn_while_nats_is_away(jetstream):
    consumer = "mask-scorers"

    def gauge(name: str, **labels) -> float | None:
        return metrics.REGISTRIES["scorer"].get_sample_value(name, labels)

    async def scenario():
        async with jetstream() as (nc, js):
            await js.add_consumer(JOBS_STREAM, api.ConsumerConfig(
                durable_name=consumer, filter_subject=job_filter("mask"), ack_policy=api.AckPolicy.EXPLICIT,
                ack_wait=30))
            for n in range(5):
                await publish_job(js, "mask", mask_job("runLag", n))
            await js.publish(dead_subject("mask"), b"a dead letter")
            await read_lag(js, [consumer])
            assert gauge("mfscore_jetstream_consumer_pending", stream=JOBS_STREAM, consumer=consumer) == 5
            assert gauge("mfscore_jetstream_consumer_ack_pending", stream=JOBS_STREAM, consumer=consumer) == 0
            assert gauge("mfscore_jetstream_stream_messages", stream=DEAD_STREAM) == 1
            assert gauge("mfscore_jetstream_stream_messages", stream=JOBS_STREAM) == 5

            sub = await js.pull_subscribe_bind(durable=consumer, stream=JOBS_STREAM)
            (taken, *_), = [await sub.fetch(2, timeout=5)]
            await taken.nak()
            await asyncio.sleep(0.2)
            await read_lag(js, [consumer])
            assert gauge("mfscore_jetstream_consumer_pending", stream=JOBS_STREAM, consumer=consumer) == 3
            assert gauge("mfscore_jetstream_consumer_ack_pending", stream=JOBS_STREAM, consumer=consumer) == 2
            assert gauge("mfscore_jetstream_consumer_redelivered", stream=JOBS_STREAM, consumer=consumer) == 0

            port = metrics.start_metrics_server(0, role="scorer")
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            assert f'mfscore_jetstream_consumer_pending{{consumer="{consumer}",stream="{JOBS_STREAM}"}} 3.0' in text

            await nc.close()
            watcher = asyncio.create_task(watch_lag(js, [consumer], interval=0.2))
            await asyncio.sleep(0.5)
            watcher.cancel()
            assert gauge("mfscore_jetstream_consumer_pending", stream=JOBS_STREAM, consumer=consumer) is None
            assert gauge("mfscore_jetstream_stream_messages", stream=DEAD_STREAM) is None

    asyncio.run(scenario())


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
def test_a_jobs_log_line_is_debug_and_a_json_object_with_its_run_and_key(level, jetstream):
    stream = io.StringIO()
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    json_logs.configure("json", level)
    root.handlers[0].setStream(stream)
    try:
        async def scenario():
            async with jetstream() as (_, js):
                await publish_job(js, "mask", mask_job("runLog", 7))

                async def handle(job):
                    return scored(job)

                w = worker(js, handle)
                stop = asyncio.Event()
                task = asyncio.create_task(w.run(stop))
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if metrics.REGISTRIES["scorer"].get_sample_value(
                            "mfscore_jobs_total", {"service": w.service, "task": "mask", "outcome": "done"}):
                        break
                stop.set()
                await asyncio.wait_for(task, 5)

        asyncio.run(scenario())
    finally:
        root.handlers[:], _ = kept
        root.setLevel(kept[1])
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines and all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    about_the_job = [line for line in lines if line.get("job_key") == "runLog/0/probe/7"]
    if level == logging.INFO:
        assert about_the_job == []
    else:
        (done,) = about_the_job
        assert (done["level"], done["run_id"], done["message"]) == ("DEBUG", "runLog", "job runLog/0/probe/7 done")
