"""A run's inputs, sent through the aggregator: ``CreateRun``, ``DeclareInputs``, then ``UploadInputs`` streams of
what the cluster lacks; and a dataset's files, ``DeclareDatasetFiles`` then ``UploadObjects`` streams.

The client holds no object-store credential: it declares each file (its name, size, SHA-256) first, and the
aggregator answers which it lacks (docs/datasets.md): a file whose bytes the caller uploaded before, or that the
run's dataset holds, is not sent again. The rest is streamed; the aggregator checks name, size and digest and stores
each file once per content. The files are spread over a few concurrent streams, by size; a stream the aggregator
could not finish (UNAVAILABLE: it restarted, or S3 is away) is sent again, and a file sent twice is stored once. An
interrupted upload (Ctrl-C) cancels its streams at once; the run stays created, never submitted, and the aggregator
deletes it after a day.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mfscore.errors import MfscoreError
from mfscore.run_record import file_sha256

UPLOAD_THREADS = 8
CHUNK_BYTES = 256 << 10
DECLARE_BYTES = 512 << 10  # declarations per DeclareInputs call: well under the server's 1 MiB a request


@dataclass(frozen=True)
class Sent:
    """What an upload sent, and what it did not because the cluster held it already."""

    files: int
    bytes: int
    skipped_files: int
    skipped_bytes: int

    def sentence(self) -> str:
        return (f"uploaded {self.files} file(s), {_size(self.bytes)}; {self.skipped_files} file(s), "
                f"{_size(self.skipped_bytes)}, were on the cluster already")


def _size(count: int) -> str:
    return f"{count} bytes" if count < 10_000 else f"{count / 1e6:.1f} MB"


def declarations(files: list[tuple[str, str]], *, threads: int = UPLOAD_THREADS) -> list:
    """(local path, DeclaredFile) of each of ``files`` ((local path, name) pairs): its size and SHA-256."""
    from mfscore.services.wire import runs_pb2

    def declare(item):
        path, name = item
        return path, runs_pb2.DeclaredFile(name=name, size=os.path.getsize(path), sha256=file_sha256(path))

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(declare, files))


def in_batches(declared: list, limit: int = DECLARE_BYTES):
    """``declared`` DeclaredFiles in consecutive batches of at most about ``limit`` bytes on the wire."""
    batch, size = [], 0
    for file in declared:
        if batch and size + file.ByteSize() + 8 > limit:
            yield batch
            batch, size = [], 0
        batch.append(file)
        size += file.ByteSize() + 8
    if batch:
        yield batch


def _requests(run_id: str, files: list, sent):
    """The UploadInputs messages for ``files`` ((local path, DeclaredFile) pairs): the run, then each file declared and
    chunked; ``sent(n)`` is told of every chunk. With no ``run_id``, UploadObjects messages (no run)."""
    from mfscore.services.wire import datasets_pb2, runs_pb2

    message = runs_pb2.UploadInputsRequest if run_id else datasets_pb2.UploadObjectsRequest
    if run_id:
        yield message(run_id=run_id)
    for path, declared in files:
        yield message(file=declared)
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                yield message(chunk=chunk)
                sent(len(chunk))


def batches(files: list, count: int) -> list[list]:
    """``files`` ((local path, name or declaration) pairs) spread over at most ``count`` batches of about equal bytes
    (largest first, each to the lightest)."""
    loads = [[0, []] for _ in range(max(1, min(count, len(files))))]
    for size, index in sorted(((os.path.getsize(item[0]), index) for index, item in enumerate(files)), reverse=True):
        lightest = min(loads, key=lambda load: load[0])
        lightest[0] += size
        lightest[1].append(files[index])
    return [load[1] for load in loads if load[1]]


def upload_run(config, files: list[tuple[str, str]], *, threads: int = UPLOAD_THREADS,
               interactive: bool = False, dataset: str = "") -> str:
    """Create a run on the cluster ``config`` names (scoring against ``dataset``, if any) and upload ``files``
    ((local path, name) pairs) into it, those the cluster lacks; its id."""
    run_id = create_run(config, dataset)
    upload_files(config, run_id, files, threads=threads, interactive=interactive)
    return run_id


def create_run(config, dataset: str = "", *, campaign: str = "", competition: str = "") -> str:
    """A new run on the cluster ``config`` names (``CreateRun``), owned by this caller, scoring against ``dataset``
    (``name@version``) if given, or submitted to a ``campaign``'s ``competition``; its id."""
    import grpc

    from mfscore.services.commands.report import Reconnecting, calling
    from mfscore.services.wire import runs_pb2

    address = config.aggregator_address
    try:
        request = runs_pb2.CreateRunRequest(dataset=dataset, campaign=campaign, competition=competition)
        return calling(config, lambda stub: stub.CreateRun(request, timeout=60).run_id,
                       Reconnecting(address, "(a new run)"))
    except grpc.RpcError as error:
        raise MfscoreError(f"the aggregator at {address} did not create a run: "
                           f"{error.details() or error.code().name}") from None


def declare_inputs(config, run_id: str, declared: list) -> list[str]:
    """``DeclareInputs`` of ``declared`` (DeclaredFiles) into the created run ``run_id``, in batches; the names the
    cluster lacks (the others are recorded in the run's input manifest)."""
    from mfscore.services.commands.report import Reconnecting, calling
    from mfscore.services.wire import runs_pb2

    missing: list[str] = []
    for batch in in_batches(declared):
        request = runs_pb2.DeclareInputsRequest(run_id=run_id, files=batch)
        missing += calling(config, lambda stub: stub.DeclareInputs(request, timeout=600).missing,
                           Reconnecting(config.aggregator_address, run_id))
    return missing


def upload_files(config, run_id: str, files: list[tuple[str, str]], *, threads: int = UPLOAD_THREADS,
                 interactive: bool = False, known: list | None = None) -> Sent:
    """Declare ``files`` ((local path, name) pairs) and ``known`` (DeclaredFiles of files not here, a dataset's
    that the run reads) to the created run ``run_id``, then upload those the cluster lacks over at most ``threads``
    streams (a file sent again replaces what it sent before). Interrupted (Ctrl-C), it cancels every stream and
    waits for none."""
    import grpc

    address = config.aggregator_address
    declared = declarations(files, threads=threads)
    try:
        missing = set(declare_inputs(config, run_id, [d for _, d in declared] + list(known or ())))
    except grpc.RpcError as error:
        raise MfscoreError(f"the aggregator at {address} did not take the inputs of run {run_id}: "
                           f"{error.details() or error.code().name}") from None
    first: dict[tuple[str, int], tuple[str, object]] = {}
    again = []  # the same bytes under another name: declared again once they are sent
    for path, d in declared:
        if d.name in missing:
            if (d.sha256, d.size) in first:
                again.append((path, d))
            else:
                first[d.sha256, d.size] = (path, d)
    sending = list(first.values())
    failing = f"the aggregator at {address} did not take the inputs of run {run_id}"
    send_files(config, "UploadInputs", run_id, sending, f"run {run_id[:8]} uploading", threads=threads,
               interactive=interactive, failing=failing)
    if again:
        try:
            still = set(declare_inputs(config, run_id, [d for _, d in again]))
        except grpc.RpcError as error:
            raise MfscoreError(f"{failing}: {error.details() or error.code().name}") from None
        late = [(path, d) for path, d in again if d.name in still]  # gone meanwhile: sent after all
        send_files(config, "UploadInputs", run_id, late, f"run {run_id[:8]} uploading", threads=threads,
                   interactive=interactive, failing=failing)
        sending += late
    sent_bytes = sum(d.size for _, d in sending)
    return Sent(len(sending), sent_bytes, len(declared) - len(sending), sum(d.size for _, d in declared) - sent_bytes)


def send_files(config, method: str, run_id: str, files: list, label: str, *, threads: int, interactive: bool,
               failing: str) -> None:
    """Stream ``files`` ((local path, DeclaredFile) pairs) with the client-streaming ``method`` (UploadInputs into
    ``run_id``, or UploadObjects with no run), over at most ``threads`` streams, with a bar labelled ``label`` on
    an interactive terminal; a refusal raises ``MfscoreError`` starting with ``failing``."""
    import grpc

    from mfscore.services.commands.report import Reconnecting, calling
    from mfscore.services.wire import datasets_pb2_grpc

    if not files:
        return
    total = sum(d.size for _, d in files)
    streams = _Streams()
    service = datasets_pb2_grpc.DatasetServiceStub if method == "UploadObjects" else None
    with _progress(label, total, interactive) as sent:
        def send(batch):
            call = lambda stub: streams.result(getattr(stub, method).future(  # noqa: E731
                _requests(run_id, batch, sent), timeout=3600))
            return calling(config, call, Reconnecting(config.aggregator_address, run_id or label), service)

        pool = ThreadPoolExecutor(threads)
        try:
            list(pool.map(send, batches(files, threads)))
        except grpc.RpcError as error:
            pool.shutdown()
            raise MfscoreError(f"{failing}: {error.details() or error.code().name}") from None
        except BaseException:  # interrupted: stop sending
            streams.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()


class _Streams:
    """The upload streams under way, so that an interrupted upload cancels them all (and any started after)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls = set()
        self._cancelled = False

    def result(self, call):
        """``call``'s response, once it is done or cancelled."""
        with self._lock:
            self._calls.add(call)
            if self._cancelled:
                call.cancel()
        try:
            return call.result()
        finally:
            with self._lock:
                self._calls.discard(call)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            for call in self._calls:
                call.cancel()


@contextlib.contextmanager
def _progress(label: str, total: int, interactive: bool):
    """``sent(n)``: a bar of the bytes uploaded on an interactive terminal, nothing otherwise."""
    if not (interactive and total):
        yield lambda n: None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task("upload", total=total)
        yield lambda n: progress.advance(bar, n)
