"""A run's state in the JetStream key-value bucket: its spec, its status, and the seal of its report.

``spec.<id>`` and ``status.<id>`` hold the RunSpec and RunStatus; ``report.<id>`` holds the SHA-256 (hex) of the
report manifest the aggregator wrote, so a report file changed in the object store afterwards is caught
(``reports.stream_report``). The bucket is the aggregator's alone: no client holds a NATS credential.
"""

from __future__ import annotations

from nats.js.errors import KeyNotFoundError, NotFoundError

from mfscore.services.common.run_layout import check_run_id
from mfscore.services.wire import runs_pb2


def spec_key(run_id: str) -> str:
    return f"spec.{check_run_id(run_id)}"


def status_key(run_id: str) -> str:
    return f"status.{check_run_id(run_id)}"


def seal_key(run_id: str) -> str:
    return f"report.{check_run_id(run_id)}"


async def save_spec(kv, spec: runs_pb2.RunSpec) -> None:
    await kv.put(spec_key(spec.run_id), spec.SerializeToString())


async def save_status(kv, status: runs_pb2.RunStatus) -> None:
    await kv.put(status_key(status.run_id), status.SerializeToString())


async def load(kv, run_id: str) -> tuple[runs_pb2.RunSpec, runs_pb2.RunStatus]:
    """The run's spec and status; ``NotFoundError`` when either is missing."""
    status = runs_pb2.RunStatus.FromString((await kv.get(status_key(run_id))).value)
    spec = runs_pb2.RunSpec.FromString((await kv.get(spec_key(run_id))).value)
    return spec, status


async def seal_report(kv, run_id: str, manifest_sha256: str) -> None:
    """Record the digest of the report manifest just written: from now on only what matches it is served."""
    await kv.put(seal_key(run_id), manifest_sha256.encode())


async def report_seal(kv, run_id: str) -> str | None:
    """The recorded digest of the run's report manifest; None when no report was recorded."""
    try:
        return (await kv.get(seal_key(run_id))).value.decode()
    except (KeyNotFoundError, NotFoundError):
        return None


async def purge(kv, run_id: str) -> None:
    """Forget the run: its report seal, status and spec (status before spec, as a restore reads them)."""
    for key in (seal_key(run_id), status_key(run_id), spec_key(run_id)):
        await kv.purge(key)
