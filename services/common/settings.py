"""Service settings, read once from ``MFSCORE_*`` environment variables (Kubernetes injects them)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mfscore.errors import OptionError

ENV_VARS = {
    "nats_url": "MFSCORE_NATS_URL",
    "s3_endpoint": "MFSCORE_S3_ENDPOINT",
    "s3_access_key": "MFSCORE_S3_ACCESS_KEY",
    "s3_secret_key": "MFSCORE_S3_SECRET_KEY",
    "s3_region": "MFSCORE_S3_REGION",
    "bucket": "MFSCORE_BUCKET",
    "grpc_port": "MFSCORE_GRPC_PORT",
    "metrics_port": "MFSCORE_METRICS_PORT",
    "validator_address": "MFSCORE_VALIDATOR_ADDRESS",
    "aggregator_address": "MFSCORE_AGGREGATOR_ADDRESS",
    "work_dir": "MFSCORE_WORK_DIR",
    "ack_wait_seconds": "MFSCORE_ACK_WAIT",
    "max_deliver": "MFSCORE_MAX_DELIVER",
    "grpc_host": "MFSCORE_GRPC_HOST",
    "metrics_host": "MFSCORE_METRICS_HOST",
    "token": "MFSCORE_TOKEN",
    "tokens_file": "MFSCORE_TOKENS_FILE",
    "tls_cert": "MFSCORE_TLS_CERT",
    "tls_key": "MFSCORE_TLS_KEY",
    "tls_ca": "MFSCORE_TLS_CA",
    "nats_user": "MFSCORE_NATS_USER",
    "nats_password": "MFSCORE_NATS_PASSWORD",
}
SECRET_FIELDS = ("s3_secret_key", "token", "nats_password")

PORT_FIELDS = ("grpc_port", "metrics_port")
POSITIVE_FIELDS = ("ack_wait_seconds", "max_deliver")


def _default_work_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "mfscore-work")


@dataclass(frozen=True)
class Settings:
    """Where the services find NATS, S3 and each other, and how long a job may take.

    ``s3_endpoint`` is kept with its scheme: ``host:port`` is read as ``http://host:port``.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    s3_endpoint: str = "http://127.0.0.1:9000"
    s3_access_key: str = "mfscore"
    s3_secret_key: str = "mfscore-secret"
    s3_region: str = "us-east-1"
    bucket: str = "mfscore"
    grpc_port: int = 50051
    metrics_port: int = 9100
    validator_address: str = "127.0.0.1:50051"
    aggregator_address: str = "127.0.0.1:50051"
    work_dir: str = field(default_factory=_default_work_dir)
    ack_wait_seconds: int = 60
    max_deliver: int = 5
    grpc_host: str = "127.0.0.1"       # loopback unless told otherwise (Kubernetes sets 0.0.0.0)
    metrics_host: str = "127.0.0.1"
    token: str = ""                    # this process's bearer token, sent on every gRPC call it makes
    tokens_file: str = ""              # the callers a gRPC server accepts (services/common/auth.py)
    tls_cert: str = ""                 # PEM certificate and key: gRPC listens with TLS when both are set
    tls_key: str = ""
    tls_ca: str = ""                   # PEM CA that gRPC and NATS servers' certificates are checked against
    nats_user: str = ""
    nats_password: str = ""

    def __post_init__(self) -> None:
        endpoint = self.s3_endpoint if "://" in self.s3_endpoint else f"http://{self.s3_endpoint}"
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise OptionError(
                f"the S3 endpoint {self.s3_endpoint!r} ({ENV_VARS['s3_endpoint']}) must be host:port "
                "or http(s)://host:port"
            )
        object.__setattr__(self, "s3_endpoint", f"{parts.scheme}://{parts.netloc}")
        for name in PORT_FIELDS:
            if not 0 <= getattr(self, name) <= 65535:
                raise OptionError(f"{ENV_VARS[name]} must be a port number from 0 to 65535, not {getattr(self, name)}")
        for name in POSITIVE_FIELDS:
            if getattr(self, name) < 1:
                raise OptionError(f"{ENV_VARS[name]} must be at least 1, not {getattr(self, name)}")

    def redacted(self) -> Settings:
        """These settings with every secret replaced by ``***``, for logs."""
        return dataclasses.replace(self, **{name: "***" for name in SECRET_FIELDS if getattr(self, name)})

    @property
    def s3_secure(self) -> bool:
        """True when the endpoint is https."""
        return self.s3_endpoint.startswith("https://")

    @property
    def s3_host(self) -> str:
        """The endpoint as ``host:port``, the form ``minio.Minio`` takes."""
        return self.s3_endpoint.split("://", 1)[1]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, **overrides) -> Settings:
        """Settings from ``environ``; keyword overrides win over the environment."""
        unknown = set(overrides) - set(ENV_VARS)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        values = {}
        for name, var in ENV_VARS.items():
            raw = environ.get(var)
            if raw is None or raw == "":
                continue
            if types[name] in (int, "int"):
                try:
                    values[name] = int(raw.strip())
                except ValueError:
                    raise OptionError(f"{var} must be an integer, not {raw!r}") from None
            else:
                values[name] = raw
        values.update(overrides)
        return cls(**values)
