"""A task's run planned on local files with its inputs uploaded as ``mfscore submit`` uploads them (or stored
straight with the services' key): the RunSpec and the wire jobs the cluster would see, for tests that call a
service directly."""

from __future__ import annotations

import dataclasses
import uuid

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.codec import encode
from mfscore.records import encode_outcome
from mfscore.services.commands.submit import localize, run_inputs
from mfscore.services.commands.local_cluster import service_s3_settings
from mfscore.services.commands.upload import upload_run
from mfscore.services.common import input_manifest
from mfscore.services.common.messages import job_message
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.common.run_layout import input_prefix
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
    objects: dict = dataclasses.field(default_factory=dict)  # key -> its object (the run's input manifest; read
    #                                                          with the services' key, so for the operator's uploads)

    def spec(self, options=None, **fields) -> runs_pb2.RunSpec:
        """The RunSpec ``mfscore submit`` would send for ``options`` (default: the planned ones)."""
        moved = relocated(options or self.options, self.task.inputs(self.options), {n: n for n in self.roots})
        return runs_pb2.RunSpec(**{"task": self.task.name, "options": encode(moved), "tables": self.tables,
                                   "input_prefix": self.prefix, "output_name": "x", "run_id": self.run_id, **fields})

    @property
    def run_id(self) -> str:
        """The run the upload is for: scorers take only a job whose inputs are ``runs/<its run id>/inputs/``."""
        return self.prefix.split("/")[1]

    def wire(self, job: Job, **blobs: str) -> jobs_pb2.Job:
        """The job as the aggregator publishes it: its files named by their key in the upload (or by ``blobs``),
        each with its object."""
        keys = {name: key_of(path, self.roots, what=path) if path else ""
                for name, path in self.task.blobs(job.work).items()} | blobs
        message = job_message(self.run_id, self.task, Job(job.key, self.task.with_blobs(job.work, keys)), self.prefix)
        message.objects.update({key: self.objects[key] for key in keys.values() if key in self.objects})
        return message


def _planned(name: str, arguments: list[str]):
    args = build_parser().parse_args([name, *arguments])
    options = args.task_options(args).options
    task = tasks.get(args.task_name)
    files, tables = run_inputs(task, options)
    return task, options, files, tables


def upload(config, name: str, arguments: list[str]) -> Uploaded:
    """``mfscore <name> ARGUMENTS`` planned here and its inputs uploaded as ``submit`` uploads them: a run created
    on the cluster ``config`` names, its files streamed through the aggregator."""
    task, options, files, tables = _planned(name, arguments)
    run_id = upload_run(config, files)
    manifest = input_manifest.read(ObjectStore(service_s3_settings(config)), run_id) if config.state_dir else {}
    return Uploaded(task, options, task.plan(options), task.inputs(options).roots, files, tables, input_prefix(run_id),
                    {name: file.key for name, file in manifest.items()})


def stored(settings, name: str, arguments: list[str]) -> Uploaded:
    """The same, its inputs put straight into the object store with ``settings``' (the services') key under a fresh
    run's prefix: for tests that call a scorer with no aggregator."""
    task, options, files, tables = _planned(name, arguments)
    store = ObjectStore(settings)
    store.ensure_bucket()
    prefix = input_prefix(uuid.uuid4().hex)
    for path, key in files:
        store.put_file(prefix + key, path)
    return Uploaded(task, options, task.plan(options), task.inputs(options).roots, files, tables, prefix)


def mask_options() -> bytes:
    """Options a mask RunSpec may carry (its tables need not exist: they are read only once the run is planned)."""
    args = build_parser().parse_args(["mask", "--refDir", "ref", "-r", "r.csv", "-x", "i.csv", "-s", "sys/s.csv",
                                      "-oR", "x"])
    return encode(args.task_options(args).options)


def same_outcome(remote, local, roots) -> bool:
    """The remote outcome is the local one, but for naming files by their key in the upload."""
    return localize(encode_outcome(remote).decode(), roots) == encode_outcome(local).decode()
