"""``mfscore mask``: MaskScorer's command line (image localization scoring, docs/masks.md §2).

Its options are the mask task's (``mfscore.tasks.mask_options``), flags made from their declarations; added here:
``-t`` (one flag for the scoring's and the report's task, in any case, as MaskScorer takes it), the system
output's ``--sysDir`` and ``-s``, the output prefix, the processes, ``-v``, ``-html`` and the flags MediScore
accepts that mfscore ignores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, options_from
from mfscore.errors import OptionError
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
    from mfscore.masks.options import MaskOptions, ReportOptions, ZoneOptions
    from mfscore.tasks.mask_options import Options

    p.add_argument("-t", "--task", type=_task, default=MANIPULATION,
                   help="manipulation or splice (default manipulation)")
    add_options(p, Options, "ref_dir", "reference", "index",
                defaults={"index": "indexes/NC2016-manipulation-index.csv"},
                helps={"ref_dir": "directory the reference, index and reference mask paths are relative to"})
    p.add_argument("--sysDir", default=".", help="directory the system output CSV is relative to")
    p.add_argument("-s", "--inSys", required=True,
                   help="system output CSV; its mask paths are relative to its directory")
    p.add_argument("-oR", "--outRoot", required=True, help="output prefix DIR/PREFIX")
    for flag in ("--outMeta", "--outAllmeta"):
        p.add_argument(flag, action="store_true", help="accepted; the per-image table already carries the metadata")
    group = p.add_mutually_exclusive_group()
    add_options(group, ReportOptions, "queries", "partition", unchecked=("partition",))
    add_options(group, Options, "manipulation_queries")
    add_options(p, ZoneOptions, "erode_size", "dilate_size", "distraction_size", "kernel")
    add_options(p, MaskOptions, "rbin", "sbin", "jpeg2000", "pixel_value", "per_probe_pixel_value",
                unchecked=("pixel_value",))
    add_options(p, ReportOptions, "extras_pixels")
    p.add_argument("-p", "--processors", type=int,
                   help="worker processes (default: one process, scoring on a thread per CPU)")
    add_options(p, ReportOptions, "precision", "truncate", "opt_out", "display_scored_only", unchecked=("precision",))
    add_options(p, Options, "index_filter")
    add_options(p, MaskOptions, "max_pixels", "max_job_bytes", unchecked=("max_pixels", "max_job_bytes"))
    add_options(p, Options, "strict")
    add_options(p, ReportOptions, "plots")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    add_options(p, Options, "visuals", defaults={"visuals": None})
    p.add_argument("-html", action="store_true",
                   help=f"MediScore's per-probe pages: here --visuals {HTML_VISUALS} (unless --visuals is given)")
    for flag in ("--speedup", "--cache_flush", "--debug_off"):
        p.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cache_dir", help=argparse.SUPPRESS)
    add_options(p, MaskOptions, "mediscore_compat")
    add_other_options(p, Options)


def _visuals(args) -> int:
    """``--visuals N``; MediScore's ``-html`` alone asks for ``HTML_VISUALS``."""
    if args.visuals is not None:
        return args.visuals
    return HTML_VISUALS if args.html else 0


def options(args) -> TaskRun:
    """MaskScorer's flags as the mask task's options."""
    from mfscore.masks.options import MaskOptions, ReportOptions, ZoneOptions
    from mfscore.tasks.mask_options import Options

    precision = args.precision
    if precision < 1:
        print("mfscore: warning: --precision below 1; using 16", file=sys.stderr)
        precision = 16
    if args.processors is not None and args.processors < 1:
        raise OptionError(f"-p {args.processors}: the number of processes must be at least 1")
    zones = options_from(ZoneOptions, args, **({} if args.task == MANIPULATION else {"distraction_size": 0}))
    return TaskRun(options_from(Options, args, system=str(Path(args.sysDir) / args.inSys),
                                scoring=options_from(MaskOptions, args, zones=zones),
                                report=options_from(ReportOptions, args, precision=precision), visuals=_visuals(args)),
                   out_root=args.outRoot, processes=args.processors, verbose=bool(args.verbose))
