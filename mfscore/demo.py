"""``make demo``: generate an MFC-style dataset and score it the way an evaluation would.

Runs embedded (no servers): the same ``mfscore`` commands a user types, printed before they run,
then the report tables and where the plots are.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from pathlib import Path

from mfscore.cli.main import main as mfscore_main
from mfscore.sample_data.detection import generate_detection_dataset


def _run(argv: list[str]) -> None:
    print(f"\n$ mfscore {shlex.join(argv)}", flush=True)
    status = mfscore_main(argv)
    if status != 0:
        sys.exit(status)


def _show(paths: list[Path]) -> None:
    for path in paths:
        print(f"\n--- {path}")
        print(path.read_text().rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate sample data and score it with mfscore.")
    parser.add_argument("--out", default="demo-output", help="directory for the data and the reports")
    parser.add_argument("--trials", type=int, default=4000, help="number of probes to generate")
    args = parser.parse_args(argv)

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    data = generate_detection_dataset(out / "data", args.trials)
    print(f"Generated an MFC-style manipulation dataset of {args.trials} probes in {data.directory}/")
    io = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
          "--sysDir", str(data.directory), "-s", data.system]

    reports = out / "reports"
    _run(["detection", *io, "-o", str(reports / "all" / "demo"), "--ci", "--semafor", "--optOut"])
    _run(["detection", *io, "-o", str(reports / "by_purpose" / "demo"), "--ci",
          "-qm", "Purpose==['add']", "Purpose==['remove']", "Purpose==['clone']", "Purpose==['heal']"])
    _run(["detection", *io, "-o", str(reports / "partitions" / "demo"), "--plotType", "det",
          "-qp", "Collection==['Nimble-SCI','Nimble-WEB','MFC-Eval'] & 1000 <= ProbeWidth"])

    _show(sorted(reports.rglob("*.csv")))
    print("\nPlots:")
    for plot in sorted(reports.rglob("*.png")):
        print(f"  {plot}  (and {plot.with_suffix('.pdf').name})")
    print(f"\nAll reports are under {reports}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
