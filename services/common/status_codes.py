"""Which gRPC status code answers which refusal: one table (``CODES``), and the one place a call is ended with it.

A handler raises; it does not choose a code. A refusal is an ``MfscoreError`` (one sentence, the status's details)
of a category named for its code, used as AIP-193 says: a bad field INVALID_ARGUMENT naming it, a call on something
in the wrong state FAILED_PRECONDITION, NATS or S3 away UNAVAILABLE, stored bytes that are not what was written
DATA_LOSS. A domain error subclasses its category (``QuotaExceeded`` is a ``ResourceExhausted``); where an error
means another code in one call (a store error while deleting a run is UNAVAILABLE, "try again"), the handler raises
that category in a sentence of its own (``raise Unavailable(...) from error``), so the table has no special cases.

``answers`` wraps a servicer's method: a mapped error it raises ends the call with the error's code and sentence;
any other is left to gRPC (UNKNOWN). An interceptor refuses a call with ``refuse``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import NoReturn

import grpc

from mfscore.errors import MfscoreError, OptionError


class Refusal(MfscoreError):
    """Why a call is refused, in one sentence; answered with its category's code."""


class InvalidArgument(Refusal):
    """A field of the request is malformed or breaks a limit, whatever the state of the system."""


class NotFound(Refusal):
    """What the request names does not exist, or is not the caller's to see."""


class AlreadyExists(Refusal):
    """What the request would create exists already."""


class PermissionDenied(Refusal):
    """The caller may not do this (a refusal that names nothing the caller may not see)."""


class Unauthenticated(Refusal):
    """The call carries no valid credentials."""


class FailedPrecondition(Refusal):
    """The request is well formed, but what it acts on is not in a state that allows it."""


class ResourceExhausted(Refusal):
    """A quota or a size limit is exceeded."""


class DeadlineExceeded(Refusal):
    """The call took, or waited, too long."""


class Unavailable(Refusal):
    """A dependency (NATS, S3, the leader) cannot be reached now; the same call may succeed later."""


class DataLoss(Refusal):
    """Stored bytes are not what was written."""


class Internal(Refusal):
    """Something the caller cannot act on went wrong in the service."""


CODES: dict[type[Exception], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    OptionError: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    DataLoss: grpc.StatusCode.DATA_LOSS,
    Internal: grpc.StatusCode.INTERNAL,
}
_MAPPED = tuple(CODES)


def _category(error: BaseException) -> type[Exception]:
    """The class of ``CODES`` that ``error`` falls under, the nearest in its class's MRO (``LookupError`` if
    none)."""
    for cls in type(error).__mro__:
        if cls in CODES:
            return cls
    raise LookupError(f"{type(error).__name__} has no status code")


def code(error: BaseException) -> grpc.StatusCode:
    """The status code that answers ``error``."""
    return CODES[_category(error)]


def restated(error: MfscoreError, sentence: str) -> MfscoreError:
    """A refusal answered with ``error``'s code, saying ``sentence`` (its own, with what the call was doing)."""
    return _category(error)(sentence)


async def refuse(context, error: MfscoreError) -> NoReturn:
    """End the call with ``error``'s code and sentence (``context.abort`` raises)."""
    await context.abort(code(error), error.sentence())


def answers(method):
    """``method`` (a gRPC behaviour, its last argument the call's context: unary or streaming, a coroutine or an async
    generator) answering a mapped error it raises with the error's code and sentence."""
    if inspect.isasyncgenfunction(method):
        @functools.wraps(method)
        async def streaming(*args):
            try:
                async with contextlib.aclosing(method(*args)) as replies:
                    async for reply in replies:
                        yield reply
            except _MAPPED as error:
                await refuse(args[-1], error)
        return streaming

    @functools.wraps(method)
    async def unary(*args):
        try:
            return await method(*args)
        except _MAPPED as error:
            await refuse(args[-1], error)
    return unary
