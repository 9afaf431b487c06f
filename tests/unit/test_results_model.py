"""The results model (``mfscore.results``) and its terminal face (``mfscore.reports.summary_table``) on literal
values: canonical JSON, undefined values, the table's layout."""

from __future__ import annotations

import json
import math

import pytest

from mfscore.reports.summary_table import MAX_QUERY, summary_lines
from mfscore.results import HIGHER, LOWER, NEITHER, Curve, MetricSpec, Records, Results, Row
from mfscore.tasks.detection import thinned

SPECS = (MetricSpec("AUC", HIGHER, "area under the ROC"), MetricSpec("EER", LOWER, "equal error rate"),
         MetricSpec("TRR", NEITHER, "trial response rate"))


def results(*rows: Row, curves=()) -> Results:
    return Results("detection", "AUC", SPECS, rows, curves, Records("sys/s.csv", ("ProbeFileID",), "inputs"))


def test_json_is_canonical_and_round_trips():
    r = results(Row("", {"AUC": 0.75, "EER": 1 / 3, "TRR": 1.0}, {"targets": 4, "nontargets": 4},
                    {"AUC": (0.5, 0.9)}),
                Row("Purpose==['add']", {"AUC": float("nan"), "EER": None, "TRR": 0.5}, {"targets": 0, "nontargets": 4},
                    {"AUC": (None, None)}),
                curves=(Curve("", (0.0, 0.25, 1.0), (0.0, 0.75, 1.0)),))
    data = r.to_json()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert data == results(*r.rows, curves=r.curves).to_json()  # the same value, the same bytes
    parsed = json.loads(data)
    assert parsed["rows"][0]["values"] == {"AUC": 0.75, "EER": 1 / 3, "TRR": 1.0}  # repr: exact floats
    assert parsed["rows"][1]["values"] == {"AUC": None, "EER": None, "TRR": 0.5}   # NaN is null, never NaN
    assert list(parsed) == ["schema", "task", "primary", "metrics", "rows", "curves", "records"]
    again = Results.from_json(data)
    assert again.row("") == r.row("") and again.curves == r.curves and again.records == r.records
    assert again.row("Purpose==['add']").values["AUC"] is None
    assert again.row("Purpose==['add']").intervals["AUC"] == (None, None)  # undefined bounds stay None, not NaN
    assert Results.from_json(again.to_json()).to_json() == data


def test_run_goes_under_its_own_key_and_the_primary_must_be_declared():
    r = results(Row("", {"AUC": 0.5}))
    assert json.loads(r.to_json({"task": "detection"}))["run"] == {"task": "detection"}
    assert "run" not in json.loads(r.to_json())
    with pytest.raises(ValueError, match="primary metric 'pD'"):
        Results("detection", "pD", SPECS, ())
    with pytest.raises(ValueError, match="not mfscore results"):
        Results.from_dict({"schema": "something else"})
    with pytest.raises(KeyError):
        r.row("no such query")


def test_summary_table_aligns_marks_directions_and_intervals():
    long_query = "Purpose==['add'] & " * 5
    lines = summary_lines(results(Row("", {"AUC": 0.75, "EER": 0.25, "TRR": 1.0}, {"targets": 4, "nontargets": 12},
                                      {"AUC": (0.5, 0.875)}),
                                  Row(long_query, {"AUC": None, "EER": 0.5, "TRR": 0.5}, {"targets": 0, "nontargets": 3})))
    assert lines[0] == "detection: primary metric AUC (higher is better)"
    header, whole, part = lines[1:]
    assert header.split() == ["query", "targets", "nontargets", "AUC↑", "EER↓", "TRR"]
    assert whole.split() == ["all", "4", "12", "0.7500", "[0.5000,", "0.8750]", "0.2500", "1.0000"]
    assert part.split()[0] == long_query[:MAX_QUERY - 1].split()[0] and "…" in part
    assert part.split()[-3:] == ["-", "0.5000", "0.5000"]  # an undefined value is a dash
    assert len({len(line) for line in lines[1:]}) <= 2  # right-aligned columns (the last may be trimmed)
    assert summary_lines(results()) == [lines[0], "  no query selected anything to score"]


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 1001, 1002, 10**6])
def test_thinned_curves_keep_the_ends_evenly(n):
    kept = thinned(n)
    assert len(kept) == min(n, 1001)
    if n:
        assert kept[0] == 0 and kept[-1] == n - 1 and all(kept[1:] > kept[:-1])
        gaps = kept[1:] - kept[:-1] if n > 1 else []
        assert len(gaps) == 0 or max(gaps) - min(gaps) <= 1


def test_infinite_values_are_undefined_too():
    data = json.loads(results(Row("", {"AUC": math.inf})).to_json())
    assert data["rows"][0]["values"]["AUC"] is None
