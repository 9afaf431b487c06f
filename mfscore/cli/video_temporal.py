"""``mfscore video-temporal``: VideoTemporalLocalizationScoring.py's command line (docs/video.md §A.1).

Writes ``scores_probes.csv``, ``scores.csv`` and ``query_table_join.csv`` into ``-o``, plus the
extras asked for (``-d`` records, ``-l`` log, ``-R`` HTML table, ``-T`` timeline plots). Bad input
(a malformed interval cell, a selected probe missing from the system output, a query outside the
grammar, an interval past FrameCount without ``--truncate``, ``-c 0``) exits 1 with one sentence
naming the file and line; nothing is written, because every file is staged until the run succeeds.
"""

from __future__ import annotations

import os
from pathlib import Path

from mfscore.cli.arguments import TaskRun

DEFAULT_DUMP_NAME = "df_scores_probes.csv"


HELP = "score video temporal localization (VideoTemporalLocalizationScorer-compatible)"
DESCRIPTION = ("Temporal MCC of each probe's system frame intervals against the reference intervals of its journal "
               "operations, per query, with optional collars and system opt-out segments. Accepts MediScore "
               "VideoTemporalLocalizationScoring.py's options.")


def add_arguments(p) -> None:
    p.add_argument("-r", "--path_ref", type=Path, help="reference CSV (checked to exist; no column of it is used)")
    p.add_argument("-i", "--path_index", type=Path, required=True, help="index CSV (ProbeFileID, FrameCount)")
    p.add_argument("-j", "--path_journalmask", type=Path, required=True, help="*-ref-journalmask.csv")
    p.add_argument("-p", "--path_probejournaljoin", type=Path, required=True, help="*-ref-probejournaljoin.csv")
    p.add_argument("-s", "--path_sysout", type=Path, required=True, help="system output CSV")
    p.add_argument("-c", "--collars", type=int, default=None, metavar="N",
                   help="collar half-width in frames around every reference interval endpoint (N > 0)")
    p.add_argument("-q", "--query", nargs="+", default=["*"], metavar="QUERY",
                   help="queries on the journal and index columns; '*' selects everything (default)")
    p.add_argument("--truncate", action="store_true",
                   help="clip system and opt-out intervals at FrameCount (without it, an interval past FrameCount is an error)")
    p.add_argument("--no_opt_out", action="store_true", help="score every probe whatever its ProbeStatus")
    p.add_argument("--no_video_opt_out", action="store_true", help="ignore the VideoFrameOptOutSegments column")
    p.add_argument("-d", "--dump_dataframe", action="store_true",
                   help="write the per-probe records (counts and MCC) into the output directory, as CSV "
                        "(or JSON for a .json name); never a pickle")
    p.add_argument("--dump_dataframe_file_name", default=DEFAULT_DUMP_NAME, metavar="NAME",
                   help=f"file name of the -d records (default {DEFAULT_DUMP_NAME}; a .pkl name becomes .csv)")
    p.add_argument("-o", "--output_path", default="./scores_output/", help="output directory (default ./scores_output/)")
    p.add_argument("-l", "--log", action="store_true", help="write log.txt (each probe's intervals and counts) "
                                                            "into the output directory")
    p.add_argument("-R", "--html-report", dest="html_report", action="store_true",
                   help="write scores_probes.html, a plain HTML table of the per-probe scores")
    p.add_argument("-T", "--timeline-report", dest="timeline_report", action="store_true",
                   help="write plots/timeline_<ProbeFileID>_<query>.png per probe and a Timeline column")
    p.add_argument("--plots", action="store_true",
                   help="also draw mcc_distribution.png: each query's per-probe MCC as a histogram and a box "
                        "(mfscore extension)")
    p.add_argument("--mediscore-compat", action="store_true",
                   help="reproduce MediScore: always clip system and opt-out intervals at FrameCount")


def options(args) -> TaskRun:
    """VideoTemporalLocalizationScoring.py's flags as the video-temporal task's options."""
    from mfscore.tasks.video_temporal import Options
    from mfscore.video.temporal_scorer import TemporalOptions

    scoring = TemporalOptions(collar=args.collars, queries=tuple(args.query), truncate=args.truncate,
                              opt_out=not args.no_opt_out, video_opt_out=not args.no_video_opt_out,
                              mediscore_compat=args.mediscore_compat)
    return TaskRun(Options(index=str(args.path_index), journal_mask=str(args.path_journalmask),
                           probe_journal_join=str(args.path_probejournaljoin), system=str(args.path_sysout),
                           reference=None if args.path_ref is None else str(args.path_ref), scoring=scoring,
                           dump=args.dump_dataframe_file_name if args.dump_dataframe else None, log=args.log,
                           html=args.html_report, timeline=args.timeline_report, plots=args.plots),
                   os.path.join(args.output_path, ""))
