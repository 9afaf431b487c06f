"""``mfscore video-spatial``: VideoSpatialLocalizationScorer's command line (docs/video.md §B.1).

A probe whose masks cannot be used is reported on stderr (one sentence naming the probe and the
file), scored as MediScore scores it (docs/video.md §B.2, §B.5: an unusable system mask as all white,
an unusable reference with the minimum scores), the run goes on, writes every table, and counts the
unusable masks at the end of stderr (exit 1 with --strict) so the
problem is not missed.
A problem with the run as a whole (a missing table or column, a mask path leaving its directory)
exits 1 with one sentence and writes nothing.

Its options are the video-spatial task's (``mfscore.tasks.video_spatial_options``), flags made from their
declarations; added here: the system output's ``--sysDir`` and ``-s``, the output prefix, the processes, ``-v``,
the flags MediScore accepts that mfscore ignores, and those read their own way (``-c/--collars``; the optional
values of ``--temporal_gt_only`` and ``--temporal_scoring_only``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, integer, options_from
from mfscore.errors import OptionError
from mfscore.masks import MANIPULATION


HELP = "score spatial-temporal video masks (VideoSpatialLocalizationScorer-compatible)"
DESCRIPTION = ("Score HDF5 system video masks against reference masks, frame by frame: MCC, NMM, BWL1, GWL1, AUC, "
               "EER over the video's pixels and TemporalMCC over its frames. Accepts MediScore's "
               "VideoSpatialLocalizationScorer options.")


def add_arguments(p) -> None:
    from mfscore.masks.options import MaskOptions, ZoneOptions
    from mfscore.tasks.video_spatial_options import Options
    from mfscore.video.options import FrameRules, VideoOptions

    p.add_argument("-t", "--task", default=MANIPULATION, help="manipulation (the only video task)")
    add_options(p, Options, "ref_dir", "reference", "index",
                helps={"ref_dir": "directory the reference, index and reference masks are relative to"})
    p.add_argument("--sysDir", default=".", help="directory the system output CSV is relative to")
    p.add_argument("-s", "--inSys", required=True,
                   help="system output CSV; its mask paths are relative to its directory")
    p.add_argument("-oR", "--outRoot", required=True, help="output prefix DIR/PREFIX")
    group = p.add_mutually_exclusive_group()
    add_options(group, Options, "query", "query_partition", "query_manipulation",
                defaults={"query": None, "query_manipulation": None}, unchecked=("query_partition",))
    add_options(p, VideoOptions, "opt_out")
    add_options(p, ZoneOptions, "erode_size", "dilate_size", "distraction_size", "kernel")
    p.add_argument("--rbin", type=int, default=-1, help="accepted; video reference masks are bit-plane codes")
    add_options(p, MaskOptions, "sbin")  # -10 for none, as the mask scorer's
    add_options(p, FrameRules, "pixel_value", defaults={"pixel_value": -1}, unchecked=("pixel_value",))
    add_options(p, VideoOptions, "per_probe_pixel_value")
    p.add_argument("-c", "--collars", type=integer, help="temporal collar half-width in frames (> 0)")
    add_options(p, VideoOptions, "video_opt_out", "truncate")
    p.add_argument("--temporal_gt_only", nargs="?", const="1",
                   help="score pixels only in frames with a reference region")
    p.add_argument("--temporal_scoring_only", nargs="?", const="1", help="score only TemporalMCC")
    add_options(p, Options, "precision")
    p.add_argument("-procs", "--processors", type=int,
                   help="worker processes (default: one process, scoring on a thread per CPU)")
    add_options(p, VideoOptions, "hdf5_frame_base", "max_elements", unchecked=("max_elements",))
    add_options(p, Options, "strict", "plots")
    p.add_argument("-v", "--verbose", type=int, nargs="?", const=1, default=None, help="1: progress messages")
    p.add_argument("-l", "--log", help="accepted; per-video threshold tables go beside the outputs")
    p.add_argument("--scoreDir", help="accepted, unused (as in MediScore)")
    add_options(p, VideoOptions, "mediscore_compat")
    add_other_options(p, Options)


def _scoring(args):
    """The scoring options; a value the options types refuse is an ``OptionError`` naming the flag."""
    from mfscore.masks.options import ZoneOptions
    from mfscore.video.options import FrameRules, VideoOptions

    if args.task.lower() != MANIPULATION:
        raise OptionError(f"-t {args.task}: only the manipulation task is defined for video localization")
    if args.processors is not None and args.processors < 1:
        raise OptionError(f"-procs {args.processors}: the number of processes must be at least 1")
    rules = options_from(FrameRules, args, zones=options_from(ZoneOptions, args),
                         pixel_value=None if args.nspx == -1 else args.nspx)  # -1: none
    return options_from(VideoOptions, args, rules=rules, collar=args.collars,
                        temporal_gt_only=bool(args.temporal_gt_only), temporal_only=bool(args.temporal_scoring_only))


def options(args) -> TaskRun:
    """VideoSpatialLocalizationScorer's flags as the video-spatial task's options; ``_parameters.json``
    gets the command line and the flag values as the command saw them."""
    from mfscore.masks.options import SBIN_OFF
    from mfscore.tasks.video_spatial_options import Options

    flags = json.dumps({k: v for k, v in vars(args).items() if k not in ("task_name", "task_options")}, default=str)
    return TaskRun(options_from(Options, args, system=str(Path(args.sysDir) / args.inSys), scoring=_scoring(args),
                                sbin=None if args.sbin == SBIN_OFF else args.sbin, command_line=" ".join(sys.argv),
                                flags=flags),
                   args.outRoot, processes=args.processors, verbose=bool(args.verbose))
