"""Graph building's node-file joins and score means, written on rows, against the pandas code they replace (kept
here as the reference): the same world rows in the same order, node ids, node names and means to the last bit."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfscore.provenance.graph_reference import grouped_merge_order, node_keys
from mfscore.provenance.trials import PROBE, frame, records
from mfscore.reports.provenance_graph_report import _nanmean
from mfscore.tasks.provenance_graph import _probe_node_ids, node_keys_by_probe, world_nodes


def world_frame(nodes: pd.DataFrame, world: pd.DataFrame) -> pd.DataFrame:
    return nodes.merge(world[["WorldFileID"]].drop_duplicates(), on="WorldFileID")


def node_keys_frame(world: pd.DataFrame, probe: str, mediscore_compat: bool) -> dict[str, str]:
    if mediscore_compat:
        grouped = world.iloc[grouped_merge_order(world["WorldFileID"].tolist())]
        return node_keys(zip(grouped["JournalNodeID"], grouped["WorldFileName"]))
    rows = world[world[PROBE] == probe]
    return node_keys(zip(rows["JournalNodeID"], rows["WorldFileName"]))


_ID = st.sampled_from(["P1", "P2", "w1", "w2", "w3"])


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["P1", "P2"]), _ID, st.sampled_from(["n0", "n1", "n2"])), max_size=10),
       st.lists(_ID, max_size=5), st.booleans())
def test_node_file_joins_are_pandas_joins(node_rows, world_ids, mediscore_compat):
    nodes = {PROBE: [p for p, _, _ in node_rows], "WorldFileID": [w for _, w, _ in node_rows],
             "WorldFileName": [f"world/{w}.jpg" for _, w, _ in node_rows], "JournalNodeID": [n for _, _, n in node_rows]}
    world = {"WorldFileID": world_ids, "WorldFileName": [f"world/{w}.jpg" for w in world_ids]}
    expected = world_frame(frame(nodes), frame(world))
    rows = world_nodes(records(nodes), world)
    assert rows == expected.to_dict("records")
    assert _probe_node_ids(records(nodes), rows) == (
        expected.groupby(PROBE)["JournalNodeID"].agg(set).to_dict(),
        frame(nodes)[frame(nodes)["WorldFileID"] == frame(nodes)[PROBE]].groupby(PROBE)["JournalNodeID"].agg(set).to_dict())
    keys = node_keys_by_probe(rows, mediscore_compat=mediscore_compat)
    for probe in ("P1", "P2", "P9"):
        assert keys(probe) == node_keys_frame(expected, probe, mediscore_compat)


@settings(deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), max_size=400))
def test_means_are_pandas_means_to_the_bit(values):
    """Lists past 8 and 128 values: numpy's blocks of its pairwise sum (``numpy_sum``)."""
    expected = pd.DataFrame([[v, 0.0] for v in values], columns=["a", "b"], dtype="float64")["a"].mean()
    got = _nanmean(values)
    assert repr(got) == repr(float(expected))
