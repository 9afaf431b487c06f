"""An operator reads and purges the dead letters through the aggregator (ListDeadLetters, PurgeDeadLetters,
``mfscore dead-letters``) on a local cluster of this module's own; a client is refused. The mask scorer dead-letters
at once a message that is no job and a job naming no task, which the test publishes as the aggregator's NATS user."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
import uuid

import grpc
import pytest

from mfscore.cli.main import main
from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig
from mfscore.services.common.nats_connection import connect
from mfscore.services.common.subjects import DEAD_STREAM, job_subject
from mfscore.services.wire import dead_letters_pb2, jobs_pb2, services_pb2_grpc

pytestmark = pytest.mark.integration

NO_JOB = b"\xff not a job"


async def _publish_and_wait(config, payload: bytes, run_id: str, expected: int) -> int:
    """Publish ``payload`` as a mask job of ``run_id`` (as the aggregator), then wait until the dead-letter stream
    holds ``expected`` messages; its last sequence."""
    nc, js = await connect(commands.nats_settings(config, "aggregator"), name="test-dead-letters")
    try:
        await js.publish(job_subject("mask", run_id), payload)
        deadline = time.monotonic() + 20
        while (state := (await js.stream_info(DEAD_STREAM)).state).messages < expected:
            assert time.monotonic() < deadline, f"the dead-letter stream holds {state.messages}, not {expected}"
            await asyncio.sleep(0.05)
        return state.last_seq
    finally:
        await nc.close()


def publish_dead(config, payload: bytes, run_id: str, expected: int) -> int:
    return asyncio.run(_publish_and_wait(config, payload, run_id, expected))


def held(config) -> int:
    """How many messages the dead-letter stream holds, by its stream info."""
    async def count():
        nc, js = await connect(commands.nats_settings(config), name="test-dead-letters")
        try:
            return (await js.stream_info(DEAD_STREAM)).state.messages
        finally:
            await nc.close()
    return asyncio.run(count())


def calling(files, who: str, call):
    with ClusterConfig.read(files[who]).channel() as channel:
        return call(services_pb2_grpc.AggregatorServiceStub(channel))


def refused(files, who: str, call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        calling(files, who, call)
    return error.value


def listing(files, who: str = "operator", limit: int = 0) -> dead_letters_pb2.ListDeadLettersResponse:
    return calling(files, who, lambda s: s.ListDeadLetters(dead_letters_pb2.ListDeadLettersRequest(limit=limit),
                                                           timeout=30))


def purging(files, up_to: int, who: str = "operator") -> int:
    return calling(files, who, lambda s: s.PurgeDeadLetters(
        dead_letters_pb2.PurgeDeadLettersRequest(up_to_sequence=up_to), timeout=30)).purged


def said(files, who: str, *flags: str) -> tuple[int, str, str]:
    """``mfscore dead-letters FLAGS --cluster <who's file>``: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["dead-letters", *flags, "--cluster", str(files[who])])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def dead(teams):
    """Two dead letters: a message that is no job, then a job naming no task; (files, config, the job)."""
    _, config, files = teams
    job = jobs_pb2.Job(run_id=uuid.uuid4().hex, task="no-such-task", key=jobs_pb2.JobKey(query=0, role="probe",
                                                                                         ordinal=7))
    job.input_prefix = f"runs/{job.run_id}/inputs/"
    publish_dead(config, NO_JOB, uuid.uuid4().hex, 1)
    publish_dead(config, job.SerializeToString(), job.run_id, 2)
    return files, config, job


def test_a_client_may_neither_read_nor_purge_them(dead):
    files, config, _ = dead
    error = refused(files, "alice", lambda s: s.ListDeadLetters(dead_letters_pb2.ListDeadLettersRequest(), timeout=30))
    assert (error.code(), error.details()) == (grpc.StatusCode.PERMISSION_DENIED,
                                               "only an operator may read the dead letters")
    error = refused(files, "alice", lambda s: s.PurgeDeadLetters(
        dead_letters_pb2.PurgeDeadLettersRequest(up_to_sequence=1), timeout=30))
    assert (error.code(), error.details()) == (grpc.StatusCode.PERMISSION_DENIED,
                                               "only an operator may purge the dead letters")
    assert said(files, "alice", "--purge") == (1, "", "mfscore: error: only an operator may read the dead letters\n")
    assert held(config) == 2


def test_the_operator_reads_them_newest_first(dead):
    files, _, job = dead
    listed = listing(files)
    assert listed.total == 2
    newest, oldest = listed.dead_letters
    assert newest.sequence > oldest.sequence
    assert (newest.subject, oldest.subject) == ("mfscore.dead.mask", "mfscore.dead.mask")
    assert newest.job.run_id == job.run_id and newest.job.task == "no-such-task"
    assert (newest.job.key.role, newest.job.key.ordinal) == ("probe", 7)
    assert newest.error.startswith("the job's task 'no-such-task' is not one of ")
    assert not oldest.HasField("job")
    assert oldest.error.startswith("the message is not an mfscore.v1.Job")
    assert abs(time.time() - newest.dead_lettered_at.ToSeconds()) < 120

    one = listing(files, limit=1)
    assert ([letter.sequence for letter in one.dead_letters], one.total) == ([newest.sequence], 2)
    error = refused(files, "operator", lambda s: s.ListDeadLetters(
        dead_letters_pb2.ListDeadLettersRequest(limit=-1), timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT

    status, out, err = said(files, "operator")
    lines = out.splitlines()
    assert status == 0, err
    assert lines[0].startswith(f"{newest.sequence}  ") and f"  mfscore.dead.mask  run {job.run_id} task " \
        "no-such-task key 0/probe/7  the job's task 'no-such-task'" in lines[0]
    assert lines[1].startswith(f"{oldest.sequence}  ") and lines[1].endswith(oldest.error)
    assert lines[2:] == ["2 dead letter(s)"]


def test_a_purge_keeps_a_dead_letter_that_came_after_the_listing(dead):
    files, config, _ = dead
    read = listing(files).dead_letters[0].sequence
    later = publish_dead(config, NO_JOB, uuid.uuid4().hex, 3)
    for wrong in (0, later + 1):
        error = refused(files, "operator", lambda s: s.PurgeDeadLetters(
            dead_letters_pb2.PurgeDeadLettersRequest(up_to_sequence=wrong), timeout=30))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, wrong
    assert purging(files, read) == 2
    left = listing(files)
    assert ([letter.sequence for letter in left.dead_letters], left.total) == ([later], 1)


def test_the_command_purges_what_it_listed(dead):
    files, config, _ = dead
    assert held(config) > 0
    status, out, err = said(files, "operator", "--purge")
    assert status == 0, err
    last = out.splitlines()[-1]
    assert last.startswith("purged ") and last.endswith(" dead letter(s), up to sequence " + out.split()[0])
    assert held(config) == 0
    assert said(files, "operator", "--purge") == (0, "no dead letters\n", "")
