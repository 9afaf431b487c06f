"""The ``mfscore`` command: one entry point, a sub-command per scorer."""

from __future__ import annotations

import argparse
import sys
import traceback

from mfscore import __version__
from mfscore.cli import (
    detection,
    mask,
    provenance_filtering,
    provenance_graph,
    validate,
    validate_provenance,
    video_spatial,
    video_temporal,
)
from mfscore.errors import MfscoreError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mfscore", description="Media-forensics evaluation scoring (MediScore-compatible).")
    parser.add_argument("--version", action="version", version=f"mfscore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    detection.add_parser(subparsers)
    mask.add_parser(subparsers)
    validate.add_parser(subparsers)
    validate_provenance.add_parser(subparsers)
    provenance_filtering.add_parser(subparsers)
    provenance_graph.add_parser(subparsers)
    video_temporal.add_parser(subparsers)
    video_spatial.add_parser(subparsers)
    from services.commands import add_parsers  # the distributed commands: the top floor, network code stays out of the core
    add_parsers(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except MfscoreError as exc:
        print(f"mfscore: error: {exc.sentence()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mfscore: interrupted; no report was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: still one sentence, traceback with -v
        if getattr(args, "verbose", False):
            traceback.print_exc()
        print(f"mfscore: internal error: {type(exc).__name__}: {exc} (no report was written; rerun with -v for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
