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
"""

from __future__ import annotations

import os
import secrets
import sys

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
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler, ssl_context=tls or None)


if __name__ == "__main__":
    main(sys.argv[1:])
