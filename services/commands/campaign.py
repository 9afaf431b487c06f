"""``mfscore campaign create|show|list|close``: an operator's evaluation campaigns on a cluster (CampaignService,
docs/campaigns.md), and ``mfscore leaderboard --campaign C --competition X``'s board (``board``).

Teams submit to a campaign with ``mfscore submit --campaign C --competition X --package DIR``.
"""

from __future__ import annotations

import json
import sys

from mfscore.errors import MfscoreError


def add_parser(subparsers) -> None:
    from mfscore.cli.documentation import see

    p = subparsers.add_parser("campaign", help="an evaluation campaign on a cluster: create, show, list, close it")
    p.description = (f"An operator creates a campaign from its file (teams, competitions, phases: {see(p, 'campaigns.md')}"
                     "); its teams see it and submit to it with 'mfscore submit --campaign C --competition X "
                     "--package DIR'.")
    commands = p.add_subparsers(dest="campaign_command", required=True, metavar="<command>")
    create = commands.add_parser("create", help="create a campaign from its file (JSON or YAML; operator)")
    create.add_argument("file", metavar="FILE")
    show = commands.add_parser("show", help="a campaign as you may see it")
    show.add_argument("name", metavar="NAME")
    listing = commands.add_parser("list", help="the campaigns you take part in")
    close = commands.add_parser("close", help="close a campaign to submissions (operator)")
    close.add_argument("name", metavar="NAME")
    for command in (create, show, listing, close):
        command.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
        command.add_argument("--json", action="store_true", help="print the campaign as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    import grpc

    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.wire import campaigns_pb2 as wire
    from mfscore.services.wire import campaigns_pb2_grpc

    config = resolve(args.cluster)
    try:
        with config.channel() as channel:
            stub = campaigns_pb2_grpc.CampaignServiceStub(channel)
            if args.campaign_command == "create":
                with open(args.file, "rb") as f:
                    reply = stub.CreateCampaign(wire.CreateCampaignRequest(file=f.read()), timeout=60)
                shown = [reply.campaign]
                print(f"campaign {reply.campaign.name} " + ("created" if reply.created else
                                                            "was created already from this file; nothing changed"),
                      file=sys.stderr)
            elif args.campaign_command == "show":
                shown = [stub.GetCampaign(wire.GetCampaignRequest(name=args.name), timeout=60).campaign]
            elif args.campaign_command == "list":
                shown = list(stub.ListCampaigns(wire.ListCampaignsRequest(), timeout=60).campaigns)
            else:
                shown = [stub.CloseCampaign(wire.CloseCampaignRequest(name=args.name), timeout=60).campaign]
    except grpc.RpcError as error:
        print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
        return 1
    except OSError as error:
        raise MfscoreError(f"the campaign file {args.file} cannot be read: {error.strerror}") from None
    for campaign in shown:
        print(json.dumps(json.loads(campaign.json), indent=1) if args.json else "\n".join(describe(campaign)))
    return 0


def describe(campaign) -> list[str]:
    """A campaign in a few lines: its state, the caller's team, its competitions and its phases."""
    data = json.loads(campaign.json)
    state = "closed" if campaign.HasField("closed_at") else (
        f"open, phase {campaign.current_phase}" if campaign.current_phase else "open, between phases")
    lines = [f"{campaign.name}: {state}" + (f"; your team: {campaign.team}" if campaign.team else "")]
    for competition in data.get("competitions", []):
        goal = competition.get("goal")
        lines.append(f"  competition {competition['name']}: {competition['task']} on {competition['dataset']}"
                     + (f", goal {goal['metric']} {'>=' if goal['better'] == 'higher' else '<='} {goal['threshold']}"
                        if goal else ""))
    for phase in data.get("phases", []):
        quotas = ", ".join(f"{n} a {what}" for what, n in (("day", phase.get("quota_per_day")),
                                                           ("phase", phase.get("quota_per_phase"))) if n)
        lines.append(f"  phase {phase['name']}: {phase['start']} to {phase['end']}"
                     + (f", quotas {quotas}" if quotas else "") + f", late {phase['late']}, board {phase['board']}")
    return lines


def board(args) -> int:
    """``mfscore leaderboard --campaign C --competition X [--phase P] [--split private]``: the board as the caller may
    see it; ``--html FILE``, ``--csv FILE``; ``--export FILE`` (``.csv`` or ``.json``): the operator's, with every
    entry's description."""
    import grpc

    from mfscore import campaigns
    from mfscore.services.commands.cluster_config import resolve
    from mfscore.services.wire import campaigns_pb2, campaigns_pb2_grpc

    if not args.competition:
        raise MfscoreError("a campaign's board needs --competition NAME")
    request = campaigns_pb2.GetBoardRequest(campaign=args.campaign, competition=args.competition,
                                            phase=args.phase or "", split=args.split or "",
                                            descriptions=bool(args.export))
    try:
        with resolve(args.cluster).channel() as channel:
            reply = campaigns_pb2_grpc.CampaignServiceStub(channel).GetBoard(request, timeout=120)
    except grpc.RpcError as error:
        print(f"mfscore: error: {error.details() or error.code().name}", file=sys.stderr)
        return 1
    found = campaigns.board_from_json(reply.json)
    written = {args.html: lambda: campaigns.board_html(found), args.csv: lambda: campaigns.board_csv(
        found, descriptions=False)}
    if args.export:
        written[args.export] = (lambda: reply.json) if args.export.endswith(".json") else (
            lambda: campaigns.board_csv(found, descriptions=True))
    for path, text in written.items():
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text())
            print(f"mfscore: wrote {path}", file=sys.stderr)
    if args.json:
        sys.stdout.write(reply.json)
    else:
        print("\n".join(campaigns.board_lines(found)))
    return 0
