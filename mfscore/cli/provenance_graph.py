"""``mfscore provenance-graph``: ProvenanceGraphBuildingScorer's command line (docs/provenance.md §3), as the
``provenance-graph`` task's options (``mfscore.tasks.provenance_graph``)."""

from __future__ import annotations

import os

from mfscore.cli.arguments import TaskRun
from mfscore.cli.documentation import see
from mfscore.cli.provenance_arguments import add_input_arguments, input_options


HELP = "score provenance graphs (ProvenanceGraphBuildingScorer-compatible)"
DESCRIPTION = ("Score system provenance graphs against the journals' reference graphs: SimNLO, SimNO, SimLO and node "
               "recall per probe, on the full graph or (-d) the probe's direct-path graph.")


def add_arguments(p) -> None:
    add_input_arguments(p)
    p.add_argument("-d", "--direct", action="store_true", help="score the direct-path graph of each probe")
    p.add_argument("-u", "--undirected-graph", action="store_true", help="links match in either direction")
    p.add_argument("-c", "--warn-on-system-cycle", action="store_true",
                   help="a cycle in a system graph is a warning (shown with -v) instead of an error")
    p.add_argument("-p", "--plot-scored", action="store_true",
                   help="draw figures/<ProvenanceProbeFileID>.png: green correct, red false alarm, gray missing")
    p.add_argument("-H", "--html-report", action="store_true", help="write report.html (implies -p)")
    p.add_argument("-T", "--thumbnail-cache-dir",
                   help="accepted and ignored: mfscore's figures are drawn without thumbnails")
    p.add_argument("--mediscore-compat", action="store_true",
                   help="reproduce MediScore: name reused journal node IDs from one table over all probes "
                        f"({see(p, 'compatibility.md')})")


def options(args) -> TaskRun:
    """ProvenanceGraphBuildingScorer's flags as the graph task's options."""
    from mfscore.tasks.provenance_graph import Options

    return TaskRun(Options(**input_options(args), direct=args.direct, undirected=args.undirected_graph,
                           warn_on_system_cycle=args.warn_on_system_cycle, plot_scored=args.plot_scored,
                           thumbnail_note=args.thumbnail_cache_dir is not None,
                           mediscore_compat=args.mediscore_compat),
                   out_root=os.path.join(args.output_dir, ""))
