"""``mfscore leaderboard NAME@VERSION --task TASK --cluster FILE``: the cluster's shared leaderboard of a dataset
(AggregatorService.GetLeaderboard; docs/results.md "Leaderboards").

The local command (mfscore/cli/leaderboard.py) loads this module through the ``mfscore.commands`` entry point at
run time, so the CLI never imports the services. The board is the core's (``mfscore.leaderboard``), read back from
the JSON the aggregator sends, and written with the local command's writers. Runs ranked by other metrics are on
boards of their own: a line on standard error names them (``--metric NAME`` shows one).
"""

from __future__ import annotations

import sys

from mfscore.errors import MfscoreError


def run(args) -> int:
    import grpc

    from mfscore import leaderboard as lb
    from mfscore.cli.leaderboard import write_files
    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.wire import results_pb2, services_pb2_grpc

    if args.campaign:
        from mfscore.services.commands.campaign import board

        return board(args)
    if not args.task:
        raise MfscoreError("a cluster's leaderboard needs --task TASK: the task whose runs are ranked")
    config = resolve(args.cluster)
    request = results_pb2.GetLeaderboardRequest(dataset=args.outdirs[0], task=args.task, metric=args.metric or "")
    try:
        with config.channel() as channel:
            response = services_pb2_grpc.AggregatorServiceStub(channel).GetLeaderboard(request, timeout=60)
    except grpc.RpcError as error:
        print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
        return 1
    board = lb.from_json(response.json)
    others = [metric for metric in response.metrics if metric != board.metric]
    if others:
        print(f"mfscore: runs ranked by {', '.join(others)} are on boards of their own: --metric NAME shows one",
              file=sys.stderr)
    write_files(board, args)
    if args.json:
        sys.stdout.buffer.write(response.json.encode())
        sys.stdout.flush()
    else:
        print("\n".join(lb.to_text(board)))
    return 0
