"""``mfscore serve <service>``: run one service until SIGTERM or SIGINT, then shut down gracefully.

The services it starts are those of services/common/service_specs.py; its flags, the settings that declare one
(services/common/settings.py).
"""

from __future__ import annotations

import logging

from mfscore.cli.documentation import see
from mfscore.services.common import service_specs
from mfscore.services.common.settings import Settings, flags, value_type


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="run one service of the distributed mode (gRPC + NATS JetStream + S3)",
        description="Run a service. Configuration comes from the environment (MFSCORE_NATS_URL, MFSCORE_S3_ENDPOINT, "
                    "MFSCORE_S3_ACCESS_KEY, MFSCORE_S3_SECRET_KEY, MFSCORE_BUCKET, MFSCORE_GRPC_PORT, "
                    "MFSCORE_METRICS_PORT, ...); a flag overrides its variable.")
    p.description += f" The settings: {see(p, 'distributed.md')}."
    p.add_argument("service", choices=service_specs.names())
    for setting in flags():
        p.add_argument(setting.metadata["flag"], dest=setting.name, type=value_type(setting),
                       help=setting.metadata["flag_help"])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging (a line per job)")
    p.set_defaults(run=run)


def _settings(args):
    given = {setting.name: getattr(args, setting.name) for setting in flags()}
    return Settings.from_env(**{name: value for name, value in given.items() if value is not None})


async def _serve(name: str, settings) -> None:
    import asyncio
    import importlib
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    spec = service_specs.get(name)
    if spec.role == service_specs.SCORER:
        from mfscore.services.common.scorer_pool import ScorerPool, run_pool
        await run_pool(ScorerPool(name=spec.name, resources=spec.resources), settings, stop)
    else:
        await getattr(importlib.import_module(spec.module), f"run_{spec.role}")(settings, stop)


def run(args) -> int:
    from mfscore.services.common.json_logs import configure

    settings = _settings(args)
    configure(settings.log_format, logging.DEBUG if args.verbose else logging.INFO)
    logging.getLogger("mfscore.services").info("starting %s with %s", args.service, settings.redacted())
    import asyncio

    asyncio.run(_serve(args.service, settings))
    return 0
