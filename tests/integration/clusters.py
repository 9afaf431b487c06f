"""A local cluster for one fixture's scope."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from mfscore.services.commands import local_cluster as commands
from mfscore.services.commands.cluster_config import ClusterConfig


@contextlib.contextmanager
def cluster_up(directory: Path, **options) -> Iterator[tuple[Path, ClusterConfig]]:
    """``local_cluster.up(directory / "cluster.json", **options)``: its file and config; always stopped."""
    path = directory / "cluster.json"
    config = commands.up(path, **options)
    try:
        yield path, config
    finally:
        commands.down(path)
