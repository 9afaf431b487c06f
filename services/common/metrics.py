"""The Prometheus metrics of the services, each family on the registry of every role that exports it.

A process serves its own role's registry (``start_metrics_server(..., role=...)``): a scorer exports job, queue
and S3 families, the aggregator run, trial, fold, report and upload families, the validator its validations; every
role exports ``mfscore_build_info``, the gRPC server families and the process's own (``process_*``, ``python_*``).
``FAMILIES`` lists each family once with the roles exporting it: docs/metrics-reference.md is generated from it
(``python -m mfscore.services.common.metrics_doc``).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

from mfscore import __version__, tasks
from mfscore.services.common.service_specs import ROLES

EVERY_ROLE = ROLES
REGISTRIES = {role: CollectorRegistry() for role in ROLES}
for _registry in REGISTRIES.values():
    for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        _registry.register(_collector)
UNKNOWN_TASK = "unknown"
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
REPORT_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


@dataclass(frozen=True)
class Family:
    """One exported family as the reference page lists it."""

    name: str            # as scraped: a counter's ends in _total
    type: str
    labels: tuple[str, ...]
    help: str
    roles: tuple[str, ...]


FAMILIES: list[Family] = []


def _family(kind, name: str, help: str, labels: tuple[str, ...] = (), *, roles: tuple[str, ...], **options):
    metric = kind(name, help, labels, registry=None, **options)
    for role in roles:
        REGISTRIES[role].register(metric)
    FAMILIES.append(Family(name, kind.__name__.lower(), tuple(labels), help, roles))
    return metric


def task_label(name: str) -> str:
    """A task name fit for a label: a registered task's, else ``unknown`` (a label never takes a caller's text)."""
    return name if name in tasks.names() else UNKNOWN_TASK


BUILD_INFO = _family(Gauge, "mfscore_build_info", "Always 1: the mfscore version and the Python version running it.",
                     ("version", "python"), roles=EVERY_ROLE)
BUILD_INFO.labels(__version__, platform.python_version()).set(1)

# gRPC server families, named as grpc-ecosystem's go-grpc-prometheus names them.
GRPC_STARTED = _family(Counter, "grpc_server_started_total", "RPCs started on the server.",
                       ("grpc_type", "grpc_service", "grpc_method"), roles=EVERY_ROLE)
GRPC_HANDLED = _family(Counter, "grpc_server_handled_total", "RPCs completed on the server, whatever their status code.",
                       ("grpc_type", "grpc_service", "grpc_method", "grpc_code"), roles=EVERY_ROLE)
GRPC_HANDLING = _family(Histogram, "grpc_server_handling_seconds",
                        "Time from an RPC's start to its completion on the server (a stream: until it ends).",
                        ("grpc_type", "grpc_service", "grpc_method"), roles=EVERY_ROLE, buckets=SECONDS_BUCKETS)

S3_BYTES = _family(Counter, "mfscore_s3_bytes_total", "Object bytes read from or written to S3.", ("direction",),
                   roles=EVERY_ROLE)
S3_REQUEST_DURATION = _family(Histogram, "mfscore_s3_request_duration_seconds", "Duration of one S3 request attempt.",
                              ("operation",), roles=EVERY_ROLE)
S3_ERRORS = _family(Counter, "mfscore_s3_errors_total", "S3 request attempts that failed (a missing object is not "
                    "a failure); transient ones are retried.", ("operation",), roles=EVERY_ROLE)

JOBS_TOTAL = _family(Counter, "mfscore_jobs_total", "Jobs settled by a worker, by task and outcome (done, retried, "
                     "dead).", ("service", "task", "outcome"), roles=("scorer",))
JOB_DURATION = _family(Histogram, "mfscore_job_duration_seconds", "Time from receiving a job to settling it.",
                       ("service", "task"), roles=("scorer",), buckets=SECONDS_BUCKETS)
JOBS_IN_FLIGHT = _family(Gauge, "mfscore_jobs_in_flight", "Jobs being worked on now.", ("service", "task"),
                         roles=("scorer",))
CONSUMER_PENDING = _family(Gauge, "mfscore_jetstream_consumer_pending", "Jobs a durable consumer has not yet "
                           "delivered (num_pending), read from NATS every few seconds.", ("stream", "consumer"),
                           roles=("scorer",))
CONSUMER_ACK_PENDING = _family(Gauge, "mfscore_jetstream_consumer_ack_pending", "Jobs delivered and not yet "
                               "acknowledged (num_ack_pending).", ("stream", "consumer"), roles=("scorer",))
CONSUMER_REDELIVERED = _family(Gauge, "mfscore_jetstream_consumer_redelivered", "Jobs delivered more than once and "
                               "not yet acknowledged (num_redelivered).", ("stream", "consumer"), roles=("scorer",))
STREAM_MESSAGES = _family(Gauge, "mfscore_jetstream_stream_messages", "Messages held by a stream: the jobs queued, "
                          "the dead letters.", ("stream",), roles=("scorer",))

VALIDATIONS = _family(Counter, "mfscore_validations_total", "Submissions validated, by task and outcome (valid, "
                      "invalid, error: the validator could not check it).", ("task", "outcome"), roles=("validator",))
VALIDATION_DURATION = _family(Histogram, "mfscore_validation_duration_seconds", "Time to validate one submission.",
                              ("task",), roles=("validator",), buckets=REPORT_BUCKETS)

RUNS = _family(Gauge, "mfscore_runs", "Runs known to the aggregator, by state.", ("state",), roles=("aggregator",))
# No per-run label: a label per run id grows without bound (a run's own progress is WatchRun's).
TRIALS_PLANNED = _family(Counter, "mfscore_trials_planned_total", "Trials planned, over every run.",
                         roles=("aggregator",))
TRIALS_RECEIVED = _family(Counter, "mfscore_trials_received_total", "Trials whose records are in (a repeated record "
                          "counts once; trials the aggregator scores itself count when scored), over every run.",
                          roles=("aggregator",))
TRIALS_OUTSTANDING = _family(Gauge, "mfscore_trials_outstanding", "Trials planned and not yet received, over the runs "
                             "that have not ended: the backlog.", roles=("aggregator",))
RUN_STATE_AGE = _family(Gauge, "mfscore_run_state_age_seconds", "How long the run longest in each unfinished state "
                        "has been in it, as this aggregator has seen it (0: no run in that state).", ("state",),
                        roles=("aggregator",))
AGGREGATOR_FOLD_DURATION = _family(Histogram, "mfscore_aggregator_fold_duration_seconds",
                                   "Time to fold one trial record into its run's state.", roles=("aggregator",))
AGGREGATOR_REPORT_DURATION = _family(Histogram, "mfscore_aggregator_report_duration_seconds",
                                     "Time to compute and store a run's reports.", roles=("aggregator",),
                                     buckets=REPORT_BUCKETS)
UPLOADED_BYTES = _family(Counter, "mfscore_uploaded_bytes_total", "Input bytes clients uploaded through UploadInputs "
                         "and the aggregator stored.", roles=("aggregator",))
UPLOADS_REFUSED = _family(Counter, "mfscore_uploads_refused_total", "Uploaded files refused: not as declared, or over "
                          "a limit.", roles=("aggregator",))
REPORTS_TAMPERED = _family(Counter, "mfscore_reports_tampered_total", "Stored report files that did not match the "
                           "digest the aggregator recorded when it wrote them (FetchReport ended with DATA_LOSS).",
                           roles=("aggregator",))


def start_metrics_server(port: int, host: str = "127.0.0.1", *, role: str) -> int:
    """Serve ``role``'s registry on ``/metrics`` from a daemon thread; returns the bound port (``port=0`` picks one)."""
    started = start_http_server(port, addr=host, registry=REGISTRIES[role])
    if isinstance(started, tuple):
        return started[0].server_port
    return port
