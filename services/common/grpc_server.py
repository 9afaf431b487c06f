"""An asyncio gRPC server with the standard health and reflection services, and its graceful stop.

Every call but health needs a caller's bearer token (``services/common/auth.py``); a request over
``MAX_REQUEST_BYTES`` is refused by gRPC (RESOURCE_EXHAUSTED) before a servicer sees it. Every call, refused or
not, is counted and timed (``ServerMetrics``: the ``grpc_server_*`` families of ``services/common/metrics.py``).

A server bounds what any peer, with a token or without, can hold (``server_options``): connections open
(``MFSCORE_GRPC_MAX_CONNECTIONS``, below the process's file descriptors), calls under way
(``MFSCORE_GRPC_MAX_CALLS``: RESOURCE_EXHAUSTED beyond), streams on one connection (``MAX_STREAMS``). A
connection that has not spoken TLS and HTTP/2 within ``MFSCORE_GRPC_HANDSHAKE_SECONDS`` is closed, and so is one
with no call for ``MFSCORE_GRPC_IDLE_SECONDS`` (a client opens another when it next calls), or older than
``MAX_AGE_MS`` once its calls have had ``MAX_AGE_GRACE_MS`` to end.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from mfscore.services.common import metrics
from mfscore.services.common.auth import BearerAuth, Callers, server_credentials
from mfscore.services.common.settings import Settings

Servicer = tuple[Callable[[Any, grpc.aio.Server], None], Any, str]

# Reports and uploads travel in chunks of at most 512 KiB; a reply of ListRuns (every run's notes) may still be large.
# Requests are small: a RunSpec is at most 512 KiB (the aggregator's own check), so a server takes nothing over 1 MiB.
MAX_MESSAGE_BYTES = 64 << 20
MAX_REQUEST_BYTES = 1 << 20
MESSAGE_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
# Clients ping a quiet connection every 10 s to find a frozen server (auth.KEEPALIVE_OPTIONS). By default a server
# answers pings closer than 5 minutes apart on a connection sending no data (a silent WatchRun) with GOAWAY
# "too_many_pings", so it takes them every 5 s, with or without calls.
SERVER_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                  ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
                  ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                  ("grpc.keepalive_permit_without_calls", 1)]
MAX_STREAMS = 100                 # calls at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)
MAX_AGE_MS = 2 * 3600_000         # a connection is asked to go (GOAWAY) after two hours...
MAX_AGE_GRACE_MS = 3600_000       # ...and closed an hour later, with whatever calls it still carries


def server_options(settings: Settings) -> list[tuple[str, int]]:
    """SERVER_OPTIONS with the bounds on connections of ``settings``."""
    return [*SERVER_OPTIONS,
            ("grpc.max_concurrent_streams", MAX_STREAMS),
            ("grpc.max_allowed_incoming_connections", settings.grpc_max_connections),
            ("grpc.server_handshake_timeout_ms", settings.grpc_handshake_seconds * 1000),
            ("grpc.max_connection_idle_ms", settings.grpc_idle_seconds * 1000),
            ("grpc.max_connection_age_ms", MAX_AGE_MS),
            ("grpc.max_connection_age_grace_ms", MAX_AGE_GRACE_MS)]

# Each server's health servicer and the names it reports on ("" is the whole server).
_health_of: weakref.WeakKeyDictionary[grpc.aio.Server, tuple[health.aio.HealthServicer, tuple[str, ...]]] = \
    weakref.WeakKeyDictionary()


UNKNOWN_METHOD = ("unknown", "unknown", "unknown")
RPC_TYPES = {(False, False): "unary", (False, True): "server_stream", (True, False): "client_stream",
             (True, True): "bidi_stream"}


@functools.lru_cache(maxsize=256)
def _method_labels(full_method: str) -> tuple[str, str, str]:
    """``/package.Service/Method`` as its (type, service, method) labels when a registered .proto declares it, else
    ``unknown`` thrice: a caller's made-up method name never becomes a label."""
    service, _, method = full_method.lstrip("/").partition("/")
    try:
        found = descriptor_pool.Default().FindServiceByName(service).methods_by_name[method]
    except KeyError:
        return UNKNOWN_METHOD
    return RPC_TYPES[(found.client_streaming, found.server_streaming)], service, method


class ServerMetrics(grpc.aio.ServerInterceptor):
    """Counts each call when it starts and when it ends (with its status code) and times it, by service and method,
    as grpc-ecosystem's interceptors do (py-grpc-prometheus does not serve ``grpc.aio``)."""

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        if handler is None:
            return None
        labels = _method_labels(details.method)
        serializers = {"request_deserializer": handler.request_deserializer,
                       "response_serializer": handler.response_serializer}
        for inner, wrap in ((handler.unary_unary, grpc.unary_unary_rpc_method_handler),
                            (handler.stream_unary, grpc.stream_unary_rpc_method_handler)):
            if inner is not None:
                return wrap(_measured_unary(inner, labels), **serializers)
        for inner, wrap in ((handler.unary_stream, grpc.unary_stream_rpc_method_handler),
                            (handler.stream_stream, grpc.stream_stream_rpc_method_handler)):
            if inner is not None:
                return wrap(_measured_streaming(inner, labels), **serializers)
        return handler


def _settled(labels: tuple[str, ...], context, started: float, error: BaseException | None) -> None:
    if isinstance(error, asyncio.CancelledError):
        code = grpc.StatusCode.CANCELLED
    else:
        code = context.code() or (grpc.StatusCode.UNKNOWN if error is not None else grpc.StatusCode.OK)
    metrics.GRPC_HANDLED.labels(*labels, code.name if isinstance(code, grpc.StatusCode) else str(code)).inc()
    metrics.GRPC_HANDLING.labels(*labels).observe(time.perf_counter() - started)


def _measured_unary(inner, labels: tuple[str, ...]):
    async def unary(request, context):
        metrics.GRPC_STARTED.labels(*labels).inc()
        started, error = time.perf_counter(), None
        try:
            return await inner(request, context)
        except BaseException as exc:
            error = exc
            raise
        finally:
            _settled(labels, context, started, error)
    return unary


def _measured_streaming(inner, labels: tuple[str, ...]):
    """A streaming behaviour, whether it yields its replies or writes them (``context.write``, as health's Watch)."""
    async def streaming(request, context):
        metrics.GRPC_STARTED.labels(*labels).inc()
        started, error = time.perf_counter(), None
        try:
            replies = inner(request, context)
            if hasattr(replies, "__aiter__"):
                async for reply in replies:
                    yield reply
            else:
                await replies
        except BaseException as exc:
            error = exc
            raise
        finally:
            _settled(labels, context, started, error)
    return streaming


async def start_grpc_server(
    servicers: Sequence[Servicer], *, port: int, callers: Callers, host: str = "127.0.0.1",
    credentials: grpc.ServerCredentials | None = None, settings: Settings | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Start a server for ``(add_to_server, servicer, full_service_name)`` triples; returns it and its port.

    Only ``callers`` get past health. Every listed service and the whole server ("") report SERVING on
    ``grpc.health.v1.Health``; reflection lists them too. ``port=0`` binds an ephemeral port; with
    ``credentials`` the port speaks TLS. The bounds on connections and calls are ``settings``' (default
    ``Settings()``'s).
    """
    settings = settings or Settings()
    server = grpc.aio.server(options=server_options(settings), maximum_concurrent_rpcs=settings.grpc_max_calls,
                             interceptors=[ServerMetrics(), BearerAuth(callers)])
    names = []
    for add_to_server, servicer, name in servicers:
        add_to_server(servicer, server)
        names.append(name)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", *names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"{host}:{port}"
    bound = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"the gRPC server could not bind {host}:{port}")
    await server.start()
    _health_of[server] = (health_servicer, ("", *names))
    return server, bound


async def start_service_server(servicers: Sequence[Servicer], settings: Settings) -> tuple[grpc.aio.Server, int]:
    """A service's server as its settings say: host and port, the tokens file's callers, TLS when configured."""
    return await start_grpc_server(servicers, port=settings.grpc_port, host=settings.grpc_host,
                                   callers=Callers.watching(settings.tokens_file), settings=settings,
                                   credentials=server_credentials(settings.tls_cert, settings.tls_key))


async def stop_grpc_server(server: grpc.aio.Server, grace: float | None) -> None:
    """Report NOT_SERVING first (so load balancers drain it), then stop, letting calls finish within ``grace``."""
    health_servicer, _ = _health_of.pop(server, (None, ()))
    if health_servicer is not None:
        await health_servicer.enter_graceful_shutdown()
    await server.stop(grace)


async def set_serving(server: grpc.aio.Server, serving: bool, *, services: bool = True) -> None:
    """Report the whole server ("") SERVING or NOT_SERVING, say while a dependency it cannot work without (NATS)
    is unreachable; each of its services the same, unless ``services`` is false: then they are NOT_SERVING while
    the server is up (an aggregator standing by, alive and serving reads, while another takes the service's
    calls). Nothing changes once the server is shutting down."""
    health_servicer, names = _health_of.get(server, (None, ()))
    if health_servicer is None:
        return
    for name in names:
        up = serving and (services or name == "")
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING if up
                                  else health_pb2.HealthCheckResponse.NOT_SERVING)


async def track_health(server: grpc.aio.Server, healthy: Callable[[], bool], what: str, *,
                        interval: float = 0.5) -> None:
    """Keep the server's health in step with ``healthy()`` (polled every ``interval`` s) until cancelled;
    ``what`` names the dependency in the log."""
    log = logging.getLogger("mfscore.services")
    serving = True
    while True:
        now = healthy()
        if now != serving:
            serving = now
            await set_serving(server, serving)
            if serving:
                log.info("%s is back: SERVING", what)
            else:
                log.warning("%s is unreachable: NOT_SERVING until it is back", what)
        await asyncio.sleep(interval)
