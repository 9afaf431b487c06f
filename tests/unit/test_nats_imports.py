"""Importing the NATS modules imports no task: a process that names subjects, or runs a job worker, pays for the tasks
only when it reads the job kinds (services/common/subjects.py ``job_kinds``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mfscore import tasks

MODULES = ("subjects", "nats_connection", "streams", "job_worker", "nats_auth")
TASK_CODE = (*tasks.REGISTRY.values(), "mfscore.masks", "mfscore.video", "mfscore.detection", "mfscore.provenance")


def imported_by(module: str) -> list[str]:
    """The modules a fresh interpreter holds after importing ``module``."""
    code = f"import sys, mfscore.services.common.{module}; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    return done.stdout.split()


@pytest.mark.parametrize("module", MODULES)
def test_importing_imports_no_task(module):
    held = imported_by(module)
    assert f"mfscore.services.common.{module}" in held
    loaded = [name for name in held if name.startswith(TASK_CODE)]
    assert not loaded, f"importing {module} imported {loaded}"


def test_the_job_kinds_are_read_from_the_registry_when_asked_for():
    from mfscore.services.common.subjects import job_kinds

    assert job_kinds() == tasks.resources()
