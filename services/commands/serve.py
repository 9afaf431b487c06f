"""``mfscore serve <service>``: run one service until SIGTERM or SIGINT, then shut down gracefully."""

from __future__ import annotations

import logging

from mfscore.cli.documentation import see

SERVICES = ("validator", "mask-scorer", "provenance-scorer", "detection-scorer", "aggregator")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="run one service of the distributed mode (gRPC + NATS JetStream + S3)",
        description="Run a service. Configuration comes from the environment (MFSCORE_NATS_URL, MFSCORE_S3_ENDPOINT, "
                    "MFSCORE_S3_ACCESS_KEY, MFSCORE_S3_SECRET_KEY, MFSCORE_BUCKET, MFSCORE_GRPC_PORT, "
                    "MFSCORE_METRICS_PORT, ...); a flag overrides its variable.")
    p.description += f" The settings: {see(p, 'distributed.md')}."
    p.add_argument("service", choices=SERVICES)
    p.add_argument("--grpc-port", type=int, help="gRPC port (MFSCORE_GRPC_PORT; 0 picks a free one)")
    p.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (MFSCORE_METRICS_PORT)")
    p.add_argument("--nats-url", help="NATS server (MFSCORE_NATS_URL)")
    p.add_argument("--s3-endpoint", help="S3-compatible endpoint, http(s)://host:port (MFSCORE_S3_ENDPOINT)")
    p.add_argument("--bucket", help="bucket of inputs and reports (MFSCORE_BUCKET)")
    p.add_argument("--work-dir", help="scratch directory (MFSCORE_WORK_DIR)")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging (a line per job)")
    p.set_defaults(run=run)


def _settings(args):
    from mfscore.services.common.settings import Settings

    flags = {"grpc_port": args.grpc_port, "metrics_port": args.metrics_port, "nats_url": args.nats_url,
             "s3_endpoint": args.s3_endpoint, "bucket": args.bucket, "work_dir": args.work_dir}
    return Settings.from_env(**{k: v for k, v in flags.items() if v is not None})


async def _serve(name: str, settings) -> None:
    import asyncio
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if name == "aggregator":
        from mfscore.services.aggregator.service import run_aggregator
        await run_aggregator(settings, stop)
    elif name == "validator":
        from mfscore.services.validator.service import run_validator
        await run_validator(settings, stop)
    else:
        import importlib

        from mfscore.services.common.scorer_pool import run_pool
        pool = importlib.import_module(f"mfscore.services.{name.replace('-', '_')}.service").POOL
        await run_pool(pool, settings, stop)


def run(args) -> int:
    from mfscore.services.common.json_logs import configure

    settings = _settings(args)
    configure(settings.log_format, logging.DEBUG if args.verbose else logging.INFO)
    logging.getLogger("mfscore.services").info("starting %s with %s", args.service, settings.redacted())
    import asyncio

    asyncio.run(_serve(args.service, settings))
    return 0
