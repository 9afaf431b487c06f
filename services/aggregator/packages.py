"""A package run (``RunSpec.package``): the aggregator plans it against its dataset, so the submitter never holds the
reference (docs/release.md "Submitting a package").

The client uploads the package under ``package/`` and sends the task's options with every reference-side path naming
a place in the dataset (``-r reference/x.csv``) and no tables. ``complete`` fetches the package's system output and
description and the dataset's tables under the reference-side roots, plans the run as the embedded command would, and
returns what a client planning it itself would have sent: the options keyed by root (``ref/...``, ``sys/...``), the
tables, and an input manifest naming the object of every file the run reads. Planning is deterministic, so a resumed
run is completed again to the same spec; the recorded spec stays the one submitted.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, fields, replace

from mfscore import codec, tasks
from mfscore.errors import InputFileError, MfscoreError, OptionError
from mfscore.formats.file_names import confined_path
from mfscore.limits import MAX_DESCRIPTION_BYTES
from mfscore.options import spellings
from mfscore.services.common import input_manifest
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.planning import MAX_TABLE_BYTES
from mfscore.services.common.run_layout import PACKAGE as PACKAGE_ROOT
from mfscore.services.common.run_layout import object_key
from mfscore.services.wire import runs_pb2
from mfscore.tasks.base import PACKAGE_DIRECTORY, SYSTEM_OUTPUT, Task, path_fields, relocated, run_files
from mfscore.validation.findings import Severity, ValidationReport
from mfscore.validation.submission_names import check_subid
from mfscore.validation.system_description import check_system_description

PLANNING_SUFFIXES = (".csv", ".json")  # the dataset's files planning may read: tables, journals (masks and HDF5 not)
DESCRIPTION_KEPT = 32 << 10         # characters of the description the provenance keeps (a run's status is a KV entry)


class PackageRefused(MfscoreError):
    """A package run that cannot be planned: an option naming no place in the dataset, a missing system output."""


@dataclass
class Completed:
    """A package run as a client planning it itself would have submitted it, and what the package says."""

    spec: runs_pb2.RunSpec
    files: list[runs_pb2.InputFile]  # every file the run reads, by its name in the run, with its object
    roots: list[str]                 # the run's roots the package fills (its own files)
    made: dict[str, str]             # name in the run -> path: tables made here (a campaign's split), stored with the run
    description: str                 # its first DESCRIPTION_KEPT characters
    description_sha256: str          # of the whole file, as uploaded
    findings: runs_pb2.ValidationReport

    def submission(self) -> dict:
        """What the run's provenance says of the package (``RunRecord.submission``)."""
        return {"name": self.spec.package, "roots": self.roots, "description": self.description,
                "description_sha256": self.description_sha256}


def package_options(task: Task, options, package_dir: str, name: str):
    """``options`` with its package fields filled from the package at ``package_dir`` named ``name``."""
    values = {SYSTEM_OUTPUT: os.path.join(package_dir, f"{name}.csv"), PACKAGE_DIRECTORY: package_dir}
    return replace(options, **{field: values[kind] for field, kind in task.package_fields.items()})


def dataset_options(task: Task, options, dataset_dir: str):
    """``options`` with every reference-side path (not a package field) under ``dataset_dir``; ``PackageRefused`` for
    one that is absolute or leaves the dataset."""
    changes, flags = {}, {field.name: "/".join(spellings(field)) or field.name for field in fields(options)}
    for field in path_fields(options):
        value = getattr(options, field)
        if field in task.package_fields or value is None:
            continue
        try:
            changes[field] = confined_path(dataset_dir, os.path.normpath(str(value)), what="dataset",
                                           error=InputFileError)
        except InputFileError:
            raise PackageRefused(f"the option {flags[field]} {str(value)[:200]!r} names no place in the dataset: a "
                                 "package run names reference files by their names in the dataset") from None
    return replace(options, **changes)


def complete(store: ObjectStore, spec: runs_pb2.RunSpec, dataset_files: list[runs_pb2.DeclaredFile], dataset_space: str,
             work_dir: str, inputs: input_manifest.Inputs | None = None, *, split=None) -> Completed:
    """The package run ``spec`` planned against the dataset whose files (``dataset_files``) are objects of
    ``dataset_space``, in ``work_dir`` (emptied first; blocking). A campaign's ``split`` (``mfscore.campaigns.Split``)
    adds its column to the reference table, which the run then reads from its own inputs."""
    task = tasks.get(spec.task)
    shutil.rmtree(work_dir, ignore_errors=True)
    package_dir, dataset_dir = os.path.join(work_dir, PACKAGE_ROOT), os.path.join(work_dir, "dataset")
    os.makedirs(dataset_dir)
    if inputs is None:
        inputs = input_manifest.read(store, spec.run_id)
    described = _fetch_package(store, inputs, spec.package, work_dir)
    options = tasks.decode_options(task, spec.options)
    options = dataset_options(task, package_options(task, options, package_dir, spec.package), dataset_dir)
    by_name = {file.name: file for file in dataset_files}
    _fetch_dataset_tables(store, task, options, by_name, dataset_space, dataset_dir)
    made_paths = [_split_reference(options, split)] if split is not None else []
    roots = task.inputs(options).roots
    plan = task.plan(options)
    listed, tables = run_files(task, options, plan, exists=lambda path: _held(path, dataset_dir, by_name, package_dir,
                                                                              inputs))
    made = {key: path for path, key in listed if path in made_paths}
    files = [_input_file(path, key, dataset_dir, by_name, dataset_space, package_dir, inputs) for path, key in listed
             if key not in made]
    completed = runs_pb2.RunSpec()
    completed.CopyFrom(spec)
    completed.options = codec.encode(relocated(options, task.inputs(options), {name: name for name in roots}))
    del completed.tables[:]
    completed.tables.extend(tables)
    own = sorted(name for name, directory in roots.items() if _under(directory, package_dir))
    text, findings = described
    description = inputs.get(f"{PACKAGE_ROOT}/{spec.package}.txt")
    return Completed(completed, [file for file in files if file is not None], own, made, text,
                     description.sha256 if description is not None else "", findings)


def _split_reference(options, split) -> str:
    """Add the campaign's split column to the run's reference table (a ``ReferenceLayout`` task's); its path."""
    from mfscore.campaigns import add_split_column

    path = os.path.join(options.ref_dir, options.reference)
    if not os.path.isfile(path):
        raise PackageRefused(f"the reference table {options.reference} is not in the dataset")
    add_split_column(path, split)
    return path


def _fetch_package(store: ObjectStore, inputs: input_manifest.Inputs, name: str, work_dir: str
                   ) -> tuple[str, runs_pb2.ValidationReport]:
    """Fetch the package's system output and description; (the description's text, the findings on it)."""
    system, description = f"{PACKAGE_ROOT}/{name}.csv", f"{PACKAGE_ROOT}/{name}.txt"
    if system not in inputs:
        raise PackageRefused(f"the package {name} has no system output {name}.csv")
    wanted = {system: inputs[system].key}
    if description in inputs:
        wanted[description] = inputs[description].key
    store.download_objects(wanted, work_dir, max_bytes=MAX_TABLE_BYTES)
    report = ValidationReport()
    path = os.path.join(work_dir, *description.split("/"))
    if description not in inputs:
        report.error("package.missing_description", f"The package has no system description {name}.txt.",
                      file=description)
        return "", _wire(report, work_dir)
    check_system_description(report, path)
    with open(path, "rb") as f:
        text = f.read(MAX_DESCRIPTION_BYTES).decode("utf-8", errors="replace")[:DESCRIPTION_KEPT]
    return text, _wire(report, work_dir)


def _wire(report: ValidationReport, work_dir: str) -> runs_pb2.ValidationReport:
    return runs_pb2.ValidationReport(valid=report.valid, findings=[
        runs_pb2.Finding(severity=str(f.severity), code=f.code, message=f.message,
                         file=os.path.relpath(f.file, work_dir).replace(os.sep, "/") if f.file and os.path.isabs(f.file)
                         else f.file or "", line=f.line or 0) for f in report.findings])


def _fetch_dataset_tables(store: ObjectStore, task: Task, options, by_name: dict, space: str, dataset_dir: str) -> None:
    """Download the dataset's files planning may read (``PLANNING_SUFFIXES``) under the reference-side roots, within
    ``MAX_TABLE_BYTES`` in all."""
    roots = [os.path.relpath(directory, dataset_dir) for directory in task.inputs(options).roots.values()
             if _under(directory, dataset_dir)]
    prefixes = ["" if root == os.curdir else root.replace(os.sep, "/") + "/" for root in roots]
    wanted = {name: file for name, file in by_name.items()
              if name.endswith(PLANNING_SUFFIXES) and any(name.startswith(prefix) for prefix in prefixes)}
    total = sum(file.size for file in wanted.values())
    if total > MAX_TABLE_BYTES:
        raise PackageRefused(f"the dataset's tables under the run's reference directories hold {total} bytes, more "
                             f"than the {MAX_TABLE_BYTES} planning reads")
    store.download_objects({name: object_key(space, file.sha256) for name, file in wanted.items()}, dataset_dir,
                           max_bytes=MAX_TABLE_BYTES)


def _under(path: str, directory: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(directory)]) == os.path.abspath(directory)


def _name(path: str, directory: str) -> str:
    return os.path.relpath(path, directory).replace(os.sep, "/")


def _held(path: str, dataset_dir: str, by_name: dict, package_dir: str, inputs: input_manifest.Inputs) -> bool:
    """Whether a job's file is the dataset's or the package's (one neither holds is its trial's problem, as a missing
    file is in the embedded command)."""
    if _under(path, dataset_dir):
        return _name(path, dataset_dir) in by_name
    return _under(path, package_dir) and f"{PACKAGE_ROOT}/{_name(path, package_dir)}" in inputs


def _input_file(path: str, key: str, dataset_dir: str, by_name: dict, space: str, package_dir: str,
                inputs: input_manifest.Inputs) -> runs_pb2.InputFile | None:
    """The manifest record of the file at ``path`` (named ``key`` in the run): the dataset's object or the package's
    upload; None for a table neither holds (planning read no such file)."""
    if _under(path, dataset_dir):
        found = by_name.get(_name(path, dataset_dir))
        if found is None:
            return None
        return runs_pb2.InputFile(name=key, size=found.size, sha256=found.sha256, key=object_key(space, found.sha256))
    uploaded = inputs.get(f"{PACKAGE_ROOT}/{_name(path, package_dir)}") if _under(path, package_dir) else None
    if uploaded is None:
        return None
    return runs_pb2.InputFile(name=key, size=uploaded.size, sha256=uploaded.sha256, key=uploaded.key)


def check_package_spec(spec: runs_pb2.RunSpec) -> None:
    """``OptionError`` for a package run whose name is no SubID (MFC2019 plan, Appendix A) or that names tables (the
    aggregator plans them)."""
    report = ValidationReport()
    check_subid(report, spec.package, file="", what="package name")
    if not report.valid:
        raise OptionError(next(f.message for f in report.findings if f.severity is Severity.ERROR).rstrip("."))
    if spec.tables:
        raise OptionError("a package run names no tables: the aggregator plans it against the dataset")
