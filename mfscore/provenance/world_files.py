"""A world file's identifier in the reports: its base name without the extension (docs/provenance.md §2.4, §3.6)."""

from __future__ import annotations


def world_file_id(path: str) -> str:
    """``world/fake26.png`` → ``fake26``: ``posixpath.splitext`` of ``posixpath.basename``, written out on
    strings (a run calls it for every node and link it maps: 90,000 times for 300 probes of 300 nodes)."""
    name = path.rpartition("/")[2]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem.strip(".") else name
