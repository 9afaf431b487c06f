"""The video-spatial task's options (``mfscore.tasks.video_spatial``): where its tables are, how to score and
average, and what ``_parameters.json`` says; light to import, for the command line's flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.errors import OptionError
from mfscore.options import Check, option, valid_queries, validate
from mfscore.tasks.reference_layout import ReferenceLayout
from mfscore.tasks.unusable_masks import STRICT_HELP
from mfscore.video.options import VideoOptions


@dataclass(frozen=True)
class Options(ReferenceLayout):
    """A video-spatial run: where its tables are, how to score and average, and what ``_parameters.json`` says."""

    scoring: VideoOptions = VideoOptions()
    query: tuple[str, ...] = field(default=(), metadata=option(
        "-q/--query", valid_queries(), selects=True, help="average the videos each query selects"))
    query_partition: str | None = field(default=None, metadata=option(
        "-qp/--queryPartition", valid_queries(one=True), selects=True,
        help="average each partition of the listed factor values"))
    query_manipulation: tuple[str, ...] = field(default=(), metadata=option(
        "-qm/--queryManipulation", valid_queries(), selects=True,
        help="score only the manipulations each query selects"))
    sbin: int | None = field(default=None, metadata=option(  # the actual threshold; None without --sbin
        "--sbin", Check(lambda value: None if value is None or -1 <= value <= 255
                        else "the actual threshold is in [-1, 255]", bad=(256, -2))))
    precision: int = field(default=16, metadata=option(
        "--precision", help="significant digits of reported numbers (default {default})"))
    strict: bool = field(default=False, metadata=option(  # an unusable mask makes the run exit 1
        "--strict", help=STRICT_HELP))
    plots: bool = field(default=False, metadata=option(  # mcc_distribution.png
        "--plots", help="also draw mcc_distribution.png: each query's per-video temporal MCC as a histogram and a "
                        "box (mfscore extension)"))
    command_line: str = ""                    # _parameters.json's "command"
    flags: str = "{}"                         # _parameters.json's flag values, as a JSON object

    def __post_init__(self):
        validate(self)
        if sum(map(bool, (self.query, self.query_partition, self.query_manipulation))) > 1:
            raise OptionError("-q, -qp and -qm exclude each other", option="query", flag="-q/-qp/-qm")

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: the MCC distribution (``--plots``)."""
        return ("png",) if self.plots else ()
