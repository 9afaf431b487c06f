"""Provenance system JSON: the two schemas (docs/provenance.md §1) and the safe loader."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from mfscore.errors import InputFileError
from mfscore.formats.provenance_json import SCHEMA_FILES, load_provenance_json, schema_problems

NODE = {"id": "id0", "file": "world/a.jpg", "fileid": "a", "nodeConfidenceScore": 0.9}
LINK = {"source": 0, "target": 1, "relationshipConfidenceScore": 0.5, "operation": "Splice",
        "operationArgument": "x"}
GRAPH = {"directed": True, "nodes": [NODE, {**NODE, "id": "id1", "file": "world/b.jpg"}], "links": [LINK]}
BOTH = ("provenance", "provenancefiltering")


def without(document: dict, path: tuple, key: str) -> dict:
    document = copy.deepcopy(document)
    target = document
    for part in path:
        target = target[part]
    del target[key]
    return document


def replaced(document: dict, path: tuple, key: str, value) -> dict:
    document = copy.deepcopy(document)
    target = document
    for part in path:
        target = target[part]
    target[key] = value
    return document


@pytest.mark.parametrize("task", SCHEMA_FILES)
def test_schema_files_are_valid_draft7(task):
    text = resources.files("mfscore.formats").joinpath("schemas", SCHEMA_FILES[task]).read_text("utf-8")
    Draft7Validator.check_schema(json.loads(text))


@pytest.mark.parametrize("task", BOTH + ("Provenance", "ProvenanceFiltering"))
def test_a_complete_graph_passes_both_schemas(task):
    assert schema_problems(GRAPH, task) == []


@pytest.mark.parametrize("task", BOTH)
def test_extra_keys_are_allowed_everywhere(task):
    document = replaced(GRAPH, (), "graph", {"name": "x"})
    document["nodes"][0]["nodetype"] = "base"
    document["links"][0]["op"] = "Donor"
    assert schema_problems(document, task) == []


@pytest.mark.parametrize("task", BOTH)
@pytest.mark.parametrize("key", ["id", "file", "nodeConfidenceScore"])
def test_each_required_node_key(task, key):
    assert schema_problems(without(GRAPH, ("nodes", 0), key), task) == [f"nodes[0]: {key!r} is a required property"]


@pytest.mark.parametrize("task", BOTH)
@pytest.mark.parametrize("key", ["source", "target"])
def test_each_required_link_key(task, key):
    assert schema_problems(without(GRAPH, ("links", 0), key), task) == [f"links[0]: {key!r} is a required property"]


def test_relationship_confidence_is_required_only_for_graph_building():
    document = without(GRAPH, ("links", 0), "relationshipConfidenceScore")
    assert schema_problems(document, "provenance") == ["links[0]: 'relationshipConfidenceScore' is a required property"]
    assert schema_problems(document, "provenancefiltering") == []


def test_links_are_required_only_for_graph_building():
    document = without(GRAPH, (), "links")
    assert schema_problems(document, "provenance") == ["top level: 'links' is a required property"]
    assert schema_problems(document, "provenancefiltering") == []


@pytest.mark.parametrize("task", BOTH)
def test_nodes_are_required(task):
    assert "top level: 'nodes' is a required property" in schema_problems(without(GRAPH, (), "nodes"), task)


@pytest.mark.parametrize("task", BOTH)
def test_optional_keys_may_be_absent(task):
    document = without(without(GRAPH, (), "directed"), ("nodes", 0), "fileid")
    document = without(without(document, ("links", 0), "operation"), ("links", 0), "operationArgument")
    assert schema_problems(document, task) == []


@pytest.mark.parametrize("task", BOTH)
@pytest.mark.parametrize("path, key, value, expected", [
    ((), "directed", "yes", "directed: a string is not of type 'boolean'"),
    ((), "nodes", {}, "nodes: an object is not of type 'array'"),
    ((), "links", "none", "links: a string is not of type 'array'"),
    (("nodes", 0), "id", 0, "nodes[0].id: an integer is not of type 'string'"),
    (("nodes", 0), "file", None, "nodes[0].file: null is not of type 'string'"),
    (("nodes", 0), "fileid", ["a"], "nodes[0].fileid: an array is not of type 'string'"),
    (("nodes", 0), "nodeConfidenceScore", "0.9", "nodes[0].nodeConfidenceScore: a string is not of type 'number'"),
    (("nodes", 0), "nodeConfidenceScore", True, "nodes[0].nodeConfidenceScore: a boolean is not of type 'number'"),
    (("links", 0), "source", "0", "links[0].source: a string is not of type 'number'"),
    (("links", 0), "target", None, "links[0].target: null is not of type 'number'"),
    (("links", 0), "operation", 3, "links[0].operation: an integer is not of type 'string'"),
    (("links", 0), "operationArgument", {}, "links[0].operationArgument: an object is not of type 'string'"),
])
def test_each_type(task, path, key, value, expected):
    assert schema_problems(replaced(GRAPH, path, key, value), task) == [expected]


def test_relationship_confidence_type_for_graph_building():
    document = replaced(GRAPH, ("links", 0), "relationshipConfidenceScore", "high")
    assert schema_problems(document, "provenance") == [
        "links[0].relationshipConfidenceScore: a string is not of type 'number'"]


def test_problems_are_sorted_by_path_and_the_top_level_must_be_an_object():
    document = copy.deepcopy(GRAPH)
    document["nodes"] = [{**NODE, "id": 1} for _ in range(12)]
    del document["nodes"][11]["file"]
    problems = schema_problems(document, "provenancefiltering")
    assert problems[:3] == ["nodes[0].id: an integer is not of type 'string'",
                            "nodes[1].id: an integer is not of type 'string'",
                            "nodes[2].id: an integer is not of type 'string'"]
    assert problems[-2:] == ["nodes[11]: 'file' is a required property",
                             "nodes[11].id: an integer is not of type 'string'"]
    assert schema_problems([], "provenance") == ["top level: an array is not of type 'object'"]


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="unknown provenance task"):
        schema_problems(GRAPH, "splice")


def test_load_returns_the_document(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(GRAPH))
    assert load_provenance_json(path) == GRAPH
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GRAPH).encode())
    assert load_provenance_json(str(path)) == GRAPH


def load_error(tmp_path, data: bytes, **kwargs) -> str:
    path = tmp_path / "p.json"
    path.write_bytes(data)
    with pytest.raises(InputFileError) as info:
        load_provenance_json(path, **kwargs)
    sentence = info.value.sentence()
    assert sentence.startswith(str(path)) and "\n" not in sentence
    return sentence


def test_size_limit_is_checked_before_reading(tmp_path):
    data = json.dumps(GRAPH).encode()
    assert "more than the limit of 10" in load_error(tmp_path, data, max_bytes=10)
    assert load_provenance_json(tmp_path / "p.json", max_bytes=len(data)) == GRAPH


@pytest.mark.parametrize("data, phrase", [
    (b"{\"nodes\": [", "not valid JSON"),
    (b"", "not valid JSON"),
    (b"{'nodes': []}", "not valid JSON"),
    (b"{\"nodes\": [], \"x\": NaN}", "NaN is not a JSON number"),
    (b"{\"nodes\": [{\"nodeConfidenceScore\": 1e999}]}", "too large"),
    (b"[1, 2]", "top level is an array, not an object"),
    (b"{\"file\": \"caf\xe9\"}", "not UTF-8"),
    (b"\xff\xfe{\x00}\x00", "not UTF-8"),
])
def test_malformed_json_is_a_typed_error(tmp_path, data, phrase):
    assert phrase in load_error(tmp_path, data)


@pytest.mark.parametrize("data", [b"[" * 100_000, b"{\"a\":" * 100_000, b"[" * 100_000 + b"]" * 100_000])
def test_deeply_nested_json_is_a_typed_error(tmp_path, data):
    sentence = load_error(tmp_path, data)
    assert "nested too deeply" in sentence or "not valid JSON" in sentence


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputFileError, match="does not exist"):
        load_provenance_json(tmp_path / "absent.json")
    with pytest.raises(InputFileError, match="not a regular file"):
        load_provenance_json(tmp_path)


_VALUES = st.sampled_from([None, True, 3, 0.5, "s", [1], {"a": 1}])
_ITEMS = st.one_of(st.dictionaries(st.sampled_from(["id", "file", "fileid", "nodeConfidenceScore", "source", "target",
                                                    "relationshipConfidenceScore", "operation", "extra"]),
                                   _VALUES, max_size=6),
                   _VALUES)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(st.sampled_from(["nodes", "links", "directed", "other"]),
                       st.one_of(st.lists(_ITEMS, max_size=6), _VALUES), max_size=4),
       st.sampled_from(["provenance", "provenancefiltering"]))
def test_the_shape_shortcut_agrees_with_full_validation(document, task):
    from mfscore.formats.provenance_json import _validator

    assert (schema_problems(document, task) == []) == _validator(task).is_valid(document)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(st.sampled_from(["nodes", "links", "directed", "other"]),
                       st.one_of(st.lists(_ITEMS, max_size=6), _VALUES), max_size=4),
       st.sampled_from(["provenance", "provenancefiltering"]))
def test_conforms_judges_a_document_as_jsonschema_does(document, task):
    """``_conforms`` decides validity without jsonschema (imported to say why a file fails); jsonschema is the
    reference, asked without the cache of shapes."""
    from mfscore.formats.provenance_json import _conforms, _schema, _validator

    assert _conforms(_schema(task), document) == _validator(task).is_valid(document)


@pytest.mark.parametrize("name", ["object", "array", "string", "number", "integer", "boolean", "null"])
def test_conforms_tells_types_as_jsonschema_does(name):
    """A bool is no number; 2.0 is an integer, 2.5 is not."""
    from mfscore.formats.provenance_json import _conforms

    for value in (None, True, False, 0, 2, 2.0, 2.5, -1, "2", [], [1], {}, {"a": 1}):
        assert _conforms({"type": name}, value) == Draft7Validator({"type": name}).is_valid(value), value


def test_conforms_leaves_a_keyword_it_does_not_know_to_jsonschema():
    from mfscore.formats.provenance_json import _conforms

    assert _conforms({"type": "object", "minProperties": 1}, {}) is None
    assert _conforms({"type": "array", "items": [{"type": "string"}]}, ["a"]) is None
    assert _conforms({"properties": {"a": {"enum": [1]}}}, {"a": 1}) is None
    assert _conforms({"properties": {"a": {"type": "string"}}}, {"b": 1}) is True  # the unknown is not reached


def test_checking_valid_files_does_not_import_jsonschema():
    code = ("import sys; from mfscore.formats.provenance_json import schema_problems\n"
            f"assert schema_problems({GRAPH!r}, 'provenance') == []\nprint('jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


_MUTATIONS = [None, "drop", "retype", "bool", "extra", "not an object", "reorder"]


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.integers(1, 40), st.data(), st.sampled_from(_MUTATIONS),
       st.sampled_from(["provenance", "provenancefiltering"]))
def test_lists_of_one_shape_with_one_item_changed_agree_with_full_validation(n, data, mutation, task):
    """The column-wise test for lists whose items all look alike (``_one_shape``), on such lists with at most one
    item changed: a key dropped or added, a value of another type, a bool for a number, keys in another order."""
    from mfscore.formats.provenance_json import _validator

    nodes = [{"id": f"n{i}", "file": f"w/{i}.jpg", "nodeConfidenceScore": float(i)} for i in range(n)]
    links = [{"source": 0, "target": i % n, "relationshipConfidenceScore": 0.5} for i in range(n)]
    items = data.draw(st.sampled_from([nodes, links]))
    at = data.draw(st.integers(0, n - 1))
    key = data.draw(st.sampled_from(sorted(items[at])))
    if mutation == "drop":
        del items[at][key]
    elif mutation == "retype":
        items[at][key] = data.draw(_VALUES)
    elif mutation == "bool":
        items[at][key] = True
    elif mutation == "extra":
        items[at]["extra"] = data.draw(_VALUES)
    elif mutation == "not an object":
        items[at] = data.draw(_VALUES)
    elif mutation == "reorder":
        items[at] = dict(reversed(items[at].items()))
    document = {"nodes": nodes, "links": links}
    assert (schema_problems(document, task) == []) == _validator(task).is_valid(document)


@pytest.mark.parametrize("number", ["1" + "0" * 400 + ".5", "1" + "0" * 309, "-" + "9" * 320 + ".0", "1.5E400",
                                    "2e+308", "-1.0e309"])
def test_a_number_past_the_float_range_is_refused_without_an_exponent_too(tmp_path, number):
    data = b'{"nodes": [{"nodeConfidenceScore": %s}]}' % number.encode()
    if "." in number or "e" in number.lower():  # a JSON float: past the range it is refused
        assert "too large" in load_error(tmp_path, data)
    else:  # a JSON integer: Python's int holds it
        assert load_provenance_json(_written(tmp_path, data))["nodes"][0]["nodeConfidenceScore"] == int(number)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(), st.text(max_size=8)),
                max_size=30))
def test_floats_parse_as_the_checked_parse_does(values):
    """The C float parse (no exponent, no long digit run in the file) and the checked one give the same document."""
    from mfscore.formats.provenance_json import _finite_float, _may_overflow

    text = json.dumps({"nodes": [{"nodeConfidenceScore": value} for value in values]})
    checked = json.loads(text, parse_float=_finite_float)
    assert json.loads(text) == checked and repr(json.loads(text)) == repr(checked)
    if any(isinstance(v, float) and "e" in repr(v) for v in values):
        assert _may_overflow(text.encode())


def _written(tmp_path, data: bytes):
    path = tmp_path / "n.json"
    path.write_bytes(data)
    return path
