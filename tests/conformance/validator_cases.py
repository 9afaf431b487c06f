"""MediScore's validatorTests cases (docs/validation.md §7): options, files, expected status and phrases.

"Expected" is the unit test's intended behaviour (c460603), not HEAD's 2021 regression. Paths are
relative to ``validatorTests``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VT = "validatorTests"
_INDEXES = "NC2016_Test0516_dfz/indexes"
IDX_M = f"{_INDEXES}/NC2016-manipulation-index.csv"
IDX_S = f"{_INDEXES}/NC2016-splice-index.csv"
IDX_V = f"{_INDEXES}/NC2016-manipulation-video-index_d1v1.csv"
IDX_EV = "evref/indexes/ValTest-eventverification-index.csv"
IDX_CAM = "cref/indexes/MFC18-camera-index.csv"


def _named(prefix: str, version: int = 1, task: str = "Manipulation") -> str:
    name = f"{prefix}_NC2016_UnitTest_{task}_ImgOnly_p-baseline_{version}"
    return f"{name}/{name}.csv"


@dataclass(frozen=True)
class ValidatorCase:
    id: str
    args: tuple[str, ...]
    system: str
    index: str
    status: int | None                       # None: the unit test does not assert it
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    revised: str | None = None               # --output_revised_system NAME, validated again by `then`
    then: ValidatorCase | None = field(default=None)


SSD = ("-vt", "SSD", "-p", "1")
SSD_NC = ("-nc", "--ncid", "NC2016", *SSD)
DSD = ("-vt", "DSD", "-p", "1")
DSD_NC = ("-nc", "--ncid", "NC2016", *DSD)
VIDEO = ("--ncid", "NC2016", "-vt", "SSD-video", "-p", "1")
EVENT = ("--ncid", "ValTest", "-vt", "SSD-event", "-p", "1")
CAMERA = ("--ncid", "MFC18", "-vt", "SSD-camera", "-p", "1")
DIMENSIONS = "ERROR: Expected dimensions"

CASES = [
    ValidatorCase("S-basic", SSD_NC, _named("foo"), IDX_M, 0),
    ValidatorCase("S-nonc", SSD, "foo/foo.csv", IDX_M, 0),
    ValidatorCase("S-nomask", SSD, "nomask/nomask.csv", IDX_M, 0),
    ValidatorCase("S0", SSD_NC, "emptydir_NC2016_UnitTest_Splice_ImgOnly_p-baseline_1/"
                  "foo__NC2016_UnitTest_Manipulation_ImgOnly_p-baseline_1.csv",
                  f"{_INDEXES}/NC2016-manipulation-index0.csv", 1, ("ERROR: Expected system output",)),
    ValidatorCase("S1", SSD_NC, _named("foo_"), IDX_M, 1, ("ERROR: Task", "unrecognized")),
    ValidatorCase("S2", SSD_NC, _named("fo_o"), IDX_M, 1, ("ERROR: Task", "unrecognized")),
    ValidatorCase("S4a", SSD_NC, _named("foo", 2), IDX_M, 1, ("ERROR: The required column",)),
    ValidatorCase("S4b", SSD_NC, _named("foob", 2), IDX_M, 1, (
        "ERROR: Your system output contains duplicate rows",
        "ERROR: The number of rows in your system output (6) does not match the number of rows in the index file (5).")),
    ValidatorCase("S4d", SSD_NC, _named("food"), IDX_M, 1, ("Probe status", "is not recognized.")),
    ValidatorCase("S5", SSD_NC, _named("bar"), IDX_M, 1, ("is not a png.",)),
    ValidatorCase("S6", SSD_NC, _named("baz"), IDX_M, 1, (DIMENSIONS, "is not single-channel.")),
    ValidatorCase("S6.1", SSD_NC, _named("baz"), IDX_M, 1, (DIMENSIONS, "is not single-channel."),
                  revised="rewritten_output.csv",
                  then=ValidatorCase("S6.2", ("--ncid", "NC2016", *SSD), "", IDX_M, None, absent=(DIMENSIONS,))),
    ValidatorCase("S7", SSD_NC, _named("foo", 3), IDX_M, 1, ("must be at least",)),
    ValidatorCase("V-basic", VIDEO, "validvidtest/validvidtest.csv", IDX_V, 0),
    ValidatorCase("V-nc17", VIDEO, "validvidtest_nc17/validvidtest_nc17.csv", IDX_V, 0),
    ValidatorCase("V0", VIDEO, "badstringvidtest/badstringvidtest.csv", IDX_V, 1,
                  ("ERROR: Interval list", "cannot be read as intervals")),
    ValidatorCase("V1", VIDEO, "oobvidtest/oobvidtest.csv", IDX_V, 1, ("ERROR: Interval", "is out of bounds.")),
    ValidatorCase("V2", VIDEO, "selfcrossvidtest/selfcrossvidtest.csv", IDX_V, 1, ("ERROR: Interval", "intersects with")),
    ValidatorCase("V3", VIDEO, "failvalidvidtest/failvalidvidtest.csv", IDX_V, 0),
    ValidatorCase("EV-basic", EVENT, "valid_ev/valid_ev.csv", IDX_EV, 0),
    ValidatorCase("EV0", EVENT, "invalid_ev_event/invalid_ev_event.csv", IDX_EV, 1,
                  ("ERROR:", "does not exist in the index file")),
    ValidatorCase("C-basic", CAMERA, "valid_cam/valid_cam.csv", IDX_CAM, 0),
    ValidatorCase("C0", CAMERA, "invalid_camid/invalid_camid.csv", IDX_CAM, 1, (
        "ERROR: Expected probe 75124de734fb7a0d302c57524bbd8c29:PAR-1476_primary_image in system file. Only found in "
        "index file.",)),
    # C2 validates the committed revised_cam.csv, absent from this data: it runs on the file C1 writes.
    ValidatorCase("C1", CAMERA, "invalid_cam_mask/invalid_cam_mask.csv", IDX_CAM, 1, (DIMENSIONS,),
                  revised="revised_cam.csv",
                  then=ValidatorCase("C2", CAMERA, "", IDX_CAM, None, (
                      "Warning: Probe", "has failed validation due to incorrect mask dimensions, but is excused in "
                      "this system output."))),
    ValidatorCase("D-basic", DSD_NC, _named("lorem", task="Splice"), IDX_S, 0),
    ValidatorCase("D-nonc", DSD, "lorem/lorem.csv", IDX_S, 0),
    ValidatorCase("D0", DSD_NC, _named("emptydir", task="Splice"), f"{_INDEXES}/NC2016-splice-index0.csv", 1,
                  ("Expected system output", "Expected index file")),
    ValidatorCase("D1", DSD_NC, "lorem__NC2016_UnitTest_Spl_ImgOnly_p-baseline_1/"
                  "lorem__NC2016_UnitTest_Spl_ImgOnly_p-baseline_1.csv", IDX_S, 1,
                  ("ERROR: Task", "is unrecognized. The task must be 'splice'.")),
    ValidatorCase("D2", DSD_NC, _named("lor_em"), IDX_S, 1,
                  ("ERROR: Task", "is unrecognized. The task must be 'splice'.")),
    ValidatorCase("D4a", DSD_NC, _named("lorem", 2, "Splice"), IDX_S, 1, ("ERROR: The required column",)),
    ValidatorCase("D4b", DSD_NC, _named("loremb", 2, "Splice"), IDX_S, 1,
                  ("The number of rows in your system output (6) does not match the number of rows in the index "
                   "file (5).",)),
    ValidatorCase("D4d", DSD_NC, _named("loremd", task="Splice"), IDX_S, 1,
                  ("Probe status", "Donor status", "is not recognized")),
    ValidatorCase("D6", DSD_NC, _named("ipsum", task="Splice"), IDX_S, 1,
                  ("is not a png.", DIMENSIONS, "is not single-channel.")),
    ValidatorCase("D6.1", DSD_NC, _named("ipsum", task="Splice"), IDX_S, 1,
                  ("is not a png.", DIMENSIONS, "is not single-channel."), revised="revised_splice.csv",
                  then=ValidatorCase("D6.2", ("--ncid", "NC2016", *DSD), "", IDX_S, 1,
                                     ("is not a png.", "is not single-channel."), (DIMENSIONS,))),
]
