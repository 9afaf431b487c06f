"""``mfscore validate-provenance``: ProvenanceValidator's command line (docs/provenance.md §4)."""

from __future__ import annotations

from mfscore.cli.arguments import add_max_findings_argument, checked, integer
from mfscore.limits import DEFAULT_MAX_JSON_BYTES, HARD_MAX_JSON_BYTES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "validate-provenance", help="validate a provenance submission (ProvenanceValidator-compatible)",
        description="Check a provenance system output CSV and its JSON files against the index and the provenance "
                    "JSON schemas. Exit status 0 when valid, 1 otherwise.")
    p.add_argument("-x", "--index_file", required=True, help="index CSV")
    p.add_argument("-s", "--system_output_file", required=True,
                   help="system output CSV; its JSON paths are relative to its directory")
    p.add_argument("-t", "--task", help="provenance (graph building) or provenancefiltering; needed without -nc")
    p.add_argument("-nc", "--nameCheck", action="store_true",
                   help="check the <EXPID>/<EXPID>.csv name; its TASK field selects the schema")
    p.add_argument("-nm", "--neglectJSON", action="store_true", help="skip the JSON checks")
    p.add_argument("--ncid", default="NC17", help="expected NCID of the file name (default NC17)")
    p.add_argument("--optOut", action="store_true", help="skip the JSON check of NonProcessed and OptOut rows")
    p.add_argument("-v", "--verbose", type=int, default=None,
                   help="1: print everything; 0: print nothing; unset: errors and warnings")
    p.add_argument("--max-json-bytes", type=checked(integer, "mfscore.tasks.provenance_options:Options.max_json_bytes"),
                   default=DEFAULT_MAX_JSON_BYTES,
                   help=f"refuse JSON files larger than this (default {DEFAULT_MAX_JSON_BYTES:,}, at most "
                        f"{HARD_MAX_JSON_BYTES:,})")
    add_max_findings_argument(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of lines")
    p.add_argument("--mediscore-compat", action="store_true",
                   help="ignore -t as MediScore does: only -nc with TASK provenance selects the graph schema")
    p.set_defaults(run=run)


def run(args) -> int:
    from mfscore.cli.validation_output import print_report
    from mfscore.validation.provenance_submission import validate_provenance_submission

    report = validate_provenance_submission(
        args.system_output_file, args.index_file, task=args.task, name_check=args.nameCheck, ncid=args.ncid,
        neglect_json=args.neglectJSON, opt_out=args.optOut, mediscore_compat=args.mediscore_compat,
        max_json_bytes=args.max_json_bytes, max_findings=args.max_findings)
    return print_report(report, verbose=0 if args.verbose == 0 else 1, as_json=args.json,
                        notices=bool(args.verbose))
