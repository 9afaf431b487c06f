"""What a caller receives of a run against a dataset (docs/release.md): the tier its dataset's release policy gives
(``mfscore.release``), and the run's status, report files, results and provenance as that tier shows them.

The sealed report stays whole in the store; what is withheld is left out of each answer, so a ``ReleaseDataset``
opens it without rewriting anything.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

from mfscore import release
from mfscore.campaigns import PUBLIC, Phase, split_rows
from mfscore.results import Results, dumps
from mfscore.services.aggregator.datasets import (
    DatasetBook,
    is_run_of,
    may_read_reference,
    owns,
    release_of,
    released,
)
from mfscore.services.common.auth import Caller
from mfscore.services.common.run_layout import dataset_owner, parse_dataset
from mfscore.services.wire import datasets_pb2, runs_pb2

PUBLIC_SPLIT = "public-split"  # a campaign run in its phase: the public split's results row, nothing else
_TIER = {datasets_pb2.DATASET_RELEASE_AGGREGATE: release.AGGREGATE,
         datasets_pb2.DATASET_RELEASE_PER_TRIAL: release.PER_TRIAL,
         datasets_pb2.DATASET_RELEASE_OPEN: release.FULL}
_PHASE_TIER = {"aggregate": release.AGGREGATE, "per-trial": release.PER_TRIAL, "open": release.FULL}


def tier(datasets: DatasetBook, who: Caller, spec: runs_pb2.RunSpec, phase: Phase | None = None,
         now: datetime.datetime | None = None) -> str:
    """What ``who`` receives of the run ``spec``: everything of a run against no dataset, or against one whose
    reference it may read or that is released. A campaign run (its ``phase``, on the campaign clock ``now``): the
    public split's row while the phase is open (its aggregates when the phase has no split), then what the phase's
    release says. Another run: what the dataset's policy says. A run whose dataset or campaign is gone stays sealed
    (nobody can release it any more) but to an operator and the dataset's owner."""
    if not spec.dataset:
        return release.FULL
    dataset = datasets.datasets.get(spec.dataset)
    if dataset is None or not is_run_of(spec, dataset):
        name, _ = parse_dataset(spec.dataset)
        return release.FULL if who.operator or dataset_owner(name) == who.name else release.AGGREGATE
    if spec.campaign and not (who.operator or owns(who, dataset) or released(dataset)):
        if phase is None:
            return release.AGGREGATE
        if now < phase.end:
            return PUBLIC_SPLIT if phase.split is not None else release.AGGREGATE
        return _PHASE_TIER[phase.release]
    if may_read_reference(who, dataset) or released(dataset):
        return release.FULL
    return _TIER[release_of(dataset)]


def shown_status(status: runs_pb2.RunStatus, level: str) -> runs_pb2.RunStatus:
    """The run's status at ``level``: below FULL its provenance names the submission's files only, and at AGGREGATE
    its notes (stderr lines, which may name trials) are counted, not shown."""
    if level == release.FULL:
        return status
    shown = runs_pb2.RunStatus()
    shown.CopyFrom(status)
    shown.provenance_json = released_provenance(status.provenance_json)
    if level in (release.AGGREGATE, PUBLIC_SPLIT) and status.notes:
        del shown.notes[:]
        shown.notes.append(f"mfscore: {len(status.notes)} line(s) of notes are withheld until the dataset is released")
    return shown


def released_provenance(provenance_json: str) -> str:
    """A package run's provenance without the reference's digests: its tables and job files under the package's own
    roots only (``RunRecord.submission``). Another run's is unchanged: every file it names is the caller's upload."""
    if not provenance_json:
        return provenance_json
    record = json.loads(provenance_json)
    submission = record.get("submission")
    if not submission:
        return provenance_json
    roots = set(submission["roots"])
    record["tables"] = {key: digest for key, digest in record["tables"].items() if key.partition("/")[0] in roots}
    record["files"] = {root: files for root, files in record["files"].items() if root in roots}
    return dumps(record).decode()


def shown_manifest(manifest: runs_pb2.ReportManifest, task, level: str) -> runs_pb2.ReportManifest:
    """The report manifest at ``level``: the files ``mfscore.release.released_reports`` keeps, and at AGGREGATE no
    stdout (a command's printout may list trials)."""
    if level == release.FULL:
        return manifest
    if level == PUBLIC_SPLIT:  # every aggregate file holds the private split's rows too
        return runs_pb2.ReportManifest(exit_status=manifest.exit_status)
    kept = set(release.released_reports(task, [file.name for file in manifest.files], level))
    shown = runs_pb2.ReportManifest(exit_status=manifest.exit_status,
                                    files=[file for file in manifest.files if file.name in kept])
    if level != release.AGGREGATE:
        shown.stdout.extend(manifest.stdout)
    return shown


def shown_results(task, results: Results, level: str) -> Results:
    """The results at ``level`` (``mfscore.release.released_results``); at PUBLIC_SPLIT the public split's row only."""
    if level != PUBLIC_SPLIT:
        return release.released_results(task, results, level)
    public = split_rows(release.released_results(task, results, release.AGGREGATE)).get(PUBLIC)
    return dataclasses.replace(results, rows=(public,) if public is not None else (), curves=(), records=None)
