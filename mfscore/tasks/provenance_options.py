"""The provenance tasks' options (``mfscore.tasks.provenance_filtering`` and ``provenance_graph``): the inputs and
flags both take, and each one's own; light to import, for the command line's flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from mfscore.limits import DEFAULT_MAX_JSON_BYTES, HARD_MAX_JSON_BYTES
from mfscore.options import each, one_of, option, validate, within
from mfscore.provenance import NODE_TYPE_CHOICES


@dataclass(frozen=True)
class Options:
    """A provenance run's inputs (``-x -r -n -w -R -s -S``) and the flags both scorers take."""

    index_file: str = field(metadata=option("-x/--index-file", path=True, help="provenance index CSV"))
    reference_file: str = field(metadata=option("-r/--reference-file", path=True, help="provenance reference CSV"))
    node_file: str = field(metadata=option(
        "-n/--node-file", path=True, help="provenance node CSV (reference nodes per probe)"))
    world_file: str = field(metadata=option("-w/--world-file", path=True, help="world index CSV"))
    reference_dir: str = field(metadata=option(
        "-R/--reference-dir", path=True, help="directory the JournalFileName paths are relative to"))
    system_output_file: str = field(metadata=option("-s/--system-output-file", path=True, help="system output CSV"))
    system_dir: str = field(metadata=option(
        "-S/--system-dir", path=True,
        help="directory the ProvenanceOutputFileName paths are relative to (they may not leave it)"))
    skip_trial_disparity_check: bool = field(default=False, metadata=option(
        "-t/--skip-trial-disparity-check",
        help="system probes that are not in the index (or repeated, for graphs) only give a warning"))
    verbose: bool = field(default=False, metadata=option(
        "-v/--verbose", help="progress and warning messages on stdout"))
    max_json_bytes: int = field(default=DEFAULT_MAX_JSON_BYTES, metadata=option(
        "--max-json-bytes", within(1, HARD_MAX_JSON_BYTES, what="the JSON size limit"), limit="max_json_bytes",
        help="refuse system JSON files larger than this (default {default:,})"))
    html_report: bool = field(default=False, metadata=option(
        "-H/--html-report", help="write report.html (implies -p)"))

    def __post_init__(self):
        validate(self)


@dataclass(frozen=True)
class GraphOptions(Options):
    """A graph-building run: the shared inputs and flags, how to score (``-d -u -c``), what to draw
    (``-p``), whether ``-T`` was given (accepted, noted, ignored), and whether reference nodes are named
    as MediScore names them (``--mediscore-compat``, see ``node_keys_by_probe``)."""

    direct: bool = field(default=False, metadata=option(
        "-d/--direct", help="score the direct-path graph of each probe"))
    undirected: bool = field(default=False, metadata=option(
        "-u/--undirected-graph", help="links match in either direction"))
    warn_on_system_cycle: bool = field(default=False, metadata=option(
        "-c/--warn-on-system-cycle", help="a cycle in a system graph is a warning (shown with -v) instead of an error"))
    plot_scored: bool = field(default=False, metadata=option(
        "-p/--plot-scored",
        help="draw figures/<ProvenanceProbeFileID>.png: green correct, red false alarm, gray missing"))
    thumbnail_note: bool = field(default=False, metadata=option("-T/--thumbnail-cache-dir"))
    mediscore_compat: bool = field(default=False, metadata=option(
        "--mediscore-compat", help="reproduce MediScore: name reused journal node IDs from one table over all probes",
        page="compatibility.md"))

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: each scored graph (``-p``, implied by ``-H``)."""
        return ("png",) if self.plot_scored or self.html_report else ()


@dataclass(frozen=True)
class FilteringOptions(Options):
    """A filtering run: the shared inputs and flags, and the ``--nodetype`` values as given."""

    nodetype: tuple[str, ...] = field(default=(), metadata=option(
        "--nodetype", each(one_of(NODE_TYPE_CHOICES, what="a node type")), metavar="TYPE",
        help="add per-node-type rows: donor, base, final, interim; * or all for the four"))
    plots: bool = field(default=False, metadata=option(  # recall_at_k.png
        "--plots", help="also draw recall_at_k.png: the mean node recall at each rank, a bar per node type "
                        "(mfscore extension)"))

    def draws(self) -> tuple[str, ...]:
        """The formats of the run's figures: recall at k (``--plots``)."""
        return ("png",) if self.plots else ()
