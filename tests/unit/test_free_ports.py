"""free_ports: every port a local cluster's services bind is distinct (a metrics port once equalled a gRPC port)."""

from __future__ import annotations

import socket

from mfscore.services.local.servers import free_ports


def test_free_ports_are_distinct_and_bindable():
    for _ in range(20):
        ports = free_ports(12)
        assert len(set(ports)) == 12
    for port in free_ports(4):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
