"""Submission names (NC2017 EXPID, MFC2019 SubID), the tolerant table reader and pixel-value rules."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mfscore.validation.findings import Severity, ValidationReport
from mfscore.validation.row_checks import bad_pixel_values
from mfscore.validation.submission_names import check_expid_name, check_subid_name
from mfscore.validation.submission_table import read_submission_table

EXPID = "team_NC17_Data_Manipulation_ImgOnly_p-base_1"


def _expid_codes(path: str, **kw) -> set[str]:
    report, _ = check_expid_name(path, ncid=kw.pop("ncid", "NC17"), tasks=kw.pop("tasks", ("manipulation",)), **kw)
    return report.codes()


@pytest.mark.parametrize("path, codes", [
    (f"{EXPID}/{EXPID}.csv", set()),
    (f"{EXPID}/{EXPID}.tsv", {"name.extension"}),
    (f"other/{EXPID}.csv", {"name.directory"}),
    ("a_b_c/a_b_c.csv", {"name.fields"}),
    ("_NC17_Data_Manipulation_ImgOnly_p-base_1/_NC17_Data_Manipulation_ImgOnly_p-base_1.csv", {"name.team"}),
    ("t_e_NC17_Data_Manipulation_ImgOnly_p-base_1/t_e_NC17_Data_Manipulation_ImgOnly_p-base_1.csv",
     {"name.team", "name.ncid", "name.task"}),
    ("team_NC16_Data_Manipulation_ImgOnly_p-base_1/team_NC16_Data_Manipulation_ImgOnly_p-base_1.csv", {"name.ncid"}),
    ("team_NC17_Data_Splice_ImgOnly_p-base_1/team_NC17_Data_Splice_ImgOnly_p-base_1.csv", {"name.task"}),
])
def test_expid_names(path, codes):
    assert _expid_codes(path) == codes


def test_expid_task_is_case_insensitive_and_ncid_severity_is_chosen():
    report, name = check_expid_name(f"{EXPID}/{EXPID}.csv", ncid="NC16", tasks=("manipulation",),
                                    ncid_mismatch=Severity.WARNING)
    assert report.valid and report.warnings[0].code == "name.ncid"
    assert name.task == "Manipulation" and name.condition == "ImgOnly"


@pytest.mark.parametrize("stem, codes", [
    ("p-baseline_3_splice", set()),
    ("c-contrast2_1", set()),
    ("p-base_line_1", {"name.version"}),
    ("x-baseline_1", {"name.sys"}),
    ("p-base-line_1", {"name.sys"}),
    ("p-baseline_0", {"name.version"}),
    ("p-baseline_1_", {"name.optional"}),
    ("p-baseline", {"name.fields"}),
])
def test_mfc2019_subid_names(stem, codes):
    report, _ = check_subid_name(f"{stem}/{stem}.csv")
    assert report.codes() == codes


def test_table_reader_reports_every_bad_line_and_keeps_reading(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text('A|B|C\n"x"|1|2\n\ny|1\nz|1|2|3\n"q|r"|5|6\n')
    report = ValidationReport()
    table = read_submission_table(str(path), report)
    assert [f.line for f in report.findings] == [4, 5]
    assert table.rows["A"].tolist() == ["x", "y", "z", "q|r"]
    assert table.rows["C"].tolist() == ["2", "", "2", "6"]
    assert table.lines.tolist() == [2, 4, 5, 6]


@pytest.mark.parametrize("content, code", [(b"", "table.empty"), (b"A|A\n1|2\n", "table.duplicate_columns"),
                                           (b"A|B\n\xff|1\n", "table.encoding")])
def test_table_reader_refuses_what_it_cannot_read(tmp_path, content, code):
    path = tmp_path / "s.csv"
    path.write_bytes(content)
    report = ValidationReport()
    assert read_submission_table(str(path), report) is None
    assert report.codes() == {code}


@given(st.lists(st.one_of(st.integers(-1000, 1000).map(str), st.sampled_from(["", " 7 ", "1.0", "x", "1e2", "+3"]))))
def test_pixel_values_match_a_plain_rule(values):
    def bad(text: str) -> bool:
        text = text.strip()
        if text == "":
            return False
        try:
            return not 0 <= int(text) <= 255 or "." in text or "e" in text
        except ValueError:
            return True

    assert bad_pixel_values(pd.Series(values, dtype=str)).tolist() == [bad(v) for v in values]
