"""ListRuns' and ListDatasets' pages (AIP-158): things in a stable order, oldest created first, and an opaque token
for the next page; and ListDatasetFiles' pages of one dataset's files.

A run's place is (creation time in nanoseconds, run id), a dataset's (creation time, name@version): neither ever
changes, so a run or dataset created or ended while a caller pages through does not move the others, and none is
listed twice or skipped. The token is that place of the last one of a page, with the list it was made for and the
state filter, base64 (URL-safe) encoded; a caller treats it as opaque, and a token that does not decode, or comes
with another filter or list, is refused (``BadPageToken``). A dataset's files are in name order and never change:
their token is the offset of the next file, bound to the dataset's manifest digest.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable

from mfscore.services.common.status_codes import InvalidArgument

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
RUNS, DATASETS = "v1", "d1"  # the lists a token is made for
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_TOKENS = {RUNS: re.compile(r"v1/(\d+)/(\d{1,19})/([A-Za-z0-9_-]{1,64})"),
           DATASETS: re.compile(rf"d1/(\d+)/(\d{{1,19}})/((?:{_NAME}/)?{_NAME}@{_NAME})")}  # [owner/]name@version
_FILES_TOKEN = re.compile(r"f1/([0-9a-f]{16})/(\d{1,9})")

PAGE_BYTES = 3 << 20  # a page stops growing past this, so a default client (4 MiB) takes it
Place = tuple[int, str]  # (creation time in nanoseconds, run id)


class BadPageToken(InvalidArgument):
    """A page token this aggregator did not make, or made for another request."""


class BadPageSize(InvalidArgument, ValueError):
    """A page_size below 0."""


def page_size(requested: int, default: int = DEFAULT_PAGE_SIZE, most: int = MAX_PAGE_SIZE) -> int:
    """The size of a page: ``requested``, 0 meaning ``default``, at most ``most``; ``BadPageSize`` when negative."""
    if requested < 0:
        raise BadPageSize(f"page_size is {requested}; it must be 0 (the default, {default}) or more")
    return min(requested or default, most)


def page_token(state: int, after: Place, kind: str = RUNS) -> str:
    """The token of the page that follows the run (or dataset, ``kind``) at ``after``, for the filter ``state``."""
    created, name = after
    return _encode(f"{kind}/{state}/{created}/{name}")


def read_page_token(token: str, state: int, kind: str = RUNS) -> Place | None:
    """The place a page starts after (None for the first page, an empty ``token``); ``BadPageToken`` for a token
    that does not decode, or was made for another ``state`` or list."""
    if not token:
        return None
    found = _TOKENS[kind].fullmatch(_decode(token))
    if found is None:
        call = "ListRuns" if kind == RUNS else "ListDatasets"
        raise BadPageToken(f"page_token is not a token {call} gave; start again with an empty page_token")
    if int(found.group(1)) != state:
        raise BadPageToken("page_token was given for another state filter; keep the filter the same while paging, "
                           "or start again with an empty page_token")
    return int(found.group(2)), found.group(3)


def files_token(manifest_sha256: str, offset: int) -> str:
    """The token of the page of a dataset's files (its manifest digest) that starts at ``offset``."""
    return _encode(f"f1/{manifest_sha256[:16]}/{offset}")


def read_files_token(token: str, manifest_sha256: str) -> int:
    """The offset a page of the dataset's files starts at (0 for an empty ``token``); ``BadPageToken`` for a token
    ListDatasetFiles did not give for this dataset."""
    if not token:
        return 0
    found = _FILES_TOKEN.fullmatch(_decode(token))
    if found is None or found.group(1) != manifest_sha256[:16]:
        raise BadPageToken("page_token is not a token ListDatasetFiles gave for this dataset; start again with an "
                           "empty page_token")
    return int(found.group(2))


def _encode(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        return ""


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
