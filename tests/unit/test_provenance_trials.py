"""The provenance trial table joined on text columns against pandas' merges (``trial_frame``): the same rows in the
same order, with repeated probes on every side and either opt-out column."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfscore.provenance.trials import OUTPUT, PROBE, ProvenanceInputs, trial_frame, trial_table

_PROBES = st.sampled_from(["P1", "P2", "P3", "P4"])


def inputs(index, reference, system, status_column=None) -> ProvenanceInputs:
    system_columns = {PROBE: [p for p, _ in system], OUTPUT: [f"{p}.json" for p, _ in system]}
    if status_column:
        system_columns[status_column] = [s for _, s in system]
    return ProvenanceInputs(
        index={PROBE: index, "ProvenanceProbeFileName": [f"world/{p}.jpg" for p in index], "Other": ["x"] * len(index)},
        reference={PROBE: [p for p, _ in reference], "JournalName": [j for _, j in reference],
                   "JournalFileName": [f"journals/{j}.json" for _, j in reference]},
        nodes={}, world={}, system=system_columns, reference_dir="ref", system_dir="sys", system_path="sys.csv")


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_PROBES, max_size=6),
       st.lists(st.tuples(_PROBES, st.sampled_from(["J2", "J1", "J3"])), max_size=6),
       st.lists(st.tuples(_PROBES, st.sampled_from(["Processed", "N", "FailedValidation", "Y", ""])), max_size=6),
       st.sampled_from([None, "IsOptOut", "ProvenanceProbeStatus"]))
def test_trials_are_pandas_merges(index, reference, system, status_column):
    given_inputs = inputs(index, reference, system, status_column)
    assert trial_table(given_inputs) == trial_frame(given_inputs).to_dict("records")


def test_a_system_column_named_as_a_joined_one_is_renamed_as_pandas_renames_it():
    given_inputs = inputs(["P1", "P2"], [("P2", "J1"), ("P1", "J2")], [("P1", ""), ("P2", "")])
    given_inputs.system["JournalName"] = ["mine", "mine"]
    trials = trial_table(given_inputs)
    assert trials == trial_frame(given_inputs).to_dict("records")
    assert {"JournalName_x", "JournalName_y"} <= set(trials[0]) and "JournalName" not in trials[0]
