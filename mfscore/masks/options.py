"""A mask run's scoring and report options (MaskScorer's flags, docs/masks.md §2), and the no-score zones they
share with the video scorer.

In a module of their own, importing nothing heavy: the command line makes its flags from these declarations
(``mfscore.cli.arguments.add_options``) before it has read the arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.limits import (
    DEFAULT_MAX_JOB_BYTES,
    DEFAULT_MAX_PIXELS,
    HARD_MAX_JOB_BYTES,
    HARD_MAX_KERNEL_SIZE,
    HARD_MAX_PIXELS,
)
from mfscore.masks import IMAGE, KERNEL_SHAPES, MANIPULATION, SCORED_PIXELS, SPLICE
from mfscore.options import at_least, odd_or_zero, one_of, option, valid_queries, validate, within

SBIN_OFF = -10  # --sbin's value for no actual threshold


@dataclass(frozen=True)
class ZoneOptions:
    """Kernel sizes and shape of the no-score zones (docs/masks.md §5)."""

    erode_size: int = field(default=15, metadata=option(
        "--eks", odd_or_zero(HARD_MAX_KERNEL_SIZE, what="the erosion kernel size"), limit="max_kernel_size",
        help="erosion kernel size of the boundary no-score zone (default {default})"))
    dilate_size: int = field(default=11, metadata=option(
        "--dks", odd_or_zero(HARD_MAX_KERNEL_SIZE, what="the dilation kernel size"), limit="max_kernel_size",
        help="dilation kernel size of the boundary no-score zone (default {default})"))
    distraction_size: int = field(default=15, metadata=option(
        "--ntdks", odd_or_zero(HARD_MAX_KERNEL_SIZE, what="the distraction kernel size"), limit="max_kernel_size",
        help="dilation kernel size of the distraction no-score zone (default {default})"))
    kernel: str = field(default="box", metadata=option(
        "-k/--kernel", one_of(KERNEL_SHAPES, what="the kernel shape"), help="kernel shape (default {default})"))

    def __post_init__(self):
        validate(self)


@dataclass(frozen=True)
class MaskOptions:
    """What a mask run needs beyond its input files (MaskScorer's options, docs/masks.md §2)."""

    task: str = field(default=MANIPULATION, metadata=option(
        "-t/--task", one_of((MANIPULATION, SPLICE), what="the task type")))
    zones: ZoneOptions = ZoneOptions()
    sbin: int = field(default=SBIN_OFF, metadata=option(
        "--sbin", within(-1, 255, spare=SBIN_OFF, what="the actual threshold"),
        help="actual threshold in [-1, 255]; enables Actual and Maximum metrics"))
    pixel_value: int = field(default=-1, metadata=option(
        "--nspx", within(0, 255, spare=-1, what="a no-score pixel value"),
        help="system no-score pixel value (-1: none)"))
    per_probe_pixel_value: bool = field(default=False, metadata=option(
        "-pppns/--perProbePixelNoScore",
        help="per-probe no-score pixel values (ProbeOptOutPixelValue / DonorOptOutPixelValue)"))
    jpeg2000: bool = field(default=False, metadata=option(
        "--jpeg2000", help="bit-plane reference masks (ProbeBitPlaneMaskFileName)"))
    rbin: int = field(default=-1, metadata=option(
        "--rbin", help=">= 0: every non-white reference pixel is manipulated"))
    max_pixels: int = field(default=DEFAULT_MAX_PIXELS, metadata=option(
        "--max-pixels", within(1, HARD_MAX_PIXELS, what="the pixel limit"), limit="max_pixels",
        help="refuse images declaring more pixels than this (default {default:,})"))
    max_job_bytes: int = field(default=DEFAULT_MAX_JOB_BYTES, metadata=option(
        "--max-job-bytes", within(1, HARD_MAX_JOB_BYTES, what="the memory limit"), limit="max_job_bytes",
        help="leave unscored a trial whose masks would need more memory than this to score, judged from their "
             "headers (default {default:,})"))
    mediscore_compat: bool = field(default=False, metadata=option(
        "--mediscore-compat", help="reproduce MediScore where mfscore corrects it", page="compatibility.md"))

    def __post_init__(self):
        validate(self)

    @property
    def uses_sbin(self) -> bool:
        return self.sbin >= -1


@dataclass(frozen=True)
class ReportOptions:
    """How a mask run's tables are written and averaged (docs/masks.md §8)."""

    task: str = field(metadata=option("-t/--task", one_of((MANIPULATION, SPLICE), what="the task type")))
    precision: int = field(default=16, metadata=option(
        "--precision", at_least(1, what="the number of digits"),
        help="significant digits of reported numbers (default {default})"))
    truncate: bool = field(default=False, metadata=option(
        "--truncate", help="truncate instead of rounding at the precision"))
    opt_out: bool = field(default=False, metadata=option("--optOut", help="leave opted-out trials out"))
    display_scored_only: bool = field(default=False, metadata=option(
        "--displayScoredOnly", help="per-image table lists scored trials only"))
    queries: tuple[str, ...] = field(default=(), metadata=option(
        "-q/--query", valid_queries(), selects=True, help="average the trials each query selects"))
    partition: str | None = field(default=None, metadata=option(
        "-qp/--queryPartition", valid_queries(one=True), selects=True,
        help="average each partition of the listed factor values"))
    mediscore_compat: bool = field(default=False, metadata=option("--mediscore-compat"))
    extras_pixels: str = field(default=IMAGE, metadata=option(  # what the paper's metrics sum over
        "--extras-pixels", one_of((IMAGE, SCORED_PIXELS), what="the pixels"),
        help="pixels mfscore's extra metrics (IoU, F1, soft confusion, SemaFor localization) sum over: the whole "
             "image, as Bammey et al. define them (default), or MediScore's scored pixels outside its no-score "
             "zones"))
    plots: bool = field(default=False, metadata=option(  # each query's average-ROC figure
        "--plots", help="also draw PREFIX_mask_roc[_ROLE].png per query: the pixel- and mask-weighted average ROCs "
                        "(mfscore extension)"))

    def __post_init__(self):
        validate(self)
