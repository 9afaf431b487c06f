"""``mfscore video-spatial``: VideoSpatialLocalizationScorer's command line (video.md §B.1).

A probe whose masks cannot be used is reported on stderr (one sentence naming the probe and the
file), scored as the spec says (an unusable system mask as all white, an unusable reference with
the minimum scores), the run goes on, writes every table, and exits 1 so the problem is not missed.
A problem with the run as a whole (a missing table or column, a mask path leaving its directory)
exits 1 with one sentence and writes nothing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

from mfscore.cli.arguments import add_noscore_zone_arguments, integer, threshold_or_off
from mfscore.errors import OptionError
from mfscore.formats.journal import journal_paths
from mfscore.formats.tables import write_table
from mfscore.formats.video_masks import DEFAULT_MAX_VIDEO_ELEMENTS
from mfscore.masks.journal_selection import OPERATION, journal_results, read_mask_journal, select_operations
from mfscore.masks.mask_scoring import ZoneOptions
from mfscore.run.pool import pool_map
from mfscore.masks.run_metrics import maximum_threshold
from mfscore.masks.trials import MANIPULATION
from mfscore.reports.mask_outputs import FULL, partitions, select_rows
from mfscore.reports.staged_outputs import StagedOutputs, staged_outputs
from mfscore.reports.video_spatial_report import (METRIC_COLUMNS, averaged_columns, averaged_row, format_table,
                                                  pervideo_frame, threshold_table)
from mfscore.video.frame_tally import FrameRules
from mfscore.video.spatial_trials import VideoOptions, VideoTrials, load_video_trials, plan_video_jobs
from mfscore.video.video_metrics import video_cells
from mfscore.video.video_record import VideoRecord
from mfscore.video.video_scoring import score_video


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "video-spatial", help="score spatial-temporal video masks (VideoSpatialLocalizationScorer-compatible)",
        description="Score HDF5 system video masks against reference masks, frame by frame: MCC, NMM, BWL1, GWL1, "
                    "AUC, EER over the video's pixels and TemporalMCC over its frames. Accepts MediScore's "
                    "VideoSpatialLocalizationScorer options.")
    p.add_argument("-t", "--task", default=MANIPULATION, help="manipulation (the only video task)")
    p.add_argument("--refDir", required=True, help="directory the reference, index and reference masks are relative to")
    p.add_argument("-r", "--inRef", required=True, help="reference CSV (relative to --refDir)")
    p.add_argument("-x", "--inIndex", required=True, help="index CSV (relative to --refDir)")
    p.add_argument("--sysDir", default=".", help="directory the system output CSV is relative to")
    p.add_argument("-s", "--inSys", required=True, help="system output CSV; its mask paths are relative to its directory")
    p.add_argument("-oR", "--outRoot", required=True, help="output prefix DIR/PREFIX")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--query", nargs="+", help="average the videos each query selects")
    group.add_argument("-qp", "--queryPartition", help="average each partition of the listed factor values")
    group.add_argument("-qm", "--queryManipulation", nargs="+", help="score only the manipulations each query selects")
    p.add_argument("--optOut", action="store_true", help="leave out OptOutAll and OptOutLocalization videos")
    add_noscore_zone_arguments(p)
    p.add_argument("--rbin", type=int, default=-1, help="accepted; video reference masks are bit-plane codes")
    p.add_argument("--sbin", type=threshold_or_off, default=-10, help="actual threshold in [-1, 255]; enables Actual and Maximum metrics")
    p.add_argument("--nspx", type=int, default=-1, help="system no-score pixel value (-1: none)")
    p.add_argument("-pppns", "--perProbePixelNoScore", action="store_true",
                   help="per-probe no-score pixel values from the ProbeOptOutPixelValue column")
    p.add_argument("-c", "--collars", type=integer, help="temporal collar half-width in frames (> 0)")
    p.add_argument("--video_opt_out", action="store_true", help="frames in VideoFrameOptOutSegments are not scored")
    p.add_argument("--truncate", action="store_true", help="drop system frames and opt-out intervals past the video's end")
    p.add_argument("--temporal_gt_only", nargs="?", const="1", help="score pixels only in frames with a reference region")
    p.add_argument("--temporal_scoring_only", nargs="?", const="1", help="score only TemporalMCC")
    p.add_argument("--precision", type=int, default=16, help="significant digits of reported numbers (default 16)")
    p.add_argument("-procs", "--processors", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--max-elements", type=int, default=DEFAULT_MAX_VIDEO_ELEMENTS,
                   help=f"refuse masks declaring more pixels than this (default {DEFAULT_MAX_VIDEO_ELEMENTS:,})")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    p.add_argument("-l", "--log", help="accepted; per-video threshold tables go beside the outputs")
    p.add_argument("--scoreDir", help="accepted, unused (as in MediScore)")
    p.add_argument("--mediscore-compat", action="store_true",
                   help="reproduce MediScore where mfscore corrects it (see docs/compatibility.md)")
    p.set_defaults(run=run)


def _options(args) -> VideoOptions:
    if args.task.lower() != MANIPULATION:
        raise OptionError(f"-t {args.task}: only the manipulation task is defined for video localization")
    if args.collars is not None and args.collars <= 0:
        raise OptionError(f"-c {args.collars}: the collar half-width must be a positive number of frames")
    if args.max_elements < 1:
        raise OptionError(f"--max-elements {args.max_elements}: the pixel limit must be positive")
    if args.processors < 1:
        raise OptionError(f"-procs {args.processors}: the number of processes must be at least 1")
    if not -1 <= args.nspx <= 255:
        raise OptionError(f"--nspx {args.nspx}: a no-score pixel value is in [0, 255] (or -1 for none)")
    zones = ZoneOptions(args.eks, args.dks, args.ntdks, args.kernel)
    return VideoOptions(
        rules=FrameRules(zones=zones, pixel_value=None if args.nspx == -1 else args.nspx),
        collar=args.collars, video_opt_out=args.video_opt_out, temporal_gt_only=bool(args.temporal_gt_only),
        temporal_only=bool(args.temporal_scoring_only), opt_out=args.optOut,
        per_probe_pixel_value=args.perProbePixelNoScore, truncate=args.truncate,
        mediscore_compat=args.mediscore_compat, max_elements=args.max_elements)


def _journal(args) -> pd.DataFrame:
    """The probe-journal join ⋈ journal mask; empty when the reference has none (every bit then counts)."""
    paths = journal_paths(args.refDir, args.inRef, mediscore_compat=args.mediscore_compat)
    if not all(p.is_file() for p in paths):
        return pd.DataFrame(columns=["ProbeFileID", "JournalName", "StartNodeID", "EndNodeID"])
    joined = read_mask_journal(args.refDir, args.inRef, mediscore_compat=args.mediscore_compat)
    # the vidspatial branch's pandas grouped an inner join's rows by key, in order of first appearance
    first_seen = joined.groupby(OPERATION, sort=False).ngroup()
    return joined.iloc[first_seen.argsort(kind="stable")].reset_index(drop=True)


def _averaged(pervideo: pd.DataFrame, journal: pd.DataFrame, args, label: str) -> list[tuple[str, pd.DataFrame]]:
    if args.query:
        return [(q, select_rows(pervideo, journal, q, ["ProbeFileID"])) for q in args.query]
    if args.queryPartition:
        return [(" & ".join(f"{k}=={v}" for k, v in s.label.items()), s.rows)
                for s in partitions(pervideo, journal, args.queryPartition, ["ProbeFileID"])]
    return [(label, pervideo)]


def _write_query(stage: StagedOutputs, subdir: str, trials: VideoTrials, rows: pd.DataFrame,
                 records: list[VideoRecord], journal: pd.DataFrame, args, options: VideoOptions) -> None:
    sbin = None if args.sbin == -10 else args.sbin
    scored_spatial = [r.spatial for r in records if r.scored and r.spatial_scored]
    maximum = maximum_threshold(scored_spatial) if sbin is not None else None
    cells = [video_cells(r, maximum=maximum, actual=sbin, temporal_only=options.temporal_only) for r in records]
    pervideo = pervideo_frame(trials, rows, cells)
    averaged = [averaged_row(subset, pervideo, trials, label=label, maximum=maximum, actual=sbin,
                             opt_out=args.optOut, task=MANIPULATION)
                for label, subset in _averaged(pervideo, journal, args, FULL) if len(subset)]
    numeric = [c for c in averaged_columns() if c not in ("TaskID", "Query", "optOutScoring")]
    write_table(format_table(pd.DataFrame(averaged, columns=averaged_columns()), args.precision, numeric),
                stage.path("_mask_score.csv", subdir))
    write_table(format_table(pervideo, args.precision, METRIC_COLUMNS), stage.path("_pervideo.csv", subdir))
    for record in records:
        if record.scored:
            write_table(threshold_table(record), stage.path(f"_thresholds/{record.probe_id}.csv", subdir))


def _parameters(args, query: str | None) -> str:
    values = {k: v for k, v in vars(args).items() if k != "run"}
    return json.dumps({"command": " ".join(sys.argv), **values, "query": query}, indent=2, default=str)


def run(args) -> int:
    started = time.perf_counter()
    options = _options(args)
    ref_dir = args.refDir
    sys_csv = Path(args.sysDir) / args.inSys
    index_path = Path(ref_dir) / args.inIndex
    trials = load_video_trials(Path(ref_dir) / args.inRef, index_path, sys_csv, options)
    if trials.missing_system:
        print(f"mfscore: warning: {len(trials.missing_system)} video target(s) have no system output row and are "
              f"not scored (first: {trials.missing_system[0]})", file=sys.stderr)
    journal = _journal(args)
    queries = list(args.queryManipulation or [None])
    failed = 0
    with staged_outputs(args.outRoot) as stage:
        for i, text in enumerate(queries):
            subdir = f"index_{i}" if len(queries) > 1 else ""
            selection = select_operations(trials.targets, journal, MANIPULATION, text)
            if text is not None and not selection.matched:
                print(f"mfscore: the query {text!r} selects no journal operation; nothing is written for it",
                      file=sys.stderr)
                continue
            jobs = plan_video_jobs(trials, selection, journal, options, ref_dir=ref_dir,
                                   system_root=str(sys_csv.parent), index_path=index_path, sys_path=sys_csv)
            records = pool_map(score_video, jobs, args.processors, interactive=sys.stderr.isatty(),
                               label="scoring videos")
            for record in records:
                if record.error:
                    failed += 1
                    print(f"mfscore: error: probe {record.probe_id}: {record.error}", file=sys.stderr)
            _write_query(stage, subdir, trials, selection.trials, records, journal, args, options)
            write_table(journal_results(journal, selection.evaluated, {"probe": set()}, MANIPULATION),
                        stage.path("_journalResults.csv", subdir))
            stage.path("_parameters.json", subdir).write_text(_parameters(args, text))
    if args.verbose:
        print(f"mfscore: done in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    print(f"reports in {stage.directory}/ (prefix {stage.prefix!r})")
    if failed:
        print(f"mfscore: {failed} probe(s) had unusable masks (see the errors above); exit status 1", file=sys.stderr)
    return 1 if failed else 0
