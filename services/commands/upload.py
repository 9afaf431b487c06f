"""A run's inputs, sent through the aggregator: ``CreateRun``, then ``UploadInputs`` streams.

The client holds no object-store credential: it declares each file (its key in the upload, size, SHA-256) and
streams its bytes; the aggregator checks all three and stores the file under the run's own prefix. The files are
spread over a few concurrent streams, by size; a stream the aggregator could not finish (UNAVAILABLE: it
restarted, or S3 is away) is sent again, and a file sent twice is stored once. An interrupted upload
(Ctrl-C) cancels its streams at once; the run stays created, never submitted, and the aggregator deletes
it after a day.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from mfscore.errors import MfscoreError
from mfscore.run_record import file_sha256

UPLOAD_THREADS = 8
CHUNK_BYTES = 256 << 10


def _requests(run_id: str, files: list[tuple[str, str]], sent):
    """The UploadInputs messages for ``files`` ((local path, key) pairs): the run, then each file declared and
    chunked; ``sent(n)`` is told of every chunk."""
    from mfscore.services.wire import runs_pb2

    yield runs_pb2.UploadInputsRequest(run_id=run_id)
    for path, key in files:
        declared = runs_pb2.DeclaredFile(name=key, size=os.path.getsize(path), sha256=file_sha256(path))
        yield runs_pb2.UploadInputsRequest(file=declared)
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                yield runs_pb2.UploadInputsRequest(chunk=chunk)
                sent(len(chunk))


def batches(files: list[tuple[str, str]], count: int) -> list[list[tuple[str, str]]]:
    """``files`` spread over at most ``count`` batches of about equal bytes (largest first, each to the lightest)."""
    loads = [[0, []] for _ in range(max(1, min(count, len(files))))]
    for size, path, key in sorted(((os.path.getsize(path), path, key) for path, key in files), reverse=True):
        lightest = min(loads, key=lambda load: load[0])
        lightest[0] += size
        lightest[1].append((path, key))
    return [load[1] for load in loads if load[1]]


def upload_run(config, files: list[tuple[str, str]], *, threads: int = UPLOAD_THREADS,
               interactive: bool = False) -> str:
    """Create a run on the cluster ``config`` names and upload ``files`` ((local path, key) pairs) into it; its id."""
    run_id = create_run(config)
    upload_files(config, run_id, files, threads=threads, interactive=interactive)
    return run_id


def create_run(config) -> str:
    """A new run on the cluster ``config`` names (``CreateRun``), owned by this caller; its id."""
    import grpc

    from mfscore.services.commands.report import Reconnecting, calling
    from mfscore.services.wire import runs_pb2

    address = config.aggregator_address
    try:
        return calling(config, lambda stub: stub.CreateRun(runs_pb2.CreateRunRequest(), timeout=60).run_id,
                       Reconnecting(address, "(a new run)"))
    except grpc.RpcError as error:
        raise MfscoreError(f"the aggregator at {address} did not create a run: "
                           f"{error.details() or error.code().name}") from None


def upload_files(config, run_id: str, files: list[tuple[str, str]], *, threads: int = UPLOAD_THREADS,
                 interactive: bool = False) -> None:
    """Upload ``files`` into the created run ``run_id``, over at most ``threads`` streams (a file sent again
    replaces what it sent before). Interrupted (Ctrl-C), it cancels every stream and waits for none."""
    import grpc

    from mfscore.services.commands.report import Reconnecting, calling

    address = config.aggregator_address
    total = sum(os.path.getsize(path) for path, _ in files)
    streams = _Streams()
    with _progress(run_id, total, interactive) as sent:
        def send(batch):
            call = lambda stub: streams.result(stub.UploadInputs.future(_requests(run_id, batch, sent),  # noqa: E731
                                                                        timeout=3600))
            return calling(config, call, Reconnecting(address, run_id))

        pool = ThreadPoolExecutor(threads)
        try:
            list(pool.map(send, batches(files, threads)))
        except grpc.RpcError as error:
            pool.shutdown()
            raise MfscoreError(f"the aggregator at {address} did not take the inputs of run {run_id}: "
                               f"{error.details() or error.code().name}") from None
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
def _progress(run_id: str, total: int, interactive: bool):
    """``sent(n)``: a bar of the bytes uploaded on an interactive terminal, nothing otherwise."""
    if not (interactive and total):
        yield lambda n: None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn(f"run {run_id[:8]} uploading"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task("upload", total=total)
        yield lambda n: progress.advance(bar, n)
