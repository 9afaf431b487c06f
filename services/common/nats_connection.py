"""The connection to NATS: the servers, TLS and credentials ``MFSCORE_NATS_*`` name, and reconnecting for ever."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
from urllib.parse import urlsplit

from nats.aio.client import Client
from nats.js import JetStreamContext

from mfscore.errors import MfscoreError, OptionError
from mfscore.services.common.settings import Settings
from mfscore.services.common.subjects import inbox_prefix

RECONNECT_WAIT_SECONDS = 1  # nats-py's wait between reconnection attempts, for ever after a loss
_USER = re.compile(r"[A-Za-z0-9_-]{1,64}")


class NatsRefused(MfscoreError):
    """NATS refused this process's user, password or certificate check: retrying cannot help."""


class _Refused(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


def nats_servers(url: str) -> list[str]:
    """The servers ``MFSCORE_NATS_URL`` names: one URL, or several separated by commas (a cluster's nodes; the
    client connects to any and moves to another when it goes)."""
    servers = [part.strip() for part in url.split(",") if part.strip()]
    if not servers:
        raise OptionError("MFSCORE_NATS_URL names no NATS server")
    return servers


def public_url(url: str) -> str:
    """``url`` (one URL or a comma-separated list) without a user or password in it, for logs and messages."""
    return re.sub(r"//[^/@,]*@", "//", url)


def nats_tls(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context for NATS, trusting ``settings.tls_ca`` (the system's CAs for ``tls://`` URLs without one);
    None for ``nats://`` URLs and no CA."""
    if not settings.tls_ca and all(urlsplit(url).scheme != "tls" for url in nats_servers(settings.nats_url)):
        return None
    try:
        return ssl.create_default_context(cafile=settings.tls_ca or None)
    except (OSError, ssl.SSLError) as exc:
        raise OptionError(f"the CA file {settings.tls_ca} (MFSCORE_TLS_CA) cannot be used: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


async def connect(settings: Settings, *, name: str = "mfscore") -> tuple[Client, JetStreamContext]:
    """Connect to a server of ``settings.nats_url`` as ``settings.nats_user``, reconnecting for ever after a loss (to
    any server listed, or any the cluster announces); returns (nc, js).

    With TLS (``nats_tls``) the handshake comes first, before the server says anything, so nobody between
    can make the client send its password in the clear. A server refusing the user or failing the certificate
    check raises ``NatsRefused`` at once; an unreachable one is waited for.
    """
    log = logging.getLogger("mfscore.nats")
    servers, user = nats_servers(settings.nats_url), settings.nats_user
    url = public_url(", ".join(servers))
    if user and not _USER.fullmatch(user):
        raise OptionError("MFSCORE_NATS_USER must be 1 to 64 letters, digits, '-' or '_'")
    tls = nats_tls(settings)
    connected = False

    async def disconnected() -> None:
        if not nc.is_closed:
            log.warning("disconnected from NATS at %s", url)

    async def reconnected() -> None:
        log.info("reconnected to NATS at %s", url)

    async def error(exc: Exception) -> None:
        if not connected and (isinstance(exc, ssl.SSLError) or "authorization violation" in str(exc).lower()):
            raise _Refused(exc)
        log.warning("NATS connection error: %s", exc)

    credentials = {"user": user, "password": settings.nats_password} if user else {}
    nc = Client()
    try:
        await nc.connect(
            servers=servers, name=name, connect_timeout=5, reconnect_time_wait=RECONNECT_WAIT_SECONDS,
            max_reconnect_attempts=-1, disconnected_cb=disconnected, reconnected_cb=reconnected, error_cb=error,
            tls=tls, tls_handshake_first=tls is not None, inbox_prefix=inbox_prefix(user), **credentials,
        )
    except _Refused as refused:
        with contextlib.suppress(Exception):  # after a failed TLS handshake nats-py's close waits for ever
            await asyncio.wait_for(nc.close(), 1)
        who = (f"the user {user!r}" if user
               else "a connection without a user (set MFSCORE_NATS_USER and MFSCORE_NATS_PASSWORD)")
        reason = " ".join(str(refused.cause).replace("nats: ", "").strip("'").split())
        raise NatsRefused(f"NATS at {url} refused {who}: {reason}") from None
    connected = True
    return nc, nc.jetstream()
