"""A client cannot raise the operator's limits, and a validation's report stays bounded (issue 41, 5 and 6).

The cluster is started with lowered maxima (``MFSCORE_MAX_KERNEL_SIZE``, ``MFSCORE_MAX_FINDINGS``) and the default
pixel maximum. A mask run asking for a kernel or a pixel limit above them is refused when submitted, with one
sentence naming the option and the maximum; a system table of thousands of bad rows is rejected with a report of
``MFSCORE_MAX_FINDINGS`` findings and one counting the others.
"""

from __future__ import annotations

import os

import pytest

from integration.clusters import cluster_up
from mfscore.cli.main import main
from mfscore.limits import DEFAULT_MAX_PIXELS
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.wire import runs_pb2, services_pb2_grpc

MAX_KERNEL_SIZE, MAX_FINDINGS = 31, 100
BAD_ROWS = 2000


@pytest.fixture(scope="module")
def strict_cluster(tmp_path_factory):
    """A local cluster whose operator lowered the maxima: (its file, its config); always stopped."""
    with cluster_up(tmp_path_factory.mktemp("abuse-limits"), environment={
            "MFSCORE_MAX_KERNEL_SIZE": str(MAX_KERNEL_SIZE), "MFSCORE_MAX_FINDINGS": str(MAX_FINDINGS)}) as cluster:
        yield cluster


def _mask_arguments(directory) -> list[str]:
    data = generate_mask_dataset(directory, 5)
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
            "-s", data.system]


def _runs(config, state) -> list[runs_pb2.RunStatus]:
    with config.channel() as channel:
        stub = services_pb2_grpc.AggregatorServiceStub(channel)
        return list(stub.ListRuns(runs_pb2.ListRunsRequest(state=state)).runs)


@pytest.mark.parametrize(("flag", "value", "maximum", "option"), [
    ("--eks", MAX_KERNEL_SIZE + 20, MAX_KERNEL_SIZE, "erode_size"),
    ("--max-pixels", DEFAULT_MAX_PIXELS + 1, DEFAULT_MAX_PIXELS, "max_pixels"),
])
def test_a_limit_above_the_server_maximum_is_refused_when_submitted(strict_cluster, tmp_path, capsys, flag, value,
                                                                     maximum, option):
    path, config = strict_cluster
    arguments = _mask_arguments(tmp_path / "data")
    before = len(_runs(config, runs_pb2.RUN_STATE_VALIDATING)) + len(_runs(config, runs_pb2.RUN_STATE_SCORING))
    status = main(["submit", "--cluster", str(path), "mask", *arguments, flag, str(value), "-oR",
                   str(tmp_path / "out" / "x")])
    error = capsys.readouterr().err
    assert status == 1
    assert f"{flag} {value}: this server allows at most {maximum} (option {option}); nothing was recorded" in error
    after = len(_runs(config, runs_pb2.RUN_STATE_VALIDATING)) + len(_runs(config, runs_pb2.RUN_STATE_SCORING))
    assert after == before
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_the_same_run_within_the_maxima_is_scored(strict_cluster, tmp_path):
    path, _ = strict_cluster
    arguments = _mask_arguments(tmp_path / "data")
    assert main(["submit", "--cluster", str(path), "mask", *arguments, "--eks", str(MAX_KERNEL_SIZE), "--max-pixels",
                 str(DEFAULT_MAX_PIXELS), "-oR", str(tmp_path / "out" / "x")]) == 0


def test_a_table_of_many_bad_rows_is_rejected_with_a_bounded_report(strict_cluster, tmp_path, capsys):
    path, config = strict_cluster
    arguments = _mask_arguments(tmp_path / "data")
    system = os.path.join(arguments[1], arguments[-1])
    with open(system, "a") as table:  # probes the index does not have: one finding each
        table.writelines(f"x{i:07d}|0.5||Processed|\n" for i in range(BAD_ROWS))
    status = main(["submit", "--cluster", str(path), "mask", *arguments, "-oR", str(tmp_path / "out" / "x")])
    error = capsys.readouterr().err
    assert status == 1
    omitted = BAD_ROWS + 1 - MAX_FINDINGS  # one per unknown probe, and the row count
    assert f"{omitted} more findings are not listed ({omitted} of them errors)" in error
    rejected = _runs(config, runs_pb2.RUN_STATE_REJECTED)
    assert rejected
    report = rejected[-1].validation
    assert not report.valid
    assert len(report.findings) == MAX_FINDINGS + 1
    assert report.findings[-1].code == "report.truncated"
    assert rejected[-1].message.startswith(f"the validator rejected the submission ({MAX_FINDINGS} error(s); "
                                           f"{omitted} more findings are not listed")  # not 100 errors in all
