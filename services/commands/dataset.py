"""``mfscore dataset register|list|show|release|delete``: reference data registered once on a cluster (DatasetService,
docs/datasets.md), which runs then name with ``mfscore submit --dataset NAME@VERSION``.

``register`` declares every file under a directory (name under it, size, SHA-256), uploads only those whose bytes
the caller has not uploaded before (with progress), and creates the dataset: registering unchanged data again
uploads nothing and returns the same dataset, and a new version uploads only its changed files. A dataset the caller
may not read is "no dataset", whoever's it is.

A shared dataset's release (``--release``, docs/release.md) says what other callers receive from runs against it;
short of ``open`` its reference is sealed to them: ``show`` and ``list`` say so instead of its files, sizes and
digests. ``release`` opens its runs' full reports to their owners.

A name is lowercase, its version a whole number (``eval@1``); a client's datasets are named after it
(``alice/masks@1``) and the operator's have no owner part (docs/datasets.md "Names"). A name outside that grammar
stops here, before anything is uploaded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mfscore.errors import MfscoreError

RELEASES = ("aggregate", "per-trial", "open")  # DatasetRelease's values, as the command line names them


def add_parser(subparsers) -> None:
    from mfscore.cli.documentation import see

    p = subparsers.add_parser("dataset",
                              help="register reference data on a cluster once; list, show, release, delete it",
                              description="Datasets on a cluster: reference data registered once, which runs name "
                                          "with 'mfscore submit --dataset NAME@VERSION' instead of uploading it.")
    commands = p.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    register = commands.add_parser("register", help="register the files under DIR as NAME@VERSION",
                                   description="Declare every file under DIR, upload those the cluster lacks, and "
                                               "create the dataset NAME@VERSION (unchanged data: nothing is uploaded "
                                               "and the same dataset is returned).")
    register.add_argument("dataset", metavar="NAME@VERSION",
                          help="lowercase, the version a whole number: an operator's 'eval@1', a client's after its "
                               "name, 'alice/masks@1'")
    register.add_argument("directory", metavar="DIR", help="the dataset's root: the --refDir its runs name")
    register.add_argument("--shared", action="store_true", help="every caller may score against it (operators only)")
    register.add_argument("--release", choices=RELEASES,
                          help="what other callers receive from their runs against a shared dataset until it is "
                               "released; default: the cluster's, aggregate for a shared dataset "
                               f"({see(register, 'release.md')})")
    listing = commands.add_parser("list", help="the datasets you may read, oldest first")
    show = commands.add_parser("show", help="a dataset: its owner, manifest digest and files")
    show.add_argument("dataset", metavar="NAME@VERSION")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    release = commands.add_parser("release", help="open the full reports of a dataset's runs to their owners",
                                  description="Release a dataset (yours; an operator, any): each run against it "
                                              "gives its owner every report file from now on. Once only: releasing "
                                              "again changes nothing.")
    release.add_argument("dataset", metavar="NAME@VERSION")
    delete = commands.add_parser("delete", help="remove a dataset (yours; an operator, any) and its objects",
                                 description="Delete a dataset, and the objects that nothing else names; refused "
                                             "while a run that has not ended names it.")
    delete.add_argument("dataset", metavar="NAME@VERSION")
    for command in (register, listing, show, release, delete):
        command.add_argument("--cluster", help="cluster file written by 'mfscore local-cluster up'")
    p.set_defaults(run=run)


def run(args) -> int:
    from mfscore.services.commands.cluster_config import resolve

    config = resolve(args.cluster)
    command = {"register": register, "list": print_datasets, "show": show, "release": release,
               "delete": delete}[args.dataset_command]
    return command(config, args)


def _calling(config, call, what: str):
    """``call(stub)`` on DatasetService (reconnecting while the aggregator is away); a refusal is ``MfscoreError``
    with the aggregator's sentence."""
    import grpc

    from mfscore.services.commands.report import Reconnecting, calling
    from mfscore.services.wire import datasets_pb2_grpc

    try:
        return calling(config, call, Reconnecting(config.aggregator_address, what),
                       datasets_pb2_grpc.DatasetServiceStub)
    except grpc.RpcError as error:
        raise MfscoreError(error.details() or error.code().name) from None


def _name(reference: str) -> tuple[str, str]:
    from mfscore.services.common.run_layout import BadName, parse_dataset

    try:
        return parse_dataset(reference)
    except BadName as error:
        raise MfscoreError(error.sentence()) from None


def tree_files(directory: str, *, what: str = "dataset file name") -> list[tuple[str, str]]:
    """(local path, name under ``directory``) of every regular file under it, by name; a symbolic link leading out
    of it, or a name the cluster would refuse (``what`` it is), stops here."""
    from mfscore.services.common.run_layout import BadName, check_file_name

    root = Path(directory).resolve()
    if not root.is_dir():
        raise MfscoreError(f"{directory} is not a directory")
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                raise MfscoreError(f"{path} is a symbolic link to {path.resolve()}, outside {directory}")
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file():
                relative = path.relative_to(root).as_posix()
                try:
                    check_file_name(relative, what)
                except BadName as error:
                    raise MfscoreError(error.sentence()) from None
                files.append((str(path), relative))
    return sorted(files, key=lambda item: item[1])


def release_value(release: str | None) -> int:
    """The ``DatasetRelease`` the command line's ``release`` names (None: UNSPECIFIED, the cluster's default)."""
    from mfscore.services.wire import datasets_pb2

    return datasets_pb2.DatasetRelease.Value(f"DATASET_RELEASE_{release.upper().replace('-', '_')}") if release \
        else datasets_pb2.DATASET_RELEASE_UNSPECIFIED


def release_text(dataset) -> str:
    """The dataset's release as the command line names it (UNSPECIFIED, a dataset recorded before: ``open``)."""
    from mfscore.services.wire import datasets_pb2

    value = dataset.release or datasets_pb2.DATASET_RELEASE_OPEN
    if value not in datasets_pb2.DatasetRelease.values():
        return f"release {value}"
    return datasets_pb2.DatasetRelease.Name(value)[len("DATASET_RELEASE_"):].lower().replace("_", "-")


def _when(stamp) -> str:
    return stamp.ToDatetime().strftime("%Y-%m-%d %H:%M:%S UTC")


def _sealed(dataset) -> bool:
    """Whether the cluster sealed the dataset's reference to the caller: a dataset holds a file, so its manifest
    digest is empty only when GetDataset or ListDatasets left it out."""
    return not dataset.manifest_sha256


def register_dataset(config, reference: str, directory: str, *, shared: bool = False, release: str | None = None,
                     interactive: bool = False):
    """Register the files under ``directory`` as ``reference`` (``name@version``), with the release ``release``
    (None: the cluster's default): (the CreateDatasetResponse, what was uploaded, ``upload.Sent``)."""
    from mfscore.services.commands.upload import Sent, declarations, in_batches, send_files
    from mfscore.services.wire import datasets_pb2

    name, version = _name(reference)
    if release not in (None, "open") and not shared:
        raise MfscoreError(f"the dataset {reference} is not shared, so its release is open (only its owner and the "
                           f"operators score against it); leave --release {release} out, or add --shared")
    files = tree_files(directory)
    if not files:
        raise MfscoreError(f"{directory} holds no file")
    declared = declarations(files)
    missing: set[str] = set()
    for batch in in_batches([d for _, d in declared]):
        request = datasets_pb2.DeclareDatasetFilesRequest(name=name, version=version, shared=shared, files=batch)
        missing |= set(_calling(config, lambda stub: stub.DeclareDatasetFiles(request, timeout=600).missing,
                                reference))
    sending = list({d.sha256: (path, d) for path, d in declared if d.name in missing}.values())  # a content once
    send_files(config, "UploadObjects", "", sending, f"dataset {reference} uploading", threads=8,
               interactive=interactive, failing=f"the aggregator at {config.aggregator_address} did not take the "
                                                f"files of the dataset {reference}")
    sent_bytes = sum(d.size for _, d in sending)
    sent = Sent(len(sending), sent_bytes, len(declared) - len(sending), sum(d.size for _, d in declared) - sent_bytes)

    def requests():
        batches = list(in_batches([d for _, d in declared])) or [[]]
        yield datasets_pb2.CreateDatasetRequest(name=name, version=version, shared=shared, files=batches[0],
                                                release=release_value(release))
        for batch in batches[1:]:
            yield datasets_pb2.CreateDatasetRequest(files=batch)

    created = _calling(config, lambda stub: stub.CreateDataset(requests(), timeout=600), reference)
    return created, sent


def register(config, args) -> int:
    interactive = sys.stderr.isatty()
    created, sent = register_dataset(config, args.dataset, args.directory, shared=args.shared, release=args.release,
                                     interactive=interactive)
    dataset = created.dataset
    said = "registered" if created.created else "was registered already with these files; nothing changed:"
    print(f"{args.dataset} {said} {dataset.file_count} file(s), {dataset.total_bytes} bytes"
          f"{', shared, release ' + release_text(dataset) if dataset.shared else ''}; "
          f"manifest {dataset.manifest_sha256}")
    print(sent.sentence())
    return 0


def list_datasets(config):
    """Every dataset the caller may read, oldest created first, ListDatasets' pages one after another."""
    from mfscore.services.wire import datasets_pb2

    found, token = [], ""
    while True:
        page = _calling(config, lambda stub: stub.ListDatasets(datasets_pb2.ListDatasetsRequest(page_token=token),
                                                               timeout=60), "(listing)")
        found += page.datasets
        token = page.next_page_token
        if not token:
            return found


def list_files(config, reference: str) -> list:
    """Every file of the dataset ``reference`` (``name@version``) in name order, ListDatasetFiles' pages one after
    another."""
    from mfscore.services.wire import datasets_pb2

    name, version = _name(reference)
    found, token = [], ""
    while True:
        request = datasets_pb2.ListDatasetFilesRequest(name=name, version=version, page_token=token)
        page = _calling(config, lambda stub: stub.ListDatasetFiles(request, timeout=60), reference)
        found += page.files
        token = page.next_page_token
        if not token:
            return found


def print_datasets(config, args) -> int:
    datasets = list_datasets(config)
    print(f"{'DATASET':<40} {'FILES':>8} {'BYTES':>14}  {'SHARED':<6} {'OWNER':<12} {'CREATED':<23}  RELEASE")
    for dataset in datasets:
        sealed = _sealed(dataset)
        print(f"{dataset.name + '@' + dataset.version:<40} {'sealed' if sealed else dataset.file_count:>8} "
              f"{'sealed' if sealed else dataset.total_bytes:>14}  {'yes' if dataset.shared else 'no':<6} "
              f"{dataset.owner:<12} {_when(dataset.created_at):<23}  {release_text(dataset)}"
              f"{', released ' + _when(dataset.released_at) if dataset.HasField('released_at') else ''}")
    print(f"{len(datasets)} dataset(s)")
    return 0


def show(config, args) -> int:
    from mfscore.services.wire import datasets_pb2

    name, version = _name(args.dataset)
    dataset = _calling(config, lambda stub: stub.GetDataset(datasets_pb2.GetDatasetRequest(name=name, version=version),
                                                            timeout=60).dataset, args.dataset)
    sealed = _sealed(dataset)
    files = [] if sealed else list_files(config, args.dataset)
    release_said = release_text(dataset)
    if args.json:
        print(json.dumps({"name": dataset.name, "version": dataset.version, "owner": dataset.owner,
                          "owner_role": dataset.owner_role, "shared": dataset.shared, "release": release_said,
                          "released_at": dataset.released_at.ToJsonString() if dataset.HasField("released_at")
                          else None, "sealed": sealed,
                          "manifest_sha256": None if sealed else dataset.manifest_sha256,
                          "file_count": None if sealed else dataset.file_count,
                          "total_bytes": None if sealed else dataset.total_bytes,
                          "created_at": dataset.created_at.ToJsonString(),
                          "files": None if sealed else [{"name": f.name, "size": f.size, "sha256": f.sha256}
                                                        for f in files]}, indent=2))
        return 0
    print(f"dataset   {dataset.name}@{dataset.version}")
    print(f"owner     {dataset.owner} ({dataset.owner_role}){', shared' if dataset.shared else ''}, "
          f"release {release_said}")
    print(f"created   {_when(dataset.created_at)}"
          f"{', released ' + _when(dataset.released_at) if dataset.HasField('released_at') else ''}")
    if sealed:
        print(f"files     sealed: its owner releases {release_said} results only, not the reference's files, sizes "
              "or digests")
        return 0
    print(f"files     {dataset.file_count}, {dataset.total_bytes} bytes")
    print(f"manifest  {dataset.manifest_sha256}")
    for file in files:
        print(f"{file.sha256}  {file.size:>12}  {file.name}")
    return 0


def release(config, args) -> int:
    from mfscore.services.wire import datasets_pb2

    name, version = _name(args.dataset)
    dataset = _calling(config, lambda stub: stub.ReleaseDataset(
        datasets_pb2.ReleaseDatasetRequest(name=name, version=version), timeout=60).dataset, args.dataset)
    print(f"{args.dataset} released {_when(dataset.released_at)}")
    return 0


def delete(config, args) -> int:
    from mfscore.services.wire import datasets_pb2

    name, version = _name(args.dataset)
    _calling(config, lambda stub: stub.DeleteDataset(datasets_pb2.DeleteDatasetRequest(name=name, version=version),
                                                     timeout=600), args.dataset)
    print(f"mfscore: dataset {args.dataset} deleted", file=sys.stderr)
    return 0
