"""``mfscore detection``: DetectionScorer's command line, plus mfscore's extensions."""

from __future__ import annotations

import argparse
from pathlib import Path

from mfscore.cli.arguments import TaskRun, checked, number, numbers
from mfscore.cli.documentation import see
from mfscore.detection import KINDS, LLR_BASE_NAMES, PLOT_KINDS
from mfscore.errors import OptionError

SCORING = "mfscore.detection.scorer:DetectionOptions"
PLOT = "mfscore.reports.detection_outputs:PlotOptions"
HELP = "score detection confidence scores (DetectionScorer-compatible)"
DESCRIPTION = ("Score trial confidence scores against the reference: ROC, AUC, EER, AUC@FAR, CDR@FAR, bootstrap "
               "intervals; one report per query. Accepts MediScore DetectionScorer's options.")


def add_arguments(p) -> None:
    p.add_argument("-t", "--task", choices=KINDS, default="manipulation", help="evaluation task (default manipulation)")
    p.add_argument("--refDir", default=".", help="directory the reference and index paths are relative to")
    p.add_argument("-r", "--inRef", required=True, help="reference CSV (relative to --refDir)")
    p.add_argument("-x", "--inIndex", required=True, help="index CSV (relative to --refDir)")
    p.add_argument("--sysDir", default=".", help="directory the system output path is relative to")
    p.add_argument("-s", "--inSys", required=True, help="system output CSV (relative to --sysDir)")
    p.add_argument("-tv", "--tsv", default="", help=argparse.SUPPRESS)
    p.add_argument("--farStop", type=checked(number, f"{SCORING}.far_stop"), default=0.1, help="FAR for AUC@FAR and CDR@FAR (default 0.1)")
    p.add_argument("--ci", action="store_true", help="bootstrap confidence intervals (500 resamples)")
    p.add_argument("--ciLevel", type=checked(number, f"{SCORING}.ci_level"), default=0.9, help="confidence level, in (0.80, 0.99) (default 0.9)")
    p.add_argument("--dLevel", type=checked(number, f"{PLOT}.d_level"), default=0.0, help="rate band excluded from the d' search (plot only)")
    p.add_argument("-o", "--outRoot", default=".", help="output prefix DIR/PREFIX (DIR is created)")
    p.add_argument("--outMeta", action="store_true", help="also write the scored table with its metadata")
    p.add_argument("--outSubMeta", action="store_true", help="also write the key/index/system columns of the scored trials")
    p.add_argument("--dump", action="store_true", help="also write each subset's ROC points (<out>_query_<i>_roc.csv)")
    p.add_argument("-v", "--verbose", action="store_true", help="progress messages on stderr")
    p.add_argument("--plotTitle", default="Performance")
    p.add_argument("--plotSubtitle", default="")
    p.add_argument("--plotType", choices=PLOT_KINDS, default="roc", help="ROC or DET plot (default roc)")
    p.add_argument("--display", action="store_true", help="accepted for compatibility; mfscore never opens a window")
    p.add_argument("--multiFigs", action="store_true", help="one figure per query instead of one for all")
    p.add_argument("--noNum", action="store_true", help="no target/non-target counts in the plot")
    p.add_argument("--configPlot", default="", help="accepted for compatibility and ignored")
    p.add_argument("--noPlot", action="store_true", help="write no plots (mfscore extension)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--query", nargs="+", help="score the trials each query selects")
    group.add_argument("-qp", "--queryPartition", help="score each partition of the listed factor values")
    group.add_argument("-qm", "--queryManipulation", nargs="+", help="score targets with the queried manipulations against all non-targets")
    p.add_argument("--optOut", action="store_true", help="score opted-in trials only (IsOptOut / ProbeStatus)")
    p.add_argument("--semafor", action="store_true",
                   help="also write <out>_semafor_report.csv (pD@FAR, bACC at the EER threshold, pAUC, Cllr; "
                        "intervals with --ci) and <out>_semafor_ROC.pdf/.png (SemaFor plan)")
    p.add_argument("--far", type=checked(numbers, f"{SCORING}.semafor_fars"), default=(0.08, 0.1),
                   help="comma-separated FARs for pD@FAR with --semafor (default 0.08,0.1)")
    p.add_argument("--llr-base", choices=LLR_BASE_NAMES, default="e",
                   help="base of the logarithm in the scores (LLRs), for Cllr with --semafor (default e)")
    p.add_argument("--mediscore-compat", action="store_true",
                   help=f"reproduce MediScore where mfscore corrects it ({see(p, 'compatibility.md')})")


def _query_options(args) -> tuple[str | None, tuple[str, ...]]:
    if args.query:
        return "q", tuple(args.query)
    if args.queryManipulation:
        return "qm", tuple(args.queryManipulation)
    if args.queryPartition:
        return "qp", (args.queryPartition,)
    return None, ()


def options(args) -> TaskRun:
    """DetectionScorer's flags as the detection task's options."""
    from mfscore.detection.scorer import DetectionOptions
    from mfscore.reports.detection_outputs import PlotOptions
    from mfscore.tasks.detection import Options

    if args.tsv:
        raise OptionError("-tv/--tsv is not supported (it never worked in MediScore either); convert the file to '|'-separated CSV")
    mode, queries = _query_options(args)
    scoring = DetectionOptions(far_stop=args.farStop, ci=args.ci, ci_level=args.ciLevel, opt_out=args.optOut,
                               query_mode=mode, queries=queries, semafor=args.semafor, semafor_fars=args.far,
                               llr_base=args.llr_base, mediscore_compat=args.mediscore_compat)
    plot = PlotOptions(kind=args.plotType, title=args.plotTitle, subtitle=args.plotSubtitle, no_num=args.noNum,
                       multi_figs=args.multiFigs, d_level=args.dLevel, enabled=not args.noPlot)
    return TaskRun(Options(kind=args.task, ref_dir=args.refDir, reference=args.inRef, index=args.inIndex,
                           system=str(Path(args.sysDir) / args.inSys), scoring=scoring, plot=plot,
                           out_meta=args.outMeta, out_sub_meta=args.outSubMeta, dump=args.dump,
                           verbose=args.verbose), args.outRoot)
