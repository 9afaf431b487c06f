"""The wire contract passes buf's STANDARD and COMMENTS lint (buf from npm, installed by `make setup`) with nothing
excepted: no ignore or except entry in buf.yaml, no 'buf:lint:ignore' comment in proto/, and one request and one
response message of its own per RPC."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUF = ROOT / "node_modules" / ".bin" / "buf"
PROTOS = sorted((ROOT / "proto").rglob("*.proto"))


def test_buf_lint_standard_and_comments_find_nothing():
    assert BUF.exists(), "buf is not installed: run 'make setup' (npm ci)"
    done = subprocess.run([str(BUF), "lint", "--error-format", "json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    findings = [line for line in done.stdout.splitlines() if line.strip()]
    assert done.returncode == 0 and findings == [], done.stdout + done.stderr


def test_buf_yaml_uses_standard_and_comments_and_excepts_nothing():
    config = yaml.safe_load((ROOT / "buf.yaml").read_text())
    lint = config["lint"]
    assert sorted(lint["use"]) == ["COMMENTS", "STANDARD"]
    assert set(lint) == {"use"}, f"buf.yaml's lint has more than 'use' (no except, ignore or ignore_only): {sorted(lint)}"


def test_no_proto_carries_a_lint_ignore_comment():
    assert PROTOS
    for proto in PROTOS:
        assert "buf:lint:ignore" not in proto.read_text(), proto.relative_to(ROOT)


def test_every_rpc_has_its_own_request_and_response():
    rpcs = re.findall(r"rpc (\w+)\((?:stream )?(\w+)\) returns \((?:stream )?(\w+)\)",
                      "".join(p.read_text() for p in PROTOS))
    assert len(rpcs) >= 12
    for rpc, request, response in rpcs:
        assert (request, response) == (f"{rpc}Request", f"{rpc}Response"), rpc
