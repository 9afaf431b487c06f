"""The names a caller sends, checked whole before they reach a NATS subject, an S3 key or a log line; and the
upload's spread of files over streams."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from mfscore.services.aggregator.uploads import UploadRefused, receive
from mfscore.services.commands.upload import batches
from mfscore.services.common.run_layout import (
    BadName,
    check_file_name,
    check_output_name,
    check_run_id,
    input_prefix,
    manifest_key,
    reports_prefix,
)
from mfscore.services.wire import runs_pb2

HOSTILE = ["\n", "\r", "\0", "\x1b", "\x7f"]


@pytest.mark.parametrize("run_id", ["a", "A-b_9", "f" * 64])
def test_a_run_id_of_one_token_passes(run_id):
    assert check_run_id(run_id) == run_id
    assert input_prefix(run_id) == f"runs/{run_id}/inputs/"
    assert reports_prefix(run_id) == f"runs/{run_id}/reports/"
    assert manifest_key(run_id) == f"runs/{run_id}/report-manifest.pb"


@pytest.mark.parametrize("run_id", ["", "f" * 65, "a.b", "a/b", "a b", "*", ">", *(f"abc{c}" for c in HOSTILE),
                                    *(f"{c}abc" for c in HOSTILE)])
def test_a_run_id_with_anything_else_anywhere_is_refused(run_id):
    with pytest.raises(BadName, match="is not 1-64 letters"):
        check_run_id(run_id)
    with pytest.raises(BadName):
        input_prefix(run_id)


@pytest.mark.parametrize("name", ["ref/r.csv", "sys/mask/a b (1).png", "x", "ü/é.png", "a" * 255])
def test_a_relative_path_of_plain_names_passes(name):
    assert check_file_name(name) == name


@pytest.mark.parametrize("name", ["", "/abs", "a/", "a//b", "./a", "a/./b", "..", "../a", "a/../b", "a\\b",
                                  "a" * 256, "/".join(["a" * 200] * 6), *(f"ref/a{c}.csv" for c in HOSTILE)])
def test_any_other_file_name_is_refused(name):
    with pytest.raises(BadName, match="is not a relative path of plain names"):
        check_file_name(name)


@pytest.mark.parametrize("name", ["", "x", "team_1-run.2", "a" * 200])
def test_an_output_name_of_one_plain_part_passes(name):
    assert check_output_name(name) == name


@pytest.mark.parametrize("name", ["..", "a/b", "a\\b", "a" * 201, *(f"x{c}" for c in HOSTILE)])
def test_any_other_output_name_is_refused(name):
    with pytest.raises(BadName, match="is not a file name"):
        check_output_name(name)


def test_batches_hold_every_file_once_and_about_equal_bytes(tmp_path):
    sizes = [5000, 4000, 3000, 3000, 2000, 1000, 1000, 0]
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i}"
        path.write_bytes(b"x" * size)
        files.append((str(path), f"ref/f{i}"))
    spread = batches(files, 3)
    assert sorted(f for batch in spread for f in batch) == sorted(files)
    loads = [sum(sizes[int(key[5:])] for _, key in batch) for batch in spread]
    assert max(loads) - min(loads) <= max(sizes)
    assert batches(files[:2], 8) == [[files[0]], [files[1]]]  # never more batches than files


def messages(run_id: str, *files: tuple[str, bytes], chunk: int = 3):
    yield runs_pb2.UploadInputsRequest(run_id=run_id)
    for name, content in files:
        yield runs_pb2.UploadInputsRequest(file=runs_pb2.DeclaredFile(
            name=name, size=len(content), sha256=hashlib.sha256(content).hexdigest()))
        for start in range(0, len(content), chunk):
            yield runs_pb2.UploadInputsRequest(chunk=content[start:start + chunk])


def received(stream, tmp_path, max_bytes: int = 1 << 20) -> dict[str, bytes]:
    """What ``receive`` stores from the messages ``stream``."""
    stored = {}

    async def store(declared, data):
        data.seek(0)
        stored[declared.name] = data.read()
        assert len(stored[declared.name]) == declared.size
        assert hashlib.sha256(stored[declared.name]).hexdigest() == declared.sha256

    async def run():
        async def aiter_of(items):
            for item in items:
                yield item
        return await receive(aiter_of(stream), "r1", store, max_bytes=max_bytes, spool_dir=str(tmp_path))

    declared = asyncio.run(run())
    assert [d.name for d in declared] == list(stored)
    return stored


def test_every_declared_file_is_stored_as_sent_in_order(tmp_path):
    files = [("ref/a.csv", b"a|b\n1|2\n"), ("ref/empty.csv", b""), ("sys/m.png", bytes(range(256)) * 9000)]
    assert received(messages("r1", *files, chunk=70000), tmp_path, max_bytes=4 << 20) == dict(files)  # spooled to disk


GOOD = list(messages("r1", ("ref/a.csv", b"a|b\n1|2\n"), chunk=5))  # run, declaration, 5 bytes, 3 bytes
ONE = runs_pb2.UploadInputsRequest(chunk=b"!")


@pytest.mark.parametrize("stream, said", [
    (GOOD[:-1], "was declared as 8 bytes but 5 arrived"),
    ([*GOOD, ONE], "more bytes of ref/a.csv arrived than the 8 declared"),
    ([GOOD[0], GOOD[2], GOOD[1], GOOD[3]], "bytes arrived before any file was declared"),
    ([*GOOD[:3], runs_pb2.UploadInputsRequest(chunk=b"|3\n")], "do not match the SHA-256 declared"),
    ([runs_pb2.UploadInputsRequest(run_id="r2"), *GOOD], "one upload carries files of one run"),
])
def test_a_file_not_as_declared_is_refused_and_not_stored(stream, said, tmp_path):
    with pytest.raises(UploadRefused, match=said):
        received(stream, tmp_path)


def test_a_file_over_the_limit_is_refused_before_its_bytes(tmp_path):
    with pytest.raises(UploadRefused, match=r"declared as 11 bytes; a file may have 0 to 10"):
        received(messages("r1", ("ref/a.csv", b"x" * 11)), tmp_path, max_bytes=10)
