"""What a task needs on the cluster: plan its jobs with the embedded command's own ``prepare`` and write its
reports with the embedded command's own ``write_outputs``, from the folded records.

A task run's jobs are deterministic given its inputs, so a restarted aggregator plans the same
jobs and keys, and the records replayed from the results stream fold back in.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

import numpy as np

from mfscore.cli import detection as detection_cli
from mfscore.cli import mask as mask_cli
from mfscore.detection.scorer import score_detection
from mfscore.detection.trials import opt_out_column
from mfscore.records import (
    RecordConflictError,
    merge_detection_records,
    merge_mask_records,
)
from mfscore.reports.staged_outputs import staged_outputs
from services.common.messages import (
    detection_job,
    detection_records_frame,
    mask_job_message,
    mask_record,
)
from services.common.run_arguments import PROVENANCE_TASKS, key_under, parse_arguments
from services.wire import jobs_pb2, records_pb2, runs_pb2

DETECTION_BATCH = 1000  # detection trials per job: scoring one is microseconds, a message is not


def record_key(record: records_pb2.TrialRecord | jobs_pb2.Job) -> tuple[str, str, int]:
    return record.trial_id, record.role, record.query


@dataclass
class Outcome:
    """What the embedded command would have printed besides writing its files."""

    notes: list[str] = field(default_factory=list)    # stderr
    summary: list[str] = field(default_factory=list)  # stdout


class DetectionTaskRun:
    """Jobs are batches of scored-table rows; the report substitutes the folded records for the table's scores."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.prepared = detection_cli.prepare(args)

    def jobs(self) -> list[jobs_pb2.Job]:
        trials = self.prepared.table.trials.assign(ordinal=np.arange(len(self.prepared.table.trials)))
        status = opt_out_column(trials)
        return [jobs_pb2.Job(trial_id=f"0/trial/{start}", role="trial", query=0,
                             detection=detection_job(trials.iloc[start:start + DETECTION_BATCH], "ConfidenceScore",
                                                     status))
                for start in range(0, len(trials), DETECTION_BATCH)]

    def write_reports(self, records: dict, out_root: str) -> Outcome:
        prepared = self.prepared
        table = prepared.table
        merged = merge_detection_records([detection_records_frame(r.detection for r in records.values())])
        labels = (table.trials["IsTarget"] == "Y").to_numpy()
        if len(merged) != len(table.trials) or not np.array_equal(merged["is_target"].to_numpy(), labels):
            raise RecordConflictError("the detection records do not match the planned trials")
        trials = table.trials.copy()
        trials["ConfidenceScore"] = merged["score"].to_numpy()
        prepared = replace(prepared, table=replace(table, trials=trials))
        results = score_detection(prepared.table, prepared.journal, prepared.options)
        with staged_outputs(out_root) as stage:
            notes = detection_cli.write_outputs(prepared, results, stage)
        return Outcome(prepared.warnings + notes, detection_cli.summary(results, prepared.options))


class MaskTaskRun:
    """One job per kept trial, role and ``-qm`` query, keyed ``<query>/<role>/<position in the plan>``."""

    def __init__(self, args: argparse.Namespace, input_dir: str):
        self.args = args
        self.input_dir = input_dir
        self.prepared = mask_cli.prepare(args)

    def jobs(self) -> list[jobs_pb2.Job]:
        jobs = []
        for q, plan in enumerate(self.prepared.plans):
            for position, (role, job) in enumerate(zip(plan.roles, plan.jobs)):
                wire = mask_job_message(job, *(key_under(self.input_dir, path, 'mask file') if path else ''
                                                  for path in (job.reference_path, job.system_path)))
                jobs.append(jobs_pb2.Job(trial_id=f"{q}/{role}/{position}", role=role, query=q, mask=wire))
        return jobs

    def write_reports(self, records: dict, out_root: str) -> Outcome:
        merged = merge_mask_records((key, mask_record(r.mask)) for key, r in records.items())
        by_query = [[merged[(f"{q}/{role}/{position}", role, q)] for position, role in enumerate(plan.roles)]
                    for q, plan in enumerate(self.prepared.plans)]
        with staged_outputs(out_root) as stage:
            notes = mask_cli.write_outputs(self.prepared, by_query, stage)
        return Outcome(notes)


def plan_task(spec: runs_pb2.RunSpec, input_dir: str, store=None):
    """Parse and prepare a run from its downloaded tables (blocking: run it in a thread).

    A provenance run also reads its journals, fetched here from ``store`` (an ``ObjectStore``).
    """
    task = spec.task
    args = parse_arguments(task, list(spec.arguments), input_dir, spec.inputs)
    if task == "detection":
        return DetectionTaskRun(args)
    if task in PROVENANCE_TASKS:
        from services.aggregator.provenance_runs import (
            ProvenanceTaskRun,
            download_journals,
        )

        if store is not None:
            download_journals(store, spec.inputs.prefix, input_dir)
        return ProvenanceTaskRun(task, args, input_dir)
    args.processors = 1
    return MaskTaskRun(args, input_dir)
