"""Who may call a gRPC service: bearer tokens checked by a server interceptor, and the channels that send them.

A service reads its callers from a tokens file (``MFSCORE_TOKENS_FILE``, a Kubernetes secret mounted as
a file), one caller a line: ``<name> <role> <sha256 of the token, hex>``; ``#`` starts a comment. The
file holds digests, so it can be read by anyone who may see the deployment without giving a way in.
Every method but health needs a token of a role the method allows; the caller's name and role reach
the servicer through ``caller()``. An empty token is never a token: a call without one is refused before
any lookup, and a file listing the empty string's digest is refused, so no file can let anonymous calls
in. A name has one role, so one name is never two callers (runs are owned by caller). A name is ASCII, from
one alphabet (``NAME``): lowercase letters, digits, '.', '_' and '-', so no two names look alike (``ａｌｉｃｅ`` is
refused). A token taken out of the file ends its streaming calls under way within seconds (``_revocable``); a
unary call ends on its own.

Roles: ``client`` submits runs and sees its own, ``operator`` sees and fetches every run, ``service``
is one mfscore service calling another (the aggregator's Validate calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

import grpc

from mfscore.errors import OptionError
from mfscore.services.common.status_codes import PermissionDenied, Refusal, Unauthenticated, refuse

ROLES = ("client", "operator", "service")
HEALTH_PREFIX = "/grpc.health.v1.Health/"
# Which roles may call each service's methods; reflection is open to any authenticated caller.
METHOD_ROLES = {
    "/mfscore.v1.AggregatorService/": ("client", "operator"),
    "/mfscore.v1.DatasetService/": ("client", "operator"),
    "/mfscore.v1.CampaignService/": ("client", "operator"),
    "/mfscore.v1.ValidatorService/": ("service", "operator"),
    "/mfscore.v1.ScorerService/": ("service", "operator"),
    "/grpc.reflection.": ROLES,
}
MAX_TOKENS_FILE_BYTES = 1 << 20
RELOAD_SECONDS = 1.0
REVOKED = "the caller's token was revoked (taken out of the tokens file), which ends its calls under way"
# A caller's name: 1 to 63 ASCII lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, with
# no '..' and no '.' at the end (it names the caller's namespace of objects: run_layout.namespace).
NAME = re.compile(r"[a-z0-9](?:[a-z0-9_-]|\.(?!\.)){0,62}(?<!\.)")
NAME_RULE = ("1 to 63 of a-z, 0-9, '.', '_' and '-' (ASCII), starting with a letter or digit, with no '..' and "
             "not ending in '.'")
log = logging.getLogger("mfscore.auth")


@dataclass(frozen=True)
class Caller:
    name: str
    role: str

    @property
    def operator(self) -> bool:
        return self.role == "operator"


_caller: contextvars.ContextVar[Caller] = contextvars.ContextVar("mfscore_caller")


def caller() -> Caller:
    """The authenticated caller of the gRPC method being served."""
    return _caller.get()


def new_token() -> str:
    """A fresh random bearer token (256 bits)."""
    return secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


EMPTY_DIGEST = digest("")


def check_name(name: str, **where) -> str:
    """``name`` if it may be a caller's (``NAME``); ``OptionError`` otherwise (``where``: its file and line)."""
    if not NAME.fullmatch(name):
        raise OptionError(f"the caller's name {name[:80]!r} is not {NAME_RULE}", **where)
    return name


def tokens_line(name: str, role: str, token: str) -> str:
    """The tokens-file line that lets ``token`` in as ``name`` with ``role``."""
    return f"{check_name(name)} {role} {digest(token)}"


class Callers:
    """The callers a server accepts, by token digest."""

    def __init__(self, by_digest: Mapping[str, Caller]):
        if not by_digest:
            raise OptionError("no callers are configured, and a service accepts no anonymous calls: list them in "
                              "the file MFSCORE_TOKENS_FILE names (docs/distributed.md, 'Credentials')")
        if EMPTY_DIGEST in by_digest:
            raise OptionError("the empty token cannot be a caller's: it would let anonymous calls in")
        roles: dict[str, str] = {}
        for who in by_digest.values():
            check_name(who.name)
            if roles.setdefault(who.name, who.role) != who.role:
                raise OptionError(f"the caller {who.name!r} has two roles, {roles[who.name]} and {who.role}: "
                                  "a name belongs to one role")
        self._digests = [(bytes.fromhex(d), c) for d, c in by_digest.items()]

    def _by_digest(self) -> dict[str, Caller]:
        return {known.hex(): who for known, who in self._digests}

    @classmethod
    def of_tokens(cls, tokens: Mapping[str, Caller]) -> Callers:
        """From plain tokens (tests, and a local cluster's own generation)."""
        return cls({digest(token): who for token, who in tokens.items()})

    @classmethod
    def read(cls, path: str) -> Callers:
        """The tokens file at ``path``; a malformed line raises ``OptionError`` naming it."""
        if not path:
            return cls({})
        try:
            if os.path.getsize(path) > MAX_TOKENS_FILE_BYTES:
                raise OptionError(f"the tokens file is over {MAX_TOKENS_FILE_BYTES} bytes", path=path)
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as error:
            raise OptionError(f"the tokens file cannot be read ({error.strerror})", path=path) from None
        by_digest: dict[str, Caller] = {}
        first: dict[str, tuple[str, int]] = {}  # a name's role and the line that gave it
        for number, line in enumerate(lines, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if (len(fields) != 3 or fields[1] not in ROLES or len(fields[2]) != 64
                    or any(c not in "0123456789abcdef" for c in fields[2])):
                raise OptionError(f"a line must be '<name> <role> <sha256 hex>' with a role of {', '.join(ROLES)}",
                                  path=path, line=number)
            check_name(fields[0], path=path, line=number)
            if fields[2] == EMPTY_DIGEST:
                raise OptionError("the digest is the SHA-256 of the empty token, which would let anonymous calls in; "
                                  "give the caller a token (new_token())", path=path, line=number)
            role, line_of_role = first.setdefault(fields[0], (fields[1], number))
            if role != fields[1]:
                raise OptionError(f"{fields[0]!r} has the role {role} on line {line_of_role}, not {fields[1]}: a name "
                                  "belongs to one role", path=path, line=number)
            by_digest[fields[2]] = Caller(fields[0], fields[1])
        return cls(by_digest)

    @classmethod
    def watching(cls, path: str) -> Callers:
        """The tokens file at ``path``, read again when it changes (a rotated Kubernetes secret, a caller
        added to a local cluster); a change that does not parse keeps the callers read before."""
        return _WatchedFile(path)

    def find(self, token: str) -> Caller | None:
        """The caller ``token`` belongs to: every digest is compared, each in constant time."""
        presented = hashlib.sha256(token.encode()).digest()
        found = None
        for known, who in self._digests:
            if hmac.compare_digest(presented, known):
                found = who
        return found


class _WatchedFile(Callers):
    def __init__(self, path: str):
        self.path = path
        self._stamp = self._stat()
        super().__init__(Callers.read(path)._by_digest())
        self._checked = time.monotonic()

    def _stat(self):
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size, status.st_ino

    def find(self, token: str) -> Caller | None:
        if time.monotonic() - self._checked >= RELOAD_SECONDS:
            self._checked = time.monotonic()
            stamp = self._stat()
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._digests = Callers.read(self.path)._digests
                    log.info("read the tokens file again: it changed")
                except OptionError as error:
                    log.warning("kept the callers read before: %s", error.sentence())
        return super().find(token)


def _roles_for(method: str) -> tuple[str, ...]:
    return next((roles for prefix, roles in METHOD_ROLES.items() if method.startswith(prefix)), ())


def _bearer(metadata) -> str:
    for key, value in metadata or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer "):]
    return ""


def _refusal(error: Refusal) -> grpc.RpcMethodHandler:
    async def refused(request, context):
        await refuse(context, error)
    return grpc.unary_unary_rpc_method_handler(refused)


def _as(handler: grpc.RpcMethodHandler, who: Caller, valid) -> grpc.RpcMethodHandler:
    """``handler`` with the caller set for its servicer; a call that streams ends once ``valid()`` is false."""
    serializers = {"request_deserializer": handler.request_deserializer,
                   "response_serializer": handler.response_serializer}
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(_unary_as(handler.unary_unary, who, None), **serializers)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(_unary_as(handler.stream_unary, who, valid), **serializers)
    for inner, wrap in ((handler.unary_stream, grpc.unary_stream_rpc_method_handler),
                        (handler.stream_stream, grpc.stream_stream_rpc_method_handler)):
        if inner is not None:
            return wrap(_streaming_as(inner, who, valid), **serializers)
    return handler


def _unary_as(inner, who: Caller, valid):
    """A behaviour with one reply (its argument a request or a request iterator) with the caller set; revocable
    unless ``valid`` is None."""
    async def unary(request, context):
        _caller.set(who)
        if valid is None:
            return await inner(request, context)
        async with _revocable(valid, context):
            return await inner(request, context)
    return unary


def _streaming_as(inner, who: Caller, valid):
    """A streaming behaviour (its argument a request or a request iterator) with the caller set, revocable: each
    next reply races the token's revocation. (Cancelling the task instead could land in gRPC's own write of the
    last reply, which ends the call INTERNAL rather than UNAUTHENTICATED.)"""
    async def streaming(requests, context):
        _caller.set(who)
        replies = inner(requests, context).__aiter__()
        revoked = asyncio.ensure_future(_until_invalid(valid))
        step = None
        try:
            while True:
                step = asyncio.ensure_future(replies.__anext__())
                await asyncio.wait((step, revoked), return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    await refuse(context, Unauthenticated(REVOKED))
                try:
                    reply = step.result()
                except StopAsyncIteration:
                    return
                yield reply
        finally:  # revoked, or the client gone: the behaviour stops where it waits
            revoked.cancel()
            if step is not None and not step.done():
                step.cancel()
                with contextlib.suppress(BaseException):
                    await step
    return streaming


async def _until_invalid(valid) -> None:
    """Returns once ``valid()`` is false, looked at every RELOAD_SECONDS."""
    while valid():
        await asyncio.sleep(RELOAD_SECONDS)


@contextlib.asynccontextmanager
async def _revocable(valid, context):
    """The block, cancelled once ``valid()`` is false (looked at every RELOAD_SECONDS), the call then ending
    UNAUTHENTICATED: a long stream (an upload, a WatchRun) does not outlive its caller's token."""
    task = asyncio.current_task()
    revoked = False

    async def watch():
        nonlocal revoked
        await _until_invalid(valid)
        revoked = True
        task.cancel()

    watcher = asyncio.create_task(watch())
    try:
        yield
    except asyncio.CancelledError:
        if not revoked:
            raise
        task.uncancel()
        await refuse(context, Unauthenticated(REVOKED))
    finally:
        watcher.cancel()


class BearerAuth(grpc.aio.ServerInterceptor):
    """Refuses every call but health without a known bearer token (UNAUTHENTICATED) or of a role the
    method does not allow (PERMISSION_DENIED); the refusal names no token."""

    def __init__(self, callers: Callers):
        self.callers = callers

    async def intercept_service(self, continuation, details):
        method = details.method
        if method.startswith(HEALTH_PREFIX):
            return await continuation(details)
        token = _bearer(details.invocation_metadata)
        who = self.callers.find(token) if token else None  # no token is no caller, whatever the file says
        if who is None:
            return _refusal(Unauthenticated("no valid bearer token: every call needs one (MFSCORE_TOKEN, or the "
                                            "cluster file's token)"))
        if who.role not in _roles_for(method):
            return _refusal(PermissionDenied(f"the {who.role} {who.name!r} may not call {method.rsplit('/', 1)[-1]}"))
        handler = await continuation(details)
        return None if handler is None else _as(handler, who, lambda: self.callers.find(token) == who)


class _Token(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
             grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call of a synchronous channel."""

    def __init__(self, token: str):
        self.metadata = (("authorization", f"Bearer {token}"),)

    def _with_token(self, details):
        return details._replace(metadata=tuple(details.metadata or ()) + self.metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)


class _AioToken(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor):
    """The same for an asyncio channel."""

    def __init__(self, token: str):
        self.metadata = (("authorization", f"Bearer {token}"),)

    def _with_token(self, details):
        metadata = grpc.aio.Metadata(*(details.metadata or ()), *self.metadata)
        return details._replace(metadata=metadata)

    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(self._with_token(details), request)

    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(self._with_token(details), request)


def _read_ca(tls_ca: str) -> bytes:
    try:
        with open(tls_ca, "rb") as f:
            return f.read()
    except OSError as error:
        raise OptionError(f"the CA certificate cannot be read ({error.strerror})", path=tls_ca) from None


# Every client pings its connection after 10 s without a frame from the server, and a ping unanswered within 5 s
# closes it: a call open to a frozen server (a paused process, a vanished host) fails UNAVAILABLE within about
# 15 s, so a caller retries (a WatchRun otherwise waits on a silent stream for ever). Pings go on while nothing is
# sent (max_pings_without_data 0: no limit) and without calls; the servers permit them (grpc_server.SERVER_OPTIONS).
# grpcio 1.85 times a keepalive ping's answer by ping_timeout_ms (default 60 s), and only when keepalive_timeout_ms
# is set too: both are 5 s (docs/reliability.md, "Two aggregators").
KEEPALIVE_OPTIONS = [("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
                     ("grpc.http2.ping_timeout_ms", 5_000), ("grpc.keepalive_permit_without_calls", 1),
                     ("grpc.http2.max_pings_without_data", 0)]

# A service with several addresses (two aggregators, one leading): gRPC's own round robin over them, skipping those
# whose AggregatorService is not SERVING (a standby, which reports the whole server "" SERVING: it is alive and
# serves reads), and calls answered UNAVAILABLE tried again on another.
LEADER_SERVICE = "mfscore.v1.AggregatorService"
SEVERAL_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": LEADER_SERVICE},
    "methodConfig": [{"name": [{}], "retryPolicy": {
        "maxAttempts": 4, "initialBackoff": "0.2s", "maxBackoff": "2s", "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]}}],
})


def target(address: str, options=()) -> tuple[str, list]:
    """The gRPC target and channel options for ``address``: ``host:port``, or several separated by commas (IP
    addresses: an ``ipv4:``/``ipv6:`` target; host names are resolved now), or a ``dns:`` name standing for several
    (a headless Kubernetes Service). One ``host:port`` is used as it is, with no service config."""
    addresses = [part.strip() for part in address.split(",") if part.strip()]
    options = [*KEEPALIVE_OPTIONS, *options]
    if len(addresses) == 1 and not addresses[0].startswith("dns:"):
        return addresses[0], options
    several = [*options, ("grpc.service_config", SEVERAL_CONFIG)]
    if len(addresses) == 1:
        return addresses[0], several
    resolved = [_resolved(part) for part in addresses]
    v6 = [part.startswith("[") for part in resolved]
    if any(v6) and not all(v6):
        raise OptionError(f"the addresses {address!r} mix IPv4 and IPv6; list one family")
    return f"{'ipv6' if all(v6) else 'ipv4'}:{','.join(resolved)}", several


def _resolved(address: str) -> str:
    """``host:port`` with its host an IP address (``[v6]:port`` for IPv6)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise OptionError(f"{address!r} is not host:port")
    host = host.strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        try:
            ip = ipaddress.ip_address(socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_TCP)[0][4][0])
        except OSError as error:
            raise OptionError(f"the host of {address!r} cannot be resolved ({error})") from None
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def client_channel(address: str, *, token: str = "", tls_ca: str = "", options=()) -> grpc.Channel:
    """A channel to ``address`` (one or several, ``target``) that sends ``token`` on every call, over TLS checked
    against ``tls_ca`` when set."""
    address, options = target(address, options)
    if tls_ca:
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(_read_ca(tls_ca)), options=options)
    else:
        channel = grpc.insecure_channel(address, options=options)
    return grpc.intercept_channel(channel, _Token(token)) if token else channel


def aio_client_channel(address: str, *, token: str = "", tls_ca: str = "", options=()) -> grpc.aio.Channel:
    """The asyncio form of ``client_channel``."""
    interceptors = [_AioToken(token)] if token else None
    address, options = target(address, options)
    if tls_ca:
        return grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(_read_ca(tls_ca)), options=options,
                                       interceptors=interceptors)
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)


def server_credentials(tls_cert: str, tls_key: str) -> grpc.ServerCredentials | None:
    """TLS credentials for a server when a certificate and key are configured; None for plaintext."""
    if not (tls_cert or tls_key):
        return None
    if not (tls_cert and tls_key):
        raise OptionError("TLS needs both MFSCORE_TLS_CERT and MFSCORE_TLS_KEY")
    pems = []
    for path in (tls_key, tls_cert):
        try:
            with open(path, "rb") as f:
                pems.append(f.read())
        except OSError as error:
            raise OptionError(f"cannot be read ({error.strerror})", path=path) from None
    return grpc.ssl_server_credentials([(pems[0], pems[1])])
