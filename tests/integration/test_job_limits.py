"""A scorer's wall and memory limits on one job (issue 41: discs of 2401 pixels held the mask pool for 134 s and made
another team's run 84 times slower): on a local cluster whose scorers run with ``MFSCORE_JOB_SECONDS`` 2 and
``MFSCORE_JOB_MEMORY_BYTES`` 100 MB, a job past either fails its run with one sentence naming the job's files, at
once (no retry), and the pool scores another team's run, submitted meanwhile, as the embedded command does. Run with
-s to see the figures docs/reliability.md quotes."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from integration.clusters import cluster_up
from integration.test_keeps_holding import new_run, same_as_embedded
from integration.test_outages import ENDED, State, embedded, figures, get_run, mask_arguments, runs, start_submit, \
    wait_for
from mfscore.sample_data.masks import generate_mask_dataset

pytestmark = pytest.mark.integration
JOB_SECONDS = 2
JOB_MEMORY_BYTES = 100 << 20
WIDE_DISCS = ["--eks", "201", "--dks", "201", "--ntdks", "201", "-k", "disc"]  # the largest kernels allowed


@pytest.fixture(scope="module")
def limited_cluster(tmp_path_factory):
    with cluster_up(tmp_path_factory.mktemp("limited"), environment={
            "MFSCORE_JOB_SECONDS": str(JOB_SECONDS), "MFSCORE_JOB_MEMORY_BYTES": str(JOB_MEMORY_BYTES)}) as cluster:
        yield cluster


def arguments(data, *extra: str) -> list[str]:
    return ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index, "--sysDir", str(data.directory),
            "-s", data.system, *extra]


def fails_and_spares_a_bystander(limited_cluster, tmp_path, capsys, data, extra: list[str], limit: str):
    """Submit a run of one job over a limit, then another team's run: the first FAILS naming its probe's masks
    and the limit, submit exits 1 saying so; the second ends DONE with the embedded command's files. The seconds
    the bystander took."""
    path, config = limited_cluster
    bystander_arguments = mask_arguments(generate_mask_dataset(tmp_path / "bystander", 12, seed=5))
    said = embedded(tmp_path, bystander_arguments, capsys)
    known = {r.run_id for r in runs(config)}
    heavy, _, heavy_err = start_submit(path, arguments(data, *extra), tmp_path / "heavy")
    bystander = None
    try:
        run = new_run(config, known)
        wait_for(lambda: get_run(config, run.run_id).state in (State.RUN_STATE_SCORING, *ENDED),
                 "the run's job to be queued")
        started = time.monotonic()
        bystander, stdout, stderr = start_submit(path, bystander_arguments, tmp_path / "submitted")
        assert bystander.wait(timeout=300) == 0, stderr.read_text()
        took = time.monotonic() - started
        assert heavy.wait(timeout=300) == 1, heavy_err.read_text()
    finally:
        for submitted in (heavy, bystander):
            if submitted is not None and submitted.poll() is None:
                submitted.kill()
    failed = wait_for(lambda: (s := get_run(config, run.run_id)).state in ENDED and s, "the run to end")
    probe = next(Path(data.directory, "system", "mask").glob("*.png")).stem
    assert failed.state == State.RUN_STATE_FAILED and failed.trials_dead == 1, failed.message
    assert re.fullmatch(rf"the job 0/probe/0 could not be scored: \S+/{probe}\.ccm\.png, \S+/{probe}\.png: {limit}",
                        failed.message), failed.message
    said_heavy = heavy_err.read_text()  # submit names the files by their local paths
    assert f"run {run.run_id} failed: the job 0/probe/0 could not be scored: " in said_heavy, said_heavy
    assert re.search(rf", {re.escape(str(data.directory))}/system/mask/{probe}\.png: {limit}$", said_heavy), said_heavy
    same_as_embedded(tmp_path, tmp_path / "submitted", stdout, stderr, said)
    return took


def test_a_job_past_the_wall_limit_fails_its_run_and_the_pool_goes_on(limited_cluster, tmp_path, capsys):
    """Discs of 201 pixels (the operator's maximum) on a 3000x2000 mask: several seconds of one core."""
    data = generate_mask_dataset(tmp_path / "wide", 1, width=3000, height=2000, non_target_share=0.0)
    took = fails_and_spares_a_bystander(limited_cluster, tmp_path, capsys, data, WIDE_DISCS,
                                        rf"exceeded the {JOB_SECONDS} s wall limit \(MFSCORE_JOB_SECONDS\)")
    figures("a job past the wall limit", job_seconds=JOB_SECONDS, seconds_the_bystander_run_took=took)


def test_a_job_past_the_memory_limit_fails_its_run_and_the_pool_goes_on(limited_cluster, tmp_path, capsys):
    """A 6000x4000 mask's job takes well over 100 MB."""
    data = generate_mask_dataset(tmp_path / "large", 1, width=6000, height=4000, non_target_share=0.0)
    took = fails_and_spares_a_bystander(
        limited_cluster, tmp_path, capsys, data, [],
        rf"exceeded the {JOB_MEMORY_BYTES} bytes memory limit \(MFSCORE_JOB_MEMORY_BYTES\)")
    figures("a job past the memory limit", job_memory_bytes=JOB_MEMORY_BYTES, seconds_the_bystander_run_took=took)
