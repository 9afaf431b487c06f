"""Provenance filtering and graph building on the cluster: one job per trial, planned with the embedded
command's own ``prepare`` and reported with its own ``write_outputs``.

A job carries the trial's planned reference part and the key of its system JSON; every message names
the system JSON as the embedded command would (``-S`` as the client gave it, joined with the name).
"""

from __future__ import annotations

import os
from dataclasses import replace

from mfscore.cli import provenance_filtering, provenance_graph
from mfscore.cli.provenance_arguments import TrialOutcome, split
from mfscore.errors import MfscoreError
from mfscore.formats.provenance_json import DEFAULT_MAX_JSON_BYTES
from mfscore.records import RecordConflictError
from mfscore.reports.staged_outputs import staged_outputs
from services.aggregator.task_runs import Outcome
from services.common.object_store import ObjectStore
from services.common.run_arguments import PROVENANCE_DIRECTORIES, as_given, key_under
from services.provenance_scorer.messages import job_message, trial_outcome
from services.wire import jobs_pb2

MODULES = {"provenance-filtering": provenance_filtering, "provenance-graph": provenance_graph}


def download_journals(store: ObjectStore, prefix: str, input_dir: str) -> None:
    """The run's reference journals (``ref/``), which planning reads; the system JSONs stay in S3."""
    store.download_prefix(prefix + PROVENANCE_DIRECTORIES["reference_dir"] + "/",
                          os.path.join(input_dir, PROVENANCE_DIRECTORIES["reference_dir"]),
                          max_bytes=DEFAULT_MAX_JSON_BYTES)


class ProvenanceTaskRun:
    """One job per trial, keyed ``0/trial/<ordinal>``; the report walks the trials in order as the embedded
    command does, with each trial's outcome taken from its record."""

    def __init__(self, task: str, args, input_dir: str):
        self.module = MODULES[task]
        self.args = args
        self.input_dir = input_dir
        self.said: list[str] = []
        self.warned: list[str] = []
        try:
            self.prepared = self.module.prepare(args, say=self.said.append, warn=self.warned.append)
            if self.prepared.errors:
                raise self.prepared.errors[min(self.prepared.errors)]
        except MfscoreError as error:
            raise type(error)(as_given(args, error.sentence())) from None

    def jobs(self) -> list[jobs_pb2.Job]:
        system_dir = self.args.as_given["system_dir"]
        jobs = []
        for job in self.prepared.jobs:
            key = key_under(self.input_dir, job.system_path, "system JSON")
            named = replace(job, system_path=os.path.join(system_dir, job.output_file))
            jobs.append(jobs_pb2.Job(trial_id=f"0/trial/{job.ordinal}", role="trial", query=0,
                                     provenance=job_message(self.module.MODE, named, key)))
        return jobs

    def write_reports(self, records: dict, out_root: str) -> Outcome:
        outcomes: dict[int, TrialOutcome] = {}
        for record in records.values():
            if record.WhichOneof("record") != "provenance" or record.provenance.mode != self.module.MODE:
                raise RecordConflictError(f"the record of {record.trial_id} is not a {self.module.MODE} record")
            outcome = trial_outcome(record.provenance)
            if outcome.ordinal in outcomes:
                raise RecordConflictError(f"two records claim the trial at ordinal {outcome.ordinal}")
            outcomes[outcome.ordinal] = outcome
        if sorted(outcomes) != [job.ordinal for job in self.prepared.jobs]:
            raise RecordConflictError("the provenance records do not match the planned trials")
        said, problems = list(self.said), []
        found = split(self.module.outcomes(self.prepared, lambda job: outcomes[job.ordinal], said.append), problems)
        with staged_outputs(os.path.join(os.path.dirname(out_root), "")) as stage:
            notes = self.module.write_outputs(self.prepared, found, problems, stage, said.append)
        return Outcome(self.warned + notes, said)
