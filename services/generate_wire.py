"""Generate ``services/wire`` from ``proto/mfscore/v1/*.proto`` with grpcio-tools.

protoc names modules after the proto path (``mfscore.v1.jobs_pb2``), which would resolve inside
the ``mfscore`` package; the generated imports are rewritten to ``services.wire``.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
WIRE = Path(__file__).resolve().parent / "wire"
_IMPORT = re.compile(r"^from mfscore\.v1 import (\w+)", re.MULTILINE)


def generate() -> list[Path]:
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "mfscore" / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as out:
        status = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
                              f"--pyi_out={out}", f"--grpc_python_out={out}", *protos])
        if status != 0:
            raise SystemExit(f"protoc failed on {protos} (status {status})")
        shutil.rmtree(WIRE, ignore_errors=True)
        WIRE.mkdir()
        (WIRE / "__init__.py").write_text('"""Generated from proto/mfscore/v1 by services.generate_wire; do not edit."""\n')
        written = []
        for source in sorted((Path(out) / "mfscore" / "v1").iterdir()):
            target = WIRE / source.name
            target.write_text(_IMPORT.sub(r"from services.wire import \1", source.read_text()))
            written.append(target)
    return written


if __name__ == "__main__":
    files = generate()
    print(f"generated {len(files)} files in {WIRE.relative_to(ROOT)}", file=sys.stderr)
