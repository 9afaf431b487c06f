"""A detection run's scoring and plot options (DetectionScorer's flags, docs/detection.md).

In a module of their own, importing nothing heavy: the command line makes its flags from these declarations
(``mfscore.cli.arguments.add_options``) before it has read the arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mfscore.detection import LLR_BASE_NAMES, PLOT_KINDS
from mfscore.options import each, one_of, option, valid_queries, validate, within

QUERY_MODES = (None, "q", "qm", "qp")  # no query, -q, -qm, -qp
LLR_BASES = dict(zip(LLR_BASE_NAMES, (1.0, math.log(10.0), math.log(2.0))))  # base -> factor to natural-log LLRs


@dataclass(frozen=True)
class DetectionOptions:
    far_stop: float = field(default=0.1, metadata=option(
        "--farStop", within(0.0, 1.0, what="a false-alarm rate"),
        help="FAR for AUC@FAR and CDR@FAR (default {default})"))
    ci: bool = field(default=False, metadata=option("--ci", help="bootstrap confidence intervals (500 resamples)"))
    ci_level: float = field(default=0.9, metadata=option(
        "--ciLevel", within(0.8, 0.99, inclusive=False, what="the confidence level"),
        help="confidence level, in (0.80, 0.99) (default {default})"))
    opt_out: bool = field(default=False, metadata=option(
        "--optOut", help="score opted-in trials only (IsOptOut / ProbeStatus)"))
    query_mode: str | None = field(default=None, metadata=option(  # None, "q", "qm" or "qp"
        "-q/-qm/-qp", one_of(QUERY_MODES, what="the query mode")))
    queries: tuple[str, ...] = field(default=(), metadata=option("-q/-qm/-qp", valid_queries(), selects=True))
    semafor: bool = field(default=False, metadata=option(
        "--semafor", help="also write <out>_semafor_report.csv (pD@FAR, bACC at the EER threshold, pAUC, Cllr; "
                          "intervals with --ci) and <out>_semafor_ROC.pdf/.png (SemaFor plan)"))
    semafor_fars: tuple[float, ...] = field(default=(0.08, 0.1), metadata=option(
        "--far", each(within(0.0, 1.0, what="a false-alarm rate")),
        help="comma-separated FARs for pD@FAR with --semafor (default {default})"))
    llr_base: str = field(default="e", metadata=option(  # the base of the scores' logarithms, for Cllr
        "--llr-base", one_of(LLR_BASES, what="the base"),
        help="base of the logarithm in the scores (LLRs), for Cllr with --semafor (default {default})"))
    mediscore_compat: bool = field(default=False, metadata=option(
        "--mediscore-compat", help="reproduce MediScore where mfscore corrects it", page="compatibility.md"))

    def __post_init__(self):
        validate(self)


@dataclass(frozen=True)
class PlotOptions:
    kind: str = field(default="roc", metadata=option(
        "--plotType", one_of(PLOT_KINDS, what="the plot type"), help="ROC or DET plot (default {default})"))
    title: str = field(default="Performance", metadata=option("--plotTitle"))
    subtitle: str = field(default="", metadata=option("--plotSubtitle"))
    no_num: bool = field(default=False, metadata=option("--noNum", help="no target/non-target counts in the plot"))
    multi_figs: bool = field(default=False, metadata=option(
        "--multiFigs", help="one figure per query instead of one for all"))
    d_level: float = field(default=0.0, metadata=option(
        "--dLevel", within(0.0, 0.3, what="the d' band"), help="rate band excluded from the d' search (plot only)"))
    enabled: bool = field(default=True, metadata=option(  # False with --noPlot
        "--noPlot", help="write no plots (mfscore extension)"))

    def __post_init__(self):
        validate(self)
