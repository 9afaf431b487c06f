"""Faults of a local cluster's infrastructure, each of which must end with the run done and the embedded command's
files, without a human: the aggregator killed (-9) and started again while ``mfscore submit`` follows the run; NATS
stopped while a run is REPORTING (the state write waits, watchers are told, health says NOT_SERVING meanwhile); and
what a finished run leaves behind (retention, docs/distributed.md)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import grpc
import pytest
from nats.js.errors import NoKeysError

from integration.equivalence import tree, without_created
from mfscore.services.local.faulty_proxy import FaultyProxy
from mfscore.cli.main import main
from mfscore.errors import MfscoreError, OptionError
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.aggregator.service import Aggregator
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.commands.report import Reconnecting, list_runs, watch
from mfscore.services.commands.upload import upload_run
from mfscore.services.common import input_manifest
from mfscore.services.common.nats_auth import SERVICE_ROLES
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import input_prefix, reports_prefix, uploads_prefix
from mfscore.services.common.settings import Settings
from mfscore.services.common.streams import runs_bucket
from mfscore.services.common.subjects import JOBS_STREAM, RESULTS_STREAM, result_subject
from mfscore.services.local.servers import free_port, start_nats_server
from mfscore.services.wire import records_pb2, runs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration
State = runs_pb2.RunState
ENDED = (State.RUN_STATE_DONE, State.RUN_STATE_FAILED, State.RUN_STATE_REJECTED, State.RUN_STATE_CANCELLED)


def wait_for(predicate, what: str, timeout: float = 120.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def figures(test: str, **values) -> None:
    """The figures docs/reliability.md quotes (run pytest with -s to see them)."""
    print(f"\nfigures {test}: " + ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in values.items()))


def process(config: ClusterConfig, name: str) -> dict:
    """The latest process of a service (``aggregator``, ``mask-scorer``) or a server (``nats-server``)."""
    return [p for p in config.processes if p.get("service", p["name"]) == name][-1]


def kill(p: dict, signum=signal.SIGTERM) -> None:
    os.kill(p["pid"], signum)
    wait_for(lambda: not commands.pid_alive(p["pid"]), f"{p['name']} to stop")


def restart(path: Path, config: ClusterConfig, p: dict) -> dict:
    """Start the service of ``p`` again on its gRPC port, as 'local-cluster up' did; the cluster file learns it."""
    again = commands.start_service(config, Path(config.state_dir), f"{p['name']}-again-{uuid.uuid4().hex[:4]}",
                                   p["service"], p["grpc_port"])
    config.processes.append(again)
    config.write(path)
    commands.wait_healthy(again)
    return again


def restart_nats(path: Path, config: ClusterConfig) -> None:
    """nats-server again on the same port and store directory."""
    state = Path(config.state_dir)
    port = int(config.nats_url.rsplit(":", 1)[1])
    users = {role: commands._nats_password(state, role) for role in SERVICE_ROLES}  # the passwords 'up' made
    server = start_nats_server(state / "jetstream", port, users=users, log_dir=state / "logs", detach=True)
    config.processes.append({"name": "nats-server", "pid": server.popen.pid, "log": str(server.log_path)})
    config.write(path)


def service_settings(config: ClusterConfig):
    """What the aggregator runs with: NATS as ``aggregator``, S3 with the services' key."""
    nats = commands.nats_settings(config, "aggregator")
    return commands.service_s3_settings(config, nats_user=nats.nats_user, nats_password=nats.nats_password)


def mask_arguments(data) -> list[str]:
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
            "-s", data.system, "--sbin", "120", "-qm", "Purpose==['add']", "Purpose==['clone']"]


def embedded(tmp_path: Path, arguments: list[str], capsys) -> tuple[str, str]:
    capsys.readouterr()
    assert main(["mask", *arguments, "-oR", str(tmp_path / "embedded" / "x")]) == 0
    said = capsys.readouterr()
    return said.out, said.err


def start_submit(path: Path, arguments: list[str], out_dir: Path) -> tuple[subprocess.Popen, Path, Path]:
    """``mfscore submit mask ARGUMENTS -oR OUT_DIR/x`` as a process of its own; its stdout and stderr files."""
    env = {k: v for k, v in os.environ.items() if k not in ("MFSCORE_CLUSTER", "MFSCORE_TOKEN")}
    out, err = out_dir.parent / f"{out_dir.name}.stdout", out_dir.parent / f"{out_dir.name}.stderr"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        popen = subprocess.Popen([sys.executable, "-m", "mfscore", "submit", "--cluster", str(path), "mask",
                                  *arguments, "-oR", str(out_dir / "x")], env=env, stdin=subprocess.DEVNULL,
                                 stdout=stdout, stderr=stderr)
    return popen, out, err


def the_run(config: ClusterConfig, state) -> runs_pb2.RunStatus | None:
    """The cluster's run in ``state``, or None."""
    return next((r for r in runs(config) if r.state == state), None)


def runs(config: ClusterConfig) -> list[runs_pb2.RunStatus]:
    with config.channel() as channel:
        return list(list_runs(services_pb2_grpc.AggregatorServiceStub(channel)))


def get_run(config: ClusterConfig, run_id: str) -> runs_pb2.RunStatus:
    with config.channel() as channel:
        return services_pb2_grpc.AggregatorServiceStub(channel).GetRun(runs_pb2.GetRunRequest(run_id=run_id), timeout=5).run


def trials_reported(out_dir: Path) -> int:
    """Rows of the per-image tables, over every query."""
    return sum(len(p.read_text().splitlines()) - 1 for p in out_dir.rglob("*_mask_scores_perimage.csv"))


def on_nats(config: ClusterConfig, check, role: str = "aggregator"):
    """``await check(nc, js)`` on a connection of its own to the cluster's NATS."""
    async def session():
        nc, js = await connect(commands.nats_settings(config, role))
        try:
            return await check(nc, js)
        finally:
            await nc.close()
    return asyncio.run(session())


def messages_of(config: ClusterConfig, run_id: str) -> tuple[int, int]:
    """(records in the results stream, jobs queued) of the run."""
    async def check(nc, js):
        counts = []
        for stream, subjects in ((RESULTS_STREAM, result_subject(run_id)), (JOBS_STREAM, f"mfscore.jobs.*.{run_id}")):
            info = await js.stream_info(stream, subjects_filter=subjects)
            counts.append(sum((info.state.subjects or {}).values()))
        return tuple(counts)
    return on_nats(config, check)


def stored_status(config: ClusterConfig, run_id: str) -> runs_pb2.RunStatus:
    async def check(nc, js):
        kv = await runs_bucket(js, Settings())
        return runs_pb2.RunStatus.FromString((await kv.get(f"status.{run_id}")).value)
    return on_nats(config, check)


def test_submit_waits_out_an_aggregator_restart(tmp_path, capsys, cluster):
    path, config = cluster
    data = generate_mask_dataset(tmp_path / "data", 12)
    arguments = mask_arguments(data)
    out, err = embedded(tmp_path, arguments, capsys)
    scorer, aggregator = process(config, "mask-scorer"), process(config, "aggregator")
    kill(scorer)  # the jobs wait in the queue: the run is SCORING when the aggregator dies
    submit, stdout, stderr = start_submit(path, arguments, tmp_path / "submitted")
    try:
        planned = wait_for(lambda: the_run(config, State.RUN_STATE_SCORING), "the run to be planned")
        assert planned.trials_planned > 0 and planned.trials_received == 0
        kill(aggregator, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: "reconnecting" in stderr.read_text(), "submit to say it is reconnecting", timeout=60)
        restart(path, config, scorer)
        restart(path, config, aggregator)
        back = time.monotonic()
        assert submit.wait(timeout=600) == 0, stderr.read_text()
        recovered = time.monotonic() - back
    finally:
        if submit.poll() is None:
            submit.kill()
    done = get_run(config, planned.run_id)
    assert done.state == State.RUN_STATE_DONE and done.trials_received == planned.trials_planned
    assert tree(tmp_path / "submitted") == tree(tmp_path / "embedded")
    assert stdout.read_text().replace(str(tmp_path / "submitted"), str(tmp_path / "embedded")) == out
    said = without_created(stderr.read_text()).splitlines()
    assert len([line for line in said if "reconnecting" in line]) == 1
    assert [line for line in said if "reconnecting" not in line] == err.splitlines()
    figures("aggregator restart", trials_planned=planned.trials_planned, trials_received=done.trials_received,
            trials_reported=trials_reported(tmp_path / "submitted"), seconds_aggregator_away=back - killed,
            seconds_from_aggregator_back_to_exit=recovered)


def watch_in_background(config: ClusterConfig, run_id: str) -> tuple[threading.Thread, list]:
    """A second watcher of the run (``report.watch``, as submit watches); the final status it saw."""
    seen: list = []
    thread = threading.Thread(target=lambda: seen.append(watch(config, run_id, interactive=False)), daemon=True)
    thread.start()
    return thread, seen


def freeze_while_reporting(config: ClusterConfig, aggregator: dict, run_id: str) -> bool:
    """Stop (SIGSTOP) the aggregator as soon as the run is REPORTING; True when its DONE was not recorded yet."""
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        for status in (r.run for r in stub.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id))):
            if status.state == State.RUN_STATE_REPORTING or status.state in ENDED:
                os.kill(aggregator["pid"], signal.SIGSTOP)
                break
    time.sleep(0.5)  # a write already sent lands
    return stored_status(config, run_id).state == State.RUN_STATE_REPORTING


def health_of(config: ClusterConfig, service: str) -> str:
    return commands.health(f"127.0.0.1:{process(config, service)['grpc_port']}")


@pytest.mark.parametrize("outage", [pytest.param(2.0, id="2s"), pytest.param(15.0, id="15s", marks=pytest.mark.faults)])
def test_a_nats_outage_while_reporting_ends_done(tmp_path, capsys, cluster, outage):
    path, config = cluster
    data = generate_mask_dataset(tmp_path / "data", 24)
    arguments = mask_arguments(data)
    out, err = embedded(tmp_path, arguments, capsys)
    aggregator, nats = process(config, "aggregator"), process(config, "nats-server")
    known: set[str] = set()
    submit = None
    try:
        for attempt in range(3):  # the report must still be running when the aggregator is stopped: almost always
            out_dir = tmp_path / f"submitted-{attempt}"
            submit, stdout, stderr = start_submit(path, arguments, out_dir)
            run = wait_for(lambda: next((r for r in runs(config) if r.run_id not in known), None), "the run")
            known.add(run.run_id)
            watcher, seen = watch_in_background(config, run.run_id)
            if freeze_while_reporting(config, aggregator, run.run_id):
                break
            os.kill(aggregator["pid"], signal.SIGCONT)
            assert submit.wait(timeout=300) == 0, stderr.read_text()
        else:
            pytest.fail("every run was reported before the aggregator could be stopped")
        kill(nats)
        stopped = time.monotonic()
        os.kill(aggregator["pid"], signal.SIGCONT)
        for service in ("aggregator", "mask-scorer"):
            wait_for(lambda: health_of(config, service) == "NOT_SERVING", f"the {service} to say NOT_SERVING", 30)
        with config.channel() as channel:
            with pytest.raises(grpc.RpcError) as refused:
                services_pb2_grpc.AggregatorServiceStub(channel).CreateRun(runs_pb2.CreateRunRequest(), timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert refused.value.details().endswith("was not recorded; try again")
        time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
        assert not seen and submit.poll() is None  # the DONE is not told before it is recorded
        restart_nats(path, config)
        back = time.monotonic()
        assert submit.wait(timeout=300) == 0, stderr.read_text()
        recovered = time.monotonic() - back
        watcher.join(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(aggregator["pid"], signal.SIGCONT)
        if submit is not None and submit.poll() is None:
            submit.kill()
    assert seen and seen[0].state == State.RUN_STATE_DONE  # the other watcher was told too
    assert stored_status(config, run.run_id).state == State.RUN_STATE_DONE
    assert {r.run_id for r in runs(config)} == known  # the run CreateRun could not record is forgotten
    for service in ("aggregator", "mask-scorer"):
        wait_for(lambda: health_of(config, service) == "SERVING", f"the {service} to say SERVING again", 30)
    assert tree(out_dir) == tree(tmp_path / "embedded")
    assert stdout.read_text().replace(str(out_dir), str(tmp_path / "embedded")) == out
    assert without_created(stderr.read_text()) == err  # nothing about the outage: submit's watch never broke
    said = Path(aggregator["log"]).read_text()  # the reports are stored under a lease renewed once NATS is back,
    # then the report's digest and DONE are recorded: whichever step met the outage waited for NATS
    assert re.search(rf"run {run.run_id}: (recording (its report's digest|RUN_STATE_DONE)|holding the lease to store "
                     rf"its reports): waiting for NATS", said)
    done = get_run(config, run.run_id)
    figures(f"NATS outage of {outage:g} s while reporting", trials_planned=done.trials_planned,
            trials_received=done.trials_received, trials_reported=trials_reported(out_dir), attempts=len(known),
            seconds_nats_down=back - stopped, seconds_from_nats_back_to_exit=recovered)


def test_a_finished_run_leaves_its_status_and_reports_only_for_the_retention_period(tmp_path, capsys, cluster):
    path, config = cluster
    data = generate_mask_dataset(tmp_path / "data", 6)
    arguments = mask_arguments(data)
    store = ObjectStore(service_settings(config))
    work = Path(config.state_dir) / "work" / "aggregator-1" / "runs"

    capsys.readouterr()
    assert main(["submit", "--cluster", str(path), "mask", *arguments, "-oR", str(tmp_path / "done" / "x")]) == 0
    done = the_run(config, State.RUN_STATE_DONE)

    kill(process(config, "mask-scorer"))  # the next run's jobs stay queued
    failing, stdout, stderr = start_submit(path, arguments, tmp_path / "failed")
    try:
        queued = wait_for(lambda: the_run(config, State.RUN_STATE_SCORING), "the second run to be planned")
        assert messages_of(config, queued.run_id)[1] == queued.jobs_planned > 0
        assert store.list_keys(uploads_prefix(queued.run_id)) and (work / queued.run_id).is_dir()

        async def dead_letter(nc, js):  # what a scorer publishes when a job fails on its last delivery
            record = records_pb2.TrialRecord(run_id=queued.run_id, task="mask", scorer="mask-scorer",
                                             error="failed on delivery 5 of 5: the disk is full")
            record.key.role = "probe"
            await js.publish(result_subject(queued.run_id), record.SerializeToString())
        on_nats(config, dead_letter, role="scorer")
        assert failing.wait(timeout=120) == 1
    finally:
        if failing.poll() is None:
            failing.kill()
    assert "the disk is full" in stderr.read_text()
    failed = get_run(config, queued.run_id)
    assert failed.state == State.RUN_STATE_FAILED

    for run in (done, failed):  # its records, queued jobs and work directory are gone; its status and inputs are kept
        wait_for(lambda: not (work / run.run_id).exists(), f"run {run.run_id}'s work directory to go", timeout=30)
        wait_for(lambda: messages_of(config, run.run_id) == (0, 0), f"run {run.run_id}'s messages to go", timeout=30)
        assert not (work / run.run_id).exists()
        assert stored_status(config, run.run_id).state == run.state
        assert input_manifest.read(store, run.run_id)  # as long as the run: a resubmission uploads nothing
    assert store.list_keys(reports_prefix(done.run_id))
    inputs = input_manifest.keys(input_manifest.read(store, done.run_id))
    assert inputs and all(store.exists(key) for key in inputs)

    orphan = f"runs/{uuid.uuid4().hex}/inputs/ref/r.csv"  # uploads of a run no state knows
    store.put_bytes(orphan, b"x")
    (tmp_path / "r.csv").write_text("TaskID|ProbeFileID\n")
    given_up = upload_run(config, [(str(tmp_path / "r.csv"), "ref/r.csv")])  # created, never submitted
    late = input_prefix(done.run_id) + "ref/late.csv"  # an input a clean-up has yet to delete
    store.put_bytes(late, b"x")
    s3 = FaultyProxy(("127.0.0.1", int(config.s3_endpoint.rsplit(":", 1)[1])))
    settings = dataclasses.replace(service_settings(config), work_dir=str(tmp_path / "sweeper"),
                                   s3_endpoint=f"http://{s3.endpoint}")

    async def sweep(nc, js):  # another aggregator over the same bucket and streams: it holds no state of its own
        aggregator = Aggregator(settings, ObjectStore(settings), js, await runs_bucket(js, settings), None, nc=nc)
        await aggregator.restore()
        assert {done.run_id, failed.run_id} <= set(aggregator.runs)
        s3.refuse()
        await aggregator.sweep()  # S3 is down: the clean-up is left to the next sweep, the run stays done
        down = (store.exists(late), aggregator.runs[done.run_id].status.state)
        s3.accept()
        await aggregator.sweep()  # within the retention period: only what a finished run no longer needs goes
        kept = (store.exists(late), store.list_keys(f"runs/{done.run_id}/"), store.exists(orphan),
                list(input_manifest.read(store, given_up)))
        await aggregator.sweep(now=time.time() + (settings.retention_days + 1) * 86400)
        try:
            return down, kept, set(await aggregator.kv.keys())
        except NoKeysError:
            return down, kept, set()

    try:
        down, kept, keys = on_nats(config, sweep)
    finally:
        s3.close()
    assert down == (True, State.RUN_STATE_DONE)
    assert not kept[0] and {key.split("/")[2] for key in kept[1]} == {"reports", "report-manifest.pb", "uploads"}
    assert kept[2] and kept[3] == ["ref/r.csv"]  # a created run stays a day
    for run_id in (done.run_id, failed.run_id, given_up):
        assert not store.list_keys(f"runs/{run_id}/")
        assert not {f"status.{run_id}", f"spec.{run_id}", f"report.{run_id}"} & keys
    assert not store.exists(orphan)
    assert not any(store.exists(key) for key in inputs)  # nothing names them any more


def test_submit_gives_up_on_an_aggregator_that_never_comes_back(tmp_path, capsys):
    config = ClusterConfig(aggregator_address=f"127.0.0.1:{free_port()}", validator_address="", nats_url="",
                           s3_endpoint="http://127.0.0.1:1", bucket="mfscore")
    started = time.monotonic()
    with pytest.raises(MfscoreError) as error:
        watch(config, "r1", interactive=False, reconnecting=Reconnecting(config.aggregator_address, "r1", patience=2))
    assert 2 <= time.monotonic() - started < 30
    assert "was unavailable for 2 seconds" in str(error.value) and "'mfscore report r1'" in str(error.value)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].endswith("; reconnecting for up to 2 seconds")


def test_the_retention_period_comes_from_the_environment():
    assert Settings.from_env({}).retention_days == 30
    assert Settings.from_env({"MFSCORE_RETENTION_DAYS": "7"}).retention_days == 7
    with pytest.raises(OptionError, match="^MFSCORE_RETENTION_DAYS must be at least 1, not 0$"):
        Settings.from_env({"MFSCORE_RETENTION_DAYS": "0"})
