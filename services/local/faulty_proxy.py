"""Infrastructure faults for the tests and the soak (bench/soak.py): a TCP proxy in front of a real server that can refuse connections for a while
(a server that is down), reset them or answer S3's 503 SlowDown."""

from __future__ import annotations

import socket
import socketserver
import threading

SLOWDOWN_BODY = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
                 b"<Message>Reduce your request rate.</Message></Error>")


class FaultyProxy:
    """Forwards TCP connections on a loopback port to ``upstream``.

    ``refuse()`` stops listening and cuts every connection through the proxy, so clients get 'connection refused'
    as from a server that is down (pooled keep-alive connections included); ``accept()`` listens on the same port
    again. ``fault`` answers the first ``faults`` connections instead: ``reset`` closes them unanswered,
    ``slowdown`` answers 503 SlowDown as S3 does under load. It listens on ``port`` (default one the OS picks).
    """

    def __init__(self, upstream: tuple[str, int], fault: str | None = None, faults: int = 0, port: int = 0):
        self.upstream = upstream
        self.fault = fault
        self.faults = faults
        self.connections = 0
        self.lock = threading.Lock()
        self.port = port
        self._server: _Listener | None = None
        self._open: set[socket.socket] = set()
        self.accept()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def accept(self) -> None:
        """Listen (again) on the proxy's port."""
        with self.lock:
            if self._server is not None:
                return
            self._server = _Listener(("127.0.0.1", self.port), self)
            self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def refuse(self) -> None:
        """Stop listening and cut every open connection: connections are refused until ``accept()``."""
        with self.lock:
            server, self._server = self._server, None
            cut, self._open = self._open, set()
        if server is not None:
            server.shutdown()
            server.server_close()
        for sock in cut:
            _close(sock)

    close = refuse

    def _track(self, *socks: socket.socket) -> bool:
        with self.lock:
            if self._server is None:
                return False
            self._open.update(socks)
            return True


class _Listener(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], proxy: FaultyProxy):
        self.proxy = proxy
        super().__init__(address, _Handler)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        proxy: FaultyProxy = self.server.proxy
        with proxy.lock:
            proxy.connections += 1
            faulty = proxy.connections <= proxy.faults
        client = self.request
        if faulty and proxy.fault == "reset":
            client.close()
            return
        if faulty:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            client.sendall(
                b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nConnection: close\r\n"
                + f"Content-Length: {len(SLOWDOWN_BODY)}\r\n\r\n".encode() + SLOWDOWN_BODY
            )
            client.close()
            return
        try:
            upstream = socket.create_connection(proxy.upstream)
        except OSError:
            client.close()
            return
        if not proxy._track(client, upstream):
            _close(client)
            _close(upstream)
            return
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
