"""ProvenanceFilteringScorer cases of MediScore's test suite (docs/compatibility.md "Provenance scorer cases"), as
mfscore command lines.

Paths are relative to ``tests/conformance/data``; every run passes ``-R PT/ -S PT/`` and writes
into its own directory. The expected files are in ``provenanceScorerTests/checkfiles/<case>/``.
"""

from dataclasses import dataclass

PT = "provenanceScorerTests"
EXPECTED = ("trial_scores.csv", "scores.csv", "node_mapping.csv")


def _case_files(n: int) -> tuple:
    return ("-x", f"{PT}/test_case_{n}-provenancegraphbuilding-index.csv", "-r", f"{PT}/test_case_{n}-provenance-ref.csv",
            "-n", f"{PT}/test_case_{n}-provenance-node.csv", "-w", f"{PT}/test_case_{n}-provenancegraphbuilding-world.csv")


@dataclass(frozen=True)
class Case:
    name: str      # checkfile directory
    args: tuple    # mfscore provenance-filtering options, without -o
    expected: tuple = EXPECTED


def _case(name: str, files: int, system: str, *flags: str) -> Case:
    return Case(name, (*_case_files(files), "-s", f"{PT}/{system}", "-R", f"{PT}/", "-S", f"{PT}/", *flags))


CASES = (
    _case("filtering_test_0", 2, "test_case_2-filtering-system_output_0_index.csv"),
    _case("filtering_test_1", 2, "test_case_2-filtering-system_output_1_index.csv"),
    _case("filtering_test_2", 3, "test_case_3-filtering-system_output_1_index.csv"),
    _case("filtering_test_0_b", 2, "test_case_2-filtering-system_output_0_index.csv", "--nodetype", "all"),
    _case("filtering_test_1_b", 2, "test_case_2-filtering-system_output_1_index.csv", "--nodetype", "all"),
    _case("IsOptOut_test_0", 3, "test_case_4-filtering-system_output_0_index.csv"),
)
