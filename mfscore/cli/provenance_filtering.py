"""``mfscore provenance-filtering``: ProvenanceFilteringScorer's command line (docs/provenance.md §2), as the
``provenance-filtering`` task's options (``mfscore.tasks.provenance_options.FilteringOptions``)."""

from __future__ import annotations

import os

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, options_from
from mfscore.cli.provenance_arguments import add_input_arguments

HELP = "score provenance filtering (ProvenanceFilteringScorer-compatible)"
DESCRIPTION = ("Node recall at ranks 50, 100, 200 and 300 of each probe's system node list against its reference "
               "provenance graph. Accepts MediScore ProvenanceFilteringScorer's options.")


def add_arguments(p) -> None:
    from mfscore.tasks.provenance_options import FilteringOptions

    add_input_arguments(p)
    add_options(p, FilteringOptions, "html_report", "nodetype", "plots",
                helps={"html_report": "accepted; mfscore writes no HTML report"})
    add_other_options(p, FilteringOptions)


def options(args) -> TaskRun:
    """ProvenanceFilteringScorer's flags as the filtering task's options."""
    from mfscore.tasks.provenance_options import FilteringOptions

    return TaskRun(options_from(FilteringOptions, args), out_root=os.path.join(args.output_dir, ""))
