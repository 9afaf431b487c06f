"""ProvenanceGraphBuildingScorer cases of MediScore's test suite (docs/compatibility.md "Provenance scorer cases"),
as mfscore command lines.

Paths are relative to ``tests/conformance/data``; every run passes ``-R PT/ -S PT/``. The
expected files are in ``PT/checkfiles/<case>/``. ``log`` marks the case whose ``-v`` output
(stdout and stderr) MediScore's harness captures into ``log.txt``.
"""

from dataclasses import dataclass

PT = "provenanceScorerTests"
TABLES = ("link_mapping.csv", "node_mapping.csv", "scores.csv", "trial_scores.csv")

# MediScore's harness ran from tools/ProvenanceScorer with the data at this path and wrote to
# compcheckfiles/<case>, rewritten to checkfiles/<case> in log.txt.
MEDISCORE_PT = f"../../data/test_suite/{PT}/"


@dataclass(frozen=True)
class Case:
    name: str        # checkfile directory
    args: tuple      # mfscore provenance-graph options, without -o
    log: bool = False

    @property
    def expected(self) -> tuple:
        return TABLES + (("log.txt",) if self.log else ())


def _io(case: int, system: str) -> tuple:
    return ("-x", f"{PT}/test_case_{case}-provenancegraphbuilding-index.csv",
            "-r", f"{PT}/test_case_{case}-provenance-ref.csv",
            "-n", f"{PT}/test_case_{case}-provenance-node.csv",
            "-w", f"{PT}/test_case_{case}-provenancegraphbuilding-world.csv",
            "-s", f"{PT}/{system}", "-R", f"{PT}/", "-S", f"{PT}/")


CASES = [
    Case("test_1_0", _io(1, "test_case_1-system_output_0_index.csv")),
    Case("test_1_0_undirect", _io(1, "test_case_1-system_output_0_index_undirect.csv") + ("--undirected",)),
    Case("test_1_0_direct", _io(1, "test_case_1-system_output_0_index_direct.csv") + ("-d",)),
    Case("test_1_0and1_direct", _io(1, "test_case_1-system_output_0and1_index_direct.csv") + ("-d", "-t")),
    Case("test_2_0", _io(2, "test_case_2-system_output_0_index.csv")),
    Case("test_2_1", _io(2, "test_case_2-system_output_1_index.csv")),
    Case("test_3_1", _io(2, "test_case_3-system_output_1_index.csv") + ("-c", "-v"), log=True),
]
