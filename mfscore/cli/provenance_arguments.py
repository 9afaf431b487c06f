"""The flags both provenance commands take (docs/provenance.md §2.1), and their values as the tasks' shared options."""

from __future__ import annotations

from mfscore.limits import DEFAULT_MAX_JSON_BYTES


def add_input_arguments(p) -> None:
    p.add_argument("-o", "--output-dir", required=True, help="output directory (created if missing)")
    p.add_argument("-x", "--index-file", required=True, help="provenance index CSV")
    p.add_argument("-r", "--reference-file", required=True, help="provenance reference CSV")
    p.add_argument("-n", "--node-file", required=True, help="provenance node CSV (reference nodes per probe)")
    p.add_argument("-w", "--world-file", required=True, help="world index CSV")
    p.add_argument("-R", "--reference-dir", required=True, help="directory the JournalFileName paths are relative to")
    p.add_argument("-s", "--system-output-file", required=True, help="system output CSV")
    p.add_argument("-S", "--system-dir", required=True,
                   help="directory the ProvenanceOutputFileName paths are relative to (they may not leave it)")
    p.add_argument("-t", "--skip-trial-disparity-check", action="store_true",
                   help="system probes that are not in the index (or repeated, for graphs) only give a warning")
    p.add_argument("-v", "--verbose", action="store_true", help="progress and warning messages on stdout")
    p.add_argument("--max-json-bytes", type=int, default=DEFAULT_MAX_JSON_BYTES,
                   help=f"refuse system JSON files larger than this (default {DEFAULT_MAX_JSON_BYTES:,})")


def input_options(args) -> dict:
    """The shared flags as keyword arguments of ``mfscore.tasks.provenance.Options``."""
    return {"index_file": args.index_file, "reference_file": args.reference_file, "node_file": args.node_file,
            "world_file": args.world_file, "reference_dir": args.reference_dir,
            "system_output_file": args.system_output_file, "system_dir": args.system_dir,
            "skip_trial_disparity_check": args.skip_trial_disparity_check, "verbose": args.verbose,
            "max_json_bytes": args.max_json_bytes, "html_report": args.html_report}
