"""``validate_package``: a whole submission package ``<SubID>/`` (MFC2019 and NC2017 plans, Appendix A).

The package directory's name is the submission name, checked under the plan's rule (the MFC2019 SubID, or the
NC2017 EXPID with ``--plan nc2017``). Inside it: the system output ``<name>.csv`` (required; checked by
``validate_submission``, as ``mfscore validate -s`` would), the system description ``<name>.txt`` (required; its
six sections, ``system_description``) and ``mask/`` (required once the system output names a mask; every named
mask lies in it). Each entry must stay inside the package (no symbolic link out). docs/validation.md "Packages".
"""

from __future__ import annotations

import os
from pathlib import PurePath

from mfscore.errors import InputFileError
from mfscore.formats.file_names import confined_path
from mfscore.validation.findings import ValidationReport
from mfscore.validation.mask_files import is_blank
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.submission import Validation, expid_tasks, validate_submission
from mfscore.validation.submission_names import SubmissionName, check_expid, check_subid
from mfscore.validation.submission_table import SubmissionTable
from mfscore.validation.system_description import check_system_description

MASK_DIRECTORY = "mask"
MASK_COLUMNS = ("OutputProbeMaskFileName", "OutputDonorMaskFileName")
_MASKLESS_KINDS = ("SSD-event",)


def package_name(directory: str) -> str:
    """The submission name a package directory gives (``.`` and a trailing ``/`` name the directory itself)."""
    return os.path.basename(os.path.abspath(directory))


def package_system_path(directory: str) -> str:
    """Where the package at ``directory`` keeps its system output."""
    return os.path.join(directory, f"{package_name(directory)}.csv")


def _directory_refused(report: ValidationReport, directory: str) -> bool:
    """An error when ``directory`` is not a package directory one can read."""
    if not os.path.lexists(directory):
        report.error("package.missing", "The package directory does not exist.", file=directory)
    elif not os.path.isdir(directory):
        report.error("package.not_directory", "The package is not a directory.", file=directory)
    elif not os.access(directory, os.R_OK | os.X_OK):
        report.error("package.unreadable", "The package directory cannot be read.", file=directory)
    else:
        return False
    return True


def _check_name(report: ValidationReport, directory: str, name: str, options: ValidatorOptions) -> SubmissionName:
    if options.plan == "nc2017":
        return check_expid(report, name, file=directory, ncid=options.ncid, tasks=expid_tasks(options.kind),
                           what="directory name")
    return check_subid(report, name, file=directory, what="directory name")


def _entry(report: ValidationReport, directory: str, name: str, what: str) -> str | None:
    """The path of package entry ``name``, or None (with an error) when it leads outside the package."""
    try:
        return confined_path(directory, name, what=what)
    except InputFileError as exc:
        report.error("package.path", f"Refused: {exc.message}.", file=os.path.join(directory, name))
        return None


def _check_description(report: ValidationReport, path: str) -> None:
    if not os.path.lexists(path):
        report.error("package.missing_description", "The package has no system description "
                     f"{os.path.basename(path)}.", file=path)
    elif not os.path.isfile(path):
        report.error("package.missing_description", "The system description is not a file.", file=path)
    else:
        check_system_description(report, path)


def _named_masks(table: SubmissionTable) -> list[tuple[int, str]]:
    """(file line, name) of each mask the system output names."""
    return [(table.line(position), name.strip())
            for column in MASK_COLUMNS if column in table.header
            for position, name in enumerate(table.rows[column].tolist()) if not is_blank(name)]


def _check_masks(report: ValidationReport, mask_directory: str, table: SubmissionTable) -> None:
    """``mask/`` is a directory, present once a mask is named, and holds every named mask."""
    named = _named_masks(table)
    if os.path.lexists(mask_directory) and not os.path.isdir(mask_directory):
        report.error("package.mask_directory", "The package's mask entry is not a directory.", file=mask_directory)
    elif named and not os.path.lexists(mask_directory):
        report.error("package.mask_directory", f"The system output names {len(named)} masks, but the package has "
                     f"no {MASK_DIRECTORY}/ directory.", file=mask_directory)
    outside = [i for i, (_, name) in enumerate(named)
               if PurePath(os.path.normpath(name)).parts[:1] != (MASK_DIRECTORY,)]
    report.error_rows("package.mask_location", outside,
                      lambda i: f"The mask {named[i][1]} is not in the package's {MASK_DIRECTORY}/ directory.",
                      file=table.path, line=lambda i: named[i][0])


def validate_package(directory: str, index_path: str, options: ValidatorOptions) -> Validation:
    """The report on the package at ``directory``: its name, its layout, its description, then its system output
    as ``validate_submission`` checks it against ``index_path``."""
    report = ValidationReport(limit=options.max_findings)
    found = _layout(report, directory, options)
    if found is None:
        return Validation(report)
    submission_name, system, masks = found
    validation = validate_submission(system, index_path, options, name=submission_name)
    if masks is not None and validation.table is not None and options.kind not in _MASKLESS_KINDS \
            and not options.neglect_mask:
        _check_masks(report, masks, validation.table)
    report.extend(validation.report)
    validation.report = report
    return validation


def check_package_layout(directory: str, options: ValidatorOptions) -> ValidationReport:
    """The package's name, layout and description, without its system output's rows: what a submitter checks before
    sending a package to be scored against a reference it does not hold (the cluster validates the rows)."""
    report = ValidationReport(limit=options.max_findings)
    found = _layout(report, directory, options)
    if found is not None and not os.path.isfile(found[1]):
        report.error("package.missing_system", f"The package has no system output {os.path.basename(found[1])}.",
                     file=found[1])
    return report


def _layout(report: ValidationReport, directory: str, options: ValidatorOptions
            ) -> tuple[SubmissionName, str, str | None] | None:
    """(its name, the system output's path, the mask directory's path) of a package whose directory can be read, its
    name, layout and description checked into ``report``; None when there is no system output to check."""
    if _directory_refused(report, directory):
        return None
    name = package_name(directory)
    submission_name = _check_name(report, directory, name, options)
    system, description, masks = (_entry(report, directory, entry, what)
                                  for entry, what in ((f"{name}.csv", "system output"),
                                                      (f"{name}.txt", "system description"),
                                                      (MASK_DIRECTORY, "mask directory")))
    if description is not None:
        _check_description(report, description)
    return None if system is None else (submission_name, system, masks)
