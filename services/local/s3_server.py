"""moto's S3 server with request authentication enforced, for ``servers.start_s3_server``.

``python -m mfscore.services.local.s3_server HOST PORT SETUP_REQUESTS [CERT KEY]`` serves moto as ``moto_server``
does (over https with the PEM certificate and key when given), but for three things stock ``moto_server``
leaves open to anyone who can reach the port:

- its control API (``/moto-api/``) is refused: ``data.json`` there lists every IAM secret, ``reset-auth``
  switches authentication off and ``seed`` makes the generated keys predictable;
- its generated keys and ids come from the operating system's randomness, not from a Mersenne Twister
  whose state (so the keys it drew) can be recovered from enough of its output;
- only the first ``SETUP_REQUESTS`` requests go unauthenticated (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``):
  the ones that create the IAM users and keys; every later request must be signed by one of those keys.

A request with no ``Authorization`` header gets S3's 403 ``AccessDenied`` here: moto would fail it with a
500, which a client takes for an outage and retries.

Connections are kept alive between requests, as S3 keeps them (``keep_alive``): werkzeug's development server,
which ``moto_server`` runs on, closes every connection after one response, so each request of a client would pay
for a new TCP connection (on both sides) that a real object store does not charge.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import traceback

CONTROL_PREFIX = "moto-api"
UNSIGNED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            b"<Message>This server refuses unsigned requests</Message></Error>")


def guarded(app):
    """``app`` answering 403 to any path under ``/moto-api`` (however many leading slashes) and to any
    request that carries no signature."""

    def application(environ, start_response):
        if environ.get("PATH_INFO", "").lstrip("/").startswith(CONTROL_PREFIX):
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"moto's control API is disabled on this server\n"]
        if not environ.get("HTTP_AUTHORIZATION"):
            start_response("403 Forbidden",
                           [("Content-Type", "application/xml"), ("Content-Length", str(len(UNSIGNED)))])
            return [UNSIGNED]
        return app(environ, start_response)

    return application


IDLE_SECONDS = 60.0  # a kept-alive connection with no request for this long is closed (S3 closes idle ones too)
DRAIN_BYTES = 1 << 20  # what a response left unread of its request's body is read past up to this; beyond, closed


def keep_alive(handler: type) -> type:
    """``handler`` (moto's ``MotoRequestHandler``, a werkzeug ``WSGIRequestHandler``) answering HTTP/1.1 requests on
    a connection kept alive, as S3 does: werkzeug's own ``run_wsgi`` closes every connection after one response.

    Only the handling of a connection changes: every request reaches the same application (``guarded`` moto), which
    checks its signature. A request's body is its ``Content-Length`` bytes (or its chunks); what the application
    left unread of it (a refused request's) is read past before the next request, or the connection is closed (more
    than DRAIN_BYTES left, no usable length, the client gone). The response is collected, then sent with its length
    (moto holds every body in memory anyway), without delay (TCP_NODELAY); a response whose application failed is a
    500 that closes."""
    from werkzeug.exceptions import InternalServerError
    from werkzeug.wsgi import LimitedStream

    class KeepAliveHandler(handler):
        protocol_version = "HTTP/1.1"  # http.server then keeps a connection unless its client says "close"
        timeout = IDLE_SECONDS

        def setup(self) -> None:
            super().setup()
            # A response is written as its headers, then its body: on a connection kept open, Nagle's algorithm
            # would hold a small body back until the client's delayed ACK of the headers (40 ms a small GET).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def run_wsgi(self) -> None:
            # an ``Expect: 100-continue`` was answered by http.server's parse_request already, under HTTP/1.1
            self.environ = environ = self.make_environ()
            body = environ["wsgi.input"]
            if not environ.get("wsgi.input_terminated"):  # not chunked: the declared length, no further
                length = _content_length(self.headers.get("Content-Length"))
                if length is None:
                    self.close_connection = True
                body = environ["wsgi.input"] = LimitedStream(self.rfile, length or 0)
            try:
                status, headers, chunks = _respond(self.server.app, environ)
            except Exception:
                self.log_error("Error on request:\n%s", traceback.format_exc())
                status, headers, chunks = _respond(InternalServerError(), environ)
                self.close_connection = True
            self._read_past(body)
            code = int(status.split(None, 1)[0])
            self.send_response(code, status.partition(" ")[2])
            named = set()
            for name, value in headers:
                self.send_header(name, value)
                named.add(name.lower())
            if "content-length" not in named and self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.send_header("Content-Length", str(sum(map(len, chunks))))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                for chunk in chunks:
                    self.wfile.write(chunk)

        def _read_past(self, body) -> None:
            """Read what the application left of the request's body, so the next request starts where it should;
            close the connection instead beyond DRAIN_BYTES, or when the client went away."""
            try:
                if isinstance(body, LimitedStream):
                    if body.limit - body.tell() > DRAIN_BYTES:
                        self.close_connection = True
                    else:
                        body.exhaust()
                    return
                left = DRAIN_BYTES  # dechunked
                while chunk := body.read(65536):
                    left -= len(chunk)
                    if left < 0:
                        self.close_connection = True
                        return
            except Exception:  # werkzeug's ClientDisconnected, a broken chunk, a timeout
                self.close_connection = True

    return KeepAliveHandler


def _content_length(value: str | None) -> int | None:
    """The request's body length: 0 without the header, None when the header is not a length."""
    if value is None:
        return 0
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _respond(app, environ) -> tuple[str, list[tuple[str, str]], list[bytes]]:
    """(status, headers, body chunks) of the WSGI application ``app`` for ``environ``."""
    started: list = []
    written: list[bytes] = []

    def start_response(status, headers, exc_info=None):
        if exc_info and started:
            raise exc_info[1].with_traceback(exc_info[2])
        started[:] = [status, list(headers)]
        return written.append

    result = app(environ, start_response)
    try:
        written.extend(chunk for chunk in result if chunk)
    finally:
        if hasattr(result, "close"):
            result.close()
    if not started:
        raise RuntimeError("the application did not start a response")
    return started[0], started[1], written


def main(argv: list[str]) -> None:
    host, port, setup_requests, tls = argv[0], int(argv[1]), int(argv[2]), tuple(argv[3:5])
    os.environ.setdefault("MOTO_PORT", str(port))

    from moto import settings
    from moto.moto_api._internal import mock_random
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    system = secrets.SystemRandom()
    mock_random.random = system.random
    mock_random.getrandbits = system.getrandbits
    settings.INITIAL_NO_AUTH_ACTION_COUNT = setup_requests
    app = guarded(DomainDispatcherApplication(create_backend_app))
    run_simple(host, port, app, threaded=True, request_handler=keep_alive(MotoRequestHandler),
               ssl_context=tls or None)


if __name__ == "__main__":
    main(sys.argv[1:])
