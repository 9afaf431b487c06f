"""Mask records fold like the aggregator will fold them: any order, duplicates, JSON round trips.

Scoring a run once and folding its per-mask records delivered in any order (some twice, all
through their JSON wire form) must write byte-identical report files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.masks.journal_selection import read_mask_journal, select_operations, trial_journal
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.mask_scoring import score_mask
from mfscore.masks.scorer import MaskOptions, assemble_query_run, plan_jobs
from mfscore.masks.trials import load_trials
from mfscore.records import RecordConflictError, merge_mask_records
from mfscore.reports.mask_outputs import ReportOptions, write_query_outputs
from mfscore.reports.staged_outputs import staged_outputs
from mfscore.sample_data.masks import generate_mask_dataset

OPTIONS = MaskOptions(sbin=100)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    data = generate_mask_dataset(tmp_path_factory.mktemp("masks"), 14, width=64, height=48, bitplanes=True)
    ref_dir = data.directory
    sys_csv = ref_dir / data.system
    table = load_trials("manipulation", ref_dir / data.reference, sys_csv, ref_dir / data.index,
                        index_filter=False, opt_out=False, pixel_value_columns=False)
    journal = trial_journal(table.journal_trials, read_mask_journal(str(ref_dir), data.reference,
                                                                    mediscore_compat=False), "manipulation")
    selection = select_operations(table.trials, journal, "manipulation", "Purpose==['add','clone']")
    planned = plan_jobs(table, selection.trials, selection, journal, OPTIONS, str(ref_dir), sys_csv)
    records = [score_mask(job) for _, job in planned]
    keys = [(probe, role, 0) for probe, (role, _) in zip(selection.trials["ProbeFileID"], planned)]
    return table, journal, selection, planned, records, keys


def _write(scored, records, out: Path) -> dict[str, bytes]:
    table, journal, selection, planned, _, _ = scored
    run = assemble_query_run("Purpose==['add','clone']", selection.trials, [r for r, _ in planned], records,
                             journal, selection.evaluated, OPTIONS)
    with staged_outputs(str(out / "run")) as stage:
        write_query_outputs(run, table, stage, ReportOptions(task="manipulation", precision=12))
    return {p.name: p.read_bytes() for p in out.iterdir() if p.suffix == ".csv"}


def test_records_survive_their_json_wire_form(scored):
    for record in scored[4]:
        again = MaskRecord.from_dict(json.loads(json.dumps(record.to_dict())))
        assert again.to_dict() == record.to_dict()
        assert again.positive.dtype == again.negative.dtype == "int64"


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_folding_in_any_order_with_duplicates_writes_identical_reports(scored, tmp_path_factory, data):
    _, _, _, _, records, keys = scored
    expected = _write(scored, records, tmp_path_factory.mktemp("whole"))
    deliveries = list(zip(keys, records))
    deliveries += data.draw(st.lists(st.sampled_from(deliveries), max_size=len(deliveries)))
    deliveries = data.draw(st.permutations(deliveries))
    wire = [(key, MaskRecord.from_dict(json.loads(json.dumps(rec.to_dict())))) for key, rec in deliveries]
    merged = merge_mask_records(wire)
    folded = [merged[key] for key in keys]
    assert _write(scored, folded, tmp_path_factory.mktemp("folded")) == expected
    assert len(expected) >= 4


def test_two_different_records_for_one_mask_conflict(scored):
    _, _, _, _, records, keys = scored
    other = next(r for r in records[1:] if r.to_dict() != records[0].to_dict())
    with pytest.raises(RecordConflictError):
        merge_mask_records([(keys[0], records[0]), (keys[0], other)])
