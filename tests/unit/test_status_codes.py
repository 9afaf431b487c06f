"""One table maps refusals to gRPC status codes (``status_codes``), and ``answers`` is the one place a call ends with
one: a unit test of the mapping, with a fake context recording ``abort``, not of a cluster."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import grpc
import pytest

from mfscore.errors import MfscoreError, OptionError
from mfscore.services.aggregator.datasets import DatasetTampered
from mfscore.services.aggregator.lease import Deposed, NotLeading
from mfscore.services.aggregator.paging import BadPageToken
from mfscore.services.aggregator.quotas import QuotaExceeded
from mfscore.services.aggregator.reports import ReportTampered
from mfscore.services.aggregator.uploads import UploadIdle, UploadRefused
from mfscore.services.common import status_codes
from mfscore.services.common.object_store import ObjectMissing, ObjectStoreError, ObjectStoreUnavailable
from mfscore.services.common.run_layout import BadName
from mfscore.services.common.status_codes import (
    AlreadyExists,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    answers,
    code,
    restated,
)

ROOT = Path(__file__).resolve().parents[2]


class Aborted(Exception):
    """What the fake context's ``abort`` raises, as gRPC's raises its own."""


class Context:
    def __init__(self):
        self.aborts: list[tuple[grpc.StatusCode, str]] = []

    async def abort(self, code, details):
        self.aborts.append((code, details))
        raise Aborted


def test_each_category_is_answered_with_the_code_it_is_named_for():
    """A refusal's category is named for its code (``FailedPrecondition`` is FAILED_PRECONDITION), every category
    is in the table, and the core's ``OptionError`` (a bad option) is INVALID_ARGUMENT."""
    categories = [cls for cls in vars(status_codes).values()
                  if isinstance(cls, type) and issubclass(cls, status_codes.Refusal) and cls is not status_codes.Refusal]
    never_chosen = {"OK", "CANCELLED", "UNKNOWN", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED"}  # gRPC's own, or unused
    assert {code(category("why")).name for category in categories} == {c.name for c in grpc.StatusCode} - never_chosen
    for category in categories:
        assert code(category("why")).name == re.sub(r"(?<!^)(?=[A-Z])", "_", category.__name__).upper()
    assert code(OptionError("--farStop 5: a FAR is in [0, 1]")) is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(("error", "expected"), [
    (QuotaExceeded("a quota"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ReportTampered("a report"), grpc.StatusCode.DATA_LOSS),
    (DatasetTampered("a dataset"), grpc.StatusCode.DATA_LOSS),
    (UploadRefused("a file"), grpc.StatusCode.INVALID_ARGUMENT),
    (UploadIdle("quiet"), grpc.StatusCode.DEADLINE_EXCEEDED),
    (BadName("a name"), grpc.StatusCode.INVALID_ARGUMENT),
    (BadPageToken("a token"), grpc.StatusCode.INVALID_ARGUMENT),
    (ObjectStoreError("S3 said no"), grpc.StatusCode.INTERNAL),
    (ObjectMissing("runs/x"), grpc.StatusCode.INTERNAL),
    (ObjectStoreUnavailable("S3 away"), grpc.StatusCode.UNAVAILABLE),
    (NotLeading("no lease"), grpc.StatusCode.UNAVAILABLE),
    (Deposed("another leads"), grpc.StatusCode.UNAVAILABLE),
    (OptionError("an option"), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_a_domain_error_is_answered_by_its_category(error, expected):
    assert code(error) is expected


def test_an_error_the_table_does_not_map_has_no_code():
    with pytest.raises(LookupError):
        code(MfscoreError("a plain one"))


def test_restated_keeps_the_code_in_another_sentence():
    again = restated(ObjectStoreUnavailable("S3 away"), "run r: S3 away")
    assert code(again) is grpc.StatusCode.UNAVAILABLE and again.sentence() == "run r: S3 away"
    assert code(restated(OptionError("x"), "y")) is grpc.StatusCode.INVALID_ARGUMENT


def answered(call, context: Context):
    """Run ``call`` (a coroutine) to its end; the aborts it made."""
    with pytest.raises(Aborted):
        asyncio.run(call)
    return context.aborts


def test_a_unary_handler_is_answered_with_the_code_and_the_sentence():
    class Servicer:
        @answers
        async def Get(self, request, context):
            raise NotFound(f"there is no run {request!r}")

    context = Context()
    assert answered(Servicer().Get("r1", context), context) == [(grpc.StatusCode.NOT_FOUND, "there is no run 'r1'")]


def test_a_streaming_response_is_answered_after_the_replies_sent():
    class Servicer:
        @answers
        async def Watch(self, request, context):
            yield 1
            yield 2
            raise Unavailable("NATS away")

    async def drain(replies, got):
        async for reply in replies:
            got.append(reply)

    context, got = Context(), []
    assert answered(drain(Servicer().Watch(None, context), got), context) == [(grpc.StatusCode.UNAVAILABLE,
                                                                               "NATS away")]
    assert got == [1, 2]


def test_a_streaming_request_is_answered_with_the_code_and_the_sentence():
    class Servicer:
        @answers
        async def Upload(self, request_iterator, context):
            async for _ in request_iterator:
                raise QuotaExceeded("over the quota")

    async def requests():
        yield b"chunk"

    context = Context()
    assert answered(Servicer().Upload(requests(), context), context) == [(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                                          "over the quota")]


def test_a_plain_function_is_answered_too():
    """An interceptor's behaviour (request, context), no servicer."""
    @answers
    async def behaviour(request, context):
        raise PermissionDenied("the client 'x' may not call Validate")

    context = Context()
    assert answered(behaviour(None, context), context) == [(grpc.StatusCode.PERMISSION_DENIED,
                                                            "the client 'x' may not call Validate")]


def test_an_unmapped_exception_is_not_swallowed():
    @answers
    async def unary(request, context):
        raise KeyError("a bug")

    @answers
    async def streaming(request, context):
        yield 1
        raise MfscoreError("not a refusal")

    async def drain(replies):
        async for _ in replies:
            pass

    context = Context()
    with pytest.raises(KeyError):
        asyncio.run(unary(None, context))
    with pytest.raises(MfscoreError, match="not a refusal"):
        asyncio.run(drain(streaming(None, context)))
    assert context.aborts == []


def test_a_handler_that_answers_keeps_its_reply():
    @answers
    async def unary(request, context):
        return request + 1

    assert asyncio.run(unary(1, Context())) == 2


def test_no_call_is_ended_outside_the_table():
    """Every ``context.abort`` of the services is the one in ``status_codes``: a handler raises, the table answers."""
    mapping = ROOT / "services" / "common" / "status_codes.py"
    aborting = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "services").rglob("*.py"))
                if path != mapping and "context.abort(" in path.read_text(encoding="utf-8")]
    assert aborting == []
    assert mapping.read_text(encoding="utf-8").count("context.abort(") == 1
