"""Every campaign (docs/campaigns.md): in memory, and in the runs' key-value bucket under ``campaign.<name>`` (written
under the leader's fenced lease; a standby follows the bucket, ``take_change``, and serves reads).

A campaign's submissions are its runs (``RunSpec.campaign``, ``competition``, ``phase``, ``late``, set at CreateRun:
``entering``, ``check_quota``; SubmitRun takes the competition's dataset and options, ``campaign_spec``): quotas
count them and boards rank them, derived from the run book on each call, so nothing is kept to drift. The campaign
clock is the aggregator's plus ``MFSCORE_CLOCK_OFFSET``.
"""

from __future__ import annotations

import datetime
import json
import logging
from dataclasses import dataclass

from mfscore.campaigns import Campaign, Competition, Entry, Phase, competition_options, load_campaign, with_split
from mfscore.codec import encode
from mfscore.services.aggregator.quotas import QuotaExceeded
from mfscore.services.common.auth import Caller
from mfscore.services.common.status_codes import FailedPrecondition, InvalidArgument, NotFound
from mfscore.services.common.streams import bucket_keys
from mfscore.services.wire import campaigns_pb2, runs_pb2

KEY_PREFIX = "campaign."
log = logging.getLogger("mfscore.aggregator")


@dataclass(frozen=True)
class Entering:
    """A CreateRun's way into a campaign: the campaign, competition and phase, whether it is late, the caller's team
    (None: an operator's baseline) and the campaign clock when it came."""

    held: Held
    competition: Competition
    phase: Phase
    late: bool
    team: str | None
    at: datetime.datetime

    @property
    def team_key(self) -> tuple[str, str, str]:
        """What a team's submissions are counted under, one at a time."""
        return ("campaign", self.held.message.name, self.team or "")


@dataclass
class Held:
    """A campaign as recorded (its message: the file as canonical JSON, created, closed) and as read."""

    message: campaigns_pb2.Campaign
    model: Campaign

    @property
    def closed(self) -> bool:
        return self.message.HasField("closed_at")


def clock(offset_seconds: int) -> datetime.datetime:
    """The campaign clock: now, in UTC, plus the operator's offset."""
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_seconds)


def kv_key(name: str) -> str:
    return f"{KEY_PREFIX}{name}"


def team_of(held: Held, who: Caller) -> str | None:
    """The caller's team in the campaign; None for an operator or an outsider."""
    if who.operator:
        return None
    team = held.model.team_of(who.name)
    return team.name if team is not None else None


def takes_part(held: Held, who: Caller) -> bool:
    return who.operator or team_of(held, who) is not None


def shown(held: Held, who: Caller, now: datetime.datetime) -> campaigns_pb2.Campaign:
    """The campaign as ``who`` may see it: the operator, whole; a team member, its public view and its team."""
    message = campaigns_pb2.Campaign()
    message.CopyFrom(held.message)
    current = held.model.phase_at(now)
    message.current_phase = current.name if current is not None else ""
    if not who.operator:
        message.json = json.dumps(held.model.public_view(), sort_keys=False)
        message.team = team_of(held, who) or ""
    return message


def created_at(status: runs_pb2.RunStatus, offset_seconds: int) -> datetime.datetime:
    """When a run was created, on the campaign clock."""
    return (status.created_at.ToDatetime().replace(tzinfo=datetime.timezone.utc)
            + datetime.timedelta(seconds=offset_seconds))


def submissions(runs, campaign: str, competition: str, team_members: tuple[str, ...], phase: Phase,
                day_of: datetime.datetime, offset_seconds: int) -> tuple[int, int]:
    """(in the phase, on the UTC day of ``day_of``) how many runs the team's members created in the competition: what
    its quotas count (every run created counts, cancelled or failed)."""
    in_phase = in_day = 0
    for run in list(runs):
        spec, status = run.spec, run.status
        if (spec.campaign, spec.competition, spec.phase) != (campaign, competition, phase.name) \
                or status.owner not in team_members or status.owner_role != "client":
            continue
        in_phase += 1
        in_day += created_at(status, offset_seconds).date() == day_of.date()
    return in_phase, in_day


def entering(book: CampaignBook, request: runs_pb2.CreateRunRequest, who: Caller, at: datetime.datetime) -> Entering:
    """The campaign entry a CreateRun asks for at ``at`` on the campaign clock: NOT_FOUND for a campaign the caller
    takes no part in or a competition it lacks; FAILED_PRECONDITION when it is closed, not open yet, or its last
    phase ended and takes no late submission."""
    held = book.campaigns.get(request.campaign)
    if held is None or not takes_part(held, who):
        raise NotFound(f"there is no campaign {request.campaign[:64]!r}")
    if request.dataset:
        raise InvalidArgument("a campaign's run scores against its competition's dataset: name no dataset")
    competition = held.model.competition(request.competition)
    if competition is None:
        raise NotFound(f"the campaign {request.campaign} has no competition {request.competition[:64]!r}")
    if held.closed:
        raise FailedPrecondition(f"the campaign {request.campaign} is closed: it takes no more submissions")
    phase, late = held.model.phase_at(at), False
    if phase is None:
        phase, late = held.model.last_ended(at), True
        if phase is None:
            raise FailedPrecondition(f"the campaign {request.campaign} opens at "
                                     f"{held.model.phases[0].start.isoformat()}")
        if phase.late == "refuse":
            raise FailedPrecondition(f"phase {phase.name} of {request.campaign} ended at {phase.end.isoformat()} "
                                     "and takes no late submission")
    return Entering(held, competition, phase, late, team_of(held, who), at)


def check_quota(entered: Entering, who: Caller, runs, offset_seconds: int) -> None:
    """RESOURCE_EXHAUSTED once the caller's team has made its phase's or its day's submissions to the competition
    (an operator's baselines count against nothing). Called under the team's lock, up to the run's record."""
    if entered.team is None:
        return
    phase, name = entered.phase, entered.competition.name
    members = entered.held.model.team_of(who.name).members
    in_phase, in_day = submissions(runs, entered.held.message.name, name, members, phase, entered.at, offset_seconds)
    if phase.quota_per_phase is not None and in_phase >= phase.quota_per_phase:
        raise QuotaExceeded(f"team {entered.team} has made the {phase.quota_per_phase} submission(s) phase "
                            f"{phase.name} allows to {name}")
    if phase.quota_per_day is not None and in_day >= phase.quota_per_day:
        tomorrow = datetime.datetime.combine(entered.at.date() + datetime.timedelta(days=1), datetime.time(),
                                             datetime.timezone.utc)
        raise QuotaExceeded(f"team {entered.team} has made the {phase.quota_per_day} submission(s) a day phase "
                            f"{phase.name} allows to {name}; the next day starts at {tomorrow.isoformat()}")


def campaign_spec(book: CampaignBook, request: runs_pb2.RunSpec, created: runs_pb2.RunSpec) -> runs_pb2.RunSpec:
    """A campaign run's spec: the client's (its task, package and output name) with the competition's dataset and
    options, and the split's partition where the phase has one (the team chooses none of them); ``created`` is the
    run as CreateRun recorded it."""
    held = book.campaigns.get(created.campaign)
    competition = held.model.competition(created.competition) if held is not None else None
    if competition is None:
        raise FailedPrecondition(f"the campaign {created.campaign} of run {created.run_id} is gone")
    if request.task != competition.task:
        raise InvalidArgument(f"the competition {competition.name} scores {competition.task}, not "
                              f"{request.task[:64]!r}")
    if not request.package:
        raise InvalidArgument("a campaign takes submission packages: name the package (RunSpec.package)")
    options = competition_options(competition)
    phase = held.model.phase(created.phase)
    if phase is not None and phase.split is not None:
        options = with_split(competition.task, options)
    spec = runs_pb2.RunSpec()
    spec.CopyFrom(request)
    spec.options, spec.dataset = encode(options), created.dataset
    return spec


def entry(run, held: Held, results, description: str) -> Entry:
    """A DONE run of the campaign as a board line (``mfscore.campaigns.Entry``)."""
    from mfscore.validation.findings import ValidationReport
    from mfscore.validation.submission_names import check_subid

    spec, status = run.spec, run.status
    name = check_subid(ValidationReport(), spec.package, file="")
    team = held.model.team_of(status.owner)
    submitted = status.submitted_at.ToDatetime().replace(tzinfo=datetime.timezone.utc)
    return Entry(run_id=spec.run_id, team=team.name if team is not None else status.owner, member=status.owner,
                 system=name.fields.get("SYS", spec.package), version=int(name.fields.get("VERSION") or 0),
                 submitted_at=submitted, late=spec.late, baseline=status.owner_role == "operator", results=results,
                 description=description)


class CampaignBook:
    """Every campaign by name."""

    def __init__(self, kv):
        self.kv = kv
        self.campaigns: dict[str, Held] = {}

    async def restore(self) -> None:
        """Read every campaign from the bucket."""
        found = {}
        for key in await bucket_keys(self.kv):
            if key.startswith(KEY_PREFIX):
                held = _read((await self.kv.get(key)).value)
                found[held.message.name] = held
        self.campaigns.clear()
        self.campaigns.update(found)
        log.info("restored %d campaign(s)", len(self.campaigns))

    def take_change(self, key: str, value: bytes | None) -> None:
        """A standby's book takes a change of the bucket: ``key`` now holds ``value`` (None: deleted)."""
        if not key.startswith(KEY_PREFIX):
            return
        if value is None:
            self.campaigns.pop(key[len(KEY_PREFIX):], None)
        else:
            held = _read(value)
            self.campaigns[held.message.name] = held

    def phase_of(self, spec: runs_pb2.RunSpec) -> Phase | None:
        """The phase of the campaign run ``spec``; None for another run, or one whose campaign is gone."""
        held = self.campaigns.get(spec.campaign) if spec.campaign else None
        return held.model.phase(spec.phase) if held is not None else None

    async def record(self, message: campaigns_pb2.Campaign) -> Held:
        """Record the campaign (new, or closed): in the bucket, then in memory."""
        await self.kv.put(kv_key(message.name), message.SerializeToString())
        held = _read(message.SerializeToString())
        self.campaigns[message.name] = held
        return held


def _read(value: bytes) -> Held:
    message = campaigns_pb2.Campaign.FromString(value)
    return Held(message, load_campaign(message.json.encode(), source=f"the recorded campaign {message.name}"))
