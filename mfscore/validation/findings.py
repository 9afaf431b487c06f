"""The structured result of a validation: findings with a code, a severity, a file and a line.

Messages keep MediScore's wording (``ERROR: Expected dimensions ...``) so scripts that grep the
validator's output keep working; the code (``mask.dimensions``) is what programs should match on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum


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
    """Findings in the order the checks made them."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, code: str, severity: Severity, message: str, *, file: str | None = None,
            line: int | None = None) -> None:
        self.findings.append(Finding(code, severity, message, file, line))

    def error(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.ERROR, message, **where)

    def warning(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.WARNING, message, **where)

    def notice(self, code: str, message: str, **where) -> None:
        self.add(code, Severity.NOTICE, message, **where)

    def extend(self, other: ValidationReport) -> None:
        self.findings.extend(other.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def valid(self) -> bool:
        return not self.errors

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def to_dict(self) -> dict:
        """A JSON-ready form (what the validator service returns)."""
        return {"valid": self.valid,
                "findings": [{**asdict(f), "severity": str(f.severity)} for f in self.findings]}
