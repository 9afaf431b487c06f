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


def test_free_ports_lie_below_the_ephemeral_range(tmp_path, monkeypatch):
    """A port the OS hands out for binding to 0 is one it also gives to outgoing connections (another cluster's
    clients took one before the aggregator listened on it): ports are drawn below the ephemeral range, and from the
    OS where the range is unknown."""
    from mfscore.services.local import servers

    ranged = tmp_path / "ip_local_port_range"
    ranged.write_text("32768\t60999\n")
    monkeypatch.setattr(servers, "EPHEMERAL_RANGE", ranged)
    assert all(servers.LOWEST_PORT <= port < 32768 for port in free_ports(16))
    monkeypatch.setattr(servers, "EPHEMERAL_RANGE", tmp_path / "absent")  # not Linux: the OS picks, as before
    assert len(set(free_ports(8))) == 8 and servers._ephemeral_start() is None


def test_a_port_picked_is_not_picked_again_by_another_picker(tmp_path, monkeypatch):
    """Two test workers starting clusters at once took the same free port seconds before either listened on it: a
    port picked is reserved on this machine for a while, and a stale reservation is taken over."""
    import os
    import time

    from mfscore.services.local import servers

    monkeypatch.setattr(servers.tempfile, "gettempdir", lambda: str(tmp_path))
    ports = free_ports(8)
    assert all(not servers._reserve(port) for port in ports)  # another picker finds them taken
    stale = servers._reservations() / str(ports[0])
    old = time.time() - servers.RESERVED_SECONDS - 1
    os.utime(stale, (old, old))
    assert servers._reserve(ports[0]) and not servers._reserve(ports[0])
