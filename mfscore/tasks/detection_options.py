"""The detection task's options (``mfscore.tasks.detection``): where its tables are, how to score them, and which
files to write; light to import, for the command line's flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.detection import KINDS
from mfscore.detection.options import DetectionOptions, PlotOptions
from mfscore.errors import OptionError
from mfscore.options import one_of, option, validate
from mfscore.tasks.reference_layout import ReferenceLayout


@dataclass(frozen=True)
class Options(ReferenceLayout):
    """A detection run: where its tables are, how to score them, and which files to write."""

    kind: str = field(metadata=option(
        "-t/--task", one_of(KINDS, what="the evaluation task"), help="evaluation task (default {default})"))
    scoring: DetectionOptions = DetectionOptions()
    plot: PlotOptions = PlotOptions()
    out_meta: bool = field(default=False, metadata=option(
        "--outMeta", help="also write the scored table with its metadata"))
    out_sub_meta: bool = field(default=False, metadata=option(
        "--outSubMeta", help="also write the key/index/system columns of the scored trials"))
    dump: bool = field(default=False, metadata=option(
        "--dump", help="also write each subset's ROC points (<out>_query_<i>_roc.csv)"))
    verbose: bool = field(default=False, metadata=option("-v/--verbose", help="progress messages on stderr"))

    def __post_init__(self):
        validate(self)
        if self.plot.multi_figs and self.scoring.query_mode is None:
            raise OptionError("--multiFigs needs a query option (-q, -qp or -qm)", option="multi_figs",
                              flag="--multiFigs")

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: each ROC or DET, and the SemaFor ROC (``figure_process.start``)."""
        return ("pdf", "png") if self.plot.enabled else ()
