"""``mfscore video-temporal``: VideoTemporalLocalizationScoring.py's command line (docs/video.md §A.1).

Writes ``scores_probes.csv``, ``scores.csv`` and ``query_table_join.csv`` into ``-o``, plus the
extras asked for (``-d`` records, ``-l`` log, ``-R`` HTML table, ``-T`` timeline plots). Bad input
(a malformed interval cell, a selected probe missing from the system output, a query outside the
grammar, an interval past FrameCount without ``--truncate``, ``-c 0``) exits 1 with one sentence
naming the file and line; nothing is written, because every file is staged until the run succeeds.

Its options are the video-temporal task's (``mfscore.tasks.video_temporal_options``), flags made from their
declarations; added here: ``-d`` with the name of its file, and the output directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, options_from

DEFAULT_DUMP_NAME = "df_scores_probes.csv"
TABLES = ("reference", "index", "journal_mask", "probe_journal_join", "system")


HELP = "score video temporal localization (VideoTemporalLocalizationScorer-compatible)"
DESCRIPTION = ("Temporal MCC of each probe's system frame intervals against the reference intervals of its journal "
               "operations, per query, with optional collars and system opt-out segments. Accepts MediScore "
               "VideoTemporalLocalizationScoring.py's options.")


def add_arguments(p) -> None:
    from mfscore.tasks.video_temporal_options import Options
    from mfscore.video.options import TemporalOptions

    add_options(p, Options, *TABLES, parse=dict.fromkeys(TABLES, Path))
    add_options(p, TemporalOptions, "collar", "queries", "truncate", "opt_out", "video_opt_out", unchecked=("collar",))
    p.add_argument("-d", "--dump_dataframe", action="store_true",
                   help="write the per-probe records (counts and MCC) into the output directory, as CSV "
                        "(or JSON for a .json name); never a pickle")
    p.add_argument("--dump_dataframe_file_name", default=DEFAULT_DUMP_NAME, metavar="NAME",
                   help=f"file name of the -d records (default {DEFAULT_DUMP_NAME}; a .pkl name becomes .csv)")
    p.add_argument("-o", "--output_path", default="./scores_output/",
                   help="output directory (default ./scores_output/)")
    add_options(p, Options, "log", "html", "timeline", "plots")
    add_options(p, TemporalOptions, "mediscore_compat")
    add_other_options(p, Options)


def options(args) -> TaskRun:
    """VideoTemporalLocalizationScoring.py's flags as the video-temporal task's options."""
    from mfscore.tasks.video_temporal_options import Options
    from mfscore.video.options import TemporalOptions

    return TaskRun(options_from(Options, args, scoring=options_from(TemporalOptions, args),
                                dump=args.dump_dataframe_file_name if args.dump_dataframe else None),
                   os.path.join(args.output_path, ""))
