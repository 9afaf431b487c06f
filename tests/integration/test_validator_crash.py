"""A validator that dies while it checks a submission (issue 41: on the cluster it segfaulted on a huge submission
and the run hung in VALIDATING; the aggregator took the broken call for a validator merely away and asked again for
its 900 s retry budget). The cluster's supervisor starts the validator again, the aggregator waits for it and asks
it once more; a second death on the same run fails it with one sentence. Each death is a CPU-time limit
(``RLIMIT_CPU``) set on the running validator just above what it has used, which a 300,000-trial detection
submission (2.2 s of CPU to check, on the test machine) runs past."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest

from integration.test_keeps_holding import new_run
from integration.test_outages import ENDED, State, figures, get_run, process, wait_for
from mfscore.sample_data.detection import generate_detection_dataset
from mfscore.services.commands import local_cluster as commands

pytestmark = pytest.mark.integration
TRIALS = 300_000


def limit_cpu(pid: int) -> None:
    """Kill ``pid`` (SIGXCPU) once it has used one more second of CPU."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    used = (int(fields[11]) + int(fields[12])) // 100  # utime + stime, in clock ticks of 1/100 s
    resource.prlimit(pid, resource.RLIMIT_CPU, (used + 1, used + 2))


def detection_arguments(data) -> list[str]:
    return ["-t", "manipulation", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
            "--sysDir", str(data.directory), "-s", data.system]


def test_a_validator_dying_twice_on_a_submission_fails_the_run(tmp_path, cluster):
    path, config = cluster
    data = generate_detection_dataset(tmp_path / "data", TRIALS)
    validator = process(config, "validator")
    first = commands.current_pid(validator)  # supervised: the pid as the supervisor started it
    limit_cpu(first)
    submitted = subprocess.Popen([sys.executable, "-m", "mfscore", "submit", "--cluster", str(path), "detection",
                                  *detection_arguments(data), "-o", str(tmp_path / "out" / "x")],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run = new_run(config, set())
        def dead(pid: int) -> bool:
            if submitted.poll() is not None:
                pytest.fail(f"submit ended first: {submitted.communicate()[1]}")
            return not commands.pid_alive(pid)

        wait_for(lambda: dead(first), "the validator to die on the submission", timeout=180)
        died = time.monotonic()
        second = wait_for(lambda: (pid := commands.current_pid(validator)) not in (None, first) and pid,
                          "the supervisor to start the validator again", timeout=60)  # SIGXCPU is a crash
        limit_cpu(second)
        failed = wait_for(lambda: (s := get_run(config, run.run_id)).state in ENDED and s, "the run to end",
                          timeout=180)
        ended = time.monotonic() - died
        out, err = submitted.communicate(timeout=60)
    finally:
        if submitted.poll() is None:
            submitted.kill()
    sentence = "the validator stopped while checking the submission, 2 times; the submission may be what stops it"
    wait_for(lambda: not commands.pid_alive(second), "the second validator to be reaped", timeout=10)
    assert (failed.state, failed.message) == (State.RUN_STATE_FAILED, sentence)
    assert submitted.returncode == 1 and err.endswith(f"run {run.run_id} failed: {sentence}\n"), err
    aggregator = open(process(config, "aggregator")["log"]).read()
    assert f"run {run.run_id}: the validator stopped while checking the submission (1 of 2)" in aggregator
    figures("a validator dying twice on a submission", trials=TRIALS, seconds_from_first_death_to_failed=ended)
