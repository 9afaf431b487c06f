"""The distributed commands of the ``mfscore`` CLI: serve, local-cluster, submit, report."""


def add_parsers(subparsers) -> None:
    from services.commands import local_cluster, report, serve, submit

    serve.add_parser(subparsers)
    local_cluster.add_parser(subparsers)
    submit.add_parser(subparsers)
    report.add_parser(subparsers)
