"""DetectionScorer cases of MediScore's test suite (docs/compatibility.md "Detection cases"), as mfscore command lines.

Paths are relative to ``tests/conformance/data``. ``expected`` lists the checkfiles of the
case (in ``detectionScorerTests/checkfiles/<case>/``); the run's prefix is ``<case>`` unless
``prefix`` says otherwise. Sub-runs 7, 8 and 10 of test_c5_1 use ``-qp``, which crashes in
MediScore and has no expected output; they are left out (docs/compatibility.md "Detection cases").
"""

from dataclasses import dataclass

DT = "detectionScorerTests"
SR = f"{DT}/sample/reference"
SS = f"{DT}/sample"
BR = f"{DT}/reference"
BS = f"{DT}/baseline"

ME = {
    "p-me_1": "D_NC2016_Manipulation_ImgOnly_p-me_1/D_NC2016_Manipulation_ImgOnly_p-me_1.csv",
    "p-me_2": "D_NC2016_Manipulation_ImgOnly_p-me_2/D_NC2016_Manipulation_ImgOnly_p-me_2.csv",
    "p-me_3": "D_NC2016_Manipulation_ImgOnly_p-me_3/D_NC2016_Manipulation_ImgOnly_p-me_3.csv",
    "p-me_4": "D_NC2016_Manipulation_ImgOnly_p-me_4/D_NC2016_Manipulation_ImgOnly_p-me_4.csv",
    "c-me_2": "D_NC2017_Manipulation_ImgOnly_c-me_2/D_NC2017_Manipulation_ImgOnly_c-me_2.csv",
    "c-me_3": "D_NC2017_Manipulation_ImgOnly_c-me_3/D_NC2017_Manipulation_ImgOnly_c-me_3.csv",
    "splice": "D_NC2016_Splice_ImgOnly_p-me_1/D_NC2016_Splice_ImgOnly_p-me_1.csv",
    "event": "D_MFC2018_EventVerification_ImgOnly_p-me_1/D_MFC2018_EventVerification_ImgOnly_p-me_1.csv",
    "camera": "D_MFC2018_Camera_MultiMedia_p-me_1/D_MFC2018_Camera_MutiMedia_p-me_1.csv",
}


@dataclass(frozen=True)
class Case:
    name: str          # checkfile directory
    args: tuple        # mfscore detection options, without -o
    expected: tuple    # expected file names
    prefix: str = ""   # output prefix, default the case name

    @property
    def out_prefix(self) -> str:
        return self.prefix or self.name


def _io(task, ref_dir, index, ref, sys_dir, sys):
    return ("-t", task, "--refDir", ref_dir, "-x", index, "-r", ref, "--sysDir", sys_dir, "-s", sys)


NC16M = ("NC2016-manipulation-index.csv", "NC2016-manipulation-ref.csv")
NC17M = ("NC2017-manipulation-index.csv", "NC2017-manipulation-ref.csv")
NC16S = ("NC2016-splice-index.csv", "NC2016-splice-ref.csv")


def _sample(name, task, files, sys, extra=(), expected=("all_report",)):
    args = _io(task, SR, files[0], files[1], SS, ME[sys]) + tuple(extra)
    return Case(name, args, tuple(f"{name}_{e}.csv" for e in expected))


DCT = "Base_NC2016_Manipulation_ImgOnly_p-dct_02.csv"
COPYMOVE = "Base_NC2017_Manipulation_ImgOnly_p-copymove_01.csv"


def _c5(n, extra, expected, io=None):
    prefix = f"test_c5_1-{n}"
    io = io or _io("manipulation", BR, NC16M[0], NC16M[1], BS, DCT)
    return Case("test_c5_1", io + tuple(extra), tuple(f"{prefix}_{e}.csv" for e in expected), prefix=prefix)


NC17_FROM_DT = _io("manipulation", DT, "reference/NC2017-manipulation-index.csv", "reference/NC2017-manipulation-ref.csv", BS, COPYMOVE)

CASES = [
    Case("test_c1_1", _io("manipulation", BR, *NC16M, BS, DCT), ("test_c1_1_all_report.csv",)),
    Case("test_c1_3", _io("manipulation", BR, *NC17M, BS, COPYMOVE), ("test_c1_3_all_report.csv",)),
    _sample("test_c2_1", "manipulation", NC16M, "p-me_1"),
    _sample("test_c2_2", "splice", NC16S, "splice"),
    _sample("test_c2_3", "manipulation", NC16M, "p-me_2"),
    _sample("test_c2_4", "manipulation", NC17M, "c-me_2"),
    _sample("test_c2_6", "manipulation", NC16M, "p-me_3", ["--optOut"]),
    _sample("test_c2_7", "manipulation", NC16M, "p-me_3", ["-qm", "Operation==['PasteSplice']", "--optOut"], ["qm_query_0_report"]),
    _sample("test_c2_8", "manipulation", NC16M, "p-me_4", ["--optOut"]),
    _sample("test_c2_9", "manipulation", NC16M, "p-me_4", ["-qm", "Operation==['PasteSplice']", "--optOut"], ["qm_query_0_report"]),
    _sample("test_c2_10", "eventverification", ("MFC2018-eventverification-index.csv", "MFC2018-eventverification-ref.csv"), "event"),
    _sample("test_c2_11", "manipulation", NC16M, "p-me_1", ["--outMeta"], ["all_report", "allmeta", "meta_scored"]),
    _sample("test_c2_12", "manipulation", NC16M, "p-me_1", ["-qm", "Purpose==['remove']", "--outMeta"],
            ["qm_query_0_allmeta", "qm_query_0_report"]),
    _sample("test_c2_14", "camera", ("MFC2018-camera-index.csv", "MFC2018-camera-ref.csv"), "camera"),
    # In docs/detection.md §3.3, §7.2, not run by MediScore's harness; files kept back ("not available" until present).
    _sample("test_c2_13", "manipulation", NC16M, "p-me_1", ["-qm", "Purpose==['remove'] or Operation==['PasteSampled']"],
            ["qm_query_0_report"]),
    _sample("test_c3_2", "manipulation", ("NC2016-manipulation-index_sub.csv", NC16M[1]), "p-me_1"),
    _sample("test_c3_4", "splice", ("NC2016-splice-index_sub.csv", NC16S[1]), "splice"),
    _sample("test_c3_1", "manipulation", NC16M, "p-me_1"),
    _sample("test_c3_3", "splice", NC16S, "splice"),
    _sample("test_c4_1", "manipulation", ("NC2017-manipulation-index-jt.csv", "NC2017-manipulation-ref-jt.csv"), "c-me_3"),
    _sample("test_c4_2", "manipulation", ("NC2017-manipulation-index-jt.csv", "NC2017-manipulation-ref-jt.csv"), "c-me_3",
            ["-qm", "Operation==['PasteSplice']"], ["qm_query_0_report"]),
    # Single-class bootstrap replicates: MediScore's NaN ordering (docs/compatibility.md).
    _sample("test_c4_4", "manipulation", NC16M, "p-me_3", ["-qm", "Operation==['PasteSplice']", "--ci", "--ciLevel", ".95",
                                                            "--mediscore-compat"], ["qm_query_0_report"]),
    _c5(1, ["--ci"], ["all_report"]),
    _c5(2, ["--plotType", "det"], ["all_report"]),
    _c5(4, ["--ci", "--noNum"], ["all_report"]),
    _c5(5, ["-q", "Collection==['Nimble-SCI','Nimble-WEB']", "--ci"], ["q_query_0_report"]),
    _c5(9, ["-qm", "Collection==['Nimble-SCI'] & IsManipulationTypeRemoval==['Y']",
            "Collection==['Nimble-WEB'] & IsManipulationTypeRemoval==['Y']"], ["qm_query_0_report", "qm_query_1_report"]),
    _c5(11, ["--ci"], ["all_report"], io=_io("splice", BR, *NC16S, BS, "Base_NC2016_Splice_ImgOnly_p-splice_01.csv")),
    _c5(12, ["--ci"], ["all_report"], io=NC17_FROM_DT),
    _c5(13, ["-q", "(Purpose ==['remove'] and IsTarget == ['Y']) or IsTarget == ['N']",
             "(Purpose ==['clone'] and IsTarget == ['Y']) or IsTarget == ['N']"], ["q_query_0_report", "q_query_1_report"], io=NC17_FROM_DT),
    _c5(14, ["-qm", "Purpose==['remove']", "Purpose==['clone']"], ["qm_query_0_report", "qm_query_1_report"], io=NC17_FROM_DT),
    _c5(16, ["-qm", "Purpose==['remove'] and Operation ==['FillContentAwareFill']"], ["qm_query_0_report"], io=NC17_FROM_DT),
]
