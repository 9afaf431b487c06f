"""``validate_submission``: the whole detection/localization check (docs/validation.md §2), as a report.

The order is MediScore's ``fullCheck``: both files exist, the name (with ``-nc``), the index
extension, then the content check of the chosen type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from mfscore.errors import InputFileError
from mfscore.formats.tables import read_table
from mfscore.validation.findings import ValidationReport
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.probe_submission import TASKS, validate_probe_submission
from mfscore.validation.splice_submission import KEY as SPLICE_KEY
from mfscore.validation.splice_submission import validate_splice_submission
from mfscore.validation.submission_names import SubmissionName, check_expid_name, check_subid_name
from mfscore.validation.submission_table import SubmissionTable, read_submission_table


@dataclass
class Validation:
    report: ValidationReport
    table: SubmissionTable | None = None
    revised: pd.DataFrame | None = None   # --output_revised_system rows, when some were excused


def _files_exist(report: ValidationReport, system_path: str, index_path: str) -> bool:
    if not os.path.isfile(system_path):
        report.error("files.missing_system", f"Expected system output file {system_path}, but it does not exist.",
                     file=system_path)
    if not os.path.isfile(index_path):
        report.error("files.missing_index", f"Expected index file {index_path}, but it does not exist.",
                     file=index_path)
    return report.valid


def expid_tasks(kind: str) -> tuple[str, ...]:
    """The EXPID TASK values a submission of validation type ``kind`` may name, lower-case."""
    return ("splice",) if kind == "DSD" else ("manipulation",)


def _check_name(report: ValidationReport, system_path: str, options: ValidatorOptions) -> SubmissionName:
    if options.plan == "nc2017":
        names, name = check_expid_name(system_path, ncid=options.ncid, tasks=expid_tasks(options.kind))
    else:
        names, name = check_subid_name(system_path)
    report.extend(names)
    return name


def validate_submission(system_path: str, index_path: str, options: ValidatorOptions, *,
                        name: SubmissionName | None = None) -> Validation:
    """The report on ``system_path``; ``name``, when given, is the submission name already checked (a package's)."""
    report = ValidationReport(limit=options.max_findings)
    validation = Validation(report)
    if not _files_exist(report, system_path, index_path):
        return validation
    if name is None:
        name = _check_name(report, system_path, options) if options.name_check else SubmissionName({})
    if index_path.rsplit(".", 1)[-1] != "csv":
        report.error("index.extension", f"The index file {os.path.basename(index_path)} must have the extension "
                     ".csv.", file=index_path)
        return validation
    key = SPLICE_KEY if options.kind == "DSD" else TASKS[options.kind].key
    try:
        index = read_table(index_path, raw_text=True, required=key).fillna("")
    except InputFileError as exc:
        report.error("index.unreadable", exc.message, file=exc.path, line=exc.line)
        return validation
    table = read_submission_table(system_path, report, max_bytes=options.max_table_bytes)
    if table is None:
        return validation
    validation.table = table
    try:
        if options.kind == "DSD":
            validation.revised = validate_splice_submission(report, table, index, options)
        else:
            validation.revised = validate_probe_submission(report, table, index, index_path, options,
                                                           condition=name.condition)
    except InputFileError as exc:  # the -r reference, or an index value that is not a number
        report.error("input.unreadable", exc.message, file=exc.path, line=exc.line)
    return validation
