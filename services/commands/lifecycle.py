"""``mfscore cancel RUN`` and ``mfscore delete RUN``: stop a run on a cluster, and remove one that has ended.

``cancel`` (CancelRun) stops a run that has not ended: it becomes cancelled, its queued jobs are dropped, and what
its scorers send later is ignored. ``delete`` (DeleteRun) removes a run that has ended (done, failed, rejected or
cancelled) at once, as retention does after the retention period: its status, reports and every stored object.
Each takes the full run id that ``submit`` prints and ``report --list`` shows; a run the caller may not see is
"no run", whoever's it is.
"""

from __future__ import annotations

import sys

from mfscore.errors import MfscoreError


def add_parsers(subparsers) -> None:
    for name, help_text, description in (
            ("cancel", "stop a run on the cluster that has not ended",
             "Cancel a run that has not ended: its queued jobs are dropped and it ends as cancelled. Its status "
             "stays until retention or 'mfscore delete' removes it."),
            ("delete", "remove a run that has ended from the cluster, with its reports",
             "Delete a run that has ended (done, failed, rejected or cancelled) now: its status, its reports and "
             "every file stored for it. Cancel a run that has not ended first.")):
        p = subparsers.add_parser(name, help=help_text, description=description)
        p.add_argument("run_id", metavar="RUN", help="the run's full id, as submit prints it and report --list shows it")
        p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
        p.set_defaults(run=cancel if name == "cancel" else delete)


def _call(args, what: str, call):
    """``call(stub)`` on the cluster ``args`` names (reconnecting while the aggregator is away); a refusal is one
    line on stderr."""
    import grpc

    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.commands.report import Reconnecting, calling

    config = resolve(args.cluster)
    try:
        return calling(config, call, Reconnecting(config.aggregator_address, args.run_id))
    except grpc.RpcError as error:
        raise MfscoreError(f"run {args.run_id} was not {what}: {error.details() or error.code().name}") from None


def cancel(args) -> int:
    from mfscore.services.wire import runs_pb2

    status = _call(args, "cancelled",
                   lambda stub: stub.CancelRun(runs_pb2.CancelRunRequest(run_id=args.run_id), timeout=60).run)
    print(f"mfscore: run {status.run_id} cancelled with {status.trials_received} of {status.trials_planned} "
          "trial(s) scored", file=sys.stderr)
    return 0


def delete(args) -> int:
    from mfscore.services.wire import runs_pb2

    _call(args, "deleted", lambda stub: stub.DeleteRun(runs_pb2.DeleteRunRequest(run_id=args.run_id), timeout=120))
    print(f"mfscore: run {args.run_id} deleted", file=sys.stderr)
    return 0
