"""A provenance job and record on the wire: the core's planned trial and trial outcome, as JSON."""

from __future__ import annotations

import json

from mfscore.cli import provenance_filtering, provenance_graph
from mfscore.cli.provenance_arguments import TrialOutcome
from mfscore.errors import InputFileError
from services.wire import jobs_pb2, records_pb2

MODES = {module.MODE: module for module in (provenance_filtering, provenance_graph)}


def _module(mode: str):
    module = MODES.get(mode)
    if module is None:
        raise InputFileError(f"the provenance mode {mode!r} is not one of {', '.join(MODES)}")
    return module


def job_message(mode: str, job, system_key: str) -> jobs_pb2.ProvenanceJob:
    """A planned trial and the key of its system JSON under the run's input prefix."""
    trial = json.dumps({"job": job.to_dict(), "system_key": system_key}, sort_keys=True).encode()
    return jobs_pb2.ProvenanceJob(mode=mode, ordinal=job.ordinal, trial=trial)


def planned_job(message: jobs_pb2.ProvenanceJob):
    """(the mode's CLI module, its planned job, the system JSON's key) of a wire job."""
    module = _module(message.mode)
    try:
        planned = json.loads(message.trial)
        job = module.JOB.from_dict(planned["job"])
        key = planned["system_key"]
    except (ValueError, KeyError, TypeError) as error:
        raise InputFileError(f"the provenance job is not a planned {message.mode} trial ({error})") from None
    if job.ordinal != message.ordinal or not isinstance(key, str):
        raise InputFileError(f"the provenance job at ordinal {message.ordinal} does not hold that trial")
    return module, job, key


def outcome_message(mode: str, outcome: TrialOutcome) -> records_pb2.ProvenanceRecord:
    return records_pb2.ProvenanceRecord(mode=mode, ordinal=outcome.ordinal,
                                        record=json.dumps(outcome.to_dict(), sort_keys=True).encode())


def trial_outcome(message: records_pb2.ProvenanceRecord) -> TrialOutcome:
    module = _module(message.mode)
    try:
        outcome = TrialOutcome.from_dict(json.loads(message.record), module.RECORD)
    except (ValueError, KeyError, TypeError) as error:
        raise InputFileError(f"the provenance record at ordinal {message.ordinal} is not a {message.mode} "
                             f"outcome ({error})") from None
    if outcome.ordinal != message.ordinal:
        raise InputFileError(f"the provenance record at ordinal {message.ordinal} holds another trial")
    return outcome
