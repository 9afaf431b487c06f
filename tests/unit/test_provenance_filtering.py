"""Provenance filtering (docs/provenance.md §2): reference sets, ranking, recall at N, records and the report."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfscore.errors import OptionError
from mfscore.formats.tables import write_table, write_text_table
from mfscore.provenance.filtering import (
    ALL,
    CORRECT,
    FALSE_ALARM,
    MISSING,
    NODE_TYPES,
    RANKS,
    FalseAlarmHit,
    FilteringRecord,
    RankCounts,
    ReferenceHit,
    TypeCounts,
    node_types,
    ranked,
    reference_nodes,
    score_trial,
    world_nodes,
)
from mfscore.provenance.world_files import world_file_id
from mfscore.records import JobKey, RecordConflictError, fold
from mfscore.reports.provenance_filtering_report import (
    MAPPING_COLUMNS,
    scores,
    trial_scores,
    write_filtering_report,
)
from mfscore.reports.provenance_filtering_report import node_mapping as report_node_mapping


def system(*nodes: tuple[str, float]) -> list[dict]:
    return [{"id": str(k), "file": file, "nodeConfidenceScore": score} for k, (file, score) in enumerate(nodes)]


def trial(reference, system_nodes, types=(), ordinal=0, probe="P") -> FilteringRecord:
    return score_trial(ordinal=ordinal, journal_name="J", probe_id=probe, output_file=f"json/{probe}.json",
                       reference=reference, system_nodes=system_nodes, types=types)


def at(record: FilteringRecord, kind: str, rank: int) -> RankCounts:
    counts = next(c for c in record.counts if c.node_type == kind)
    return counts.at_rank[RANKS.index(rank)]


def mapping_at(record: FilteringRecord, rank: int) -> list[tuple]:
    """The slow, obvious ``All`` rows at ``rank``: (WorldFileID, NodeConfidence, Mapping, NodeType); Correct
    rows carry the best-ranked system node's confidence, FalseAlarm rows no node type, Missing no confidence."""
    rows = [(h.world_file_id, h.confidence, CORRECT, h.node_type) if h.position is not None and h.position < rank
            else (h.world_file_id, None, MISSING, h.node_type) for h in record.hits]
    return rows + [(f.world_file_id, f.confidence, FALSE_ALARM, "") for f in record.false_alarms if f.position < rank]


def node_mapping_reference(records: list[FilteringRecord]) -> pd.DataFrame:
    """node_mapping.csv as a pandas table of every block, each sorted row by row (docs/provenance.md §2.4)."""
    order = {CORRECT: 0, FALSE_ALARM: 1, MISSING: 2}
    rows = []
    for record in records:
        for n in RANKS:
            block = sorted(mapping_at(record, n), key=lambda r: (order[r[2]], r[1] is None, r[1] or 0, r[0]))
            rows += [(record.journal_name, record.probe_id, record.output_file, f"NodeRecallAt{n}", *row)
                     for row in block]
    return pd.DataFrame(rows, columns=MAPPING_COLUMNS)


def node_mapping(records: list[FilteringRecord]) -> pd.DataFrame:
    return report_node_mapping(records).frame()


def written_node_mapping(records, path: Path) -> bytes:
    write_text_table(report_node_mapping(records), path)
    return path.read_bytes()


# --------------------------------------------------------------------------------------------
# The reference node set (docs/provenance.md §2.2)


def test_reference_nodes_join_the_world_and_the_journal_and_add_the_probe():
    # node file                                         world index
    #   probe  WorldFileID  WorldFileName  JournalNodeID    WorldFileID  WorldFileName
    #   P      a            world/a.jpg    n0               a            world/a.jpg
    #   P      b            world/b.jpg    n1               b            world/B.jpg   <- name differs: b dropped
    #   P      c            world/c.jpg    n9               c            world/c.jpg   <- n9 not in the journal
    #   P      d            world/d.jpg    n3               d            world/d.jpg   <- n3 has no nodetype
    #   P      P            world/P.jpg    n2               (the probe is not in the world)
    #   Q      a            world/a.jpg    n0
    # journal nodes: n0 base, n1 donor, n2 final, n3 (no nodetype)
    nodes = [dict(zip(("ProvenanceProbeFileID", "WorldFileID", "WorldFileName", "JournalNodeID"), row)) for row in (
        ("P", "a", "world/a.jpg", "n0"), ("P", "b", "world/b.jpg", "n1"), ("P", "c", "world/c.jpg", "n9"),
        ("P", "d", "world/d.jpg", "n3"), ("P", "P", "world/P.jpg", "n2"), ("Q", "a", "world/a.jpg", "n0"))]
    world = [("a", "world/a.jpg"), ("b", "world/B.jpg"), ("c", "world/c.jpg"), ("d", "world/d.jpg")]
    journal = [{"id": "n0", "nodetype": "base"}, {"id": "n1", "nodetype": "donor"}, {"id": "n2", "nodetype": "final"},
               {"id": "n3"}]
    by_probe = world_nodes(nodes, world)
    assert by_probe["P"] == [("world/a.jpg", "n0"), ("world/c.jpg", "n9"), ("world/d.jpg", "n3")]
    assert reference_nodes(by_probe["P"], journal, "world/P.jpg") == [
        ("world/a.jpg", "base"), ("world/d.jpg", ""), ("world/P.jpg", "probe")]
    assert reference_nodes(by_probe["Q"], journal, "world/Q.jpg") == [("world/a.jpg", "base"), ("world/Q.jpg", "probe")]


def test_world_nodes_is_an_inner_join_so_a_repeated_world_row_repeats_the_node():
    nodes = [{"ProvenanceProbeFileID": "P", "WorldFileID": "a", "WorldFileName": "world/a.jpg", "JournalNodeID": "n0"}]
    assert world_nodes(nodes, [("a", "world/a.jpg")] * 2)["P"] == [("world/a.jpg", "n0")] * 2


def test_node_types_expand_all_and_keep_the_given_order():
    assert node_types(None) == ()
    assert node_types(["all"]) == node_types(["*"]) == NODE_TYPES == ("donor", "base", "final", "interim")
    assert node_types(["final", "donor", "final"]) == ("final", "donor")
    assert node_types(["interim", "all"]) == ("interim", "donor", "base", "final")


def test_world_file_id_is_the_basename_without_extension():
    assert world_file_id("world/ed6b-1.jpg") == "ed6b-1"
    assert world_file_id("fake/12.png") == "12"
    assert world_file_id("a.b.TIF") == "a.b"
    assert world_file_id("noext") == "noext"


# --------------------------------------------------------------------------------------------
# Ranking and counts (docs/provenance.md §2.3)


def test_ranking_is_a_stable_descending_sort():
    nodes = system(("a", 0.5), ("b", 1), ("c", 0.5), ("d", 1.0), ("e", 0))
    assert [file for file, _ in ranked(nodes)] == ["b", "d", "a", "c", "e"]


# Reference of probe P:           System JSON, in file order (52 nodes):
#   WorldFileName  nodetype         file              nodeConfidenceScore   rank
#   world/p.jpg    probe            world/a.jpg       0.9                   1
#   world/a.jpg    base             world/x.jpg       0.9                   2   distractor
#   world/b.jpg    donor            world/p.jpg       0.5                   3
#   world/c.jpg    interim          world/d0..d47     0.4                   4..51
#                                   world/b.jpg       0.3                   52  outside the top 50
# world/c.jpg is never returned.
HAND_REFERENCE = [("world/p.jpg", "probe"), ("world/a.jpg", "base"), ("world/b.jpg", "donor"),
                  ("world/c.jpg", "interim")]
HAND_SYSTEM = system(("world/a.jpg", 0.9), ("world/x.jpg", 0.9), ("world/p.jpg", 0.5),
                     *((f"world/d{k}.jpg", 0.4) for k in range(48)), ("world/b.jpg", 0.3))


def test_hand_made_trial_counts_at_every_rank():
    record = trial(HAND_REFERENCE, HAND_SYSTEM, types=("donor", "interim"))
    assert record.num_sys_nodes == 52
    assert [(c.node_type, c.num_ref_nodes) for c in record.counts] == [(ALL, 4), ("donor", 1), ("interim", 1)]
    assert at(record, ALL, 50) == RankCounts(correct=2, missing=2, false_alarm=48)
    for n in (100, 200, 300):
        assert at(record, ALL, n) == RankCounts(correct=3, missing=1, false_alarm=49)
    # per type: the reference is restricted, the system top N is not (a and p become false alarms)
    assert at(record, "donor", 50) == RankCounts(correct=0, missing=1, false_alarm=50)
    assert at(record, "donor", 100) == RankCounts(correct=1, missing=0, false_alarm=51)
    assert at(record, "interim", 300) == RankCounts(correct=0, missing=1, false_alarm=52)
    rows = trial_scores([record])
    assert rows["NodeType"].tolist() == [ALL, "donor", "interim"]
    assert rows["NodeRecallAt50"].tolist() == [0.5, 0.0, 0.0]
    assert rows["NodeRecallAt100"].tolist() == [0.75, 1.0, 0.0]


def test_hand_made_trial_mapping_at_50():
    mapping = node_mapping([trial(HAND_REFERENCE, HAND_SYSTEM)])
    block = mapping[mapping["Measure"] == "NodeRecallAt50"]
    listed = list(zip(block["WorldFileID"], block["Mapping"], block["NodeType"]))
    # Correct, FalseAlarm, Missing; then confidence ascending; then WorldFileID as text (d10 before d2)
    assert listed[:2] == [("p", "Correct", "probe"), ("a", "Correct", "base")]
    false_alarms = [f"d{k}" for k in sorted(range(47), key=str)] + ["x"]
    assert listed[2:-2] == [(name, "FalseAlarm", "") for name in false_alarms]
    assert listed[-2:] == [("b", "Missing", "donor"), ("c", "Missing", "interim")]
    assert (block["NodeConfidence"] == "").tolist() == [False] * 50 + [True] * 2


def test_a_requested_node_type_absent_from_the_reference_is_an_error():
    with pytest.raises(OptionError, match="final"):
        trial(HAND_REFERENCE, HAND_SYSTEM, types=("donor", "final"))


def test_a_file_the_system_lists_twice_counts_once():
    record = trial([("world/p.jpg", "probe"), ("world/a.jpg", "base")],
                   system(("world/a.jpg", 1), ("world/a.jpg", 0.5), ("world/z.jpg", 0.1)))
    assert at(record, ALL, 50) == RankCounts(correct=1, missing=1, false_alarm=1)
    _, confidence, mapping, _ = mapping_at(record, 50)[1]
    assert (mapping, confidence) == ("Correct", 1)


# --------------------------------------------------------------------------------------------
# recall@N against a slow, obvious reference


def brute_force_top(system_nodes: list[dict], k: int) -> list[str]:
    """The k files picked one by one: the highest confidence left, the earliest in the file on ties."""
    left = list(range(len(system_nodes)))
    picked = []
    while left and len(picked) < k:
        best = left[0]
        for i in left:
            if system_nodes[i]["nodeConfidenceScore"] > system_nodes[best]["nodeConfidenceScore"]:
                best = i
        picked.append(system_nodes[best]["file"])
        left.remove(best)
    return picked


FILES = [f"world/f{k}.jpg" for k in range(70)]
KINDS = (*NODE_TYPES, "probe", "")
CONFIDENCES = (0, 1, 0.25, 0.5, 0.75, 0.9, 1.0)

references = st.lists(st.tuples(st.sampled_from(FILES), st.sampled_from(KINDS)), min_size=1, max_size=25,
                      unique_by=lambda row: row[0])
systems = st.lists(st.tuples(st.sampled_from(FILES), st.sampled_from(CONFIDENCES)), max_size=120).map(
    lambda nodes: system(*nodes))


@settings(max_examples=150, deadline=None)
@given(references, systems)
def test_recall_at_n_equals_the_brute_force_set_intersection(reference, system_nodes):
    types = tuple(sorted({kind for _, kind in reference} & set(NODE_TYPES)))
    record = trial(reference, system_nodes, types=types)
    table = trial_scores([record])
    assert record.num_sys_nodes == len(system_nodes)
    for counts, (_, row) in zip(record.counts, table.iterrows()):
        expected_ref = {file for file, kind in reference if counts.node_type in (ALL, kind)}
        assert counts.num_ref_nodes == len(expected_ref)
        for n, got in zip(RANKS, counts.at_rank):
            top = brute_force_top(system_nodes, n)
            correct = len(set(top) & expected_ref)
            assert got == RankCounts(correct, len(expected_ref) - correct, sum(f not in expected_ref for f in top))
            assert row[f"NodeRecallAt{n}"] == round(correct / len(expected_ref), 12)
    for n in RANKS:
        mapping = [m for _, _, m, _ in mapping_at(record, n)]
        assert (mapping.count("Correct"), mapping.count("Missing"), mapping.count("FalseAlarm")) == tuple(at(record, ALL, n))


# --------------------------------------------------------------------------------------------
# Records: JSON round trip, merging shards


trials_strategy = st.lists(st.tuples(references, systems), min_size=1, max_size=6)


def score_all(trials) -> list[FilteringRecord]:
    return [trial(ref, nodes, ordinal=k, probe=f"P{k}") for k, (ref, nodes) in enumerate(trials)]


@settings(max_examples=60, deadline=None)
@given(trials_strategy)
def test_records_survive_a_json_round_trip(trials):
    for record in score_all(trials):
        again = FilteringRecord.from_dict(json.loads(json.dumps(record.to_dict())))
        assert again == record
        assert repr(again) == repr(record)  # 1 stays an int, 1.0 a float: they print differently


@settings(max_examples=60, deadline=None)
@given(trials_strategy)
def test_records_survive_pickling_as_a_process_pool_sends_them(trials):
    """``FilteringRecord.__reduce__`` sends the hits as columns; they come back as the named tuples they were."""
    for record in score_all(trials):
        again = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        assert again == record and repr(again) == repr(record)
        assert all(type(h) is ReferenceHit for h in again.hits)
        assert all(type(f) is FalseAlarmHit for f in again.false_alarms)


def folded(records) -> list[FilteringRecord]:
    """Records folded as the provenance-filtering task's outcomes (keyed by trial), in trial order."""
    merged = fold((JobKey(0, "trial", record.ordinal), record) for record in records)
    return [merged[key] for key in sorted(merged)]


def report_bytes(records) -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        write_filtering_report(records, lambda name: Path(tmp) / name)
        return {path.name: path.read_bytes() for path in Path(tmp).iterdir()}


@settings(max_examples=60, deadline=None)
@given(trials_strategy, st.data())
def test_records_scored_in_two_shards_merge_into_the_same_report(trials, data):
    records = score_all(trials)
    cut = data.draw(st.integers(0, len(records)))
    first, second = records[:cut], records[cut:]
    shards = [second, first, first[:1]]  # any order; a record delivered twice counts once
    random.Random(cut).shuffle(shards)
    merged = folded(record for shard in shards for record in shard)
    assert merged == records
    assert report_bytes(merged) == report_bytes(records)


def test_two_different_records_for_one_trial_conflict():
    a = trial(HAND_REFERENCE, HAND_SYSTEM)
    b = trial(HAND_REFERENCE, HAND_SYSTEM[:-1])
    with pytest.raises(RecordConflictError, match="0/trial/0"):
        folded([a, b])


def test_the_task_scores_a_fetched_copy_as_the_original_and_its_values_round_trip(tmp_path):
    from mfscore.codec import decode, encode
    from mfscore.records import decode_outcome, encode_outcome
    from mfscore.tasks.provenance_filtering import TASK, FilteringJob

    original, copy = tmp_path / "sys" / "P.json", tmp_path / "fetched.json"
    original.parent.mkdir()
    original.write_text(json.dumps({"directed": True, "nodes": HAND_SYSTEM}))
    copy.write_bytes(original.read_bytes())
    work = FilteringJob(0, "J", "P", "json/P.json", str(original), tuple(HAND_REFERENCE), ("base",), 10_000_000)
    assert TASK.blobs(work) == {"system": str(original)}
    fetched = TASK.with_blobs(work, {"system": str(copy)})
    assert decode(FilteringJob, encode(fetched)) == fetched
    record = TASK.score(fetched)
    assert record == trial(HAND_REFERENCE, HAND_SYSTEM, types=("base",))
    assert decode_outcome(TASK.record_type, encode_outcome(record)) == record
    copy.write_text("{")
    assert str(original) in TASK.score(fetched).message and str(copy) not in TASK.score(fetched).message
    absent = TASK.score(dataclasses.replace(work, types=("final",)))
    assert absent.fatal and "--nodetype final" in absent.message


def test_the_json_size_limit_must_be_at_least_one_byte():
    from mfscore.tasks.provenance_filtering import Options

    with pytest.raises(OptionError, match=r"--max-json-bytes 0: the JSON size limit is in \[1, 1073741824\]"):
        Options("x", "r", "n", "w", "R", "s", "S", max_json_bytes=0)


# --------------------------------------------------------------------------------------------
# The report's number formats (docs/provenance.md §2.4)


def counts_record(ordinal: int, correct: int, num_ref: int) -> FilteringRecord:
    at_rank = tuple(RankCounts(correct, num_ref - correct, 0) for _ in RANKS)
    return FilteringRecord(ordinal, "J", f"P{ordinal}", "p.json", 10, (TypeCounts(ALL, num_ref, at_rank),), (), ())


def test_trial_recalls_are_rounded_and_their_mean_is_not_rounded_again():
    records = [counts_record(0, 6, 19), counts_record(1, 6, 18)]
    assert trial_scores(records)["NodeRecallAt50"].tolist() == [0.315789473684, 0.333333333333]
    assert scores(records)["NodeRecallAt50"].tolist() == [0.32456140350850005]


def test_confidences_print_as_integers_only_without_floats_or_missing_rows():
    whole = trial([("world/a.jpg", "base"), ("world/p.jpg", "probe")], system(("world/a.jpg", 1), ("world/p.jpg", 1)))
    assert (node_mapping([whole])["NodeConfidence"] == "1").all()
    with_missing = trial([("world/a.jpg", "base"), ("world/p.jpg", "probe")], system(("world/a.jpg", 1)))
    assert "1.0" in set(node_mapping([with_missing])["NodeConfidence"])


def written_reference(records, path: Path) -> bytes:
    write_table(node_mapping_reference(records), path)
    return path.read_bytes()


@settings(max_examples=80, deadline=None)
@given(trials_strategy)
def test_node_mapping_lines_are_the_bytes_of_the_sorted_pandas_table(trials):
    """From its cells (``node_mapping``) and from its lines (the report's way): the same bytes as pandas writes."""
    records = score_all(trials)
    with tempfile.TemporaryDirectory() as tmp:
        expected = written_reference(records, Path(tmp) / "m.csv")
        assert written_node_mapping(records, Path(tmp) / "fast.csv") == expected
        assert report_bytes(records)["node_mapping.csv"] == expected


def test_node_mapping_quotes_names_as_the_csv_writer_does(tmp_path):
    names = ['world/a|b.jpg', 'world/q"uote.jpg', "world/new\nline.jpg", "world/cr\rx.jpg", "world/plain.jpg"]
    record = trial([(names[0], "base"), (names[1], "donor"), (names[4], "probe")],
                   system((names[2], 0.5), (names[1], 0.25), (names[3], 1), (names[4], 1)))
    record = dataclasses.replace(record, journal_name='J|"x"')
    expected = written_reference([record], tmp_path / "m.csv")
    assert written_node_mapping([record], tmp_path / "fast.csv") == expected
    assert report_bytes([record])["node_mapping.csv"] == expected  # its lines are no file: written from its cells


def test_node_types_in_scores_are_sorted():
    record = trial(HAND_REFERENCE, HAND_SYSTEM, types=("interim", "donor", "base"))
    assert scores([record])["NodeType"].tolist() == [ALL, "base", "donor", "interim"]
    assert trial_scores([record])["NodeType"].tolist() == [ALL, "interim", "donor", "base"]


def test_world_file_id_is_splitext_of_basename():
    rng = np.random.default_rng(3)
    alphabet = np.array(list("ab./"))
    paths = ["".join(rng.choice(alphabet, rng.integers(0, 9))) for _ in range(20000)]
    paths += ["a/b.c", "a.b.c", ".bashrc", "..a", "...x.y", "dir.d/x", "/abs/y.png", "a/.", "x.", ".x."]
    for path in paths:
        assert world_file_id(path) == os.path.splitext(os.path.basename(path))[0], path
