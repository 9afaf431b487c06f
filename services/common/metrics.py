"""The Prometheus metrics of every service, in the default registry (docs/architecture.md "The distributed flow", step 6)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

JOBS_TOTAL = Counter(
    "mfscore_jobs_total", "Jobs settled by a worker, by outcome (done, retried, dead).", ["service", "outcome"]
)
JOB_DURATION = Histogram(
    "mfscore_job_duration_seconds", "Time from receiving a job to settling it.", ["service"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
JOBS_IN_FLIGHT = Gauge("mfscore_jobs_in_flight", "Jobs being worked on now.", ["service"])
S3_BYTES = Counter("mfscore_s3_bytes_total", "Object bytes read from or written to S3.", ["direction"])
S3_REQUEST_DURATION = Histogram(
    "mfscore_s3_request_duration_seconds", "Duration of one S3 request attempt.", ["operation"]
)
RUNS = Gauge("mfscore_runs", "Runs known to the aggregator, by state.", ["state"])
# No per-run label: a label per run id grows without bound (a run's own progress is WatchRun's).
TRIALS_PLANNED = Counter("mfscore_trials_planned_total", "Trials planned, over every run.")
TRIALS_RECEIVED = Counter("mfscore_trials_received_total", "Trials received (a repeated record counts once), over every run.")
AGGREGATOR_FOLD_DURATION = Histogram(
    "mfscore_aggregator_fold_duration_seconds", "Time to fold one trial record into its run's state."
)
AGGREGATOR_REPORT_DURATION = Histogram(
    "mfscore_aggregator_report_duration_seconds", "Time to compute and store a run's reports.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)

UPLOADED_BYTES = Counter("mfscore_uploaded_bytes_total", "Input bytes clients uploaded through UploadInputs and "
                         "the aggregator stored.")
UPLOADS_REFUSED = Counter("mfscore_uploads_refused_total", "Uploaded files refused: not as declared, or over a limit.")
REPORTS_TAMPERED = Counter("mfscore_reports_tampered_total", "Stored report files that did not match the digest the "
                           "aggregator recorded when it wrote them (FetchReport ended with DATA_LOSS).")

def start_metrics_server(port: int, host: str = "127.0.0.1") -> int:
    """Serve ``/metrics`` from a daemon thread; returns the bound port (``port=0`` picks one)."""
    started = start_http_server(port, addr=host)
    if isinstance(started, tuple):
        return started[0].server_port
    return port
