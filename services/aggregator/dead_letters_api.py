"""AggregatorService's ListDeadLetters and PurgeDeadLetters: an operator reads the dead letters and purges those read.

A dead letter is a job a scorer gave up on, kept in the stream MFSCORE_DEAD with its reason in its Mfscore-Error header
(``services/common/job_worker.py``). No caller's credential reaches that stream itself (clients never talk to NATS), so
the aggregator reads it for the operator, as its own NATS user, which may read the stream's messages by sequence and
purge it, nothing more of it (``services/common/nats_auth.py``). A purge names the last sequence the caller read: a
dead letter that arrived after the listing is never purged unread. Only the leading aggregator answers.
"""

from __future__ import annotations

import contextlib
import json
import logging

import nats.errors
from google.protobuf.message import DecodeError
from nats.js.errors import APIError, NotFoundError

from mfscore.services.aggregator.lease import leader_only
from mfscore.services.common.auth import caller
from mfscore.services.common.retry import one_line
from mfscore.services.common.status_codes import InvalidArgument, PermissionDenied, Unavailable, answers
from mfscore.services.common.subjects import DEAD_STREAM, ERROR_HEADER
from mfscore.services.wire import dead_letters_pb2, jobs_pb2

DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
NATS_SECONDS = 10.0  # a purge request's wait for JetStream's answer
log = logging.getLogger("mfscore.aggregator")


class DeadLetterApi:
    """The two calls, mixed into AggregatorApi, which holds the run book (``book``, for ``leader_only``) and the
    aggregator's NATS connection (``nc``) and JetStream context (``js``)."""

    @answers
    @leader_only
    async def ListDeadLetters(self, request, context):
        _operator_only("read")
        if request.limit < 0:
            raise InvalidArgument(f"limit is {request.limit}: the most dead letters to answer is at least 0 "
                                  f"(0 means {DEFAULT_LIMIT})")
        limit = min(request.limit or DEFAULT_LIMIT, MAX_LIMIT)
        with _reaching_nats("read"):
            state = (await self.js.stream_info(DEAD_STREAM)).state
            letters, missing = [], 0
            for sequence in range(state.last_seq, max(state.first_seq, 1) - 1, -1):
                if len(letters) == limit or missing > (state.num_deleted or 0):  # more gaps: the rest was purged
                    break
                try:
                    letters.append(dead_letter(await self.js.get_msg(DEAD_STREAM, seq=sequence)))
                except NotFoundError:
                    missing += 1
        return dead_letters_pb2.ListDeadLettersResponse(dead_letters=letters, total=state.messages)

    @answers
    @leader_only
    async def PurgeDeadLetters(self, request, context):
        _operator_only("purge")
        up_to = request.up_to_sequence
        if up_to == 0:
            raise InvalidArgument("up_to_sequence is 0: name the last dead letter you read (the first that "
                                  "ListDeadLetters answered), so that one arriving since is not purged unread")
        with _reaching_nats("purged"):
            last = (await self.js.stream_info(DEAD_STREAM)).state.last_seq
            if up_to > last:
                raise InvalidArgument(f"up_to_sequence is {up_to}, but the newest dead letter's is {last}: name the "
                                      "last one you read")
            purged = await purge_up_to(self.nc, up_to)
        log.info("dead letters: %d purged, up to sequence %d, as %s asked", purged, up_to, caller().name)
        return dead_letters_pb2.PurgeDeadLettersResponse(purged=purged)


def dead_letter(msg) -> dead_letters_pb2.DeadLetter:
    """A message of MFSCORE_DEAD as a ``DeadLetter``: its job's run, task and key when it holds one, never its
    bytes."""
    letter = dead_letters_pb2.DeadLetter(sequence=msg.seq, subject=msg.subject or "",
                                         error=str((msg.headers or {}).get(ERROR_HEADER, "")))
    if msg.time is not None:
        letter.dead_lettered_at.FromDatetime(msg.time)
    try:
        job = jobs_pb2.Job.FromString(msg.data or b"")
    except DecodeError:
        return letter
    letter.job.CopyFrom(dead_letters_pb2.DeadLetterJob(run_id=job.run_id, task=job.task, key=job.key))
    return letter


async def purge_up_to(nc, sequence: int) -> int:
    """Purge the dead letters up to and including ``sequence``; how many went. JetStream's purge request purges up to
    but not including its ``seq``, hence ``sequence + 1``; nats-py's ``purge_stream`` does not answer how many."""
    reply = await nc.request(f"$JS.API.STREAM.PURGE.{DEAD_STREAM}", json.dumps({"seq": sequence + 1}).encode(),
                             timeout=NATS_SECONDS)
    answer = json.loads(reply.data)
    if "error" in answer:
        APIError.from_error(answer["error"])  # raises
    return int(answer.get("purged", 0))


def _operator_only(what: str) -> None:
    if not caller().operator:
        raise PermissionDenied(f"only an operator may {what} the dead letters")


@contextlib.contextmanager
def _reaching_nats(what: str):
    """NATS away, or JetStream refusing, is UNAVAILABLE: the call may be repeated."""
    try:
        yield
    except (nats.errors.Error, TimeoutError) as error:
        raise Unavailable(f"the dead letters cannot be {what} now: {one_line(error)}; try again") from error
