"""File names that come from input data: outputs named by an ID, and inputs a table names.

Both are written by whoever made the tables, so neither may reach outside its directory. ``output_name`` turns an
ID (a ProbeFileID naming its video's threshold table, timeline or graph figure) into one file name, itself for an
ordinary ID; ``confined_path`` joins a file name a table gives (a mask, a journal, a system JSON) to its directory,
refusing one that would leave it. Messages name the file as the table does, never the directory it was joined to
(on a cluster that is the aggregator's work directory).
"""

from __future__ import annotations

import functools
import hashlib
import os
from urllib.parse import unquote

from mfscore.errors import InputFileError

MAX_NAME_BYTES = 200  # an encoded ID longer than this is cut (a file name holds 255 bytes, with its affixes)
_DIGEST_DIGITS = 16


def _needs_escape(character: str) -> bool:
    return character in "%/\\" or ord(character) < 0x20 or ord(character) == 0x7F or "\ud800" <= character <= "\udfff"


def _escaped(character: str) -> str:
    return "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogatepass"))


def output_name(identifier: str) -> str:
    """``identifier`` as one file name that names no other directory: itself for an ordinary ID.

    ``%``, ``/``, ``\\``, control characters (NUL among them), unpaired surrogates and a leading ``.`` are
    percent-encoded as their UTF-8 bytes (``../x`` is ``%2E.%2Fx``), so ``identifier_of`` gives the ID back. An
    encoding longer than ``MAX_NAME_BYTES`` keeps its start and ends in ``~`` and 16 hex digits of the ID's SHA-256
    (no longer reversible; distinct from another cut name, though an ordinary ID spelled exactly like one would
    meet it). An empty ID names nothing: ``InputFileError``.
    """
    if not identifier:
        raise InputFileError("an empty ID cannot name an output file")
    name = "".join(_escaped(c) if _needs_escape(c) else c for c in identifier)
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name.encode("utf-8")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_DIGITS]
    kept = name.encode("utf-8")[:MAX_NAME_BYTES - _DIGEST_DIGITS - 1].decode("utf-8", "ignore")
    if "%" in kept[-2:]:  # an escape cut in half
        kept = kept[:kept.rindex("%")]
    return kept + "~" + digest


def identifier_of(name: str) -> str:
    """The ID ``output_name`` encoded as ``name`` (for names not cut to ``MAX_NAME_BYTES``)."""
    return unquote(name, errors="surrogatepass")


@functools.lru_cache(maxsize=64)
def _real_directory(root: str) -> str:
    """``realpath`` of a directory, resolved once per run rather than once per file."""
    return os.path.realpath(root)


def confined_path(root: str | os.PathLike, relative: str, *, what: str,
                  error: type[InputFileError] = InputFileError) -> str:
    """``root`` joined with the ``what`` file name ``relative``; ``error`` for a name that reaches outside it.

    Refused: an empty name or one with a NUL byte, an absolute name, a name whose ``..`` leave ``root``, and a name
    through a symbolic link whose target lies outside ``realpath(root)``. The first three are refused before the
    file system is looked at, so a refusal says nothing of what exists outside. The joined (not resolved) path is
    returned, so that messages stay readable; a refusal names the file as given, not ``root``.
    """
    root = os.fspath(root)
    if not relative or "\0" in relative:
        raise error(f"the {what} file name is empty or contains a NUL byte", path=repr(relative))
    if os.path.isabs(relative) or relative.startswith(("/", "\\")):
        raise error(f"the {what} file name is absolute; it must be relative to its directory", path=relative)
    if os.path.normpath(relative).split(os.sep)[0] == os.pardir:
        raise error(f"the {what} file name leaves its directory through '..'", path=relative)
    joined = os.path.join(root, relative)
    real_root = _real_directory(root)
    if os.path.commonpath([real_root, os.path.realpath(joined)]) != real_root:
        raise error(f"the {what} file name is a symbolic link that leads outside its directory", path=relative)
    return joined
