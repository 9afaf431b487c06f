"""A world file's identifier in the reports: its base name without the extension (docs/provenance.md §2.4, §3.6)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1 << 16)
def world_file_id(path: str) -> str:
    """``world/fake26.png`` → ``fake26``: ``posixpath.splitext`` of ``posixpath.basename``, written out on
    strings and remembered, because a run calls it for every node and link it maps and a world file is named by
    many probes (300 probes of 300 nodes: 90,000 calls for a few thousand files)."""
    name = path.rpartition("/")[2]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem.strip(".") else name
