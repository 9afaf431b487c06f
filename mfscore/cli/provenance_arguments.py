"""The flags both provenance commands take (docs/provenance.md §2.1): the output directory, and the inputs and
flags of ``mfscore.tasks.provenance_options.Options``."""

from __future__ import annotations

from mfscore.cli.arguments import add_options


def add_input_arguments(p) -> None:
    from mfscore.tasks.provenance_options import Options

    p.add_argument("-o", "--output-dir", required=True, help="output directory (created if missing)")
    add_options(p, Options, "index_file", "reference_file", "node_file", "world_file", "reference_dir",
                "system_output_file", "system_dir", "skip_trial_disparity_check", "verbose", "max_json_bytes",
                unchecked=("max_json_bytes",))
