"""The wire contract passes buf's STANDARD lint (buf from npm, installed by `make setup`), and only the names from
before the project followed it are excepted: a new RPC, message or service cannot hide behind an ignore."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUF = ROOT / "node_modules" / ".bin" / "buf"
LEGACY = {  # what each 'buf:lint:ignore' excuses, until the backend's API renames it
    ("SERVICE_SUFFIX", "Validator"), ("SERVICE_SUFFIX", "Scorer"), ("SERVICE_SUFFIX", "Aggregator"),
    ("RPC_RESPONSE_STANDARD_NAME", "Validate"),
    *((rule, rpc) for rpc in ("Score",) for rule in ("RPC_REQUEST_STANDARD_NAME", "RPC_RESPONSE_STANDARD_NAME")),
    *((rule, rpc) for rpc in ("SubmitRun", "GetRun", "WatchRun")
      for rule in ("RPC_REQUEST_STANDARD_NAME", "RPC_RESPONSE_STANDARD_NAME", "RPC_REQUEST_RESPONSE_UNIQUE")),
}


def ignores() -> set[tuple[str, str]]:
    """(rule, the element it excuses) for every 'buf:lint:ignore' comment in proto/."""
    found = set()
    for proto in (ROOT / "proto").rglob("*.proto"):
        pending = []
        for line in proto.read_text().splitlines():
            if ignore := re.search(r"//\s*buf:lint:ignore\s+(\w+)", line):
                pending.append(ignore.group(1))
            elif element := re.match(r"\s*(?:rpc|service|message|enum)\s+(\w+)", line):
                found.update((rule, element.group(1)) for rule in pending)
                pending = []
    return found


def test_buf_lint_standard_passes():
    assert BUF.exists(), "buf is not installed: run 'make setup' (npm ci)"
    done = subprocess.run([str(BUF), "lint"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_the_legacy_names_are_excepted():
    assert ignores() == LEGACY


def test_every_new_rpc_has_its_own_request_and_response():
    services = (ROOT / "proto" / "mfscore" / "v1" / "services.proto").read_text()
    for rpc in ("CreateRun", "UploadInputs", "FetchReport", "ListRuns"):
        declared = re.search(rf"rpc {rpc}\((?:stream )?(\w+)\) returns \((?:stream )?(\w+)\)", services)
        assert declared.groups() == (f"{rpc}Request", f"{rpc}Response"), rpc
