"""``mfscore provenance-filtering``: ProvenanceFilteringScorer's command line (docs/provenance.md §2), as the
``provenance-filtering`` task's options (``mfscore.tasks.provenance_filtering``)."""

from __future__ import annotations

import os

from mfscore.cli.arguments import TaskRun
from mfscore.cli.provenance_arguments import add_input_arguments, input_options
from mfscore.provenance import NODE_TYPE_CHOICES

HELP = "score provenance filtering (ProvenanceFilteringScorer-compatible)"
DESCRIPTION = ("Node recall at ranks 50, 100, 200 and 300 of each probe's system node list against its reference "
               "provenance graph. Accepts MediScore ProvenanceFilteringScorer's options.")


def add_arguments(p) -> None:
    add_input_arguments(p)
    p.add_argument("-H", "--html-report", action="store_true", help="accepted; mfscore writes no HTML report")
    p.add_argument("--nodetype", nargs="+", choices=NODE_TYPE_CHOICES, metavar="TYPE",
                   help="add per-node-type rows: donor, base, final, interim; * or all for the four")
    p.add_argument("--plots", action="store_true",
                   help="also draw recall_at_k.png: the mean node recall at each rank, a bar per node type "
                        "(mfscore extension)")


def options(args) -> TaskRun:
    """ProvenanceFilteringScorer's flags as the filtering task's options."""
    from mfscore.tasks.provenance_filtering import Options

    return TaskRun(Options(**input_options(args), nodetype=tuple(args.nodetype or ()), plots=args.plots),
                   out_root=os.path.join(args.output_dir, ""))
