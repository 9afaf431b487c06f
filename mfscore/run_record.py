"""A run's provenance: which mfscore scored what, with which options, when (docs/results.md "Run provenance").

Written beside the reports as ``<prefix>_run.json`` (which byte-identity comparisons leave out: its times differ
from run to run), printed with ``--json`` and kept on the cluster's run status. Inputs are named by their keys
(``ref/...``, ``sys/...``: the root they are under and the path below it), so an embedded run and the same run on
a cluster record the same options and digests: a SHA-256 per table, and one manifest digest per root for the
files the jobs read (masks, JSON, HDF5) — the SHA-256 of the lines ``<sha256>  <key>`` in key order, which stays
a few bytes however many files there are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from mfscore import __version__, codec
from mfscore.results import dumps
from mfscore.tasks.base import Inputs, Plan, Task, key_of, relocated

HASH_BLOCK = 1 << 20
ABSENT = "absent"  # the digest recorded for a file a job names that does not exist (its trial is left unscored)


@dataclass(frozen=True)
class FileSet:
    """The files the jobs read under one root: how many, and the manifest digest of their keys and SHA-256s."""

    count: int
    sha256: str


@dataclass(frozen=True)
class RunRecord:
    mfscore: str
    task: str
    runner: str                 # "embedded" or "cluster"
    options: dict               # as validated, input paths as keys
    tables: dict[str, str]      # table key -> SHA-256 (``ABSENT``: a table named but not read, as an unused index)
    files: dict[str, FileSet]   # root name -> the files its jobs read
    started: str                # ISO 8601, UTC
    finished: str
    cpus: int                   # the host's CPU count (the aggregator's, on a cluster)
    submission: dict | None = None  # a package run's: its name, roots and system description (docs/release.md)

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        if self.submission is None:
            del data["submission"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> RunRecord:
        return cls(**{**data, "files": {root: FileSet(**value) for root, value in data["files"].items()}})

    def to_json(self) -> bytes:
        return dumps(self.to_dict())


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def local_digest(key: str, path: str) -> str:
    """A job file's SHA-256 read from the file, or ``ABSENT``."""
    return file_sha256(path) if os.path.isfile(path) else ABSENT


def manifest_digest(digests: dict[str, str]) -> str:
    """The SHA-256 of the lines ``<sha256>  <key>`` of ``digests`` (key -> SHA-256), in key order."""
    return hashlib.sha256("".join(f"{digests[key]}  {key}\n" for key in sorted(digests)).encode()).hexdigest()


def timestamp(seconds: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def portable_options(task: Task, options) -> dict:
    """The options as validated, every input path replaced by its key (the root's name for the root itself)."""
    inputs = task.inputs(options)
    keyed = relocated(options, inputs, {name: name for name in inputs.roots})
    return json.loads(codec.encode(keyed))


def run_record(task: Task, plan: Plan, inputs: Inputs, *, runner: str, started: float, finished: float,
               file_digest: Callable[[str, str], str] = local_digest) -> RunRecord:
    """The provenance of a run planned as ``plan`` from ``inputs``; ``file_digest(key, path)`` gives a job file's
    SHA-256 (read from the file by default; the cluster knows them from the uploads)."""
    tables = {key_of(path, inputs.roots, what=f"the table {path}"): local_digest("", path)
              for path in dict.fromkeys((*inputs.tables, *plan.tables))}  # a table a run does not read may be absent
    by_root: dict[str, dict[str, str]] = {}
    for job in plan.jobs:
        for path in task.blobs(job.work).values():
            if path and path not in plan.generated:  # the plan's own files derive from the tables
                key = key_of(path, inputs.roots, what=f"the file {path}")
                root = key.partition("/")[0]
                if key not in by_root.setdefault(root, {}):
                    by_root[root][key] = file_digest(key, path)
    files = {root: FileSet(len(digests), manifest_digest(digests)) for root, digests in sorted(by_root.items())}
    return RunRecord(mfscore=__version__, task=task.name, runner=runner, options=portable_options(task, plan.options),
                     tables=dict(sorted(tables.items())), files=files, started=timestamp(started),
                     finished=timestamp(finished), cpus=os.cpu_count() or 1)
