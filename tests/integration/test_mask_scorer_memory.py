"""The mask scorer pool decodes a job's masks from the objects' bytes, never from temporary files (issue 28): on a
real S3 server (SeaweedFS), each job's record is the embedded scorer's, and a missing object or one over the job's limit
is reported by the file's name in the run, as the core reports a file it cannot read."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib

import pytest

from integration.uploads import stored
from mfscore.masks.mask_scoring import DECODED
from mfscore.records import encode_outcome
from mfscore.sample_data.masks import generate_mask_dataset
from mfscore.services.common.messages import outcome
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import object_key
from mfscore.services.common.scorer_pool import JobScorer
from mfscore.tasks.base import key_of

pytestmark = pytest.mark.integration


@pytest.fixture
def mask_run(cluster_settings, tmp_path):
    data = generate_mask_dataset(tmp_path / "data", 5, width=160, height=120, non_target_share=0.0)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--sbin", "120", "-oR", "unused/x"]
    return stored(cluster_settings, "mask", arguments)


def test_masks_are_scored_from_memory_as_the_embedded_scorer_scores_their_files(cluster_settings, mask_run,
                                                                                tmp_path):
    not_a_directory = tmp_path / "work"
    not_a_directory.write_text("a scorer that made a temporary directory here would fail")
    scorer = JobScorer(ObjectStore(cluster_settings), str(not_a_directory), "mask-scorer")
    task, jobs = mask_run.task, mask_run.plan.jobs
    assert len(jobs) == 5

    async def score_all():
        return [await scorer(mask_run.wire(job)) for job in jobs]

    records = asyncio.run(score_all())
    assert [r.outcome for r in records] == [encode_outcome(task.score(job.work)) for job in jobs]
    assert all(outcome(task, r).scored for r in records)

    job = jobs[0]
    missing = mask_run.wire(job, system="sys/system/mask/none.png")
    problem = outcome(task, asyncio.run(scorer(missing)))  # an unreadable mask: a Problem counted as unscored
    assert not problem.counts_as.scored
    assert problem.message == "the system mask file sys/system/mask/none.png is unreadable: the image does not exist"

    tiny = dataclasses.replace(job.work, max_job_bytes=100)
    over = asyncio.run(scorer(mask_run.wire(dataclasses.replace(job, work=tiny))))
    assert outcome(task, over).message.endswith("bytes, more than the 100 a scorer fetches")
    assert not not_a_directory.is_dir()


def test_a_probes_jobs_under_two_queries_decode_its_objects_once(cluster_settings, tmp_path):
    """Jobs reading the same objects (a probe under two ``-qm`` queries, ``MaskJob.readers`` 2) share one decode:
    the scorer names the bytes by their object's key, which holds their SHA-256, and the second job finds them."""
    data = generate_mask_dataset(tmp_path / "data", 5, width=160, height=120, non_target_share=0.0)
    arguments = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "--sbin", "120", "-oR", "unused/x",
                 "-qm", "Purpose==['add','remove','clone','heal']", "Purpose==['add','remove','clone','heal']"]
    run = stored(cluster_settings, "mask", arguments)
    store = ObjectStore(cluster_settings)
    for path, key in run.files:  # each file also as an object, as the aggregator stores an upload
        run.objects[key] = object_key("test/objects", hashlib.sha256(open(path, "rb").read()).hexdigest())
        store.put_file(run.objects[key], path)
    first, second = run.plan.jobs[:2]
    assert (first.work.reference_path, first.work.system_path) == (second.work.reference_path, second.work.system_path)
    assert first.work.readers == second.work.readers == 2 and first.key.query != second.key.query
    scorer = JobScorer(store, str(tmp_path / "work"), "mask-scorer")

    records = [asyncio.run(scorer(run.wire(first)))]
    kept = [key for key in DECODED._kept if key[0] == "bytes"]
    assert sorted(key[1] for key in kept) == sorted(run.objects[k] for k in
                                                    (key_of(p, run.roots, what=p) for p in (first.work.reference_path,
                                                                                          first.work.system_path)))
    records.append(asyncio.run(scorer(run.wire(second))))
    assert not [key for key in DECODED._kept if key[0] == "bytes"]  # taken by the second job, then dropped
    assert [r.outcome for r in records] == [encode_outcome(run.task.score(job.work)) for job in (first, second)]
