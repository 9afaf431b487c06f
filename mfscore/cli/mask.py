"""``mfscore mask``: MaskScorer's command line (image localization scoring, docs/masks.md §2)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mfscore.cli.arguments import (
    TaskRun,
    add_noscore_zone_arguments,
    add_strict_argument,
    checked,
    integer,
    threshold_or_off,
)
from mfscore.cli.documentation import see
from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_JOB_BYTES, DEFAULT_MAX_PIXELS
from mfscore.masks import MANIPULATION, SPLICE


def _task(text: str) -> str:
    task = text.lower()
    if task not in (MANIPULATION, SPLICE):
        raise argparse.ArgumentTypeError(f"{text!r} is not a task type; use manipulation or splice")
    return task


HTML_VISUALS = 10  # MediScore's -html: the visuals of the 10 best and 10 worst masks, unless --visuals says


HELP = "score image manipulation masks (MaskScorer-compatible)"
DESCRIPTION = ("Score system masks against reference masks: MCC, NMM, BWL1, GWL1, AUC, EER per probe at every "
               "threshold, averaged per query. Accepts MediScore MaskScorer's options.")


def add_arguments(p) -> None:
    p.add_argument("-t", "--task", type=_task, default=MANIPULATION, help="manipulation or splice (default manipulation)")
    p.add_argument("--refDir", required=True, help="directory the reference, index and reference mask paths are relative to")
    p.add_argument("-r", "--inRef", required=True, help="reference CSV (relative to --refDir)")
    p.add_argument("-x", "--inIndex", default="indexes/NC2016-manipulation-index.csv", help="index CSV (relative to --refDir)")
    p.add_argument("--sysDir", default=".", help="directory the system output CSV is relative to")
    p.add_argument("-s", "--inSys", required=True, help="system output CSV; its mask paths are relative to its directory")
    p.add_argument("-oR", "--outRoot", required=True, help="output prefix DIR/PREFIX")
    p.add_argument("--outMeta", action="store_true", help="accepted; the per-image table already carries the metadata")
    p.add_argument("--outAllmeta", action="store_true", help="accepted; the per-image table already carries the metadata")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--query", nargs="+", help="average the trials each query selects")
    group.add_argument("-qp", "--queryPartition", help="average each partition of the listed factor values")
    group.add_argument("-qm", "--queryManipulation", nargs="+", help="score only the manipulations each query selects")
    add_noscore_zone_arguments(p)
    p.add_argument("--rbin", type=int, default=-1, help=">= 0: every non-white reference pixel is manipulated")
    p.add_argument("--sbin", type=threshold_or_off, default=-10, help="actual threshold in [-1, 255]; enables Actual and Maximum metrics")
    p.add_argument("--jpeg2000", action="store_true", help="bit-plane reference masks (ProbeBitPlaneMaskFileName)")
    p.add_argument("--nspx", type=int, default=-1, help="system no-score pixel value (-1: none)")
    p.add_argument("-pppns", "--perProbePixelNoScore", action="store_true",
                   help="per-probe no-score pixel values (ProbeOptOutPixelValue / DonorOptOutPixelValue)")
    p.add_argument("--extras-pixels", choices=("image", "scored"), default="image",
                   help="pixels mfscore's extra metrics (IoU, F1, soft confusion, SemaFor localization) sum over: "
                        "the whole image, as Bammey et al. define them (default), or MediScore's scored pixels "
                        "outside its no-score zones")
    p.add_argument("-p", "--processors", type=int,
                   help="worker processes (default: one process, scoring on a thread per CPU)")
    p.add_argument("--precision", type=int, default=16, help="significant digits of reported numbers (default 16)")
    p.add_argument("--truncate", action="store_true", help="truncate instead of rounding at the precision")
    p.add_argument("--optOut", action="store_true", help="leave opted-out trials out")
    p.add_argument("--displayScoredOnly", action="store_true", help="per-image table lists scored trials only")
    p.add_argument("-xF", "--indexFilter", action="store_true", help="score only trials present in the index")
    p.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS,
                   help=f"refuse images declaring more pixels than this (default {DEFAULT_MAX_PIXELS:,})")
    p.add_argument("--max-job-bytes", type=int, default=DEFAULT_MAX_JOB_BYTES,
                   help="leave unscored a trial whose masks would need more memory than this to score, judged from "
                        f"their headers (default {DEFAULT_MAX_JOB_BYTES:,})")
    add_strict_argument(p)
    p.add_argument("--plots", action="store_true",
                   help="also draw PREFIX_mask_roc[_ROLE].png per query: the pixel- and mask-weighted average ROCs "
                        "(mfscore extension)")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    p.add_argument("--visuals", type=checked(integer, "mfscore.tasks.mask:Options.visuals"), metavar="N",
                   help="draw the reference mask, the system mask at its optimum threshold and an overlay of TP, FP, "
                        "FN and the no-score zones for the N best and N worst probe masks by OptimumMCC, as PNGs "
                        "under PREFIX_visuals/ with an index.json")
    p.add_argument("-html", action="store_true",
                   help=f"MediScore's per-probe pages: here --visuals {HTML_VISUALS} (unless --visuals is given)")
    for flag in ("--speedup", "--cache_flush", "--debug_off"):
        p.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cache_dir", help=argparse.SUPPRESS)
    p.add_argument("--mediscore-compat", action="store_true",
                   help=f"reproduce MediScore where mfscore corrects it ({see(p, 'compatibility.md')})")


def _visuals(args) -> int:
    """``--visuals N``; MediScore's ``-html`` alone asks for ``HTML_VISUALS``."""
    if args.visuals is not None:
        return args.visuals
    return HTML_VISUALS if args.html else 0


def options(args) -> TaskRun:
    """MaskScorer's flags as the mask task's options."""
    from mfscore.masks.mask_scoring import ZoneOptions
    from mfscore.masks.scorer import MaskOptions
    from mfscore.reports.mask_outputs import ReportOptions
    from mfscore.tasks.mask import Options

    precision = args.precision
    if precision < 1:
        print("mfscore: warning: --precision below 1; using 16", file=sys.stderr)
        precision = 16
    if args.processors is not None and args.processors < 1:
        raise OptionError(f"-p {args.processors}: the number of processes must be at least 1")
    task = args.task
    ntdks = args.ntdks if task == MANIPULATION else 0
    scoring = MaskOptions(
        task=task, zones=ZoneOptions(args.eks, args.dks, ntdks, args.kernel), sbin=args.sbin,
        pixel_value=args.nspx, per_probe_pixel_value=args.perProbePixelNoScore,
        jpeg2000=args.jpeg2000, rbin=args.rbin, max_pixels=args.max_pixels,
        max_job_bytes=args.max_job_bytes, mediscore_compat=args.mediscore_compat)
    report = ReportOptions(task=task, precision=precision, truncate=args.truncate, opt_out=args.optOut,
                           display_scored_only=args.displayScoredOnly, queries=tuple(args.query or ()),
                           partition=args.queryPartition, mediscore_compat=args.mediscore_compat,
                           extras_pixels=args.extras_pixels, plots=args.plots)
    return TaskRun(Options(ref_dir=args.refDir, reference=args.inRef, index=args.inIndex,
                           system=str(Path(args.sysDir) / args.inSys), scoring=scoring, report=report,
                           index_filter=args.indexFilter, manipulation_queries=tuple(args.queryManipulation or ()),
                           strict=args.strict, visuals=_visuals(args)),
                   out_root=args.outRoot, processes=args.processors, verbose=bool(args.verbose))
