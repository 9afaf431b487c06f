"""Provenance system-output JSON: loading untrusted files safely and checking them against the schemas.

The two JSON Schemas (``schemas/``) follow MediScore's schema version 1.2 (docs/provenance.md §1):
filtering needs ``nodes``; graph building also needs ``links`` and a ``relationshipConfidenceScore``
per link. A file that is too large, not UTF-8, not JSON, nested too deeply or not a JSON object
becomes an ``InputFileError`` naming the file; no parser exception escapes.
"""

from __future__ import annotations

import json
import math
import os
import stat
from functools import cache
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from mfscore.errors import InputFileError, MissingFileError
from mfscore.limits import DEFAULT_MAX_JSON_BYTES, MAX_JSON_CONTAINERS, MAX_SCHEMA_PROBLEMS

if TYPE_CHECKING:
    from jsonschema import Draft7Validator


GRAPH_BUILDING = "provenance"
FILTERING = "provenancefiltering"
SCHEMA_DIRECTORY = Path(__file__).parent / "schemas"
SCHEMA_FILES = {GRAPH_BUILDING: "provenance_graph_building.schema.json",
                FILTERING: "provenance_filtering.schema.json"}

_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def load_provenance_json(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> dict:
    """The parsed top-level object of a system JSON file, read only if it is a regular file within ``max_bytes``."""
    path = os.fspath(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError("the JSON file is not a regular file", path=path)
        if info.st_size > max_bytes:
            raise InputFileError(f"the JSON file is {info.st_size} bytes, more than the limit of {max_bytes}", path=path)
        with open(path, "rb") as f:
            data = f.read(min(info.st_size, max_bytes) + 1)  # not a buffer of the limit's size
    except FileNotFoundError:
        raise MissingFileError("the JSON file does not exist", path=path) from None
    except OSError as exc:
        raise InputFileError(f"the JSON file cannot be read ({exc.strerror or exc})", path=path) from None
    if len(data) > max_bytes:
        raise InputFileError(f"the JSON file is more than the limit of {max_bytes} bytes", path=path)
    containers = data.count(b"[") + data.count(b"{")  # an upper bound (brackets in strings count too)
    if containers > MAX_JSON_CONTAINERS:
        raise InputFileError(f"the JSON file opens {containers} arrays and objects, more than the limit of "
                             f"{MAX_JSON_CONTAINERS}", path=path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"the JSON file is not UTF-8 text (bad byte at offset {exc.start})", path=path) from None
    try:
        if _may_overflow(data):
            document = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        else:  # the same floats, parsed in C: no number here can reach infinity
            document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"the file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                             path=path) from None
    except ValueError as exc:
        raise InputFileError(f"the file is not valid JSON ({exc})", path=path) from None
    except RecursionError:
        raise InputFileError("the JSON file is nested too deeply to be read", path=path) from None
    if not isinstance(document, dict):
        raise InputFileError(f"the JSON top level is {_json_type(document)}, not an object", path=path)
    return document


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_DIGITS = b"0" * 200


def _may_overflow(data: bytes) -> bool:
    """Whether a number in ``data`` could parse to infinity: one with an exponent, or a run of 200 digits. Any
    other JSON number is below 10**200 (``_finite_float`` checks each number of a file where this is true)."""
    zeroed = data.translate(_DIGITS_AS_ZERO)
    return b"0e" in zeroed or _LONG_DIGITS in zeroed


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _json_type(value) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


@cache
def _schema(task: str) -> dict:
    return json.loads((SCHEMA_DIRECTORY / SCHEMA_FILES[task]).read_text("utf-8"))


@cache
def _validator(task: str) -> Draft7Validator:
    """jsonschema's validator of ``task``'s schema, imported when a file fails (to say why): its import is a tenth of
    a run's CPU."""
    from jsonschema import Draft7Validator

    Draft7Validator.check_schema(_schema(task))
    return Draft7Validator(_schema(task))


# A JSON type as jsonschema's Draft 7 tells it: a bool is no number, 2.0 is an integer
_IS_TYPE = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)
                                  or isinstance(v, float) and v.is_integer())}
_KEYWORDS = {"$schema", "title", "description", "type", "required", "properties", "items"}


def _conforms(schema: dict, value) -> bool | None:
    """Whether ``value`` is valid under ``schema`` by the keywords the provenance schemas use (type, required,
    properties, one schema for all items), as jsonschema would say; None when the schema uses another."""
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if not set(schema) <= _KEYWORDS or not isinstance(schema.get("items", {}), dict) or not set(types) <= set(_IS_TYPE):
        return None
    if types and not any(_IS_TYPE[name](value) for name in types):
        return False
    verdicts = []
    if isinstance(value, dict):
        if not all(name in value for name in schema.get("required", ())):
            return False
        verdicts = [_conforms(sub, value[name]) for name, sub in schema.get("properties", {}).items() if name in value]
    if isinstance(value, list) and "items" in schema:
        verdicts = [_conforms(schema["items"], item) for item in value]
    return None if None in verdicts else all(verdicts)


def schema_problems(document, task: str) -> list[str]:
    """One sentence per schema violation, ``<json path>: <problem>``, sorted by path: the first
    ``MAX_SCHEMA_PROBLEMS`` found (a file of a million bad items must not cost a million sentences).

    ``task`` is ``provenance`` (graph building) or ``provenancefiltering`` (filtering), any case.
    """
    key = task.lower()
    if key not in SCHEMA_FILES:
        raise ValueError(f"unknown provenance task {task!r}; expected {GRAPH_BUILDING!r} or {FILTERING!r}")
    if _valid_shapes(key, _distinct_shapes(document)):
        return []
    errors = sorted(islice(_validator(key).iter_errors(document), MAX_SCHEMA_PROBLEMS),
                    key=lambda e: [_sortable(p) for p in e.absolute_path])
    return [f"{_json_path(e.absolute_path)}: {_describe(e)}" for e in errors]


def _shape(item) -> tuple:
    """What the item schemas look at: the keys and the JSON type of each value (in the item's order, which
    a writer keeps from item to item: cheaper than sorting, and items equal in it are equal sorted)."""
    if not isinstance(item, dict):
        return (type(item),)
    return tuple(item), tuple(map(type, item.values()))


def _distinct_shapes(document):
    """The document with one item per distinct shape in ``nodes`` and ``links``.

    The schemas constrain only keys and value types, so it is valid exactly when the document is;
    checking it is what makes a 300-node file cost a few items instead of 600.
    """
    if not isinstance(document, dict):
        return document
    reduced = dict(document)
    for name in ("nodes", "links"):
        items = document.get(name)
        if isinstance(items, list):
            if _one_shape(items):
                reduced[name] = items[:1]
                continue
            shapes = {_shape(item): item for item in reversed(items)}
            reduced[name] = list(shapes.values())
    return reduced


_KNOWN_SHAPES: dict[tuple, bool] = {}  # (task, a reduced document's _document_shape) -> whether it is valid
MAX_KNOWN_SHAPES = 256


def _valid_shapes(task: str, reduced) -> bool:
    """``_validator(task).is_valid(reduced)``, asked once per shape of document (a run's files are mostly of one
    or two shapes), and told by ``_conforms`` unless the schema has a keyword it does not know."""
    shape = (task, _document_shape(reduced))
    valid = _KNOWN_SHAPES.get(shape)
    if valid is None:
        valid = _conforms(_schema(task), reduced)
    if valid is None:
        valid = _validator(task).is_valid(reduced)
        if len(_KNOWN_SHAPES) < MAX_KNOWN_SHAPES:
            _KNOWN_SHAPES[shape] = valid
    return valid


def _document_shape(document) -> tuple:
    """What the schemas look at in a reduced document: its top level's shape and that of each item of its
    ``nodes`` and ``links`` (equal shapes are equally valid)."""
    if not isinstance(document, dict):
        return _shape(document)
    items = tuple(tuple(map(_shape, document[name])) if type(document.get(name)) is list else None
                  for name in ("nodes", "links"))
    return _shape(document), items


def _one_shape(items: list) -> bool:
    """Whether every item is an object with the same keys, each holding values of one type: the usual file,
    told a column at a time (in C) rather than an item at a time (``_shape``), several times faster."""
    if not items or set(map(type, items)) != {dict}:
        return False
    keys = set().union(*items)
    try:
        return all(len(set(map(type, map(itemgetter(key), items)))) == 1 for key in keys)
    except KeyError:  # an item lacks a key another has
        return False


def _sortable(part) -> tuple:
    return (0, part, "") if isinstance(part, int) else (1, 0, str(part))


def _json_path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "top level"


def _describe(error) -> str:
    """jsonschema's message, except that a type error names the type instead of quoting the (maybe huge) value."""
    if error.validator == "type":
        return f"{_json_type(error.instance)} is not of type {error.validator_value!r}"
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."
