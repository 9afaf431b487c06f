"""An asyncio gRPC server with the standard health and reflection services, and its graceful stop."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

Servicer = tuple[Callable[[Any, grpc.aio.Server], None], Any, str]

# A run's report (every table and plot) is one GetReport reply; gRPC's default cap is 4 MiB.
MAX_MESSAGE_BYTES = 1 << 30
MESSAGE_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]

_health_of: weakref.WeakKeyDictionary[grpc.aio.Server, health.aio.HealthServicer] = weakref.WeakKeyDictionary()


async def start_grpc_server(
    servicers: Sequence[Servicer], *, port: int, host: str = "0.0.0.0"
) -> tuple[grpc.aio.Server, int]:
    """Start a server for ``(add_to_server, servicer, full_service_name)`` triples; returns it and its port.

    Every listed service and the whole server ("") report SERVING on ``grpc.health.v1.Health``;
    reflection lists them too. ``port=0`` binds an ephemeral port.
    """
    server = grpc.aio.server(options=MESSAGE_OPTIONS)
    names = []
    for add_to_server, servicer, name in servicers:
        add_to_server(servicer, server)
        names.append(name)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", *names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"the gRPC server could not bind {host}:{port}")
    await server.start()
    _health_of[server] = health_servicer
    return server, bound


async def stop_grpc_server(server: grpc.aio.Server, grace: float | None) -> None:
    """Report NOT_SERVING first (so load balancers drain it), then stop, letting calls finish within ``grace``."""
    health_servicer = _health_of.pop(server, None)
    if health_servicer is not None:
        await health_servicer.enter_graceful_shutdown()
    await server.stop(grace)
