"""Printing a validation report: one line per finding, then the verdict (or the report as JSON)."""

from __future__ import annotations

import json
from collections import Counter

from mfscore.validation.findings import Severity, ValidationReport

MAX_LINES_PER_CODE = 100
PASSED = "The contents of your file have passed validation."
FAILED = "The contents of your file are not valid."


def print_report(report: ValidationReport, *, verbose: int, as_json: bool, notices: bool = True) -> int:
    """Print the report; verbose 0 prints nothing. Returns the exit status (0 valid, 1 invalid)."""
    if as_json:
        print(json.dumps(report.to_dict(), indent=1))
    elif verbose:
        printed: Counter[str] = Counter()
        for finding in report.listed():
            if finding.severity is Severity.NOTICE and not notices:
                continue
            printed[finding.code] += 1
            if printed[finding.code] <= MAX_LINES_PER_CODE:
                print(finding.render())
        for code, count in sorted(printed.items()):
            if count > MAX_LINES_PER_CODE:
                print(f"... and {count - MAX_LINES_PER_CODE} more '{code}' findings (--json lists them)")
        print(PASSED if report.valid else FAILED)
    return 0 if report.valid else 1
