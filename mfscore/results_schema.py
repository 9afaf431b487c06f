"""The published JSON Schema of each task's results (``mfscore/formats/schemas/results-<task>.json``).

Generated from the results model (``mfscore.results``), the run record (``mfscore.run_record``) and what each task
declares of its metrics' names (``Task.primary_metric``, ``Task.metric_names``: regular expressions), so it
cannot drift from them: ``tests/unit/test_results_schema.py`` checks the files in the repository equal what this
module generates, and that every task's output validates. Regenerate with ``python -m mfscore.results_schema``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mfscore import tasks
from mfscore.results import HIGHER, LOWER, NEITHER, SCHEMA

DIRECTORY = Path(__file__).parent / "formats" / "schemas"
NUMBER = {"type": ["number", "null"]}


def path(task_name: str) -> Path:
    return DIRECTORY / f"results-{task_name}.json"


def _object(properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "required": list(properties) if required is None else required,
            "additionalProperties": False, "properties": properties}


def schema(task_name: str) -> dict:
    """The JSON Schema of the results of ``task_name``: its results file, and ``--json`` (which adds "run")."""
    task = tasks.get(task_name)
    names = {"type": "string", "pattern": f"^(?:{task.metric_names})$"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://mfscore.invalid/schemas/results-{task_name}.json",
        "title": f"mfscore {task_name} results",
        "description": "The results model of one run (docs/results.md): headline metrics per query, ROC curves "
                       "where the task has them, where the per-trial records are, and with --json the run's "
                       "provenance.",
        **_object({
            "schema": {"const": SCHEMA},
            "task": {"const": task_name},
            "primary": {"type": "string", "pattern": f"^(?:{task.primary_metric})$"},
            "metrics": {"type": "array", "minItems": 1, "items": _object({
                "name": names, "better": {"enum": [HIGHER, LOWER, NEITHER]},
                "description": {"type": "string", "minLength": 1}})},
            "rows": {"type": "array", "items": _object({
                "query": {"type": "string"},
                "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                "values": {"type": "object", "propertyNames": names, "additionalProperties": NUMBER},
                "intervals": {"type": "object", "propertyNames": names, "additionalProperties": {
                    "type": "array", "prefixItems": [NUMBER, NUMBER], "minItems": 2, "maxItems": 2}}})},
            "curves": {"type": "array", "items": _object({
                "query": {"type": "string"}, "kind": {"const": "roc"},
                "x": {"type": "array", "items": NUMBER}, "y": {"type": "array", "items": NUMBER}})},
            "records": {"oneOf": [{"type": "null"}, _object({
                "file": {"type": "string", "minLength": 1},
                "key": {"type": "array", "items": {"type": "string"}},
                "where": {"enum": ["reports", "inputs"]}})]},
            "run": _run(task_name),
        }, required=["schema", "task", "primary", "metrics", "rows", "curves", "records"]),
    }


def _run(task_name: str) -> dict:
    digest = {"type": "string", "pattern": "^(?:[0-9a-f]{64}|absent)$"}
    submission = _object({"name": {"type": "string"}, "roots": {"type": "array", "items": {"type": "string"}},
                          "description": {"type": "string"}, "description_sha256": digest})
    properties = {
        "mfscore": {"type": "string"},
        "task": {"const": task_name},
        "runner": {"enum": ["embedded", "cluster"]},
        "options": {"type": "object"},
        "tables": {"type": "object", "additionalProperties": digest},
        "files": {"type": "object", "additionalProperties": _object({
            "count": {"type": "integer", "minimum": 0}, "sha256": digest})},
        "started": {"type": "string", "format": "date-time"},
        "finished": {"type": "string", "format": "date-time"},
        "cpus": {"type": "integer", "minimum": 1},
        "submission": submission,
    }
    return _object(properties, required=[name for name in properties if name != "submission"])


def text(task_name: str) -> str:
    return json.dumps(schema(task_name), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    """Write every task's results schema and options schema (``mfscore.options_schema``)."""
    from mfscore import options_schema

    for module in (sys.modules[__name__], options_schema):
        for name in tasks.names():
            module.path(name).write_text(module.text(name))
            print(module.path(name))


if __name__ == "__main__":
    main()
