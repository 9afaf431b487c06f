"""Mask records fold like a cluster delivers them: any order, duplicates, JSON round trips.

Scoring a run once and folding its per-mask outcomes delivered in any order (some twice, all
through their JSON wire form) must write byte-identical report files.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.scorer import MaskOptions
from mfscore.records import RecordConflictError, complete, decode_outcome, encode_outcome, fold
from mfscore.reports.mask_outputs import ReportOptions
from mfscore.run.staged_outputs import files_under, staged_outputs
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.tasks.mask import TASK, Options

QUERY = "Purpose==['add','clone']"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    data = generate_mask_dataset(tmp_path_factory.mktemp("masks"), 14, width=64, height=48, bitplanes=True)
    options = Options(ref_dir=str(data.directory), reference=data.reference, index=data.index,
                      system=str(data.directory / data.system), scoring=MaskOptions(sbin=100),
                      report=ReportOptions(task="manipulation", precision=12), manipulation_queries=(QUERY,))
    plan = TASK.plan(options)
    outcomes = [(job.key, TASK.score(job.work)) for job in plan.jobs]
    return plan, outcomes


def _write(plan, deliveries, out) -> dict[str, bytes]:
    folded = complete(fold(deliveries), (job.key for job in plan.jobs))
    with staged_outputs(str(out / "run")) as stage:
        TASK.report(plan, folded, stage)
    return {name: data for name, data in files_under(out).items() if name.endswith(".csv")}


def test_records_survive_their_json_wire_form(scored):
    for _, record in scored[1]:
        again = MaskRecord.from_dict(json.loads(json.dumps(record.to_dict())))
        assert again.to_dict() == record.to_dict()
        assert again.positive.dtype == again.negative.dtype == "int64"
        assert encode_outcome(decode_outcome(MaskRecord, encode_outcome(record))) == encode_outcome(record)


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_folding_in_any_order_with_duplicates_writes_identical_reports(scored, tmp_path_factory, data):
    plan, outcomes = scored
    expected = _write(plan, outcomes, tmp_path_factory.mktemp("whole"))
    deliveries = list(outcomes)
    deliveries += data.draw(st.lists(st.sampled_from(deliveries), max_size=len(deliveries)))
    deliveries = data.draw(st.permutations(deliveries))
    wire = [(key, decode_outcome(MaskRecord, encode_outcome(outcome))) for key, outcome in deliveries]
    assert _write(plan, wire, tmp_path_factory.mktemp("folded")) == expected
    assert len(expected) >= 4


def test_two_different_records_for_one_mask_conflict(scored):
    _, outcomes = scored
    (key, first), *rest = outcomes
    other = next(r for _, r in rest if r.to_dict() != first.to_dict())
    with pytest.raises(RecordConflictError):
        fold([(key, first), (key, other)])
