"""A validation lists a bounded number of findings and counts the rest (issue 41, 6).

A system table of 200,000 bad rows made 200,000 findings, held in memory and sent back whole (a 5 M-row table
gave a 458 MB gRPC reply). The report keeps the first ``max_findings``, counts the others (and how many of them
are errors, so the verdict does not change), and ends with one finding saying how many are not listed.
"""

from __future__ import annotations

import json

import pytest

from mfscore.cli.main import main
from mfscore.limits import DEFAULT_MAX_FINDINGS
from mfscore.services.validator.service import MAX_REPLY_BYTES, wire_report
from mfscore.validation.findings import ValidationReport
from mfscore.validation.options import ValidatorOptions
from mfscore.validation.submission import validate_submission

BAD_ROWS = 200_000


@pytest.fixture(scope="module")
def bad_submission(tmp_path_factory):
    """(system, index) of ``BAD_ROWS`` probes, every score of which is not a number."""
    directory = tmp_path_factory.mktemp("bad")
    index, system = directory / "index.csv", directory / "system.csv"
    index.write_text("TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight\n"
                     + "".join(f"manipulation|p{i}|probe/p{i}.jpg|4|3\n" for i in range(BAD_ROWS)))
    system.write_text("ProbeFileID|ConfidenceScore|OutputProbeMaskFileName|IsOptOut\n"
                      + "".join(f"p{i}|high||N\n" for i in range(BAD_ROWS)))
    return str(system), str(index)


def test_a_report_keeps_its_first_findings_and_counts_the_others():
    report = ValidationReport(limit=3)
    for i in range(5):
        report.warning("w", f"warning {i}")
    report.error("e", "the only error")
    assert [f.message for f in report.findings] == ["warning 0", "warning 1", "warning 2"]
    assert (report.omitted, report.omitted_errors) == (3, 1)
    assert not report.valid  # the error not listed still makes the submission invalid
    last = report.listed()[-1]
    assert last.code == "report.truncated" and last.severity == "error"
    assert last.message == "3 more findings are not listed (1 of them errors); the report lists the first 3."
    assert report.to_dict()["omitted"] == 3 and len(report.to_dict()["findings"]) == 4


def test_a_report_within_its_limit_lists_everything_and_says_nothing_more():
    report = ValidationReport(limit=3)
    report.warning("w", "one")
    assert report.listed() == report.findings and report.omitted == 0 and report.valid


def test_many_bad_rows_give_a_bounded_report_with_the_count_of_the_others(bad_submission):
    validation = validate_submission(*bad_submission, ValidatorOptions(kind="SSD", neglect_mask=True))
    report = validation.report
    assert len(report.findings) == DEFAULT_MAX_FINDINGS
    assert report.omitted == BAD_ROWS - DEFAULT_MAX_FINDINGS == report.omitted_errors
    assert not report.valid
    assert report.listed()[-1].message.startswith(f"{BAD_ROWS - DEFAULT_MAX_FINDINGS} more findings are not listed")


def test_the_validator_service_reply_is_bounded_and_says_how_many_more(bad_submission):
    validation = validate_submission(*bad_submission, ValidatorOptions(kind="SSD", neglect_mask=True))
    reply = wire_report(validation.report, "")
    assert not reply.valid
    assert len(reply.findings) == DEFAULT_MAX_FINDINGS + 1
    assert reply.ByteSize() <= MAX_REPLY_BYTES
    assert reply.findings[-1].code == "report.truncated"
    assert reply.findings[-1].message.startswith(f"{BAD_ROWS - DEFAULT_MAX_FINDINGS} more findings")


def test_the_reply_fits_its_byte_budget_even_with_long_messages():
    report = ValidationReport(limit=DEFAULT_MAX_FINDINGS)
    for i in range(DEFAULT_MAX_FINDINGS + 10):
        report.error("long", f"row {i}: " + "x" * 5000)
    reply = wire_report(report, "")
    assert reply.ByteSize() <= MAX_REPLY_BYTES
    last = reply.findings[-1]
    assert last.code == "report.truncated"
    listed = len(reply.findings) - 1
    assert last.message.startswith(f"{DEFAULT_MAX_FINDINGS + 10 - listed} more findings are not listed")


def test_the_command_line_bounds_its_report_the_same_way(bad_submission, capsys):
    system, index = bad_submission
    status = main(["validate", "-x", index, "-s", system, "-vt", "SSD", "-nm", "--json", "--max-findings", "10"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1 and not report["valid"]
    assert len(report["findings"]) == 11 and report["omitted"] == BAD_ROWS - 10
    assert report["findings"][-1]["code"] == "report.truncated"
