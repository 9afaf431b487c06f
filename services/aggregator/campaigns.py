"""Every campaign (docs/campaigns.md): in memory, and in the runs' key-value bucket under ``campaign.<name>`` (written
under the leader's fenced lease; a standby follows the bucket, ``take_change``, and serves reads).

A campaign's submissions are its runs (``RunSpec.campaign``, ``competition``, ``phase``, ``late``, set at CreateRun):
quotas count them and boards rank them, derived from the run book on each call, so nothing is kept to drift. The
campaign clock is the aggregator's plus ``MFSCORE_CLOCK_OFFSET``.
"""

from __future__ import annotations

import datetime
import json
import logging
from dataclasses import dataclass

from mfscore.campaigns import Campaign, Competition, Entry, Phase, load_campaign
from mfscore.services.common.streams import bucket_keys
from mfscore.services.common.auth import Caller
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

    async def record(self, message: campaigns_pb2.Campaign) -> Held:
        """Record the campaign (new, or closed): in the bucket, then in memory."""
        await self.kv.put(kv_key(message.name), message.SerializeToString())
        held = _read(message.SerializeToString())
        self.campaigns[message.name] = held
        return held


def _read(value: bytes) -> Held:
    message = campaigns_pb2.Campaign.FromString(value)
    return Held(message, load_campaign(message.json.encode(), source=f"the recorded campaign {message.name}"))
