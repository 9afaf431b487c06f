"""The published JSON Schema of each task's options (``mfscore/formats/schemas/options-<task>.json``): what a client
in any language sends as ``RunSpec.options`` (docs/distributed.md "Options on the wire").

Generated from the options types themselves (``mfscore.options``: each field's type, default, flag and the JSON
Schema keywords its check declares), so the schema cannot drift from what ``mfscore.tasks.decode_options`` accepts:
``tests/unit/test_options_schema.py`` checks the files equal what this module generates, that every task's example
options validate, and that every value the options types refuse (the checks' ``bad`` values) is refused by the
schema too where the schema can express the check. The aggregator validates a submitted run's options against it.
A resource option's ``maximum`` is its hard maximum (``mfscore.limits``); a server's own may be lower
(``mfscore.options.check_limits``), which its description says.
Regenerate with ``python -m mfscore.results_schema`` (it writes both kinds of schema).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from functools import cache
from pathlib import Path

from mfscore import tasks
from mfscore.errors import OptionError
from mfscore.options import _union_args, fields_of

DIRECTORY = Path(__file__).parent / "formats" / "schemas"


def path(task_name: str) -> Path:
    return DIRECTORY / f"options-{task_name}.json"


def schema(task_name: str) -> dict:
    task = tasks.get(task_name)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://mfscore.invalid/schemas/options-{task_name}.json",
        "title": f"mfscore {task_name} options",
        "description": f"RunSpec.options of a {task_name} run: the options of 'mfscore {task_name}' as a JSON object, "
                       "input paths as keys under the run's upload ('ref/...', 'sys/...'). Fields left out take "
                       "their defaults.",
        **_object(task.options_type),
    }


def _object(kind: type) -> dict:
    properties, required = {}, []
    for field, hint in fields_of(kind):
        properties[field.name] = _field(field, hint)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
    return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}


def _field(field: dataclasses.Field, hint) -> dict:
    described = _type(hint)
    flag = field.metadata.get("flag")
    if flag:
        described["description"] = f"the command line's {flag}"
    if field.metadata.get("limit"):
        described["description"] = described.get("description", field.name) + (
            "; a server may set a lower maximum and refuses a run above it")
    check = field.metadata.get("check")
    if check is not None and check.schema:
        described = {"allOf": [described, check.schema]} if set(check.schema) & set(described) else {
            **described, **check.schema}
    default = field.default if field.default is not dataclasses.MISSING else None
    if default is not None and not dataclasses.is_dataclass(default):
        described["default"] = list(default) if isinstance(default, tuple) else default
    return described


def _type(hint) -> dict:
    arms = _union_args(hint)
    if arms is not None:
        return {"anyOf": [_type(arm) for arm in arms]}
    if hint is None or hint is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type(args[0])}
        return {"type": "array", "prefixItems": [_type(a) for a in args], "minItems": len(args),
                "maxItems": len(args)}
    if dataclasses.is_dataclass(hint):
        return _object(hint)
    return {}


@cache
def validator(task_name: str):
    """The validator of the published schema of ``task_name``'s options (read from its file)."""
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(path(task_name).read_text()))


def check(task_name: str, data: bytes) -> None:
    """``OptionError`` naming the field if the options JSON ``data`` breaks the published schema."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise OptionError(f"the options are not JSON ({error})", reason="not JSON") from None
    errors = sorted(validator(task_name).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        where = ".".join(str(part) for part in errors[0].absolute_path) or "the options"
        raise OptionError(f"{where}: {errors[0].message[:300]} (schema {path(task_name).name})",
                          option=where, reason="schema")


def text(task_name: str) -> str:
    return json.dumps(schema(task_name), indent=2, ensure_ascii=False) + "\n"
