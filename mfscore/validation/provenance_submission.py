"""MediScore's ProvenanceValidator (docs/provenance.md §4, docs/validation.md §6): checks a provenance submission.

The stages run in MediScore's order (options, files, name, index extension, content); a failing stage
ends the run, while the content checks all run so that every problem is reported at once. Where
mfscore departs from MediScore:

* ``-t`` selects the schema (MediScore resets it, so only ``-nc`` with TASK ``provenance`` selects the
  graph-building schema); ``mediscore_compat`` restores the old choice.
* Index coverage compares the ID sets both ways instead of row positions.
* Every JSON path must stay inside the system CSV's directory; JSON files are size-limited.
"""

from __future__ import annotations

import os
from pathlib import PurePath

from mfscore.errors import ImageError, InputFileError
from mfscore.formats.images import confined_path
from mfscore.formats.provenance_json import (
    DEFAULT_MAX_JSON_BYTES,
    FILTERING,
    GRAPH_BUILDING,
    load_provenance_json,
    schema_problems,
)
from mfscore.formats.tables import read_table
from mfscore.limits import DEFAULT_MAX_FINDINGS, MAX_SCHEMA_PROBLEMS
from mfscore.validation.findings import Severity, ValidationReport
from mfscore.validation.options import check_max_findings
from mfscore.validation.row_checks import check_duplicates, check_index_coverage, check_row_count
from mfscore.validation.submission_names import check_expid_name
from mfscore.validation.submission_table import read_submission_table

TASKS = (GRAPH_BUILDING, FILTERING)
MIN_COLUMNS = 4
KEY = "ProvenanceProbeFileID"
JSON_COLUMN = "ProvenanceOutputFileName"
REQUIRED_COLUMNS = (KEY, "ConfidenceScore", JSON_COLUMN)
STATUS_COLUMNS = ("IsOptOut", "ProvenanceProbeStatus")
OPTED_OUT = frozenset({"NonProcessed", "OptOut", "Y"})
SCHEMA_NAMES = {GRAPH_BUILDING: "provenance graph-building", FILTERING: "provenance filtering"}
PROBLEMS_PER_FILE = 10


def validate_provenance_submission(system_path: str, index_path: str, *, task: str | None, name_check: bool,
                                   ncid: str = "NC17", neglect_json: bool = False, opt_out: bool = False,
                                   mediscore_compat: bool = False, max_json_bytes: int = DEFAULT_MAX_JSON_BYTES,
                                   max_findings: int = DEFAULT_MAX_FINDINGS) -> ValidationReport:
    """Validate ``system_path`` (a provenance system-output CSV) against ``index_path``; the report lists the first
    ``max_findings`` findings and counts the others."""
    check_max_findings(max_findings)
    system_path, index_path = os.fspath(system_path), os.fspath(index_path)
    report = ValidationReport(limit=max_findings)
    if not task and not name_check:
        report.error("options.task", "Either the name check (-nc) or the task (-t) is required.")
        return report
    if task and not mediscore_compat and task.lower() not in TASKS:
        report.error("options.task", f"Task {task!r} is unrecognized. The task must be 'provenance' or "
                                     "'provenancefiltering'.")
        return report
    if not _files_exist(system_path, index_path, report):
        return report
    name_task = None
    if name_check:
        names, name = check_expid_name(system_path, ncid=ncid, tasks=TASKS, ncid_mismatch=Severity.WARNING)
        report.extend(names)
        if not names.valid:
            return report
        name_task = name.task.lower()
    if PurePath(index_path).suffix != ".csv":
        report.error("index.extension", f"The index file {PurePath(index_path).name} is not a csv file.",
                     file=index_path)
        return report
    schema_task = _schema_task(task, name_task, mediscore_compat, report)
    _check_content(system_path, index_path, report, schema_task=None if neglect_json else schema_task,
                   opt_out=opt_out, max_json_bytes=max_json_bytes)
    return report


def _files_exist(system_path: str, index_path: str, report: ValidationReport) -> bool:
    for path, code, what in ((system_path, "files.missing_system", "system output"),
                             (index_path, "files.missing_index", "index")):
        if not os.path.exists(path):
            report.error(code, f"Expected {what} file {path} does not exist.", file=path)
        elif not os.path.isfile(path):
            report.error(code, f"Expected {what} file {path} is not a regular file.", file=path)
    return report.valid


def _schema_task(task: str | None, name_task: str | None, mediscore_compat: bool,
                 report: ValidationReport) -> str:
    """The task whose schema the JSON files must pass (see the module docstring)."""
    if mediscore_compat:
        if task and not name_task:
            report.notice("options.task_ignored", f"MediScore ignores -t {task}: the provenance filtering schema "
                                                  "is used (--mediscore-compat).")
        return GRAPH_BUILDING if name_task == GRAPH_BUILDING else FILTERING
    if name_task and task and task.lower() != name_task:
        report.warning("options.task_conflict", f"The task {task!r} given with -t differs from the task "
                                                f"{name_task!r} of the file name; the file name's task is used.")
    return name_task or task.lower()


def _check_content(system_path: str, index_path: str, report: ValidationReport, *, schema_task: str | None,
                   opt_out: bool, max_json_bytes: int) -> None:
    table = read_submission_table(system_path, report)
    if table is None:
        return
    if len(table.header) < MIN_COLUMNS:
        report.error("table.columns", f"The number of columns of the system output file must be at least "
                     f"{MIN_COLUMNS}; it has {len(table.header)}. Are you using '|' to separate your columns?",
                     file=system_path, line=1)
        return
    status_columns = [c for c in STATUS_COLUMNS if c in table.header]
    if not status_columns:
        report.error("table.status_column", "The system output must have an 'IsOptOut' or "
                                            "'ProvenanceProbeStatus' column.", file=system_path, line=1)
    elif len(status_columns) == 2:
        report.notice("table.status_columns", "The system output has both 'IsOptOut' and "
                                              "'ProvenanceProbeStatus'; 'IsOptOut' is used.", file=system_path, line=1)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.header]
    for column in missing:
        report.error("table.required_column", f"The required column {column} is absent from the system output.",
                     file=system_path, line=1)
    try:
        index_ids = read_table(index_path, raw_text=True, required=(KEY,), columns={KEY})[KEY].fillna("")
    except InputFileError as exc:
        report.error("index.unreadable", f"The index file cannot be used: {exc.message}.", file=index_path)
        return
    if missing:
        return
    _check_rows(table, index_ids, report)
    if schema_task is not None:
        status = table.rows[status_columns[0]] if status_columns and opt_out else None
        _check_jsons(table, status, schema_task, report, max_json_bytes)


def _check_rows(table, index_ids, report: ValidationReport) -> None:
    """Duplicates, the row count (no header line counted, as MediScore's provenance validator does),
    and the ID sets of system output and index both ways."""
    keys = table.rows[KEY].str.strip()
    check_duplicates(report, table, keys)
    check_row_count(report, table, len(index_ids), count_header=False)
    check_index_coverage(report, table, keys, index_ids, noun="probe")


def _check_jsons(table, status, task: str, report: ValidationReport, max_json_bytes: int) -> None:
    """Each row's JSON (once per distinct name) must be inside the submission and pass ``task``'s schema."""
    root = os.path.dirname(table.path) or "."
    seen = set()
    for position, (probe, name) in enumerate(zip(table.rows[KEY], table.rows[JSON_COLUMN])):
        where = {"file": table.path, "line": table.line(position)}
        if status is not None and status.iloc[position] in OPTED_OUT:
            continue
        if not name.strip():
            report.notice("json.blank", f"The JSON file name of probe {probe!r} is blank; its JSON check is "
                                        "skipped.", **where)
            continue
        if name in seen:
            continue
        seen.add(name)
        try:
            path = confined_path(root, name, what="JSON")
        except ImageError as exc:
            report.error("json.path", f"The JSON file name {name!r} of probe {probe!r} is refused: {exc.message}.",
                         **where)
            continue
        if not os.path.lexists(path):
            report.error("json.missing", f"Expected JSON file {name!r} of probe {probe!r} does not exist.", **where)
            continue
        try:
            document = load_provenance_json(path, max_bytes=max_json_bytes)
        except InputFileError as exc:
            report.error("json.unreadable", f"JSON file {name!r} of probe {probe!r}: {exc.message}.", **where)
            continue
        problems = schema_problems(document, task)
        for problem in problems[:PROBLEMS_PER_FILE]:
            report.error("json.schema", _schema_message(name, task, problem), **where)
        if len(problems) > PROBLEMS_PER_FILE:
            at_least = "at least " if len(problems) == MAX_SCHEMA_PROBLEMS else ""
            report.error("json.schema", f"The JSON file {name!r} has {at_least}{len(problems) - PROBLEMS_PER_FILE} "
                                        "more schema problem(s).", **where)


def _schema_message(name: str, task: str, problem: str) -> str:
    message = f"The JSON file {name!r} failed validation against the {SCHEMA_NAMES[task]} schema (task {task!r}): " \
              f"{problem}."
    if task == GRAPH_BUILDING:
        message += " A graph-building JSON must include 'links' (an empty list if there are none)."
    return message
