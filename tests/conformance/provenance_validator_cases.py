"""MediScore's provenanceValidatorTests cases (docs/validation.md §8): options, files, expected status and phrases.

MediScore's harness can never fail (docs/validation.md §8: the harness defect), so the expected status is
the *intended* one (the harness's 2nd argument), except where noted. Paths are relative to
``provenanceValidatorTests``; every case uses the one index below.
"""

from __future__ import annotations

from dataclasses import dataclass

PVT = "provenanceValidatorTests"
INDEX = "indexes/NC2017_Dev1-provenance-index.csv"


def _named(group: str, name: str, directory: str | None = None, ext: str = "csv") -> str:
    return f"{group}/{directory or name}/{name}.{ext}"


NAME = "NameCheck_NC17_FuncTest_1"
VALID = "ValidCheck_NC17_FuncTest_2"
INVALID = "InvalidCheck_NC17_FuncTest_3"


@dataclass(frozen=True)
class ProvenanceCase:
    id: str
    args: tuple[str, ...]
    system: str
    status: int
    present: tuple[str, ...] = ()
    note: str = ""


CASES = (
    ProvenanceCase("name_test_csv", ("-nc",),
                   _named(NAME, "NameCheck_NC17_FuncTest_ProvenanceFiltering_ImgOnly_p-valid_1", ext="tsv"),
                   1, ("is not a csv file",)),
    ProvenanceCase("name_test_fileNeqDir", ("-nc",),
                   _named(NAME, "NameCheck_NC17_FuncTest_Provenance_ImgOnly_p-valid_1",
                          "NameCheck_NC17_FuncTest2_Provenance_ImgOnly_p-valid_1"),
                   1, ("<EXPID>/<EXPID>.csv",)),
    ProvenanceCase("name_test_underscores", ("-nc",),
                   _named(NAME, "NameCheck_NC17_Functionality_Test_3_ProvenanceFiltering_ImgOnly_p-invalid_1"),
                   1, ("team name must not include underscores", "unrecognized")),
    ProvenanceCase("valid_test_min", ("-nc",),
                   _named(VALID, "ValidCheck_NC17_FuncTest_ProvenanceFiltering_ImgOnly_p-min_1"),
                   1, ("must be at least",),
                   note="commented out in MediScore's harness (intended 0); the CSV has 3 columns, so 1"),
    ProvenanceCase("valid_test_conf", ("-nc",),
                   _named(VALID, "ValidCheck_NC17_FuncTest_Provenance_ImgOnly_p-conf_1"),
                   1, ("must be at least",),
                   note="commented out in MediScore's harness (intended 0); the CSV has 3 columns, so 1"),
    ProvenanceCase("valid_test_optout", ("--optOut", "-t", "provenance"),
                   _named(VALID, "ValidCheck_NC17_FuncTest_Provenance_ImgOnly_p-optout_1"), 0,
                   note="mfscore applies -t: the graph schema, which the JSON passes (its links list is empty)"),
    ProvenanceCase("valid_test_all", ("-nc",),
                   _named(VALID, "ValidCheck_NC17_FuncTest_Provenance_ImgOnly_p-all_1"),
                   1, ("'IsOptOut' or 'ProvenanceProbeStatus'",),
                   note="intended 0, but the CSV has ProbeStatus instead of IsOptOut/ProvenanceProbeStatus: "
                        "decision, the code's result 1 (docs/validation.md §8 calls it the defensible one)"),
    ProvenanceCase("invalid_test_comma", ("-nc",),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_ProvenanceFiltering_ImgOnly_p-comma_3"),
                   1, ("must be at least",)),
    ProvenanceCase("invalid_test_moreidx", ("-nc",),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_ProvenanceFiltering_ImgOnly_p-moreidx_3"),
                   1, ("does not match the number of rows in the index file", "does not exist in the index file")),
    ProvenanceCase("invalid_test_badfilter", ("-nc",),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_ProvenanceFiltering_ImgOnly_p-badfilter_3"),
                   1, ("schema", "nodes[0]: 'id' is a required property")),
    ProvenanceCase("invalid_test_filtergraph", ("-nc",),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_Provenance_ImgOnly_p-filtergraph_3"),
                   1, ("graph-building schema", "must include 'links'")),
    # Not in MediScore's harness: -t selects the schema in mfscore; MediScore ignores it (docs/provenance.md §4).
    ProvenanceCase("filtergraph_t_provenance", ("-t", "provenance"),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_Provenance_ImgOnly_p-filtergraph_3"),
                   1, ("graph-building schema", "must include 'links'")),
    ProvenanceCase("filtergraph_t_provenance_compat", ("-t", "provenance", "--mediscore-compat"),
                   _named(INVALID, "InvalidCheck_NC17_FuncTest_Provenance_ImgOnly_p-filtergraph_3"),
                   0, ("passed validation",), note="MediScore's measured result: exit 0 (filtering schema)"),
)
