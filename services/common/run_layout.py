"""Where a run's things live in the object store, and which names may reach a NATS subject, an S3 key or a log line.

One place knows the layout: ``runs/<id>/uploads/`` (the run's input manifest), ``runs/<id>/inputs/``,
``runs/<id>/reports/``, the content-addressed objects ``objects/<role>/<name>/<sha256>`` of each caller's namespace,
``datasets/<name>@<version>/files.pb`` in the object store, and a run's scratch directory on the aggregator's disk.
Every name a caller sends (run id, input file name, output name, table name, dataset name and version) is checked
here with a full match: a name with a newline, a carriage return, a NUL or another control character, a backslash
or a '..' part is refused before it is used anywhere.
"""

from __future__ import annotations

import os
import re

from mfscore.services.common.status_codes import InvalidArgument

RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]|\.(?!\.)){0,63}(?<!\.)")  # a namespace part
SHA256 = re.compile(r"[0-9a-f]{64}")
_LOWER = r"[a-z0-9](?:[a-z0-9_-]|\.(?!\.)){0,63}(?<!\.)"
DATASET_NAME = re.compile(rf"(?:{_LOWER}/)?{_LOWER}")  # an operator's name, or a client's: its owner's name first
DATASET_VERSION = re.compile(r"[1-9][0-9]{0,8}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NAME_BYTES = 1024
MAX_PART_BYTES = 255
MAX_OUTPUT_NAME = 200
RUNS = "runs/"  # every run's objects are under it; the aggregator owns the prefix
OBJECTS = "objects/"    # every caller's content-addressed objects, a namespace each; the aggregator owns it too
DATASETS = "datasets/"  # every dataset's list of files; and this
PACKAGE = "package"     # a package run's uploaded package: its files' names in the run are package/<path in it>


class BadName(InvalidArgument):
    """A caller's name that may not be used as a run id, a key or a file name."""


def check_run_id(run_id: str) -> str:
    if not RUN_ID.fullmatch(run_id):
        raise BadName(f"the run id {run_id[:80]!r} is not 1-64 letters, digits, '-' or '_'")
    return run_id


def check_file_name(name: str, what: str = "file name") -> str:
    """A relative '/'-separated path: no empty, '.' or '..' part, no backslash or control character, bounded."""
    parts = name.split("/")
    if (not name or _CONTROL.search(name) or "\\" in name or len(name.encode()) > MAX_NAME_BYTES
            or any(part in ("", ".", "..") or len(part.encode()) > MAX_PART_BYTES for part in parts)):
        raise BadName(f"the {what} {name[:200]!r} is not a relative path of plain names (no empty, '.' or '..' part, "
                      f"no backslash or control character, at most {MAX_NAME_BYTES} bytes)")
    return name


def check_output_name(name: str) -> str:
    """The PREFIX of ``-o DIR/PREFIX``: one file-name part (it may be empty), no control character."""
    if name and (len(name) > MAX_OUTPUT_NAME or name == ".." or "/" in name or "\\" in name or _CONTROL.search(name)):
        raise BadName(f"the output name {name[:80]!r} is not a file name of at most {MAX_OUTPUT_NAME} characters "
                      "without '/', '\\' or a control character")
    return name


def run_prefix(run_id: str) -> str:
    return f"{RUNS}{check_run_id(run_id)}/"


def input_prefix(run_id: str) -> str:
    """A run's uploaded inputs: a prefix of its own, so no run reads another's."""
    return run_prefix(run_id) + "inputs/"


def uploads_prefix(run_id: str) -> str:
    """What the aggregator recorded of a run's uploads: per UploadInputs stream, the files it stored and their
    SHA-256 (``UploadInputsResponse``), which the run's provenance reads."""
    return run_prefix(run_id) + "uploads/"


def reports_prefix(run_id: str) -> str:
    """The report files the aggregator wrote for a run."""
    return run_prefix(run_id) + "reports/"


def manifest_key(run_id: str) -> str:
    """The run's report manifest (``ReportManifest``): every report file's name, size and SHA-256."""
    return run_prefix(run_id) + "report-manifest.pb"


def namespace(role: str, name: str) -> str:
    """A caller's namespace of objects, ``<role>/<name>``: what it uploaded, stored once per content."""
    for part, what in ((role, "role"), (name, "name")):
        if not TOKEN.fullmatch(part):
            raise BadName(f"the caller {what} {part[:80]!r} cannot name a namespace of objects: it must be 1-64 "
                          "letters, digits, '.', '_' or '-', starting with a letter or digit")
    return f"{role}/{name}"


def objects_prefix(space: str) -> str:
    """The objects of the namespace ``space`` (``namespace``)."""
    return f"{OBJECTS}{space}/"


def object_key(space: str, sha256: str) -> str:
    """The object holding the bytes whose SHA-256 is ``sha256`` in the namespace ``space``."""
    if not SHA256.fullmatch(sha256):
        raise BadName(f"the SHA-256 {sha256[:80]!r} is not 64 lowercase hexadecimal digits")
    return f"{objects_prefix(space)}{sha256}"


def check_object_key(key: str) -> str:
    """A key ``objects/<role>/<name>/<sha256>`` and nothing else; ``BadName`` otherwise."""
    parts = key.split("/")
    if (len(parts) != 4 or f"{parts[0]}/" != OBJECTS or not TOKEN.fullmatch(parts[1]) or not TOKEN.fullmatch(parts[2])
            or not SHA256.fullmatch(parts[3])):
        raise BadName(f"{key[:200]!r} is not an object key (objects/<role>/<name>/<sha256>)")
    return key


def check_dataset(name: str, version: str) -> str:
    """``name@version`` in the one grammar of dataset names (docs/datasets.md "Names"); ``BadName`` otherwise.

    The name is 1-64 lowercase ASCII letters, digits, '.', '_' or '-' starting with a letter or digit (no '..',
    not ending with '.'), optionally after an owner's name of the same characters and '/' (``alice/masks``: a
    client's dataset); the version a positive whole number without leading zeros. Nothing is folded: ``EVAL@1``,
    ``eval@1.0`` and ``eval@01`` are refused, so one dataset has one spelling.
    """
    if not DATASET_NAME.fullmatch(name):
        lower = name.lower()
        hint = f" (write {lower!r})" if lower != name and DATASET_NAME.fullmatch(lower) else ""
        raise BadName(f"the dataset name {name[:80]!r} is not 1-64 lowercase letters, digits, '.', '_' or '-' starting "
                      f"with a letter or digit, optionally after its owner's name and '/'{hint}")
    if not DATASET_VERSION.fullmatch(version):
        raise BadName(f"the dataset version {version[:80]!r} is not a positive whole number without leading zeros "
                      "(1, 2, 3, ...)")
    return f"{name}@{version}"


def dataset_owner(name: str) -> str | None:
    """The owner's name a dataset name starts with (``alice`` of ``alice/masks``); None for an operator's."""
    owner, slash, _ = name.rpartition("/")
    return owner if slash else None


def parse_dataset(reference: str) -> tuple[str, str]:
    """(name, version) of ``name@version``; ``BadName`` otherwise."""
    name, at, version = reference.partition("@")
    if not at:
        raise BadName(f"the dataset {reference[:80]!r} is not NAME@VERSION")
    check_dataset(name, version)
    return name, version


def dataset_files_key(name: str, version: str) -> str:
    """The dataset's list of files (``DatasetFiles``), whose digest its record in the bucket holds."""
    return f"{DATASETS}{check_dataset(name, version)}/files.pb"


def work_dir(root: str, run_id: str, part: str = "") -> str:
    """A run's scratch directory under ``root`` on the aggregator's disk, or its ``part``: ``inputs`` (the tables
    fetched to plan it), ``out`` (its reports before they are stored), ``uploading`` (files being checked)."""
    return os.path.join(root, "runs", check_run_id(run_id), part)
