"""What a caller receives of a run against a dataset (services/aggregator/releasing.py, docs/release.md): the tier each
caller gets, and the status, provenance and report manifest each tier shows."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mfscore import release, tasks
from mfscore.services.aggregator import releasing
from mfscore.services.common.auth import Caller
from mfscore.services.wire import datasets_pb2, runs_pb2

OPERATOR, ALICE, BOB = Caller("ops", "operator"), Caller("alice", "client"), Caller("bob", "client")


def dataset(name="eval", release_=datasets_pb2.DATASET_RELEASE_AGGREGATE, owner=OPERATOR, shared=True,
            released=False) -> datasets_pb2.Dataset:
    made = datasets_pb2.Dataset(name=name, version="1", owner=owner.name, owner_role=owner.role, shared=shared,
                                creation_id="c1", release=release_)
    if released:
        made.released_at.GetCurrentTime()
    return made


def book(*datasets) -> SimpleNamespace:
    return SimpleNamespace(datasets={f"{d.name}@{d.version}": d for d in datasets})


def spec(name="eval@1", creation="c1") -> runs_pb2.RunSpec:
    return runs_pb2.RunSpec(run_id="r1", task="mask", dataset=name, dataset_creation_id=creation)


@pytest.mark.parametrize("policy, expected", [(datasets_pb2.DATASET_RELEASE_AGGREGATE, release.AGGREGATE),
                                              (datasets_pb2.DATASET_RELEASE_PER_TRIAL, release.PER_TRIAL),
                                              (datasets_pb2.DATASET_RELEASE_OPEN, release.FULL),
                                              (datasets_pb2.DATASET_RELEASE_UNSPECIFIED, release.FULL)])
def test_a_submitter_gets_what_the_policy_says_and_the_owner_and_operators_everything(policy, expected):
    held = book(dataset(release_=policy))
    assert releasing.tier(held, BOB, spec()) == expected
    assert releasing.tier(held, OPERATOR, spec()) == release.FULL
    assert releasing.tier(held, BOB, runs_pb2.RunSpec(task="mask")) == release.FULL  # no dataset: all its own


def test_a_released_dataset_opens_every_run_to_its_owner():
    assert releasing.tier(book(dataset(released=True)), BOB, spec()) == release.FULL


def test_a_run_whose_dataset_is_gone_stays_sealed_but_to_the_operators_and_the_datasets_owner():
    gone = book()
    assert releasing.tier(gone, BOB, spec()) == release.AGGREGATE
    assert releasing.tier(gone, OPERATOR, spec()) == release.FULL
    assert releasing.tier(gone, ALICE, spec("alice/masks@1")) == release.FULL
    assert releasing.tier(gone, BOB, spec("alice/masks@1")) == release.AGGREGATE
    again = book(dataset(release_=datasets_pb2.DATASET_RELEASE_OPEN))  # registered again: another creation
    assert releasing.tier(again, BOB, spec(creation="c0")) == release.AGGREGATE


PROVENANCE = {"mfscore": "0", "task": "mask", "runner": "cluster", "options": {},
              "tables": {"ref/reference/x-ref.csv": "a" * 64, "ref/indexes/i.csv": "b" * 64, "sys/p-a_1.csv": "c" * 64},
              "files": {"ref": {"count": 3, "sha256": "d" * 64}, "sys": {"count": 3, "sha256": "e" * 64}},
              "started": "", "finished": "", "cpus": 1,
              "submission": {"name": "p-a_1", "roots": ["sys"], "description": "six sections",
                             "description_sha256": "f" * 64}}


def test_the_provenance_below_full_names_the_packages_files_only():
    shown = json.loads(releasing.released_provenance(json.dumps(PROVENANCE)))
    assert shown["tables"] == {"sys/p-a_1.csv": "c" * 64} and list(shown["files"]) == ["sys"]
    assert shown["submission"] == PROVENANCE["submission"]
    plain = {key: value for key, value in PROVENANCE.items() if key != "submission"}
    assert releasing.released_provenance(json.dumps(plain)) == json.dumps(plain)  # every file its caller's own


def status() -> runs_pb2.RunStatus:
    return runs_pb2.RunStatus(run_id="r1", notes=["probe 000007e2: no mask", "probe 9e378193: no mask"],
                              provenance_json=json.dumps(PROVENANCE))


def test_the_status_at_each_tier():
    full = status()
    assert releasing.shown_status(full, release.FULL) is full
    aggregate = releasing.shown_status(full, release.AGGREGATE)
    assert list(aggregate.notes) == ["mfscore: 2 line(s) of notes are withheld until the dataset is released"]
    assert "a" * 64 not in aggregate.provenance_json and "c" * 64 in aggregate.provenance_json
    per_trial = releasing.shown_status(full, release.PER_TRIAL)
    assert list(per_trial.notes) == list(full.notes) and "a" * 64 not in per_trial.provenance_json
    assert len(full.notes) == 2 and "a" * 64 in full.provenance_json  # the run's own status is left as it was


def test_the_report_manifest_at_each_tier():
    names = ["x_mask_score.csv", "x_mask_scores_perimage.csv", "x_run.json", "x_results.json", "x_journalResults.csv"]
    manifest = runs_pb2.ReportManifest(stdout=["reports in out/"], exit_status=0,
                                       files=[runs_pb2.DeclaredFile(name=name, size=1, sha256="0" * 64)
                                              for name in names])
    mask = tasks.get("mask")
    aggregate = releasing.shown_manifest(manifest, mask, release.AGGREGATE)
    assert [f.name for f in aggregate.files] == ["x_mask_score.csv"] and not aggregate.stdout
    per_trial = releasing.shown_manifest(manifest, mask, release.PER_TRIAL)
    assert [f.name for f in per_trial.files] == [n for n in names if n != "x_run.json"]
    assert list(per_trial.stdout) == ["reports in out/"]
    assert releasing.shown_manifest(manifest, mask, release.FULL) is manifest
