"""``mfscore mask``: MaskScorer's command line (image localization scoring, mask.md §2)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mfscore.cli.arguments import add_noscore_zone_arguments, threshold_or_off
from mfscore.errors import OptionError
from mfscore.formats.images import DEFAULT_MAX_PIXELS
from mfscore.masks.journal_selection import read_mask_journal
from mfscore.masks.mask_scoring import ZoneOptions, score_mask
from mfscore.run.pool import pool_map
from mfscore.masks.mask_record import MaskRecord
from mfscore.masks.scorer import MaskOptions, QueryPlan, assemble_plan, plan_query
from mfscore.masks.trials import MANIPULATION, SPLICE, TrialTable, index_dimensions, load_trials
from mfscore.reports.mask_outputs import ReportOptions, write_query_outputs
from mfscore.reports.staged_outputs import StagedOutputs, staged_outputs


def _task(text: str) -> str:
    task = text.lower()
    if task not in (MANIPULATION, SPLICE):
        raise argparse.ArgumentTypeError(f"{text!r} is not a task type; use manipulation or splice")
    return task


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "mask", help="score image manipulation masks (MaskScorer-compatible)",
        description="Score system masks against reference masks: MCC, NMM, BWL1, GWL1, AUC, EER per probe "
                    "at every threshold, averaged per query. Accepts MediScore MaskScorer's options.")
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
    p.add_argument("-p", "--processors", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--precision", type=int, default=16, help="significant digits of reported numbers (default 16)")
    p.add_argument("--truncate", action="store_true", help="truncate instead of rounding at the precision")
    p.add_argument("--optOut", action="store_true", help="leave opted-out trials out")
    p.add_argument("--displayScoredOnly", action="store_true", help="per-image table lists scored trials only")
    p.add_argument("-xF", "--indexFilter", action="store_true", help="score only trials present in the index")
    p.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS,
                   help=f"refuse images declaring more pixels than this (default {DEFAULT_MAX_PIXELS:,})")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    p.add_argument("-html", action="store_true", help="accepted; mfscore writes no HTML report yet")
    for flag in ("--speedup", "--cache_flush", "--debug_off"):
        p.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cache_dir", help=argparse.SUPPRESS)
    p.add_argument("--mediscore-compat", action="store_true",
                   help="reproduce MediScore where mfscore corrects it (see docs/compatibility.md)")
    p.set_defaults(run=run)


@dataclass
class MaskRun:
    """A planned mask run: its options, trials and one plan of jobs per ``-qm`` query."""

    options: MaskOptions
    report: ReportOptions
    table: TrialTable
    plans: list[QueryPlan]


def prepare(args) -> MaskRun:
    """Read the tables and plan every query's jobs; no mask is read yet (both modes start here)."""
    if args.precision < 1:
        print("mfscore: warning: --precision below 1; using 16", file=sys.stderr)
        args.precision = 16
    if args.processors < 1:
        raise OptionError(f"-p {args.processors}: the number of processes must be at least 1")
    task = args.task
    ntdks = args.ntdks if task == MANIPULATION else 0
    options = MaskOptions(
        task=task, zones=ZoneOptions(args.eks, args.dks, ntdks, args.kernel), sbin=args.sbin,
        pixel_value=args.nspx, per_probe_pixel_value=args.perProbePixelNoScore,
        jpeg2000=args.jpeg2000, rbin=args.rbin, max_pixels=args.max_pixels,
        mediscore_compat=args.mediscore_compat)
    report = ReportOptions(task=task, precision=args.precision, truncate=args.truncate, opt_out=args.optOut,
                           display_scored_only=args.displayScoredOnly, queries=tuple(args.query or ()),
                           partition=args.queryPartition, mediscore_compat=args.mediscore_compat)
    ref_dir = args.refDir
    sys_csv = Path(args.sysDir) / args.inSys
    table = load_trials(task, Path(ref_dir) / args.inRef, sys_csv, Path(ref_dir) / args.inIndex,
                        index_filter=args.indexFilter, opt_out=args.optOut,
                        pixel_value_columns=args.perProbePixelNoScore)
    journal = read_mask_journal(ref_dir, args.inRef, mediscore_compat=args.mediscore_compat)
    index_sizes = index_dimensions(Path(ref_dir) / args.inIndex, task) if args.mediscore_compat else None
    plans = [plan_query(table, journal, options, ref_dir, sys_csv, text, index_sizes)
             for text in (args.queryManipulation or [None])]
    return MaskRun(options, report, table, plans)


def write_outputs(run: MaskRun, records: list[list[MaskRecord]], stage: StagedOutputs) -> list[str]:
    """Write every query's files from its records (in plan order); returns the lines for stderr."""
    lines = []
    for i, (plan, mine) in enumerate(zip(run.plans, records)):
        result = assemble_plan(plan, mine, run.options)
        lines += [f"mfscore: ERROR: {message}; the trial is left unscored" for message in result.messages]
        if not result.matched:
            lines.append(f"mfscore: the query {plan.query!r} yielded no journal data over which computation may take place")
            continue
        subdir = f"index_{i}" if len(run.plans) > 1 else ""
        for note in write_query_outputs(result, run.table, stage, run.report, subdir):
            lines.append(f"mfscore: {note}" + (f" (query {plan.query!r})" if plan.query else ""))
    return lines


def run(args) -> int:
    started = time.perf_counter()
    planned = prepare(args)
    scorer = lambda jobs: pool_map(score_mask, jobs, args.processors, interactive=sys.stderr.isatty())
    with staged_outputs(args.outRoot) as stage:
        records = [list(scorer(plan.jobs)) for plan in planned.plans]
        for line in write_outputs(planned, records, stage):
            print(line, file=sys.stderr)
    if args.verbose:
        print(f"mfscore: done in {time.perf_counter() - started:.2f} s; Ending", file=sys.stderr)
    print(f"reports in {stage.directory}/ (prefix {stage.prefix!r})")
    return 0
