"""``mfscore provenance-graph``: ProvenanceGraphBuildingScorer's command line (docs/provenance.md §3), as the
``provenance-graph`` task's options (``mfscore.tasks.provenance_options.GraphOptions``); ``-T``, whose directory
mfscore ignores, is added here."""

from __future__ import annotations

import os

from mfscore.cli.arguments import TaskRun, add_options, add_other_options, options_from
from mfscore.cli.provenance_arguments import add_input_arguments

HELP = "score provenance graphs (ProvenanceGraphBuildingScorer-compatible)"
DESCRIPTION = ("Score system provenance graphs against the journals' reference graphs: SimNLO, SimNO, SimLO and node "
               "recall per probe, on the full graph or (-d) the probe's direct-path graph.")


def add_arguments(p) -> None:
    from mfscore.tasks.provenance_options import GraphOptions

    add_input_arguments(p)
    add_options(p, GraphOptions, "direct", "undirected", "warn_on_system_cycle", "plot_scored", "html_report")
    p.add_argument("-T", "--thumbnail-cache-dir",
                   help="accepted and ignored: mfscore's figures are drawn without thumbnails")
    add_options(p, GraphOptions, "mediscore_compat")
    add_other_options(p, GraphOptions)


def options(args) -> TaskRun:
    """ProvenanceGraphBuildingScorer's flags as the graph task's options."""
    from mfscore.tasks.provenance_options import GraphOptions

    return TaskRun(options_from(GraphOptions, args, thumbnail_note=args.thumbnail_cache_dir is not None),
                   out_root=os.path.join(args.output_dir, ""))
