"""VideoTemporalLocalizationScorer cases of MediScore's test suite (docs/compatibility.md "Video temporal cases"), as
mfscore command lines.

Paths are relative to ``tests/conformance/data``; every run writes into its own directory.
The expected files are in ``videoTemporalLocalizationScorerTests/checkfiles/<case>/``.
"""

from dataclasses import dataclass

VT = "videoTemporalLocalizationScorerTests"
EXPECTED = ("query_table_join.csv", "scores.csv", "scores_probes.csv")
# mfscore's -l writes log.txt into the output directory (MediScore: ./log.txt in the working
# directory, outside the compared directory); the one documented extra file.
LOG = "log.txt"

FILES = ("-r", f"{VT}/test_case_1_videotemploc-ref.csv", "-i", f"{VT}/test_case_1_videotemploc-index.csv",
         "-j", f"{VT}/test_case_1_videotemploc-ref-journalmask.csv",
         "-p", f"{VT}/test_case_1_videotemploc-ref-probejournaljoin.csv")
SYSTEM = f"{VT}/test_case_1_system_output.csv"


@dataclass(frozen=True)
class Case:
    name: str      # checkfile directory
    args: tuple    # mfscore video-temporal options, without -o
    expected: tuple = EXPECTED


CASES = (
    Case("test_1_0", (*FILES, "-s", SYSTEM, "-c", "5", "--query", "*", "Operation == 'PasteFrames'", "-l")),
)
