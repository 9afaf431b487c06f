"""The structured result of a validation: findings with a code, a severity, a file and a line.

Messages keep MediScore's wording (``ERROR: Expected dimensions ...``) so scripts that grep the
validator's output keep working; the code (``mask.dimensions``) is what programs should match on.

A report lists at most ``limit`` findings (``DEFAULT_MAX_FINDINGS``): a table of millions of bad rows would
otherwise hold millions of findings and send them back whole. The others are counted, errors apart, so the
verdict stays the same; ``listed()`` ends with one finding (``report.truncated``) saying how many are not listed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from mfscore.limits import DEFAULT_MAX_FINDINGS

TRUNCATED = "report.truncated"


class Severity(StrEnum):
    ERROR = "error"      # the submission is invalid
    WARNING = "warning"  # valid, but the performer should look (flags that excuse a rule)
    NOTICE = "notice"    # information (a blank mask name skipped)


_PREFIX = {Severity.ERROR: "ERROR: ", Severity.WARNING: "Warning: ", Severity.NOTICE: ""}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None  # file line, the header being line 1

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = f" [{self.file}" + (f", line {self.line}" if self.line is not None else "") + "]"
        return f"{_PREFIX[self.severity]}{self.message}{where}"


@dataclass
class ValidationReport:
    """The first ``limit`` findings in the order the checks made them, and how many others there were."""

    findings: list[Finding] = field(default_factory=list)
    limit: int = DEFAULT_MAX_FINDINGS
    omitted: int = 0          # findings made after the first ``limit``
    omitted_errors: int = 0   # how many of them are errors

    def add(self, code: str, severity: Severity, message: str, *, file: str | None = None,
            line: int | None = None) -> None:
        self._keep(Finding(code, severity, message, file, line))

    def _keep(self, finding: Finding) -> None:
        if len(self.findings) < self.limit:
            self.findings.append(finding)
        else:
            self.omitted += 1
            self.omitted_errors += finding.severity is Severity.ERROR

    def error(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.ERROR, message, **where)

    def warning(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.WARNING, message, **where)

    def notice(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.NOTICE, message, **where)

    def error_rows(self, code: str, positions: Sequence[int], message: Callable[[int], str], *, file: str,
                   line: Callable[[int], int]) -> None:
        """An error for each row at ``positions``, its message and line made only for the findings kept."""
        room = max(self.limit - len(self.findings), 0)
        for position in positions[:room]:
            self.error(code, message(position), file=file, line=line(position))
        left = max(len(positions) - room, 0)
        self.omitted += left
        self.omitted_errors += left

    def extend(self, other: ValidationReport) -> None:
        for finding in other.findings:
            self._keep(finding)
        self.omitted += other.omitted
        self.omitted_errors += other.omitted_errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def valid(self) -> bool:
        return not self.errors and not self.omitted_errors

    def listed(self) -> list[Finding]:
        """The findings kept, then (when some were not) the one saying how many others there were."""
        if not self.omitted:
            return self.findings
        return [*self.findings, omitted_finding(self.omitted, self.omitted_errors, len(self.findings))]

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def to_dict(self) -> dict:
        """A JSON-ready form (what the validator service returns)."""
        return {"valid": self.valid, "omitted": self.omitted,
                "findings": [{**asdict(f), "severity": str(f.severity)} for f in self.listed()]}


def omitted_finding(omitted: int, errors: int, listed: int) -> Finding:
    """The last finding of a report that lists ``listed`` findings and leaves out ``omitted`` (``errors`` of them
    errors): an error when any of them is one."""
    return Finding(TRUNCATED, Severity.ERROR if errors else Severity.WARNING,
                   f"{omitted} more findings are not listed ({errors} of them errors); the report lists the first "
                   f"{listed}.")
