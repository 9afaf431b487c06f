"""``mfscore video-temporal``: VideoTemporalLocalizationScoring.py's command line (video.md §A.1).

Writes ``scores_probes.csv``, ``scores.csv`` and ``query_table_join.csv`` into ``-o``, plus the
extras asked for (``-d`` records, ``-l`` log, ``-R`` HTML table, ``-T`` timeline plots). Bad input
(a malformed interval cell, a selected probe missing from the system output, a query outside the
grammar, an interval past FrameCount without ``--truncate``, ``-c 0``) exits 1 with one sentence
naming the file and line; nothing is written, because every file is staged until the run succeeds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mfscore.errors import OptionError
from mfscore.reports.staged_outputs import staged_outputs
from mfscore.reports.video_temporal_report import (
    empty_queries,
    probe_scores,
    timeline_name,
    write_html,
    write_records,
    write_scores,
    write_timeline,
)
from mfscore.video.temporal_scorer import (
    TemporalInputs,
    TemporalOptions,
    TemporalRun,
    score_video_temporal,
)

DEFAULT_DUMP_NAME = "df_scores_probes.csv"
PICKLE_SUFFIXES = (".pkl", ".pickle")
PLOTS = "plots"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "video-temporal", help="score video temporal localization (VideoTemporalLocalizationScorer-compatible)",
        description="Temporal MCC of each probe's system frame intervals against the reference intervals of its "
                    "journal operations, per query, with optional collars and system opt-out segments. Accepts "
                    "MediScore VideoTemporalLocalizationScoring.py's options.")
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
    p.add_argument("--mediscore-compat", action="store_true",
                   help="reproduce MediScore: always clip system and opt-out intervals at FrameCount")
    p.set_defaults(run=run)


def _dump_name(name: str) -> tuple[str, str | None]:
    """The records file name, and a note when a pickle name was asked for."""
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise OptionError(f"--dump_dataframe_file_name must be a file name inside the output directory, not {name!r}")
    stem, suffix = os.path.splitext(name)
    if suffix.lower() in PICKLE_SUFFIXES:
        return stem + ".csv", f"-d writes {stem}.csv (pipe-separated records) instead of the pickle {name}"
    return name, None


def _log_lines(args, run: TemporalRun) -> list[str]:
    header = (f"mfscore video-temporal: {len(run.queries)} query(ies), collar {args.collars}, "
              f"truncate {args.truncate or args.mediscore_compat}, opt-out {not args.no_opt_out}, "
              f"video opt-out {not args.no_video_opt_out}")
    lines = [header]
    lines += [f"query {q}: {text}" for q, text in enumerate(run.queries)]
    lines += [f"probe {probe} not scored: ProbeStatus {status!r}" for probe, status in run.not_scored.items()]
    for probe, record in zip(run.intervals, run.records):
        c = record.counts
        lines.append(f"query {record.query} probe {record.probe_id}: FrameCount {probe.frame_count}, "
                     f"reference {list(probe.reference)}, system {list(probe.system)}, collars {list(probe.collars)}, "
                     f"opt-out {list(probe.no_score)}; TP {c.tp} TN {c.tn} FP {c.fp} FN {c.fn} MCC {record.mcc!r}")
    return lines


def run(args) -> int:
    inputs = TemporalInputs(index=args.path_index, journal_mask=args.path_journalmask,
                            probe_journal_join=args.path_probejournaljoin, system=args.path_sysout,
                            reference=args.path_ref)
    options = TemporalOptions(collar=args.collars, queries=tuple(args.query), truncate=args.truncate,
                              opt_out=not args.no_opt_out, video_opt_out=not args.no_video_opt_out,
                              mediscore_compat=args.mediscore_compat)
    dump_name, dump_note = _dump_name(args.dump_dataframe_file_name) if args.dump_dataframe else (None, None)
    result = score_video_temporal(inputs, options)

    for q in empty_queries(result.records, result.queries):
        print(f"mfscore: warning: query {q} ({result.queries[q]}) scores no probe; its MCC in scores.csv is empty",
              file=sys.stderr)
    with staged_outputs(os.path.join(args.output_path, "")) as stage:
        timelines = None
        if args.timeline_report:
            timelines = {}
            for probe, record in zip(result.intervals, result.records):
                name = timeline_name(record.probe_id, record.query)
                write_timeline(probe, record, stage.path(name, subdir=PLOTS))
                timelines[record.query, record.probe_id] = f"{PLOTS}/{name}"
        write_scores(result.records, result.queries, stage.path, timelines)
        if dump_name:
            write_records(result.records, stage.path(dump_name))
        if args.html_report:
            write_html(probe_scores(result.records, timelines), stage.path("scores_probes.html"))
        if args.log:
            stage.path("log.txt").write_text("\n".join(_log_lines(args, result)) + "\n")
    if dump_note:
        print(f"mfscore: note: {dump_note}", file=sys.stderr)
    print(f"scored {len(result.records)} probe(s) over {len(result.queries)} query(ies); reports in {stage.directory}/")
    print("Done.")
    return 0
