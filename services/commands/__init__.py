"""The distributed commands of the ``mfscore`` CLI: serve, local-cluster, submit, report, cancel, delete, dataset,
campaign, dead-letters.

Registered through the ``mfscore.commands`` entry point, so the CLI never imports them; they are
offered only when the ``cluster`` extra (grpcio, nats-py, minio) is installed.
"""

from importlib.util import find_spec

CLUSTER_MODULES = ("grpc", "nats", "minio", "google.protobuf")


def add_parsers(subparsers) -> None:
    if not all(find_spec(name) for name in CLUSTER_MODULES):
        return
    from mfscore.services.commands import (
        campaign,
        dataset,
        dead_letters,
        lifecycle,
        local_cluster,
        report,
        serve,
        submit,
    )

    serve.add_parser(subparsers)
    local_cluster.add_parser(subparsers)
    submit.add_parser(subparsers)
    report.add_parser(subparsers)
    lifecycle.add_parsers(subparsers)
    dataset.add_parser(subparsers)
    campaign.add_parser(subparsers)
    dead_letters.add_parser(subparsers)


def cluster_leaderboard(args) -> int:
    """``mfscore leaderboard NAME@VERSION --task TASK --cluster FILE``: the local command calls it, found through the
    entry point at run time (services/commands/leaderboard.py)."""
    from mfscore.services.commands import leaderboard

    return leaderboard.run(args)


def cluster_fetch(run_id: str, out_dir: str, cluster: str | None) -> None:
    """``mfscore compare RUN_ID``: the local command calls it, found through the entry point at run time, to fetch a
    cluster run's report files into ``out_dir`` (services/commands/report.py)."""
    from mfscore.services.commands import report

    report.fetch_run(run_id, out_dir, cluster)
