"""CampaignService's gRPC API (proto/mfscore/v1/campaigns.proto): an operator's campaigns, and their boards as each
caller may see them (docs/campaigns.md).

A campaign another caller takes no part in is NOT_FOUND, as one that never was. A board is derived on each call from
the run book and the runs' sealed results: during a phase a team sees the public split only (the private split's
board is PERMISSION_DENIED until the phase ends), a board kept to each team shows it its own lines, a hidden one
nothing until the phase ends.
"""

from __future__ import annotations

import datetime
import json
import logging

from mfscore import campaigns as core
from mfscore.errors import OptionError
from mfscore.services.aggregator.campaigns import CampaignBook, Held, clock, entry, shown, takes_part, team_of
from mfscore.services.aggregator.datasets import DatasetBook, release_of
from mfscore.services.aggregator.lease import leader_only
from mfscore.services.aggregator.run import State
from mfscore.services.aggregator.state import RunBook
from mfscore.services.common.auth import caller
from mfscore.services.common.settings import Settings
from mfscore.services.common.status_codes import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    answers,
)
from mfscore.services.wire import campaigns_pb2, campaigns_pb2_grpc, datasets_pb2

MAX_FILE_BYTES = 1 << 20
log = logging.getLogger("mfscore.aggregator")


class CampaignApi(campaigns_pb2_grpc.CampaignServiceServicer):
    def __init__(self, settings: Settings, book: RunBook, datasets: DatasetBook, campaigns: CampaignBook, results):
        self.settings, self.book, self.datasets, self.campaigns = settings, book, datasets, campaigns
        self.results = results  # a DONE run's sealed results (AggregatorApi.results)

    def now(self) -> datetime.datetime:
        return clock(self.settings.clock_offset_seconds)

    @answers
    @leader_only
    async def CreateCampaign(self, request, context):
        _operator_only("create a campaign")
        if len(request.file) > MAX_FILE_BYTES:
            raise InvalidArgument(f"a campaign file is at most {MAX_FILE_BYTES} bytes; this one is {len(request.file)}")
        try:
            model = core.load_campaign(request.file)
        except OptionError as error:
            raise InvalidArgument(error.sentence()) from error
        for competition in model.competitions:
            dataset = self.datasets.datasets.get(competition.dataset)
            if dataset is None or not dataset.shared:
                raise FailedPrecondition(f"the competition {competition.name} scores against {competition.dataset}, "
                                         "which is no shared dataset here: register it first (mfscore dataset "
                                         "register --shared)")
            if release_of(dataset) == datasets_pb2.DATASET_RELEASE_OPEN:
                raise FailedPrecondition(f"the reference of {competition.dataset} is open to every caller: a "
                                         "competition scores against a sealed one (registered with --release "
                                         "aggregate or per-trial)")
        text = model.to_json().decode()
        held = self.campaigns.campaigns.get(model.name)
        if held is not None:
            if held.message.json != text:
                raise AlreadyExists(f"the campaign {model.name} exists with another file")
            return campaigns_pb2.CreateCampaignResponse(campaign=shown(held, caller(), self.now()), created=False)
        message = campaigns_pb2.Campaign(name=model.name, json=text)
        message.created_at.GetCurrentTime()
        held = await self.campaigns.record(message)
        log.info("campaign %s created: %d team(s), %d competition(s), %d phase(s)", model.name, len(model.teams),
                 len(model.competitions), len(model.phases))
        return campaigns_pb2.CreateCampaignResponse(campaign=shown(held, caller(), self.now()), created=True)

    @answers
    async def GetCampaign(self, request, context):
        return campaigns_pb2.GetCampaignResponse(campaign=shown(self._held(request.name), caller(), self.now()))

    @answers
    async def ListCampaigns(self, request, context):
        who, now = caller(), self.now()
        held = sorted((h for h in list(self.campaigns.campaigns.values()) if takes_part(h, who)),
                      key=lambda h: (h.message.created_at.ToNanoseconds(), h.message.name))
        return campaigns_pb2.ListCampaignsResponse(campaigns=[shown(h, who, now) for h in held])

    @answers
    @leader_only
    async def CloseCampaign(self, request, context):
        _operator_only("close a campaign")
        held = self._held(request.name)
        if not held.closed:
            message = campaigns_pb2.Campaign()
            message.CopyFrom(held.message)
            message.closed_at.GetCurrentTime()
            held = await self.campaigns.record(message)
        return campaigns_pb2.CloseCampaignResponse(campaign=shown(held, caller(), self.now()))

    @answers
    async def GetBoard(self, request, context):
        who, now = caller(), self.now()
        held = self._held(request.campaign)
        competition = held.model.competition(request.competition)
        if competition is None:
            raise NotFound(f"the campaign {request.campaign} has no competition {request.competition[:64]!r}")
        phase = _phase(held, request.phase, now)
        split = (request.split or core.PUBLIC) if phase.split is not None else None
        if phase.split is None and request.split:
            raise InvalidArgument(f"phase {phase.name} has no split: its board ranks the whole runs")
        if split not in (core.PUBLIC, core.PRIVATE, None):
            raise InvalidArgument(f"the split is {core.PUBLIC!r} or {core.PRIVATE!r}, not {split[:32]!r}")
        ended = now >= phase.end
        if not who.operator:
            if request.descriptions:
                raise PermissionDenied("the descriptions of every entry are the operator's export")
            if split == core.PRIVATE and not ended:
                raise PermissionDenied(f"the private split of phase {phase.name} is sealed until it ends at "
                                       f"{phase.end.isoformat()}")
            if phase.board == "hidden" and not ended:
                raise PermissionDenied(f"the board of phase {phase.name} is hidden until it ends at "
                                       f"{phase.end.isoformat()}")
        entries = [await self._entry(run, held, request.descriptions) for run in self._runs(held, competition, phase)]
        if not who.operator and phase.board == "team" and not ended:
            mine = team_of(held, who)
            entries = [e for e in entries if e.team == mine]
        board = core.board(held.model, competition, phase, entries, split)
        return campaigns_pb2.GetBoardResponse(json=core.board_json(board).decode())

    def _runs(self, held: Held, competition, phase) -> list:
        return [run for run in list(self.book.runs.values())
                if (run.spec.campaign, run.spec.competition, run.spec.phase)
                == (held.message.name, competition.name, phase.name) and run.state == State.RUN_STATE_DONE]

    async def _entry(self, run, held: Held, descriptions: bool) -> core.Entry:
        described = ""
        if descriptions and run.status.provenance_json:
            described = (json.loads(run.status.provenance_json).get("submission") or {}).get("description", "")
        return entry(run, held, await self.results(run), described)

    def _held(self, name: str) -> Held:
        """The campaign ``name`` the caller takes part in; NOT_FOUND otherwise."""
        held = self.campaigns.campaigns.get(name)
        if held is None or not takes_part(held, caller()):
            raise NotFound(f"there is no campaign {name[:64]!r}")
        return held


def _operator_only(what: str) -> None:
    if not caller().operator:
        raise PermissionDenied(f"only an operator may {what}")


def _phase(held: Held, name: str, now: datetime.datetime) -> core.Phase:
    """The phase ``name``; the open one, or else the last that ended, when not named."""
    if name:
        phase = held.model.phase(name)
        if phase is None:
            raise NotFound(f"the campaign {held.message.name} has no phase {name[:64]!r}")
        return phase
    phase = held.model.phase_at(now) or held.model.last_ended(now)
    if phase is None:
        first = held.model.phases[0]
        raise FailedPrecondition(f"the campaign {held.message.name} opens at {first.start.isoformat()}: no board yet")
    return phase
