"""The local cluster's supervisor: it starts every service as its child and starts again one that fails, as
Kubernetes restarts a pod's container.

``mfscore local-cluster up`` runs ``python -m mfscore.services.local.supervisor STATE_DIR`` in a session of its own and
writes it, on standard input, the services to run (JSON: each one's ``label``, ``argv``, ``env`` and ``log``; the
environment holds secrets, so it never goes to a file). The supervisor then

- starts each service (its output appended to its log, umask 077) and writes ``STATE_DIR/supervised.json`` (mode
  0600): every label's current pid, how often it exited and how its last run ended;
- starts a service that exits by itself with a failure status (a crash, an aggregator deposed by another) again after
  a backoff (1 s, doubling to 30 s; back to 1 s after a minute of running), and logs one line each time;
- starts again, the same way, a service that a crash signal ended (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGXCPU,
  SIGXFSZ, SIGSYS);
- leaves stopped a service that exits with status 0 or that SIGTERM, SIGINT, SIGHUP or SIGKILL ended: someone
  stopped it on purpose (a SIGTERM drains and exits 0; the fault tests SIGKILL a service and start another on its
  port). So, unlike Kubernetes, a service the kernel's OOM killer ends stays down;
- on SIGTERM or SIGINT (``local-cluster down``) stops every service (SIGTERM, then SIGKILL after STOP_SECONDS) and
  exits, leaving no process behind.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mfscore.services.local.servers import PRIVATE_UMASK, private_log

STATE_FILE = "supervised.json"
RESTART_DELAYS = (1.0, 30.0)  # the first and the longest wait before a failed service starts again
STEADY_SECONDS = 60.0         # a service that ran this long before failing starts again after the first delay
STOP_SECONDS = 20.0           # how long a service may drain after SIGTERM before it is killed
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1          # prctl(2)
STOPPING_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL})  # a stop on purpose
log = logging.getLogger("mfscore.supervisor")


@dataclass
class Child:
    """One supervised service: its spec, its process while it runs, and its restarts."""

    label: str
    argv: list[str]
    env: dict[str, str]
    log: str
    popen: subprocess.Popen | None = None
    started: float = 0.0
    exits: int = 0
    ended: str = ""               # how its last run ended, for 'status' and the log
    delay: float = RESTART_DELAYS[0]
    due: float | None = None      # when it starts again (monotonic), if it is to

    def start(self) -> None:
        with private_log(Path(self.log)) as out:
            self.popen = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, umask=PRIVATE_UMASK, preexec_fn=_end_with_parent)
        self.started, self.due = time.monotonic(), None

    def reap(self) -> bool:
        """Whether the service has just exited; if it failed by itself, when it starts again is set."""
        if self.popen is None or (code := self.popen.poll()) is None:
            return False
        ran = time.monotonic() - self.started
        self.popen, self.exits = None, self.exits + 1
        if code < 0 and -code in STOPPING_SIGNALS:
            self.ended = f"stopped by {signal.Signals(-code).name}"
            log.info("%s %s after %.1f s: not started again", self.label, self.ended, ran)
        elif code == 0:
            self.ended = "exited with status 0"
            log.info("%s %s after %.1f s: not started again", self.label, self.ended, ran)
        else:
            self.ended = f"ended by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            if ran >= STEADY_SECONDS:
                self.delay = RESTART_DELAYS[0]
            self.due = time.monotonic() + self.delay
            log.warning("%s %s after %.1f s: starting it again in %g s", self.label, self.ended, ran, self.delay)
            self.delay = min(RESTART_DELAYS[1], 2 * self.delay)
        return True


def _end_with_parent() -> None:
    """In the child: be sent SIGTERM when the supervisor dies (even by SIGKILL), so no service outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def write_state(state_dir: Path, children: list[Child]) -> None:
    """``supervised.json``, whole or not at all: label -> pid (None while stopped), exits and how the last ended."""
    state = {c.label: {"pid": c.popen.pid if c.popen else None, "exits": c.exits, "ended": c.ended}
             for c in children}
    temporary = state_dir / f".{STATE_FILE}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
    os.replace(temporary, state_dir / STATE_FILE)


def read_state(state_dir: str | Path) -> dict[str, dict]:
    """What the supervisor last wrote ({} before it has)."""
    try:
        return json.loads((Path(state_dir) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def stop_all(children: list[Child], timeout: float = STOP_SECONDS) -> None:
    running = [c.popen for c in children if c.popen is not None]
    for popen in running:
        popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for popen in running:
        try:
            popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


def supervise(state_dir: Path, specs: list[dict]) -> None:
    """Start ``specs`` and keep them running until SIGTERM or SIGINT, then stop them."""
    stopping = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.append(True))
    children = [Child(spec["label"], spec["argv"], spec["env"], spec["log"]) for spec in specs]
    try:
        for child in children:
            child.start()
        write_state(state_dir, children)
        log.info("supervising %s", ", ".join(c.label for c in children))
        while not stopping:
            time.sleep(POLL_SECONDS)
            changed = False
            for child in children:
                changed |= child.reap()
                if child.due is not None and time.monotonic() >= child.due and not stopping:
                    child.start()
                    log.info("%s started again (pid %d)", child.label, child.popen.pid)
                    changed = True
            if changed:
                write_state(state_dir, children)
    finally:
        stop_all(children)
        for child in children:
            child.popen = None
        write_state(state_dir, children)
        log.info("stopped every service")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    supervise(Path(argv[0]), json.load(sys.stdin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
