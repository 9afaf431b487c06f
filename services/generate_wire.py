"""Generate ``services/wire`` (installed as ``mfscore.services.wire``) from ``proto/mfscore/v1/*.proto``.

The generated modules are committed, so an install needs no protoc; ``tests/unit/test_wire_current.py``
fails when they fall behind the protos. Run ``python -m mfscore.services.generate_wire`` after
editing a proto. protoc names modules after the proto path (``mfscore.v1.jobs_pb2``); the
generated imports are rewritten to ``mfscore.services.wire``.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
WIRE = Path(__file__).resolve().parent / "wire"
_IMPORT = re.compile(r"^from mfscore\.v1 import (\w+)", re.MULTILINE)


def generate(target: Path = WIRE) -> list[Path]:
    """Write the generated modules into ``target`` (replacing it); returns the files written."""
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "mfscore" / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as out:
        status = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
                              f"--pyi_out={out}", f"--grpc_python_out={out}", *protos])
        if status != 0:
            raise SystemExit(f"protoc failed on {protos} (status {status})")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        (target / "__init__.py").write_text(
            '"""Generated from proto/mfscore/v1 by mfscore.services.generate_wire; do not edit."""\n')
        written = []
        for source in sorted((Path(out) / "mfscore" / "v1").iterdir()):
            destination = target / source.name
            destination.write_text(_IMPORT.sub(r"from mfscore.services.wire import \1", source.read_text()))
            written.append(destination)
    return written


if __name__ == "__main__":
    files = generate()
    print(f"generated {len(files)} files in {WIRE.relative_to(ROOT)}", file=sys.stderr)
