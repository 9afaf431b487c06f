"""``mfscore report-html OUTDIR``: one self-contained HTML page of a run's output directory (docs/results.md
"HTML report"); every scorer's ``--html`` writes the same page after its run."""

from __future__ import annotations

import sys

from mfscore.cli.documentation import see

HELP = "write one self-contained HTML page of a run: provenance, headline, tables, plots, visuals, glossary"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report-html", help=HELP)
    p.description = ("Write one HTML file of the run in OUTDIR (its output directory, or its *results.json): the "
                     "run's provenance, the headline table, every report table (click a header to sort), the plots "
                     "and the per-probe mask visuals embedded, and a glossary of the columns. It needs no network "
                     f"to open ({see(p, 'results.md')}, 'HTML report').")
    p.add_argument("outdir", metavar="OUTDIR", help="a run's output directory, or its *results.json")
    p.add_argument("-o", "--out", metavar="FILE", help="where to write the page (default: <prefix>_mfscore_report.html "
                   "beside the results)")
    p.set_defaults(run=run)


def run(args) -> int:
    from mfscore.cli.leaderboard import results_file
    from mfscore.reports.html_report import write_run_report

    written = write_run_report(results_file(args.outdir), args.out)
    print(f"HTML report: {written}", file=sys.stderr)
    return 0


def write_after_run(out_root: str) -> None:
    """``--html``: the page of the run just written under ``out_root`` (its directory and prefix)."""
    import os

    from mfscore.reports.html_report import write_run_report
    from mfscore.run.local import RESULTS_FILE, beside_reports

    directory, prefix = os.path.split(out_root)
    results = os.path.join(directory, prefix + beside_reports(RESULTS_FILE, prefix))
    if os.path.isfile(results):
        print(f"HTML report: {write_run_report(results)}", file=sys.stderr)
