"""The video scorers' options: the temporal scorer's (VideoTemporalLocalizationScoring.py's flags,
docs/video.md §A.1) and the spatial-temporal scorer's (VideoSpatialLocalizationScorer's, docs/video.md §B.1),
with the rules its frames are scored by.

In a module of their own, importing nothing heavy: the command line makes its flags from these declarations
(``mfscore.cli.arguments.add_options``) before it has read the arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_VIDEO_ELEMENTS, HARD_MAX_VIDEO_ELEMENTS
from mfscore.masks.options import ZoneOptions
from mfscore.options import Check, option, valid_queries, validate, within

ALL = "*"              # docs/video.md §A.3: the literal * selects every row
FRAME_BASES = (0, 1)   # what an HDF5 block name counts from: the MFC2019 plan (0) or MediScore (1), docs/video.md §B.2


def _positive_collar(bad: tuple[int, ...]) -> Check:
    return Check(lambda c: None if c is None or c > 0 else "the collar half-width must be a positive number of frames",
                 bad=bad)


@dataclass(frozen=True)
class TemporalOptions:
    collar: int | None = field(default=None, metadata=option(
        "-c/--collars", _positive_collar((0, -1)), metavar="N",
        help="collar half-width in frames around every reference interval endpoint (N > 0)"))
    queries: tuple[str, ...] = field(default=(ALL,), metadata=option(
        "-q/--query", valid_queries(ignore=(ALL,)), selects=True, metavar="QUERY",
        help="queries on the journal and index columns; '*' selects everything (default)"))
    truncate: bool = field(default=False, metadata=option(
        "--truncate",
        help="clip system and opt-out intervals at FrameCount (without it, an interval past FrameCount is an error)"))
    opt_out: bool = field(default=True, metadata=option(  # False: score every status
        "--no_opt_out", help="score every probe whatever its ProbeStatus"))
    video_opt_out: bool = field(default=True, metadata=option(  # False: ignore VideoFrameOptOutSegments
        "--no_video_opt_out", help="ignore the VideoFrameOptOutSegments column"))
    mediscore_compat: bool = field(default=False, metadata=option(  # docs/video.md §A.6: truncate
        "--mediscore-compat", help="reproduce MediScore: always clip system and opt-out intervals at FrameCount"))

    def __post_init__(self):
        validate(self)
        if not self.queries:
            raise OptionError("-q/--query needs at least one query ('*' selects every row)", option="queries",
                              flag="-q/--query")

    @property
    def clips(self) -> bool:
        return self.truncate or self.mediscore_compat


@dataclass(frozen=True)
class FrameRules:
    """How a probe's frames are scored: which bit-planes are the target, the zones, the opt-out value."""

    selected_bitplanes: tuple[int, ...] = ()
    journal_bitplanes: tuple[int, ...] = ()
    every_bit: bool = False          # no journal data: every non-zero reference pixel is target (docs/video.md §B.3)
    zones: ZoneOptions = ZoneOptions()
    pixel_value: int | None = field(default=None, metadata=option("--nspx", Check(
        lambda value: None if value is None or 0 <= value <= 255
        else "a no-score pixel value is in [0, 255] (or -1 for none)", bad=(300, -2)),
        help="system no-score pixel value (-1: none)"))

    def __post_init__(self):
        validate(self)

    @property
    def margin(self) -> int:
        z = self.zones
        return max(z.erode_size, z.dilate_size, z.distraction_size) + 1


@dataclass(frozen=True)
class VideoOptions:
    """The scoring options of a run (docs/video.md §B.1)."""

    rules: FrameRules = FrameRules()
    collar: int | None = field(default=None, metadata=option("-c", _positive_collar((0, -3))))
    video_opt_out: bool = field(default=False, metadata=option(
        "--video_opt_out", help="frames in VideoFrameOptOutSegments are not scored"))
    temporal_gt_only: bool = field(default=False, metadata=option("--temporal_gt_only"))
    temporal_only: bool = field(default=False, metadata=option("--temporal_scoring_only"))
    opt_out: bool = field(default=False, metadata=option(
        "--optOut", help="leave out OptOutAll and OptOutLocalization videos"))
    per_probe_pixel_value: bool = field(default=False, metadata=option(
        "-pppns/--perProbePixelNoScore", help="per-probe no-score pixel values from the ProbeOptOutPixelValue column"))
    truncate: bool = field(default=False, metadata=option(
        "--truncate", help="drop system frames and opt-out intervals past the video's end"))
    mediscore_compat: bool = field(default=False, metadata=option(
        "--mediscore-compat", help="reproduce MediScore where mfscore corrects it", page="compatibility.md"))
    max_elements: int = field(default=DEFAULT_MAX_VIDEO_ELEMENTS, metadata=option(
        "--max-elements", within(1, HARD_MAX_VIDEO_ELEMENTS, what="the pixel limit"), limit="max_video_elements",
        help="refuse masks declaring more pixels than this (default {default:,})"))
    hdf5_frame_base: int = field(default=0, metadata=option(  # 0 the MFC2019 plan, 1 MediScore (docs/video.md §B.2)
        "--hdf5-frame-base", Check(lambda base: None if base in FRAME_BASES else "block names count from 0 or 1",
                                   bad=(2, -1), choices=FRAME_BASES),
        help="what HDF5 mask block names count from: 0, the MFC2019 plan's 0-indexed start frames (default), or 1, "
             "MediScore's (its ReadMe and mask generator)"))

    def __post_init__(self):
        validate(self)  # options also arrive decoded from the wire
