"""Submission naming: ``<EXPID>/<EXPID>.csv`` with the NC2017 EXPID fields, or the MFC2019 SubID.

NC2017 (MediScore's ``-nc``): ``TEAM_NCID_DATA_TASK_CONDITION_SYS_VERSION``, seven ``_`` fields.
MFC2019 (plan Appendix A): ``<SYS>_<VERSION>_[OPTIONAL]`` with SYS ``p-``/``c-`` plus letters and
digits and VERSION an integer from 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from mfscore.validation.findings import Severity, ValidationReport

EXPID_FIELDS = ("TEAM", "NCID", "DATA", "TASK", "CONDITION", "SYS", "VERSION")

# MFC2019 plan, Appendix A: <SubID> ::= <SYS>_<VERSION>_[OPTIONAL]
_SUBID = re.compile(r"(?P<sys>[^_]*)_(?P<version>[^_]*)(?:_(?P<optional>.*))?")
_SYS = re.compile(r"[pc]-[A-Za-z0-9]+")
_VERSION = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class SubmissionName:
    """The fields a name check found (empty when it stopped early)."""

    fields: dict[str, str]

    @property
    def task(self) -> str:
        return self.fields.get("TASK", "")

    @property
    def condition(self) -> str:
        return self.fields.get("CONDITION", "")


def _check_file_and_directory(path: str, report: ValidationReport) -> str | None:
    """The stem if the name is ``<EXPID>/<EXPID>.csv``; errors otherwise."""
    p = PurePath(path)
    if p.suffix != ".csv":
        report.error("name.extension", f"The system output file {p.name} is not a csv file.", file=path)
        return None
    if p.stem != p.parent.name:
        report.error("name.directory", f"The system output file {p.name} does not follow the naming convention "
                     f"<EXPID>/<EXPID>.csv: it is in the directory '{p.parent.name}'.", file=path)
    return p.stem


def check_expid_name(path: str, *, ncid: str, tasks: tuple[str, ...], ncid_mismatch: Severity = Severity.ERROR
                     ) -> tuple[ValidationReport, SubmissionName]:
    """The NC2017 EXPID check of ``<EXPID>/<EXPID>.csv``. ``tasks`` are the accepted TASK values, lower-case."""
    report = ValidationReport()
    stem = _check_file_and_directory(path, report)
    if stem is None:
        return report, SubmissionName({})
    return report, check_expid(report, stem, file=path, ncid=ncid, tasks=tasks, ncid_mismatch=ncid_mismatch)


def check_expid(report: ValidationReport, stem: str, *, file: str, ncid: str, tasks: tuple[str, ...],
                ncid_mismatch: Severity = Severity.ERROR, what: str = "file name") -> SubmissionName:
    """The EXPID fields of ``stem``, the ``what`` of ``file`` (a CSV's or a package directory's name)."""
    parts = stem.split("_")
    if len(parts) < len(EXPID_FIELDS):
        report.error("name.fields", f"The {what} {stem} has {len(parts)} '_'-separated fields, not enough "
                     f"arguments for {'_'.join(EXPID_FIELDS)}.", file=file)
        return SubmissionName({})
    if len(parts) > len(EXPID_FIELDS) or not parts[0]:
        report.error("name.team", f"The team name must not include underscores: the {what} {stem} has "
                     f"{len(parts)} '_'-separated fields, not {len(EXPID_FIELDS)}.", file=file)
    fields = dict(zip(EXPID_FIELDS, parts))
    if fields["NCID"] != ncid:
        report.add("name.ncid", ncid_mismatch, f"NCID {fields['NCID']!r} in the {what} is not the expected "
                   f"NCID {ncid!r}.", file=file)
    if fields["TASK"].lower() not in tasks:
        wanted = " or ".join(f"'{t}'" for t in tasks)
        report.error("name.task", f"Task {fields['TASK']!r} is unrecognized. The task must be {wanted}.", file=file)
    return SubmissionName(fields)


def check_subid_name(path: str) -> tuple[ValidationReport, SubmissionName]:
    """The MFC2019 SubID check of ``<SubID>/<SubID>.csv`` (plan Appendix A)."""
    report = ValidationReport()
    stem = _check_file_and_directory(path, report)
    if stem is None:
        return report, SubmissionName({})
    return report, check_subid(report, stem, file=path)


def check_subid(report: ValidationReport, stem: str, *, file: str, what: str = "file name") -> SubmissionName:
    """The SubID fields of ``stem``, the ``what`` of ``file`` (a CSV's or a package directory's name)."""
    match = _SUBID.fullmatch(stem)
    if match is None:
        report.error("name.fields", f"The {what} {stem} is not a SubID <SYS>_<VERSION>_[OPTIONAL].", file=file)
        return SubmissionName({})
    sys, version, optional = match["sys"], match["version"], match["optional"]
    if not _SYS.fullmatch(sys):
        report.error("name.sys", f"The system ID {sys!r} must be 'p-' (primary) or 'c-' (contrastive) followed by "
                     "letters and digits only.", file=file)
    if not _VERSION.fullmatch(version):
        report.error("name.version", f"The version {version!r} must be an integer starting at 1.", file=file)
    if optional == "":
        report.error("name.optional", f"The {what} {stem} ends with '_': leave out the underscore after "
                     "<VERSION> when there is no optional part.", file=file)
    return SubmissionName({"SYS": sys, "VERSION": version, "OPTIONAL": optional or ""})
