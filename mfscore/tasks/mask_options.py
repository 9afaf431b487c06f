"""The mask task's options (``mfscore.tasks.mask``): where its tables are, how to score the masks, and how to write
the tables; light to import, for the command line's flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.errors import OptionError
from mfscore.masks import MANIPULATION
from mfscore.masks.options import MaskOptions, ReportOptions
from mfscore.options import at_least, option, valid_queries, validate
from mfscore.tasks.reference_layout import ReferenceLayout
from mfscore.tasks.unusable_masks import STRICT_HELP


@dataclass(frozen=True)
class Options(ReferenceLayout):
    """A mask run: where its tables are, how to score the masks, and how to write the tables."""

    scoring: MaskOptions = MaskOptions()
    report: ReportOptions = ReportOptions(task=MANIPULATION)
    index_filter: bool = field(default=False, metadata=option(
        "-xF/--indexFilter", selects=True, help="score only trials present in the index"))
    manipulation_queries: tuple[str, ...] = field(default=(), metadata=option(  # one scored run per query
        "-qm/--queryManipulation", valid_queries(), selects=True,
        help="score only the manipulations each query selects"))
    strict: bool = field(default=False, metadata=option(  # an unusable mask makes the run exit 1
        "--strict", help=STRICT_HELP))
    visuals: int = field(default=0, metadata=option(  # PNGs of the N best and N worst probe masks of each query
        "--visuals", at_least(0, what="the number of best and of worst masks drawn"), metavar="N",
        help="draw the reference mask, the system mask at its optimum threshold and an overlay of TP, FP, FN and "
             "the no-score zones for the N best and N worst probe masks by OptimumMCC, as PNGs under "
             "PREFIX_visuals/ with an index.json"))

    def __post_init__(self):
        validate(self)
        if self.report.task != self.scoring.task:
            raise OptionError(f"the report is for the {self.report.task} task but the scoring for {self.scoring.task}",
                              option="task", flag="-t/--task")
        if self.manipulation_queries and (self.report.queries or self.report.partition):
            raise OptionError("-qm cannot be combined with -q or -qp", option="manipulation_queries", flag="-qm")

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: the average ROCs (the heat map is drawn with OpenCV, in the run)."""
        return ("png",) if self.report.plots else ()
