"""The local cluster's supervisor (services/local/supervisor.py) with stand-in services: one that fails is started
again (a crash signal too), one that exits with status 0 or is killed by SIGKILL stays stopped, and SIGTERM stops it with every service,
leaving no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mfscore.services.local.supervisor import read_state


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0


def test_a_failing_service_is_started_again_and_a_stopped_one_is_not(tmp_path):
    python = sys.executable
    specs = [{"label": label, "argv": [python, "-c", code], "env": dict(os.environ), "log": str(tmp_path / label)}
             for label, code in (("fails", "import sys; print('up'); sys.exit(3)"),
                                 ("crashes", "import os, signal; print('up'); os.kill(os.getpid(), signal.SIGSEGV)"),
                                 ("done", "pass"),
                                 ("killed", "import time; time.sleep(600)"),
                                 ("runs", "import time; time.sleep(600)"))]
    supervisor = subprocess.Popen([python, "-m", "mfscore.services.local.supervisor", str(tmp_path)],
                                  stdin=subprocess.PIPE, stdout=open(tmp_path / "supervisor.log", "wb"),
                                  stderr=subprocess.STDOUT)
    supervisor.stdin.write(json.dumps(specs).encode())
    supervisor.stdin.close()
    try:
        state = wait_for(lambda: len(s := read_state(tmp_path)) == 5 and s, "the services to start")
        os.kill(state["killed"]["pid"], signal.SIGKILL)
        state = wait_for(lambda: (s := read_state(tmp_path))["fails"]["exits"] >= 2 and s["crashes"]["exits"] >= 2
                         and s, "a restart")
        runs = state["runs"]["pid"]
        assert (tmp_path / "fails").read_text().count("up") >= 2  # it ran again, its output appended
        assert state["fails"]["ended"] == "exited with status 3"
        assert (tmp_path / "crashes").read_text().count("up") >= 2 and state["crashes"]["ended"] == "ended by SIGSEGV"
        assert (state["done"]["pid"], state["done"]["ended"]) == (None, "exited with status 0")
        assert (state["killed"]["pid"], state["killed"]["ended"]) == (None, "stopped by SIGKILL")
        assert state["runs"]["exits"] == 0 and alive(runs)
        log = (tmp_path / "supervisor.log").read_text()
        assert "fails exited with status 3" in log and "starting it again in 1 s" in log
        assert "done exited with status 0" in log and "not started again" in log
    finally:
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0
    assert not alive(runs)
    assert all(entry["pid"] is None for entry in read_state(tmp_path).values())


def test_services_do_not_outlive_a_killed_supervisor(tmp_path):
    specs = [{"label": "runs", "argv": [sys.executable, "-c", "import time; time.sleep(600)"],
              "env": dict(os.environ), "log": str(tmp_path / "runs")}]
    supervisor = subprocess.Popen([sys.executable, "-m", "mfscore.services.local.supervisor", str(tmp_path)],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    supervisor.stdin.write(json.dumps(specs).encode())
    supervisor.stdin.close()
    pid = wait_for(lambda: read_state(tmp_path).get("runs", {}).get("pid"), "the service to start")
    supervisor.kill()
    supervisor.wait()
    wait_for(lambda: not alive(pid), "the service to end with its supervisor")
