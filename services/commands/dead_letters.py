"""``mfscore dead-letters [--purge] [--limit N]``: an operator reads the jobs the scorers gave up on, and purges them.

The aggregator reads the stream MFSCORE_DEAD for the operator (ListDeadLetters, PurgeDeadLetters): no cluster file
holds a NATS credential. ``--purge`` purges up to the newest dead letter it listed, so one that arrived since stays.
"""

from __future__ import annotations

import sys

HELP = "read the jobs the cluster's scorers gave up on, and purge them (operator)"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("dead-letters", help=HELP)
    p.description = ("List the dead letters of a cluster, newest first: each one's sequence, when it was "
                     "dead-lettered, its subject, its job's run, task and key when it holds a job, and why. With "
                     "--purge, purge those listed (and any older), not one that arrived since. An operator's cluster "
                     "file only.")
    p.add_argument("--purge", action="store_true", help="purge up to the newest dead letter listed")
    p.add_argument("--limit", type=int, default=0, metavar="N",
                   help="list at most N, newest first (default 100, at most 1000)")
    p.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    p.set_defaults(run=run)


def run(args) -> int:
    import grpc

    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.wire import dead_letters_pb2, services_pb2_grpc

    try:
        with resolve(args.cluster).channel() as channel:
            stub = services_pb2_grpc.AggregatorServiceStub(channel)
            listed = stub.ListDeadLetters(dead_letters_pb2.ListDeadLettersRequest(limit=args.limit), timeout=60)
            for letter in listed.dead_letters:
                print(describe(letter))
            print(count(listed))
            if args.purge and listed.dead_letters:
                newest = listed.dead_letters[0].sequence
                purged = stub.PurgeDeadLetters(dead_letters_pb2.PurgeDeadLettersRequest(up_to_sequence=newest),
                                               timeout=60).purged
                print(f"purged {purged} dead letter(s), up to sequence {newest}")
    except grpc.RpcError as error:
        print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
        return 1
    return 0


def describe(letter) -> str:
    """One dead letter on one line: sequence, time, subject, its job when it holds one, and its error."""
    when = letter.dead_lettered_at.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
    job = ""
    if letter.HasField("job"):
        key = letter.job.key
        job = f"  run {letter.job.run_id} task {letter.job.task} key {key.query}/{key.role}/{key.ordinal}"
    return f"{letter.sequence}  {when}  {letter.subject}{job}  {letter.error}"


def count(listed) -> str:
    """How many dead letters the stream holds, and how many of them were not shown."""
    shown, total = len(listed.dead_letters), listed.total
    if total == 0:
        return "no dead letters"
    return f"{total} dead letter(s)" + (f", the newest {shown} shown (--limit)" if shown < total else "")
