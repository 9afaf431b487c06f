"""Service settings, read once from ``MFSCORE_*`` environment variables (Kubernetes injects them).

Each setting is declared once, as a field of ``Settings``: its type and default, and in its metadata
(``setting(...)``) its variable, its check, its help and, for a few, its ``mfscore serve`` flag.
``Settings.from_env``, the checks of ``__post_init__``, the ``serve`` flags (``flags()``) and
docs/settings-reference.md (``python -m mfscore.services.common.settings_doc``) are derived from them.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mfscore import limits
from mfscore.errors import OptionError
from mfscore.options import Check

GIB = 1 << 30


class Rule(Check):
    """A setting's check, worded as its refusal says it: ``<VARIABLE> must be <text>, not <value>``."""

    def __init__(self, text: str, accepts: Callable[[Any], bool], *, bad: tuple, shown: Callable = str):
        super().__init__(lambda value: None if accepts(value) else f"must be {text}, not {shown(value)}", bad=bad)
        self.text = text


def at_least(low: int, note: str = "") -> Rule:
    return Rule(f"at least {low}{note}", lambda value: value >= low, bad=(low - 1,))


def port() -> Rule:
    return Rule("a port number from 0 to 65535", lambda value: 0 <= value <= 65535, bad=(-1, 65536))


def up_to(most: int) -> Rule:
    """From 1 to ``most``: an operator's maximum below its hard maximum (mfscore/limits.py)."""
    return Rule(f"from 1 to {most}", lambda value: 1 <= value <= most, bad=(0, most + 1))


def one_of(*choices: str) -> Rule:
    return Rule(f"one of {', '.join(choices)}", lambda value: value in choices, bad=("no-such-choice",), shown=repr)


def size_limit() -> Rule:
    """A size limit in bytes, or -1 for none."""
    return Rule("-1 (no limit) or a positive number of bytes", lambda value: value == -1 or value > 0, bad=(-2, 0))


def setting(env: str, flag: str | None = None, *, help: str, check: Rule | None = None, flag_help: str = "",
            unit: str = "", secret: bool = False, run_limit: bool = False, shown_default: str = "") -> dict:
    """A field's metadata: its variable ``env``; its ``mfscore serve`` flag with that flag's help (``{env}`` stands for
    the variable); its ``check``; ``help``, what it does (the settings reference); ``unit`` of its default in the
    reference (``s`` or ``bytes``); ``secret``: never logged; ``run_limit``: the most a run's resource option of that
    name may ask for (``check_limits``); ``shown_default``: the reference's default when it is computed."""
    return {"env": env, "flag": flag, "flag_help": flag_help.format(env=env), "help": help, "check": check,
            "unit": unit, "secret": secret, "run_limit": run_limit, "shown_default": shown_default}


def _default_work_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "mfscore-work")


@dataclass(frozen=True)
class Settings:
    """Where the services find NATS, S3 and each other, and how long a job may take.

    ``s3_endpoint`` is kept with its scheme: ``host:port`` is read as ``http://host:port``.
    """

    grpc_port: int = field(default=50051, metadata=setting(
        "MFSCORE_GRPC_PORT", "--grpc-port", check=port(), flag_help="gRPC port ({env}; 0 picks a free one)",
        help="the port gRPC listens on (0: a free one)"))
    metrics_port: int = field(default=9100, metadata=setting(
        "MFSCORE_METRICS_PORT", "--metrics-port", check=port(), flag_help="Prometheus /metrics port ({env})",
        help="the port Prometheus `/metrics` is served on (0: a free one)"))
    nats_url: str = field(default="nats://127.0.0.1:4222", metadata=setting(
        "MFSCORE_NATS_URL", "--nats-url", flag_help="NATS server ({env})",
        help="the NATS server; several separated by commas (a cluster's nodes): the client connects to any and moves "
             "to another when it goes"))
    s3_endpoint: str = field(default="http://127.0.0.1:9000", metadata=setting(
        "MFSCORE_S3_ENDPOINT", "--s3-endpoint", flag_help="S3-compatible endpoint, http(s)://host:port ({env})",
        help="any S3-compatible endpoint, `http(s)://host:port` (`host:port` is read as `http://host:port`)"))
    s3_access_key: str = field(default="", metadata=setting(
        "MFSCORE_S3_ACCESS_KEY", help="the S3 access key (required: credentials never come from code)"))
    s3_secret_key: str = field(default="", metadata=setting(
        "MFSCORE_S3_SECRET_KEY", secret=True, help="the S3 secret key (required: credentials never come from code)"))
    s3_region: str = field(default="us-east-1", metadata=setting("MFSCORE_S3_REGION", help="the S3 region"))
    bucket: str = field(default="mfscore", metadata=setting(
        "MFSCORE_BUCKET", "--bucket", flag_help="bucket of inputs and reports ({env})",
        help="the bucket of inputs and reports"))
    validator_address: str = field(default="127.0.0.1:50051", metadata=setting(
        "MFSCORE_VALIDATOR_ADDRESS", help="where the aggregator calls the validator (`host:port`)"))
    aggregator_address: str = field(default="127.0.0.1:50051", metadata=setting(
        "MFSCORE_AGGREGATOR_ADDRESS", help="where a client calls the aggregator (`host:port`, several separated by "
                                           "commas: the leader is picked by its health)"))
    work_dir: str = field(default_factory=_default_work_dir, metadata=setting(
        "MFSCORE_WORK_DIR", "--work-dir", flag_help="scratch directory ({env})", shown_default="<tmp>/mfscore-work",
        help="scratch space"))
    ack_wait_seconds: int = field(default=10, metadata=setting(
        "MFSCORE_ACK_WAIT", check=at_least(1), unit="s",
        help="how soon a lost scorer's jobs go to another (a live one's heartbeats, every third of it, keep them)"))
    job_seconds: int = field(default=600, metadata=setting(
        "MFSCORE_JOB_SECONDS", check=at_least(0, " (0: no limit)"), unit="s",
        help="a scorer's wall-clock limit on one job (0: none); a job past it fails its run (docs/reliability.md "
             "\"Limits on one job\")"))
    job_memory_bytes: int = field(default=8 * GIB, metadata=setting(
        "MFSCORE_JOB_MEMORY_BYTES", check=at_least(0, " (0: no limit)"), unit="bytes",
        help="the memory one job may take on top of its idle scoring process (0: none); a job past it fails its run"))
    max_deliver: int = field(default=5, metadata=setting(
        "MFSCORE_MAX_DELIVER", check=at_least(1), help="attempts at a job failing for reasons other than S3 or NATS"))
    retry_budget_seconds: int = field(default=900, metadata=setting(
        "MFSCORE_RETRY_BUDGET", check=at_least(1), unit="s",
        help="how long a job waits out S3 or NATS being unavailable before it is dead-lettered"))
    clock_offset_seconds: int = field(default=0, metadata=setting(
        "MFSCORE_CLOCK_OFFSET", unit="s",
        help="seconds added to the aggregator's clock where campaigns read it (phases, daily quotas, lateness): an "
             "operator's rehearsal crosses a phase's end or a day without waiting (docs/campaigns.md)"))
    retention_days: int = field(default=30, metadata=setting(
        "MFSCORE_RETENTION_DAYS", check=at_least(1),
        help="days a run's status and reports are kept after it ends (docs/distributed.md \"Retention\")"))
    max_upload_bytes: int = field(default=4 * GIB, metadata=setting(
        "MFSCORE_MAX_UPLOAD_BYTES", check=at_least(1), unit="bytes",
        help="the largest input file `UploadInputs` (and `UploadObjects`) takes"))
    grpc_host: str = field(default="127.0.0.1", metadata=setting(
        "MFSCORE_GRPC_HOST", help="where gRPC listens: loopback unless set (Kubernetes sets `0.0.0.0`)"))
    metrics_host: str = field(default="127.0.0.1", metadata=setting(
        "MFSCORE_METRICS_HOST", help="where `/metrics` listens: loopback unless set (Kubernetes sets `0.0.0.0`)"))
    token: str = field(default="", metadata=setting(
        "MFSCORE_TOKEN", secret=True,
        help="the bearer token this process sends on every gRPC call (the aggregator's, to the validator; a "
             "client's, overriding a cluster file's)"))
    tokens_file: str = field(default="", metadata=setting(
        "MFSCORE_TOKENS_FILE", help="the callers a gRPC server accepts (docs/distributed.md \"Credentials\"); a "
                                    "service will not start without one"))
    tls_cert: str = field(default="", metadata=setting(
        "MFSCORE_TLS_CERT", help="PEM certificate: gRPC listens with TLS when it and `MFSCORE_TLS_KEY` are set"))
    tls_key: str = field(default="", metadata=setting("MFSCORE_TLS_KEY", help="the PEM key of `MFSCORE_TLS_CERT`"))
    tls_ca: str = field(default="", metadata=setting(
        "MFSCORE_TLS_CA", help="PEM CA the gRPC and NATS servers' certificates are checked against; set, clients use "
                               "TLS"))
    nats_user: str = field(default="", metadata=setting(
        "MFSCORE_NATS_USER", help="this service's NATS user (docs/distributed.md \"Credentials\")"))
    nats_password: str = field(default="", metadata=setting(
        "MFSCORE_NATS_PASSWORD", secret=True, help="the password of `MFSCORE_NATS_USER`"))
    pool_min_trials: int = field(default=100_000, metadata=setting(
        "MFSCORE_POOL_MIN_TRIALS", check=at_least(0),
        help="the aggregator's: a run of a portable task (detection) whose jobs hold fewer trials (each subset's "
             "counted) is scored in the aggregator, a larger one by the task's pool; 0 sends every run to the pool. "
             "The default is the measured break-even of a run with `--ci` (docs/detection.md \"On a cluster\")"))
    stream_replicas: int = field(default=1, metadata=setting(
        "MFSCORE_STREAM_REPLICAS", check=at_least(1),
        help="the aggregator's: replicas of the jobs, results and dead-letter streams, the scorers' consumers and "
             "the run bucket (3 on a 3-node NATS: docs/deploy.md \"A production NATS\")"))
    stream_storage: str = field(default="file", metadata=setting(
        "MFSCORE_STREAM_STORAGE", check=one_of("file", "memory"),
        help="where JetStream keeps the same streams and bucket; NATS cannot change it for a stream that exists"))
    stream_max_age_seconds: int = field(default=0, metadata=setting(
        "MFSCORE_STREAM_MAX_AGE", check=at_least(0), unit="s",
        help="the three streams' message age limit (0: none); the run bucket has none (retention removes its "
             "entries)"))
    stream_max_bytes: int = field(default=-1, metadata=setting(
        "MFSCORE_STREAM_MAX_BYTES", check=size_limit(),
        help="each of the three streams' size limit in bytes (-1: none); the run bucket has none"))
    lease_seconds: int = field(default=10, metadata=setting(
        "MFSCORE_LEASE_SECONDS", check=at_least(1), unit="s",
        help="the aggregator leader's lease: a standby takes over this long after it lapses"))
    log_format: str = field(default="text", metadata=setting(
        "MFSCORE_LOG_FORMAT", check=one_of("text", "json"),
        help="`json` writes one JSON object a line (`time`, `level`, `logger`, `message`, and `run_id`, `job_key` "
             "where the line is about one)"))
    # The most a run may ask for: a run's options above one are refused when submitted (docs/reliability.md
    # "Limits a client cannot raise"), each from 1 to its hard maximum (mfscore/limits.py)
    max_pixels: int = field(default=limits.DEFAULT_MAX_PIXELS, metadata=setting(
        "MFSCORE_MAX_PIXELS", check=up_to(limits.HARD_MAX_PIXELS), run_limit=True,
        help="the aggregator's and validator's: the most a mask run's `--max-pixels` may ask for"))
    max_job_bytes: int = field(default=limits.DEFAULT_MAX_JOB_BYTES, metadata=setting(
        "MFSCORE_MAX_JOB_BYTES", check=up_to(limits.HARD_MAX_JOB_BYTES), run_limit=True, unit="bytes",
        help="the aggregator's and validator's: the most a mask run's `--max-job-bytes` may ask for"))
    max_json_bytes: int = field(default=limits.DEFAULT_MAX_JSON_BYTES, metadata=setting(
        "MFSCORE_MAX_JSON_BYTES", check=up_to(limits.HARD_MAX_JSON_BYTES), run_limit=True, unit="bytes",
        help="the aggregator's and validator's: the most a provenance run's `--max-json-bytes` may ask for"))
    max_video_elements: int = field(default=limits.DEFAULT_MAX_VIDEO_ELEMENTS, metadata=setting(
        "MFSCORE_MAX_VIDEO_ELEMENTS", check=up_to(limits.HARD_MAX_VIDEO_ELEMENTS), run_limit=True,
        help="the aggregator's and validator's: the most a video-spatial run's `--max-elements` may ask for"))
    max_kernel_size: int = field(default=limits.DEFAULT_MAX_KERNEL_SIZE, metadata=setting(
        "MFSCORE_MAX_KERNEL_SIZE", check=up_to(limits.HARD_MAX_KERNEL_SIZE), run_limit=True,
        help="the aggregator's and validator's: the largest kernel a run's `--eks`, `--dks` and `--ntdks` may ask "
             "for"))
    max_findings: int = field(default=limits.DEFAULT_MAX_FINDINGS, metadata=setting(
        "MFSCORE_MAX_FINDINGS", check=up_to(limits.HARD_MAX_FINDINGS),
        help="the validator's: findings a report lists; the others are counted in its last one"))
    # Quotas of each caller (a token's name), on the aggregator (services/aggregator/quotas.py)
    quota_created_runs: int = field(default=100, metadata=setting(
        "MFSCORE_QUOTA_CREATED_RUNS", check=at_least(1),
        help="the aggregator's, per caller (a token's name and role): runs created and not submitted (`CreateRun` "
             "beyond: RESOURCE_EXHAUSTED)"))
    quota_runs_in_flight: int = field(default=20, metadata=setting(
        "MFSCORE_QUOTA_RUNS_IN_FLIGHT", check=at_least(1),
        help="per caller: runs submitted and not ended (`SubmitRun` beyond: RESOURCE_EXHAUSTED)"))
    quota_create_run_per_minute: int = field(default=60, metadata=setting(
        "MFSCORE_QUOTA_CREATE_RUN_PER_MINUTE", check=at_least(1),
        help="per caller: `CreateRun` calls a minute (a token bucket: a burst of as many, then one every 60/n s)"))
    quota_upload_streams: int = field(default=16, metadata=setting(
        "MFSCORE_QUOTA_UPLOAD_STREAMS", check=at_least(1),
        help="per caller: `UploadInputs` and `UploadObjects` streams open at once (`mfscore submit` opens up to 8, "
             "each sending one file at a time, so the defaults take two submits at once of files of up to "
             "`MFSCORE_MAX_UPLOAD_BYTES`)"))
    quota_upload_bytes: int = field(default=32 * GIB, metadata=setting(
        "MFSCORE_QUOTA_UPLOAD_BYTES", check=at_least(1), unit="bytes",
        help="per caller: bytes declared by the files being received at once (a declaration over it is refused "
             "before a byte is kept)"))
    quota_dataset_files: int = field(default=100_000, metadata=setting(
        "MFSCORE_QUOTA_DATASET_FILES", check=at_least(1),
        help="file names in one `CreateDataset` (refused as the names arrive, before they are all held)"))
    upload_idle_seconds: int = field(default=60, metadata=setting(
        "MFSCORE_UPLOAD_IDLE_SECONDS", check=at_least(1), unit="s",
        help="an upload stream that sends nothing this long ends DEADLINE_EXCEEDED, the file it was sending dropped"))
    # Every gRPC server's own bounds (services/common/grpc_server.py)
    grpc_max_connections: int = field(default=4096, metadata=setting(
        "MFSCORE_GRPC_MAX_CONNECTIONS", check=at_least(1),
        help="every gRPC server's: connections open at once (keep it under the process's `ulimit -n`)"))
    grpc_max_calls: int = field(default=2000, metadata=setting(
        "MFSCORE_GRPC_MAX_CALLS", check=at_least(1),
        help="every gRPC server's: calls under way at once, every caller's (RESOURCE_EXHAUSTED beyond)"))
    grpc_handshake_seconds: int = field(default=10, metadata=setting(
        "MFSCORE_GRPC_HANDSHAKE_SECONDS", check=at_least(1), unit="s",
        help="a connection that has not spoken (TLS, HTTP/2) by then is closed"))
    grpc_idle_seconds: int = field(default=300, metadata=setting(
        "MFSCORE_GRPC_IDLE_SECONDS", check=at_least(1), unit="s",
        help="a connection with no call this long is closed (a client reconnects when it next calls)"))

    def __post_init__(self) -> None:
        endpoint = self.s3_endpoint if "://" in self.s3_endpoint else f"http://{self.s3_endpoint}"
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise OptionError(
                f"the S3 endpoint {self.s3_endpoint!r} ({ENV_VARS['s3_endpoint']}) must be host:port "
                "or http(s)://host:port"
            )
        object.__setattr__(self, "s3_endpoint", f"{parts.scheme}://{parts.netloc}")
        for f in fields():
            check = f.metadata["check"]
            found = check.problem(getattr(self, f.name)) if check else None
            if found:
                raise OptionError(f"{f.metadata['env']} {found[1]}")

    @property
    def option_limits(self) -> dict[str, int]:
        """The maxima of a run's resource options, by the ``limit`` their fields declare (``check_limits``)."""
        return {f.name: getattr(self, f.name) for f in fields() if f.metadata["run_limit"]}

    def redacted(self) -> Settings:
        """These settings with every secret replaced by ``***``, for logs."""
        return dataclasses.replace(self, **{name: "***" for name in SECRET_FIELDS if getattr(self, name)})

    def require_s3_credentials(self) -> None:
        """Refuse to go on without both S3 credentials: the SDK would send unsigned requests instead."""
        missing = [ENV_VARS[name] for name in ("s3_access_key", "s3_secret_key") if not getattr(self, name)]
        if missing:
            raise OptionError(f"no S3 credentials for {self.s3_endpoint}: set {' and '.join(missing)}")

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
        values = {}
        for f in fields():
            var = f.metadata["env"]
            raw = environ.get(var)
            if raw is None or raw == "":
                continue
            if value_type(f) is int:
                try:
                    values[f.name] = int(raw.strip())
                except ValueError:
                    raise OptionError(f"{var} must be an integer, not {raw!r}") from None
            else:
                values[f.name] = raw
        values.update(overrides)
        return cls(**values)


def fields() -> tuple[dataclasses.Field, ...]:
    """Every setting, in its declaration's order."""
    return dataclasses.fields(Settings)


def value_type(setting: dataclasses.Field) -> type:
    """``int`` or ``str``: what the setting's variable is read as."""
    return int if setting.type in (int, "int") else str


def flags() -> tuple[dataclasses.Field, ...]:
    """The settings an ``mfscore serve`` flag overrides (``metadata["flag"]``, ``metadata["flag_help"]``)."""
    return tuple(f for f in fields() if f.metadata["flag"])


ENV_VARS = {f.name: f.metadata["env"] for f in fields()}
SECRET_FIELDS = tuple(f.name for f in fields() if f.metadata["secret"])
