"""Who may do what on mfscore's NATS: one user per role, each allowed only the subjects its work needs.

The aggregator believes any record on ``mfscore.results.<run>`` and a scorer fetches the keys any job on
``mfscore.jobs.<class>`` names, so only scorers publish records (and dead letters, and ack their jobs), only the
aggregator publishes jobs and manages the streams and the run bucket, and nobody connects without a user.
Each role reads replies on its own inbox prefix (``_INBOX.<role>.``), so no role reads another's replies.

``server_config`` writes these permissions as a nats-server configuration (JSON, which nats-server reads), and
``cluster_config`` a clustered node's routes: a node accepts a route only from a server presenting the route user's
password, so nobody who reaches a route port joins the cluster (and reads every message) without it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from mfscore.errors import OptionError
from mfscore.services.common.subjects import (
    DEAD_STREAM,
    JOBS_STREAM,
    RESULTS_STREAM,
    RUNS_BUCKET,
    RUNS_STREAM,
    inbox_prefix,
    job_filter,
    job_kinds,
    scorer_consumer_name,
)

STREAMS = (JOBS_STREAM, RESULTS_STREAM, DEAD_STREAM)
SERVICE_ROLES = ("aggregator", "scorer", "observer")  # the users a cluster runs with
ROLES = (*SERVICE_ROLES, "admin")
ROUTE_USER = "route"  # the user a node presents when it dials another node's route port
_PASSWORD = re.compile(r"[A-Za-z0-9_\-]{16,}")  # also safe inside a route URL


def _aggregator() -> list[str]:
    api = "$JS.API"
    return [
        "mfscore.jobs.>",
        *(f"{api}.STREAM.{op}.{stream}" for stream in STREAMS for op in ("CREATE", "UPDATE", "INFO")),
        f"{api}.STREAM.PURGE.{RESULTS_STREAM}",
        f"{api}.STREAM.PURGE.{JOBS_STREAM}",                  # a finished or failed run's queued jobs
        f"{api}.STREAM.MSG.GET.{DEAD_STREAM}",               # an operator reading the dead letters (ListDeadLetters)
        f"{api}.STREAM.PURGE.{DEAD_STREAM}",                 # and purging those read (PurgeDeadLetters)
        f"{api}.CONSUMER.CREATE.{RESULTS_STREAM}",          # the ordered consumer replaying records
        f"$JS.FC.{RESULTS_STREAM}.>",                         # its flow-control replies
        *(f"{api}.CONSUMER.CREATE.{JOBS_STREAM}.{scorer_consumer_name(kind)}.{job_filter(kind)}"
          for kind in job_kinds()),
        f"{api}.STREAM.CREATE.{RUNS_STREAM}", f"{api}.STREAM.INFO.{RUNS_STREAM}",
        f"{api}.STREAM.UPDATE.{RUNS_STREAM}",                # its replicas brought to MFSCORE_STREAM_REPLICAS
        f"{api}.STREAM.PURGE.{RUNS_STREAM}",                 # dropping old delete markers (purge_deletes)
        f"{api}.DIRECT.GET.{RUNS_STREAM}.>", f"{api}.STREAM.MSG.GET.{RUNS_STREAM}",
        f"{api}.CONSUMER.CREATE.{RUNS_STREAM}", f"{api}.CONSUMER.INFO.{RUNS_STREAM}.*",   # listing its keys
        f"$JS.FC.{RUNS_STREAM}.>",
        f"$KV.{RUNS_BUCKET}.>",
    ]


def _scorer() -> list[str]:
    api = "$JS.API"
    subjects = ["mfscore.results.>", "mfscore.dead.>", *(f"{api}.STREAM.INFO.{stream}" for stream in STREAMS)]
    for kind in job_kinds():
        consumer = scorer_consumer_name(kind)
        subjects += [
            f"{api}.CONSUMER.CREATE.{JOBS_STREAM}.{consumer}.{job_filter(kind)}",
            f"{api}.CONSUMER.INFO.{JOBS_STREAM}.{consumer}",
            f"{api}.CONSUMER.MSG.NEXT.{JOBS_STREAM}.{consumer}",
            f"$JS.ACK.{JOBS_STREAM}.{consumer}.>",
        ]
    return subjects


def _observer() -> list[str]:
    api = "$JS.API"
    return [f"{api}.INFO", f"{api}.STREAM.NAMES", f"{api}.STREAM.LIST", f"{api}.STREAM.INFO.*",
            f"{api}.CONSUMER.NAMES.*", f"{api}.CONSUMER.LIST.*", f"{api}.CONSUMER.INFO.*.*"]


def permissions(role: str) -> dict:
    """The nats-server permissions of ``role``: what it may publish and subscribe to, nothing else.

    ``observer`` reads stream and consumer information (tests, operators); ``admin`` may do anything and
    is for test fixtures and operators only: no service runs as it.
    """
    if role == "admin":
        return {"publish": {"allow": [">"]}, "subscribe": {"allow": [">"]}}
    publish = {"aggregator": _aggregator, "scorer": _scorer, "observer": _observer}.get(role)
    if publish is None:
        raise OptionError(f"{role!r} is not a NATS role; the roles are {', '.join(ROLES)}")
    return {"publish": {"allow": publish()}, "subscribe": {"allow": [f"{inbox_prefix(role)}.>"]}}


def server_config(users: Mapping[str, str], *, tls_cert: str = "", tls_key: str = "") -> str:
    """A nats-server configuration admitting exactly ``users`` (role name to password), each with its
    role's permissions, and, with a certificate and key, only TLS connections whose handshake comes first
    (so no one between can strip TLS before the client sends its password). No anonymous user."""
    if not users:
        raise OptionError("a NATS server needs at least one user: without users anyone who reaches it may publish")
    if bool(tls_cert) != bool(tls_key):
        raise OptionError("NATS TLS needs both a certificate and its key")
    entries = []
    for role, password in users.items():
        if not _PASSWORD.fullmatch(password):
            raise OptionError(f"the NATS password of {role!r} must be at least 16 letters, digits, '-' or '_'")
        entries.append({"user": role, "password": password, "permissions": permissions(role)})
    config: dict = {"authorization": {"users": entries}}
    if tls_cert:
        config["tls"] = {"cert_file": str(tls_cert), "key_file": str(tls_key), "handshake_first": True}
    return json.dumps(config, indent=2)


def cluster_config(name: str, listen: str, peers: list[str], password: str) -> dict:
    """The ``cluster`` block of one node: it listens for routes on ``listen`` (host:port), admits only routes
    presenting ``ROUTE_USER`` and ``password``, and dials each of ``peers`` (host:port) with them."""
    if not _PASSWORD.fullmatch(password):
        raise OptionError("the NATS route password must be at least 16 letters, digits, '-' or '_'")
    return {"name": name, "listen": listen, "authorization": {"user": ROUTE_USER, "password": password},
            "routes": [f"nats://{ROUTE_USER}:{password}@{peer}" for peer in peers]}
