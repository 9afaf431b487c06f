"""ListRuns' pages (AIP-158): runs in a stable order, oldest created first, and an opaque token for the next page.

A run's place is (creation time in nanoseconds, run id): neither ever changes, so a run created or ended while a
caller pages through does not move the others, and no run is listed twice or skipped. The token is that place of
the last run of a page, with the state filter it was made for, base64 (URL-safe) encoded; a caller treats it as
opaque, and a token that does not decode, or comes with another filter, is refused (``BadPageToken``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable

from mfscore.errors import MfscoreError

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
_TOKEN = re.compile(r"v1/(\d+)/(\d{1,19})/([A-Za-z0-9_-]{1,64})")

Place = tuple[int, str]  # (creation time in nanoseconds, run id)


class BadPageToken(MfscoreError):
    """A page token this aggregator did not make, or made for another request."""


def page_size(requested: int) -> int:
    """The size of a page: ``requested``, 0 meaning DEFAULT_PAGE_SIZE, at most MAX_PAGE_SIZE; ``ValueError`` when
    negative."""
    if requested < 0:
        raise ValueError(f"page_size is {requested}; it must be 0 (the default, {DEFAULT_PAGE_SIZE}) or more")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def page_token(state: int, after: Place) -> str:
    """The token of the page that follows the run at ``after``, for the filter ``state``."""
    created, run_id = after
    return base64.urlsafe_b64encode(f"v1/{state}/{created}/{run_id}".encode()).decode().rstrip("=")


def read_page_token(token: str, state: int) -> Place | None:
    """The place a page starts after (None for the first page, an empty ``token``); ``BadPageToken`` for a token
    that does not decode, or was made for another ``state``."""
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        text = ""
    found = _TOKEN.fullmatch(text)
    if found is None:
        raise BadPageToken("page_token is not a token ListRuns gave; start again with an empty page_token")
    if int(found.group(1)) != state:
        raise BadPageToken("page_token was given for another state filter; keep the filter the same while paging, "
                           "or start again with an empty page_token")
    return int(found.group(2)), found.group(3)


def page(runs: Iterable[tuple[Place, object]], size: int, after: Place | None, *, budget: int | None = None,
         cost: Callable[[object], int] = lambda run: 0) -> tuple[list, Place | None]:
    """The runs ((place, run) pairs) that follow ``after`` in order of their places, at most ``size`` of them and,
    past the first, no more than ``budget`` in total ``cost`` (a page may hold fewer runs than asked for, AIP-158);
    and the place of the last one when more follow (None on the last page)."""
    ordered = sorted((item for item in runs if after is None or item[0] > after), key=lambda item: item[0])
    chosen, spent = [], 0
    for place, run in ordered:
        if len(chosen) == size:
            break
        spent += cost(run)
        if chosen and budget is not None and spent > budget:
            break
        chosen.append((place, run))
    more = len(chosen) < len(ordered)
    return [run for _, run in chosen], (chosen[-1][0] if more else None)
