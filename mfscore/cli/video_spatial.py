"""``mfscore video-spatial``: VideoSpatialLocalizationScorer's command line (docs/video.md §B.1).

A probe whose masks cannot be used is reported on stderr (one sentence naming the probe and the
file), scored as MediScore scores it (docs/video.md §B.2, §B.5: an unusable system mask as all white,
an unusable reference with the minimum scores), the run goes on, writes every table, and counts the
unusable masks at the end of stderr (exit 1 with --strict) so the
problem is not missed.
A problem with the run as a whole (a missing table or column, a mask path leaving its directory)
exits 1 with one sentence and writes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mfscore.cli.arguments import TaskRun, add_noscore_zone_arguments, add_strict_argument, integer, threshold_or_off
from mfscore.cli.documentation import see
from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_VIDEO_ELEMENTS
from mfscore.masks import MANIPULATION


HELP = "score spatial-temporal video masks (VideoSpatialLocalizationScorer-compatible)"
DESCRIPTION = ("Score HDF5 system video masks against reference masks, frame by frame: MCC, NMM, BWL1, GWL1, AUC, "
               "EER over the video's pixels and TemporalMCC over its frames. Accepts MediScore's "
               "VideoSpatialLocalizationScorer options.")


def add_arguments(p) -> None:
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
    p.add_argument("-procs", "--processors", type=int,
                   help="worker processes (default: one process, scoring on a thread per CPU)")
    p.add_argument("--hdf5-frame-base", type=int, choices=(0, 1), default=0,
                   help="what HDF5 mask block names count from: 0, the MFC2019 plan's 0-indexed start frames "
                        "(default), or 1, MediScore's (its ReadMe and mask generator)")
    p.add_argument("--max-elements", type=int, default=DEFAULT_MAX_VIDEO_ELEMENTS,
                   help=f"refuse masks declaring more pixels than this (default {DEFAULT_MAX_VIDEO_ELEMENTS:,})")
    add_strict_argument(p)
    p.add_argument("--plots", action="store_true",
                   help="also draw mcc_distribution.png: each query's per-video temporal MCC as a histogram and "
                        "a box (mfscore extension)")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    p.add_argument("-l", "--log", help="accepted; per-video threshold tables go beside the outputs")
    p.add_argument("--scoreDir", help="accepted, unused (as in MediScore)")
    p.add_argument("--mediscore-compat", action="store_true",
                   help=f"reproduce MediScore where mfscore corrects it ({see(p, 'compatibility.md')})")


def _scoring(args):
    """The scoring options; a value the options types refuse is an ``OptionError`` naming the flag."""
    from mfscore.masks.mask_scoring import ZoneOptions
    from mfscore.video.frame_tally import FrameRules
    from mfscore.video.spatial_trials import VideoOptions

    if args.task.lower() != MANIPULATION:
        raise OptionError(f"-t {args.task}: only the manipulation task is defined for video localization")
    if args.processors is not None and args.processors < 1:
        raise OptionError(f"-procs {args.processors}: the number of processes must be at least 1")
    zones = ZoneOptions(args.eks, args.dks, args.ntdks, args.kernel)
    return VideoOptions(
        rules=FrameRules(zones=zones, pixel_value=None if args.nspx == -1 else args.nspx),  # -1: none
        collar=args.collars, video_opt_out=args.video_opt_out, temporal_gt_only=bool(args.temporal_gt_only),
        temporal_only=bool(args.temporal_scoring_only), opt_out=args.optOut,
        per_probe_pixel_value=args.perProbePixelNoScore, truncate=args.truncate,
        mediscore_compat=args.mediscore_compat, max_elements=args.max_elements,
        hdf5_frame_base=args.hdf5_frame_base)


def options(args) -> TaskRun:
    """VideoSpatialLocalizationScorer's flags as the video-spatial task's options; ``_parameters.json``
    gets the command line and the flag values as the command saw them."""
    from mfscore.tasks.video_spatial import Options

    scoring = _scoring(args)
    flags = json.dumps({k: v for k, v in vars(args).items() if k not in ("task_name", "task_options")}, default=str)
    return TaskRun(Options(ref_dir=args.refDir, reference=args.inRef, index=args.inIndex,
                           system=str(Path(args.sysDir) / args.inSys), scoring=scoring,
                           query=tuple(args.query or ()), query_partition=args.queryPartition,
                           query_manipulation=tuple(args.queryManipulation or ()),
                           sbin=None if args.sbin == -10 else args.sbin, precision=args.precision,
                           strict=args.strict, plots=args.plots, command_line=" ".join(sys.argv), flags=flags),
                   args.outRoot, processes=args.processors, verbose=bool(args.verbose))
