"""``mfscore detection``: DetectionScorer's command line, plus mfscore's extensions.

Its options are the detection task's (``mfscore.tasks.detection_options``), flags made from their declarations;
added here: the system output's ``--sysDir`` and ``-s``, the output prefix, the query group, and the flags
MediScore accepts that mfscore ignores or refuses.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, numbers, options_from
from mfscore.errors import OptionError

HELP = "score detection confidence scores (DetectionScorer-compatible)"
DESCRIPTION = ("Score trial confidence scores against the reference: ROC, AUC, EER, AUC@FAR, CDR@FAR, bootstrap "
               "intervals; one report per query. Accepts MediScore DetectionScorer's options.")


def add_arguments(p) -> None:
    from mfscore.detection.options import DetectionOptions, PlotOptions
    from mfscore.tasks.detection_options import Options

    add_options(p, Options, "kind", "ref_dir", "reference", "index", defaults={"kind": "manipulation", "ref_dir": "."})
    p.add_argument("--sysDir", default=".", help="directory the system output path is relative to")
    p.add_argument("-s", "--inSys", required=True, help="system output CSV (relative to --sysDir)")
    p.add_argument("-tv", "--tsv", default="", help=argparse.SUPPRESS)
    add_options(p, DetectionOptions, "far_stop", "ci", "ci_level")
    add_options(p, PlotOptions, "d_level")
    p.add_argument("-o", "--outRoot", default=".", help="output prefix DIR/PREFIX (DIR is created)")
    add_options(p, Options, "out_meta", "out_sub_meta", "dump", "verbose")
    add_options(p, PlotOptions, "title", "subtitle", "kind")
    p.add_argument("--display", action="store_true", help="accepted for compatibility; mfscore never opens a window")
    add_options(p, PlotOptions, "multi_figs", "no_num")
    p.add_argument("--configPlot", default="", help="accepted for compatibility and ignored")
    add_options(p, PlotOptions, "enabled")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--query", nargs="+", help="score the trials each query selects")
    group.add_argument("-qp", "--queryPartition", help="score each partition of the listed factor values")
    group.add_argument("-qm", "--queryManipulation", nargs="+",
                       help="score targets with the queried manipulations against all non-targets")
    add_options(p, DetectionOptions, "opt_out", "semafor", "semafor_fars", "llr_base", "mediscore_compat",
                parse={"semafor_fars": numbers})
    add_other_options(p, Options)


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
    from mfscore.detection.options import DetectionOptions, PlotOptions
    from mfscore.tasks.detection_options import Options

    if args.tsv:
        raise OptionError("-tv/--tsv is not supported (it never worked in MediScore either); convert the file to "
                          "'|'-separated CSV")
    mode, queries = _query_options(args)
    scoring = options_from(DetectionOptions, args, query_mode=mode, queries=queries)
    return TaskRun(options_from(Options, args, system=str(Path(args.sysDir) / args.inSys), scoring=scoring,
                                plot=options_from(PlotOptions, args)), args.outRoot)
