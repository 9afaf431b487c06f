"""MaskScorer cases of MediScore's test suite (docs/compatibility.md "Mask cases"), as mfscore command lines.

Paths are relative to ``tests/conformance/data``. Each case maps the files mfscore writes
(relative to the output directory) to checkfiles in ``maskScorerTests/compcheckfiles/``.
Cache and speed-up flags of the original command lines (``--speedup``, ``--cache_dir``) are
accepted and ignored by mfscore, so they are left out here.
"""

from dataclasses import dataclass

MT = "maskScorerTests"
CHECKFILES = f"{MT}/compcheckfiles"

# HTML image paths, relative to the directory MediScore's harness ran in (docs/masks.md §10.1)
HTML_COLUMNS = frozenset({"ColMaskFileName", "AggMaskFileName", "ProbeColMaskFileName", "ProbeAggMaskFileName",
                          "DonorColMaskFileName", "DonorAggMaskFileName"})


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple
    files: tuple            # (written file relative to the output dir, checkfile name)
    prefix: str = "P"
    inputs: tuple = ()      # input files the case needs beyond the CSVs (some are absent from the public data)


def _sys(stem: str) -> str:
    return f"{MT}/{stem}/{stem}.csv"


def _ref(kind: str, year: str) -> tuple:
    return ("--refDir", MT, "-r", f"reference/{kind}/{year}-{kind}-ref.csv", "-x", f"indexes/{year}-{kind}-index.csv")


def _files(expected: str, parts=("", "-perimage", "-journalResults"), subdir="", averaged="_mask_score.csv"):
    written = {"": averaged, "-perimage": "_mask_scores_perimage.csv", "-journalResults": "_journalResults.csv"}
    return tuple((f"{subdir}P{written[part]}", f"ref_maskreport_{expected}{part}.csv") for part in parts)


NC16_MANIP = ("-t", "manipulation", *_ref("manipulation", "NC2016"))
NC17_MANIP = ("-t", "manipulation", *_ref("manipulation", "NC2017"))
NC17_SPLICE = ("-t", "splice", *_ref("splice", "NC2017"))
NC16_SPLICE = ("-t", "splice", *_ref("splice", "NC2016"))
C17_SYS = ("-s", _sys("B_NC2017_Unittest_Manipulation_ImgOnly_c-me2_1"))
S16_SYS = ("-s", _sys("B_NC2016_Unittest_Splice_ImgOnly_p-me_1"))
# missing from MediScore's public repository (tests/conformance/data/README.md), like these system masks
S16_MASKS = tuple(f"{MT}/B_NC2016_Unittest_Splice_ImgOnly_p-me_1/mask/{m}.png"
                  for m in ("gull-mask1", "flower-splice-mask1", "gull-mask2"))
MFC18 = ("-t", "manipulation", "--refDir", f"{MT}/", "-r", "reference/manipulation-image/MFC18-manipulation-image-ref.csv",
         "-x", "indexes/MFC18-manipulation-image-index.csv", "-s", _sys("B_MFC18_Unittest_Manipulation_ImgOnly_p-me_1"),
         "-p", "2", "--jpeg2000", "--precision", "12")
P12 = ("--precision", "12")

PURPOSES = ["clone", "add", "removal", "clone_add", "heal", "remove"]
_purpose_files = []
for i, name in enumerate(PURPOSES):
    if name == "removal":
        continue  # no journal row matches: nothing is written (docs/compatibility.md "Mask cases", case 1.purpose)
    parts = ("-perimage", "-journalResults") if name == "heal" else ("", "-perimage", "-journalResults")
    _purpose_files += _files(name, parts, subdir=f"index_{i}/")

CASES = [
    # case 0: full scoring
    Case("manip", NC16_MANIP + ("-s", _sys("B_NC2016_Unittest_Manipulation_ImgOnly_c-me2_1"), "-p", "2") + P12,
         _files("manip")),
    Case("splice", NC17_SPLICE + ("-s", _sys("B_NC2017_Unittest_Splice_ImgOnly_p-me_1"), "-html", "-p", "2") + P12,
         _files("splice")),
    Case("splicebin", NC17_SPLICE + ("--sysDir", MT, "-s", "C_NC2017_Unittest_Splice_ImgOnly_p-me_1/C_NC2017_Unittest_Splice_ImgOnly_p-me_1.csv",
                                     "-xF", "-p", "2", "-html", "--outMeta", "--outAllmeta", "--sbin", "200", "--jpeg2000") + P12,
         _files("splicebin")),
    Case("manip_optOut", NC17_MANIP + C17_SYS + ("-html", "-p", "2", "--optOut") + P12, _files("manip_optOut")),
    Case("manipfailvalid", NC17_MANIP + ("-s", _sys("p-failvalid_1_manip"), "-html", "-p", "2") + P12,
         _files("manipfailvalid")),
    Case("splicefailvalid", NC17_SPLICE + ("-s", _sys("p-failvalid_2_splice"), "-html", "-p", "2") + P12,
         _files("splicefailvalid")),
    # case 1: selective scoring
    Case("all", NC17_MANIP + C17_SYS + P12 + ("--nspx", "200", "-p", "2", "-html"), _files("all")),
    Case("purpose", NC17_MANIP + C17_SYS + P12 + ("-qm", *[f"Purpose==['{p}']" for p in
                                                         ["clone", "add", "removal", "clone','add", "heal", "remove"]],
                                                 "-p", "2", "-html"), tuple(_purpose_files)),
    Case("display", NC17_MANIP + C17_SYS + P12 + ("-qm", "Purpose==['heal']", "--displayScoredOnly", "-p", "2", "-k", "gaussian"),
         _files("display", ("-perimage", "-journalResults"))),
    Case("splice_query", NC17_SPLICE + ("-s", _sys("B_NC2017_Unittest_Splice_ImgOnly_p-me_1"), "-qm", "Operation==['PasteSplice']",
                                        "-html") + P12, _files("splice_query")),
    # case 2: averaging queries
    Case("manipconf", NC17_MANIP + C17_SYS + P12 + ("-q", "0.5 < ConfidenceScore"),
         _files("manipconf", ("-perimage", "-journalResults")) + (("P_mask_scores_0.csv", "ref_maskreport_manipconf_0.csv"),)),
    Case("manipfooconf", NC17_MANIP + C17_SYS + P12 + ("-q", "ConfidenceScore==0.5"),
         _files("manipfooconf", ("-perimage", "-journalResults"))),
    Case("manipconfpart", NC17_MANIP + C17_SYS + P12 + ("-qp", "0.5 < ConfidenceScore"), _files("manipconfpart")),
    Case("manipfooconfpart", NC17_MANIP + C17_SYS + P12 + ("-qp", "ConfidenceScore==['foo']"),
         _files("manipfooconfpart", ("-perimage", "-journalResults"))),
    Case("spliceconf", NC16_SPLICE + S16_SYS + P12 + ("-q", "0.5 < ConfidenceScore"),
         _files("spliceconf", ("-perimage",)) + (("P_mask_scores_0.csv", "ref_maskreport_spliceconf_0.csv"),), inputs=S16_MASKS),
    Case("spliceconfcoll", NC16_SPLICE + S16_SYS + P12 + ("-q", "0.3 <= ConfidenceScore", "Collection==['Nimble-WEB']"),
         _files("spliceconfcoll", ("-perimage",)) + (("P_mask_scores_0.csv", "ref_maskreport_spliceconfcoll_0.csv"),
                                                     ("P_mask_scores_1.csv", "ref_maskreport_spliceconfcoll_1.csv")), inputs=S16_MASKS),
    Case("splicefooconf", NC16_SPLICE + S16_SYS + P12 + ("-q", "ConfidenceScore==['foo']", "--displayScoredOnly"),
         _files("splicefooconf", ("-perimage",)), inputs=S16_MASKS),
    Case("spliceconfpart", NC16_SPLICE + S16_SYS + P12 + ("-qp", "ConfidenceScore > 0.5"), _files("spliceconfpart", ("", "-perimage")), inputs=S16_MASKS),
    # MediScore writes only the last non-empty partition (docs/masks.md §8); mfscore all, unless --mediscore-compat
    Case("spliceconfcollpart", NC16_SPLICE + S16_SYS + P12 + ("-qp", "ConfidenceScore > 0.3 & Collection==['Nimble-WEB','Nimble-SCI']",
                                                              "--mediscore-compat"), _files("spliceconfcollpart", ("", "-perimage")), inputs=S16_MASKS),
    Case("splicefooconfpart", NC16_SPLICE + S16_SYS + P12 + ("-qp", "ConfidenceScore==['foo']"), _files("splicefooconfpart", ("-perimage",)), inputs=S16_MASKS),
    # case 3: bit-plane references
    Case("bittest_1", MFC18 + ("-html",), _files("bittest_1")),
    Case("bittest_oo", MFC18 + ("-html", "--optOut"), _files("bittest_oo")),
    Case("bittest_partial", MFC18 + ("-qm", "Operation==['PasteSampled']"), _files("bittest_partial")),
    Case("bittest_pixns", MFC18 + ("-pppns", "-html"), _files("bittest_pixns")),
]
