"""A run on the cluster (aggregator and validator): its tables fetched from S3 through its input manifest, its options
moved onto them, its task's own plan.

Planning is deterministic given the inputs, so a restarted aggregator plans the same jobs and keys,
and the records replayed from the results stream fold back in.
"""

from __future__ import annotations

import os
import shutil

from mfscore import tasks
from mfscore.errors import OptionError
from mfscore.services.common import input_manifest
from mfscore.services.common.object_store import ObjectStore
from mfscore.services.wire import runs_pb2
from mfscore.tasks.base import relocated

MAX_TABLE_BYTES = 2 << 30


def run_options(spec: runs_pb2.RunSpec, input_dir: str):
    """The run's task and its options, every input path moved from its key (``ref/...``) under ``input_dir``;
    a table the options name outside ``input_dir`` (``-r ../../x``) raises ``OptionError``."""
    task = tasks.get(spec.task)
    options = tasks.decode_options(task, spec.options)
    inputs = task.inputs(options)
    options = relocated(options, inputs, {name: os.path.join(input_dir, name) for name in inputs.roots})
    root = os.path.realpath(input_dir)
    for path in task.inputs(options).tables:
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise OptionError(f"the table {named_by_key(path, input_dir)} leaves the run's uploaded inputs")
    return task, options


def fetch_tables(store: ObjectStore, spec: runs_pb2.RunSpec, input_dir: str,
                 inputs: input_manifest.Inputs | None = None) -> None:
    """The files planning reads, fresh under ``input_dir`` (each name confined to it, each size bounded), each from
    the object the run's input manifest (``inputs``, read when not given) names for it."""
    shutil.rmtree(input_dir, ignore_errors=True)
    if inputs is None:
        inputs = input_manifest.read(store, spec.run_id)
    store.download_objects({name: input_manifest.stored_key(spec.input_prefix, inputs, name) for name in spec.tables},
                           input_dir, max_bytes=MAX_TABLE_BYTES)


def plan_run(store: ObjectStore, spec: runs_pb2.RunSpec, input_dir: str,
             inputs: input_manifest.Inputs | None = None):
    """(task, plan) of a submitted run (blocking: run it in a thread)."""
    fetch_tables(store, spec, input_dir, inputs)
    task, options = run_options(spec, input_dir)
    return task, task.plan(options)


def named_by_key(text: str, input_dir: str) -> str:
    """A message naming a fetched file by its key in the upload (``ref/...``), as the client can localize it."""
    return text.replace(os.path.join(input_dir, ""), "")
