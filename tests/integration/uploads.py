"""A task's run planned on local files with its inputs uploaded as ``mfscore submit`` uploads them: the RunSpec
and the wire jobs the cluster would see, for tests that call a service directly."""

from __future__ import annotations

import dataclasses
import uuid

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.codec import encode
from mfscore.records import encode_outcome
from mfscore.services.commands.submit import localize, run_inputs
from mfscore.services.common.messages import job_message
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.wire import jobs_pb2, runs_pb2
from mfscore.tasks.base import Job, key_of, relocated


@dataclasses.dataclass
class Uploaded:
    """A task's run planned on local files, its inputs uploaded as ``mfscore submit`` uploads them."""

    task: object
    options: object
    plan: object
    roots: dict
    files: list    # (local path, key) of every uploaded file
    tables: list   # the keys planning reads
    prefix: str

    def spec(self, options=None, **fields) -> runs_pb2.RunSpec:
        """The RunSpec ``mfscore submit`` would send for ``options`` (default: the planned ones)."""
        moved = relocated(options or self.options, self.task.inputs(self.options), {n: n for n in self.roots})
        return runs_pb2.RunSpec(**{"task": self.task.name, "options": encode(moved), "tables": self.tables,
                                   "input_prefix": self.prefix, "output_name": "x", **fields})

    @property
    def run_id(self) -> str:
        """The run the upload is for: scorers take only a job whose inputs are ``runs/<its run id>/inputs/``."""
        return self.prefix.split("/")[1]

    def wire(self, job: Job, **blobs: str) -> jobs_pb2.Job:
        """The job as the aggregator publishes it: its files named by their key in the upload (or by ``blobs``)."""
        keys = {name: key_of(path, self.roots, what=path) if path else ""
                for name, path in self.task.blobs(job.work).items()} | blobs
        return job_message(self.run_id, self.task, Job(job.key, self.task.with_blobs(job.work, keys)), self.prefix)


def upload(config, name: str, arguments: list[str]) -> Uploaded:
    """``mfscore <name> ARGUMENTS`` planned here and its inputs uploaded under a fresh prefix."""
    args = build_parser().parse_args([name, *arguments])
    options = args.task_options(args).options
    task = tasks.get(args.task_name)
    store = ObjectStore(config.settings())
    store.ensure_bucket()
    prefix = f"runs/{uuid.uuid4().hex}/inputs/"  # the cluster file's S3 key may upload only under runs/
    files, tables = run_inputs(task, options)
    for path, key in files:
        store.put_file(prefix + key, path)
    return Uploaded(task, options, task.plan(options), task.inputs(options).roots, files, tables, prefix)


def same_outcome(remote, local, roots) -> bool:
    """The remote outcome is the local one, but for naming files by their key in the upload."""
    return localize(encode_outcome(remote).decode(), roots) == encode_outcome(local).decode()
