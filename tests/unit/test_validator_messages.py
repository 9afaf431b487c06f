"""MediScore's validator message templates, each triggered by a minimal input (issue 15).

Scripts grep the validators' output, so every message template of MediScore's validators (the
substrings MediScore's own unit tests assert; its validatorTests cases quote only these) has a case
here: a tiny valid submission, one edit that should make the validator say it, and the words that
must then occur, verbatim, within one printed line. Before the edit the same run is the control: the
words must be absent, so a case cannot pass because the words are printed whatever the input.
MediScore's words are kept in ``data/mediscore_validator_messages.toml`` beside this file.

Several templates are printed by more than one validator (the file, name, table and key checks the
provenance validator shares, the mask checks of SSD, DSD and camera); those get one case per validator,
listed under the group that names the template. ``test_registry_covers_every_template`` reads the
templates from the data file, so a template added there without a case here fails.

MediScore's other messages are known only as paraphrases ("not a csv", "expected dimensions … got …").
Their exact words are not known, so mfscore's wording is not changed to match them; ``PARAPHRASES``
checks that mfscore's message carries the paraphrase's words in order (ignoring case and
punctuation), and ``PARAPHRASES_SET_ASIDE`` says where the rest stand.

The submissions (``|``-separated; masks are 4 wide by 3 high, donors 5 by 2)::

    SSD  team_NC17_Data_Manipulation_ImgOnly_p-base_1/  (run with -nc)
         ProbeFileID|ConfidenceScore|OutputProbeMaskFileName|IsOptOut
         p1|0.9|mask/p1.png|N          p2|0.1||Y          p3|0.5||N          p4|0.2||Localization
    DSD  team_NC17_Data_Splice_ImgOnly_p-base_1/  (run with -nc)
         ProbeFileID|DonorFileID|ConfidenceScore|OutputProbeMaskFileName|OutputDonorMaskFileName|ProbeStatus|DonorStatus
         p1|d1|0.9|mask/p1.png|mask/d1.png|Processed|Processed   and p2..p4 opted out, no masks
    video  v1: VideoFrameSegments [[5, 10]]; v2: [[1, 2], [20, 30]]; FrameCount 30 in the index
    event  e1:Ev_A Processed, e1:Ev_B NonProcessed
    camera c1:cam1 mask/c1.png Processed, c2:cam1 no mask OptOutLocalization
    provenance  team_NC17_Data_ProvenanceFiltering_ImgOnly_p-base_1/  (run with -nc), one probe
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pytest

from mfscore.cli.main import main

# MediScore's validator messages, verbatim: the substrings its validator unit tests assert, the whole lines behind
# some of them, what each validatorTests case asserts, and the paraphrases of its other messages.
MEDISCORE = tomllib.loads((Path(__file__).parent / "data" / "mediscore_validator_messages.toml").read_text())

SSD_NAME = "team_NC17_Data_Manipulation_ImgOnly_p-base_1"
DSD_NAME = "team_NC17_Data_Splice_ImgOnly_p-base_1"
PROVENANCE_NAME = "team_NC17_Data_ProvenanceFiltering_ImgOnly_p-base_1"
PROVENANCE_PROBE = "1fafdafac9df0956271b7119ff957546"


# --- the valid submissions ---------------------------------------------------------------------------------------

@dataclass
class Submission:
    validator: str       # an -vt value, or "provenance"
    system: Path
    index: Path
    args: list[str] = field(default_factory=list)

    def run(self, capsys) -> tuple[int, str]:
        if self.validator == "provenance":
            argv = ["validate-provenance", "-s", str(self.system), "-x", str(self.index), *self.args]
        else:
            argv = ["validate", "-vt", self.validator, "-s", str(self.system), "-x", str(self.index), *self.args]
        status = main(argv)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.out + captured.err
        return status, captured.out


def _table(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _png(path: Path, height: int, width: int, channels: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (height, width) if channels == 1 else (height, width, channels)
    assert cv2.imwrite(str(path), np.full(shape, 255, np.uint8))


def _ssd(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv", "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight",
                   *(f"manipulation|p{i}|probe/p{i}.jpg|4|3" for i in range(1, 5)))
    system = _table(tmp / SSD_NAME / f"{SSD_NAME}.csv", "ProbeFileID|ConfidenceScore|OutputProbeMaskFileName|IsOptOut",
                    "p1|0.9|mask/p1.png|N", "p2|0.1||Y", "p3|0.5||N", "p4|0.2||Localization")
    _png(system.parent / "mask" / "p1.png", 3, 4)
    return Submission("SSD", system, index, ["-nc"])


def _dsd(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv", "TaskID|ProbeFileID|DonorFileID|ProbeWidth|ProbeHeight|DonorWidth|DonorHeight",
                   *(f"splice|p{i}|d{i}|4|3|5|2" for i in range(1, 5)))
    system = _table(tmp / DSD_NAME / f"{DSD_NAME}.csv",
                    "ProbeFileID|DonorFileID|ConfidenceScore|OutputProbeMaskFileName|OutputDonorMaskFileName|"
                    "ProbeStatus|DonorStatus",
                    "p1|d1|0.9|mask/p1.png|mask/d1.png|Processed|Processed",
                    "p2|d2|0.1|||OptOutAll|OptOutLocalization",
                    "p3|d3|0.5|||OptOutLocalization|NonProcessed",
                    "p4|d4|0.2|||NonProcessed|OptOutLocalization")
    _png(system.parent / "mask" / "p1.png", 3, 4)
    _png(system.parent / "mask" / "d1.png", 2, 5)
    return Submission("DSD", system, index, ["-nc"])


def _video(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv", "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight|FrameCount",
                   "manipulation|v1|probe/v1.mp4|4|3|30", "manipulation|v2|probe/v2.mp4|4|3|30")
    system = _table(tmp / "vid" / "vid.csv",
                    "ProbeFileID|ConfidenceScore|ProbeStatus|VideoFrameSegments|AudioSampleSegments|"
                    "VideoFrameOptOutSegments",
                    "v1|0.9|Processed|[[5, 10]]|[]|[]", "v2|0.1|Processed|[[1, 2], [20, 30]]|[]|[]")
    return Submission("SSD-video", system, index)


def _event(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv", "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight|EventName",
                   "eventverification|e1|world/e1.jpg|4|3|Ev_A", "eventverification|e1|world/e1.jpg|4|3|Ev_B")
    system = _table(tmp / "ev" / "ev.csv", "ProbeFileID|EventName|ConfidenceScore|ProbeStatus",
                    "e1|Ev_A|0.1|Processed", "e1|Ev_B|0.2|NonProcessed")
    return Submission("SSD-event", system, index)


def _camera(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv", "TaskID|ProbeFileID|ProbeFileName|ProbeWidth|ProbeHeight|TrainCamID",
                   "camera|c1|probe/c1.jpg|4|3|cam1", "camera|c2|probe/c2.jpg|4|3|cam1")
    system = _table(tmp / "cam" / "cam.csv",
                    "ProbeFileID|TrainCamID|OutputProbeMaskFileName|ConfidenceScore|ProbeStatus|ProbeOptOutPixelValue",
                    "c1|cam1|mask/c1.png|0.1|Processed|", "c2|cam1||0.2|OptOutLocalization|127")
    _png(system.parent / "mask" / "c1.png", 3, 4)
    return Submission("SSD-camera", system, index)


def _provenance(tmp: Path) -> Submission:
    index = _table(tmp / "index.csv",
                   "TaskID|ProvenanceProbeFileID|ProvenanceProbeFileName|ProvenanceProbeWidth|ProvenanceProbeHeight",
                   f"provenance|{PROVENANCE_PROBE}|world/{PROVENANCE_PROBE}.jpg|200|200")
    system = _table(tmp / PROVENANCE_NAME / f"{PROVENANCE_NAME}.csv",
                    "ProvenanceProbeFileID|ConfidenceScore|ProvenanceOutputFileName|IsOptOut",
                    f"{PROVENANCE_PROBE}|1|jsons/p.json|N")
    document = {"directed": True, "nodes": [{"id": "id0", "file": "world/a.jpg", "fileid": "a",
                                             "nodeConfidenceScore": 0.9}]}
    (system.parent / "jsons").mkdir()
    (system.parent / "jsons" / "p.json").write_text(json.dumps(document))
    return Submission("provenance", system, index, ["-nc"])


BASELINES: dict[str, Callable[[Path], Submission]] = {
    "SSD": _ssd, "DSD": _dsd, "SSD-video": _video, "SSD-event": _event, "SSD-camera": _camera,
    "provenance": _provenance}


# --- edits that should make the validator say something -------------------------------------------------------

Edit = Callable[[Submission], None]


def replace(old: str, new: str, *, count: int = 1) -> Edit:
    """Replace ``old`` in the system CSV; it must occur, so a stale edit fails instead of testing nothing."""
    def edit(s: Submission) -> None:
        text = s.system.read_text()
        assert old in text, f"{old!r} is not in {s.system.name}"
        s.system.write_text(text.replace(old, new, count))
    return edit


def append(line: str) -> Edit:
    return lambda s: s.system.write_text(s.system.read_text() + line + "\n")


def drop_line(start: str) -> Edit:
    def edit(s: Submission) -> None:
        lines = s.system.read_text().splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith(start)]
        assert len(kept) == len(lines) - 1, f"no single line starts with {start!r}"
        s.system.write_text("".join(kept))
    return edit


def rename(old: str, new: str) -> Edit:
    """Rename the submission's directory and file (``<EXPID>/<EXPID>.csv``), replacing ``old`` by ``new``."""
    def edit(s: Submission) -> None:
        directory = s.system.parent.with_name(s.system.parent.name.replace(old, new))
        s.system.parent.rename(directory)
        target = directory / s.system.name.replace(old, new)
        (directory / s.system.name).rename(target)
        s.system = target
    return edit


def delete_system(s: Submission) -> None:
    s.system.unlink()


def delete_index(s: Submission) -> None:
    s.index.unlink()


def commas(s: Submission) -> None:
    s.system.write_text(s.system.read_text().replace("|", ","))


def mask(name: str, height: int, width: int, channels: int = 1) -> Edit:
    return lambda s: _png(s.system.parent / name, height, width, channels)


def garbage(name: str) -> Edit:
    return lambda s: (s.system.parent / name).write_bytes(b"this is not an image")


def options(*extra: str) -> Edit:
    return lambda s: s.args.extend(extra)


def both(*edits: Edit) -> Edit:
    def edit(s: Submission) -> None:
        for e in edits:
            e(s)
    return edit


# --- the registry: MediScore's template -> minimal input -> MediScore's words -------------------------------------

@dataclass(frozen=True)
class Case:
    group: str        # the group of MediScore's templates that lists it
    template: str     # MediScore's words, verbatim
    validator: str    # which validator is run
    edit: Edit        # applied to the valid submission, which is the control run

    @property
    def id(self) -> str:
        return f"{self.group}|{self.validator}|{self.template}"


ROW_COUNT = ("ERROR: The number of rows in your system output (6) does not match the number of rows in the index "
             "file (5).")
EXCUSED = "has failed validation due to incorrect mask dimensions, but is excused in this system output."
COLUMNS = "ERROR: The number of columns of the system output file must be at least"
TASK_SSD, TASK_DSD, TASK_PROVENANCE = (rename("Manipulation", "Splice"), rename("Splice", "Manipulation"),
                                       rename("ProvenanceFiltering", "Splice"))
NO_MASK_FILE = replace("mask/p1.png", "mask/absent.png")
DSD_P1 = "p1|d1|0.9|mask/p1.png|mask/d1.png|"

CASES = [
    # SSD (MediScore's templates); the DSD and provenance validators share these checks (base class, mask checks)
    Case("SSD", "ERROR: Expected system output", "SSD", delete_system),
    Case("SSD", "ERROR: Expected system output", "DSD", delete_system),
    Case("SSD", "ERROR: Expected system output", "provenance", delete_system),
    Case("SSD", "ERROR: Task", "SSD", TASK_SSD),
    Case("SSD", "ERROR: Task", "DSD", TASK_DSD),
    Case("SSD", "ERROR: Task", "provenance", TASK_PROVENANCE),
    Case("SSD", "unrecognized", "SSD", TASK_SSD),
    Case("SSD", "unrecognized", "SSD", rename("team_NC17", "fo_o_NC17")),  # 8 fields shift TASK (case S2)
    Case("SSD", "unrecognized", "provenance", TASK_PROVENANCE),
    Case("SSD", "ERROR: The required column", "SSD", replace("OutputProbeMaskFileName", "OutputMaskFileName")),
    Case("SSD", "ERROR: The required column", "DSD", replace("OutputDonorMaskFileName", "DonorMask")),
    Case("SSD", "ERROR: The required column", "provenance", replace("ConfidenceScore", "Score")),
    Case("SSD", "ERROR: Your system output contains duplicate rows", "SSD", append("p2|0.1||Y")),
    Case("SSD", ROW_COUNT, "SSD", append("p5|0.3||N")),
    Case("SSD", ROW_COUNT, "DSD", append("p5|d5|0.3|||NonProcessed|NonProcessed")),
    Case("SSD", "ERROR: The Confidence Scores for probes", "SSD", replace("p3|0.5|", "p3|high|")),
    Case("SSD", "ERROR: The Confidence Scores for probes", "SSD-event", replace("Ev_A|0.1|", "Ev_A|high|")),
    Case("SSD", "Probe status", "SSD", replace("|Localization", "|Maybe")),
    Case("SSD", "Probe status", "DSD", replace(DSD_P1 + "Processed|", DSD_P1 + "Maybe|")),
    Case("SSD", "is not recognized.", "SSD", replace("|Localization", "|Maybe")),
    Case("SSD", "is not a png.", "SSD", replace("mask/p1.png", "mask/p1.jpg")),
    Case("SSD", "is not a png.", "DSD", replace("mask/d1.png", "mask/d1.jpg")),
    Case("SSD", "is not a png.", "SSD-camera", replace("mask/c1.png", "mask/c1.jpg")),
    Case("SSD", "ERROR: Expected dimensions", "SSD", mask("mask/p1.png", 5, 5)),
    Case("SSD", "ERROR: Expected dimensions", "DSD", mask("mask/d1.png", 3, 4)),
    Case("SSD", "is not single-channel.", "SSD", mask("mask/p1.png", 3, 4, channels=3)),
    Case("SSD", "is not single-channel.", "DSD", mask("mask/p1.png", 3, 4, channels=3)),
    Case("SSD", COLUMNS, "SSD", commas),
    Case("SSD", COLUMNS, "DSD", commas),
    Case("SSD", COLUMNS, "SSD-event", commas),
    Case("SSD", COLUMNS, "SSD-camera", commas),
    Case("SSD", COLUMNS, "provenance", commas),
    Case("SSD", "Expected mask image", "SSD", NO_MASK_FILE),
    Case("SSD", "Expected mask image", "DSD", NO_MASK_FILE),
    Case("SSD", "Please check the name of the mask image", "SSD", NO_MASK_FILE),
    Case("SSD", "Please check the name of the mask image", "DSD", NO_MASK_FILE),
    # Video
    Case("Video", "ERROR: Interval list", "SSD-video", replace("[[5, 10]]", "[23,46]")),  # case V0's value
    Case("Video", "cannot be read as intervals", "SSD-video", replace("[[5, 10]]", "[23,46]")),
    Case("Video", "ERROR: Interval", "SSD-video", replace("[[5, 10]]", "[[0, 10]]")),
    Case("Video", "is out of bounds.", "SSD-video", replace("[[5, 10]]", "[[5, 31]]")),
    Case("Video", "intersects with", "SSD-video", replace("[[5, 10]]", "[[5, 10], [8, 12]]")),
    Case("Video", "Warning: Interval", "SSD-video", both(replace("[[5, 10]]", "[[5, 31]]"), options("--ignore_eof"))),
    Case("Video", "Warning: Interval", "SSD-video",
         both(replace("[[5, 10]]", "[[5, 10], [10, 12]]"), options("--ignore_overlap"))),
    # Event and camera (the probe validator's key checks; SSD and provenance say the same)
    Case("Event and camera", "does not exist in the index file", "SSD-event", replace("Ev_B", "Foo_bar")),
    Case("Event and camera", "does not exist in the index file", "SSD-camera", replace("c2|cam1", "c2|cam9")),
    Case("Event and camera", "does not exist in the index file", "SSD", replace("p4|", "p9|")),
    Case("Event and camera", "does not exist in the index file", "provenance", replace(PROVENANCE_PROBE + "|", "x|")),
    Case("Event and camera", "ERROR: Probe status", "SSD-event", replace("NonProcessed", "Maybe")),
    Case("Event and camera", "ERROR: Probe status", "SSD-camera", replace("OptOutLocalization", "Maybe")),
    Case("Event and camera", "in system file. Only found in index file.", "SSD-event", drop_line("e1|Ev_B|")),
    Case("Event and camera", "in system file. Only found in index file.", "SSD-camera", drop_line("c2|")),
    Case("Event and camera", "in system file. Only found in index file.", "SSD", drop_line("p4|")),
    Case("Event and camera", "in system file. Only found in index file.", "DSD", drop_line("p4|")),
    Case("Event and camera", "in system file. Only found in index file.", "provenance",
         drop_line(PROVENANCE_PROBE + "|")),
    Case("Event and camera", "Warning: Probe", "SSD-camera", replace("|Processed|", "|FailedValidation|")),
    Case("Event and camera", "Warning: Probe", "SSD-event", replace("NonProcessed", "FailedValidation")),
    Case("Event and camera", EXCUSED, "SSD-camera", replace("|Processed|", "|FailedValidation|")),
    Case("Event and camera", EXCUSED, "SSD-event", replace("NonProcessed", "FailedValidation")),
    # DSD
    Case("DSD", "ERROR: Expected index file", "DSD", delete_index),
    Case("DSD", "ERROR: Expected index file", "SSD", delete_index),
    Case("DSD", "ERROR: Expected index file", "provenance", delete_index),
    Case("DSD", "is unrecognized. The task must be 'splice'.", "DSD", TASK_DSD),
    Case("DSD", "is unrecognized. The task must be 'splice'.", "DSD", rename("team_NC17", "team__NC17")),  # case D1
    Case("DSD", "ERROR: The Confidence Score for probe-donor pair", "DSD", replace("|0.5|", "|high|")),
    Case("DSD", "ERROR: The Confidence Score for probe-donor pair", "DSD", replace("|0.5|", "|nan|")),
    Case("DSD", "Donor status", "DSD", replace(DSD_P1 + "Processed|Processed", DSD_P1 + "Processed|Maybe")),
    Case("DSD", "is not recognized", "DSD", replace(DSD_P1 + "Processed|Processed", DSD_P1 + "Processed|Maybe")),
]


def _lines_with(words: str, output: str) -> list[str]:
    return [line for line in output.splitlines() if words in line]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_validator_prints_mediscore_words(case: Case, tmp_path, capsys):
    submission = BASELINES[case.validator](tmp_path)
    _, control = submission.run(capsys)
    assert not _lines_with(case.template, control), f"printed before the edit, so this case cannot fail:\n{control}"
    case.edit(submission)
    status, output = submission.run(capsys)
    assert _lines_with(case.template, output), f"{case.template!r} is not in the output:\n{output}"
    if case.template.startswith("Warning:"):
        assert status == 0, output  # excused or downgraded by an option: still valid
    elif case.template.startswith("ERROR:"):
        assert status == 1, output


def test_every_baseline_is_valid(tmp_path, capsys):
    for validator, build in BASELINES.items():
        status, output = build(tmp_path / validator).run(capsys)
        assert status == 0, f"{validator}:\n{output}"


# --- the registry against MediScore's templates -----------------------------------------------------------------

def mediscore_templates() -> list[tuple[str, str]]:
    """(group, template) for each substring MediScore's validator unit tests assert, in the data file's order."""
    return [(group, template) for group, templates in MEDISCORE["templates"].items() for template in templates]


def test_registry_covers_every_template():
    listed = mediscore_templates()
    assert len(listed) == 31  # SSD 15, Video 6, Event and camera 5, DSD 5: a changed list is looked at again
    covered = {(case.group, case.template) for case in CASES}
    assert sorted(set(listed) - covered) == []
    assert sorted(covered - set(listed)) == []


def test_the_validator_tests_quote_only_those_templates():
    """The validatorTests cases abbreviate with "…"; each part must be in a template, so the registry covers them."""
    templates = [template for _, template in mediscore_templates()]
    quoted = [phrase for phrases in MEDISCORE["validator_tests"].values() for phrase in phrases]
    assert len(quoted) >= 30
    for phrase in quoted:
        for part in filter(None, (p.strip() for p in phrase.split("…"))):
            assert any(part in template for template in templates), part


def test_every_whole_line_is_around_its_template():
    templates = [template for _, template in mediscore_templates()]
    for template, line in MEDISCORE["whole_lines"].items():
        assert template in templates and line.endswith(template) and line.startswith("ERROR: Expected"), line


# --- MediScore's paraphrased messages ----------------------------------------------------------------------------

PARAPHRASES = {
    # paraphrase of MediScore's message (the data file's [paraphrases]): (validator, edit)
    "expected … file": ("SSD", delete_index),
    "not a csv": ("SSD", rename(".csv", ".tsv")),
    "not enough arguments": ("SSD", rename("_p-base_1", "")),
    "contents not valid": ("SSD", append("p2|0.1||Y")),
    "expected in system file, only found in index": ("SSD-event", drop_line("e1|Ev_B|")),
    "does not exist in the index file": ("SSD", replace("p4|", "p9|")),
    "probe status … not recognized": ("SSD", replace("|Localization", "|Maybe")),
    "cannot be read as intervals": ("SSD-video", replace("[[5, 10]]", "oops")),
    "not a valid interval": ("SSD-video", replace("[[5, 10]]", "[[5, 10, 15]]")),
    "out of bounds": ("SSD-video", replace("[[5, 10]]", "[[0, 10]]")),
    "singular frame contained …": ("SSD-video", replace("[[5, 10]]", "[[5, 10], [7, 7]]")),
    "intersects with": ("SSD-video", replace("[[5, 10]]", "[[5, 10], [9, 12]]")),
    "not a png": ("SSD", replace("mask/p1.png", "mask/p1.bmp")),
    "expected mask image …, check the name": ("SSD", NO_MASK_FILE),
    "cannot be read as a png": ("SSD", garbage("mask/p1.png")),
    "not single-channel": ("SSD-camera", mask("mask/c1.png", 3, 4, channels=3)),
    "expected dimensions … got …": ("SSD-camera", mask("mask/c1.png", 4, 3)),
    "not valid": ("DSD", append("p5|d5|0.3|||NonProcessed|NonProcessed")),
    "pair does not exist in the index": ("DSD", replace("p4|d4|", "p4|d9|")),
    "not a real number": ("DSD", replace("|0.5|", "|inf|")),
}
PARAPHRASES_SET_ASIDE = {
    "team name must not contain underscores": "paraphrase; mfscore says 'The team name must not include underscores' "
                                              "and MediScore's own words are not known",
    "unrecognized task": "MediScore's words for it are the templates 'ERROR: Task' ... "
                         "'is unrecognized. The task must be'",
    "both are required": "paraphrase; mfscore says 'ProbeOptOutPixelValue and DonorOptOutPixelValue are both "
                         "required when one is given'",
    "donor": "MediScore's DSD dimension message says 'donor' for both sides; mfscore names the side on purpose",
    "passed validation": "the valid run is its trigger: test_the_valid_verdict_carries_passed_validation",
}


def _in_order(paraphrase: str) -> re.Pattern:
    words = re.findall(r"[\w-]+", paraphrase.lower())
    return re.compile(r"\b" + r"\b.*\b".join(map(re.escape, words)) + r"\b")


@pytest.mark.parametrize("paraphrase", sorted(PARAPHRASES))
def test_mfscore_carries_the_words_of_mediscores_paraphrase(paraphrase, tmp_path, capsys):
    validator, edit = PARAPHRASES[paraphrase]
    submission = BASELINES[validator](tmp_path)
    pattern = _in_order(paraphrase)
    _, control = submission.run(capsys)
    assert not any(pattern.search(line.lower()) for line in control.splitlines()), control
    edit(submission)
    status, output = submission.run(capsys)
    assert status == 1 and any(pattern.search(line.lower()) for line in output.splitlines()), output


def test_every_paraphrase_is_looked_at():
    quoted = set(MEDISCORE["paraphrases"]["messages"])
    assert quoted == set(PARAPHRASES) | set(PARAPHRASES_SET_ASIDE)
    assert not set(PARAPHRASES) & set(PARAPHRASES_SET_ASIDE)


def test_the_valid_verdict_carries_passed_validation(tmp_path, capsys):
    submission = BASELINES["SSD"](tmp_path)
    assert _lines_with("passed validation", submission.run(capsys)[1])
    append("p2|0.1||Y")(submission)
    assert not _lines_with("passed validation", submission.run(capsys)[1])


# --- whole lines ---------------------------------------------------------------------------------------------------
# Where MediScore's unit tests assert a whole line, not just a substring of it, mfscore prints that line
# exactly (docs/validation.md, "What is checked, in order", step 4): an index key missing from the system output.


def missing_key(key: str) -> str:
    """MediScore's whole line for an index key missing from the system output (the data file's [whole_lines])."""
    return MEDISCORE["whole_lines"]["in system file. Only found in index file."].replace("<id>", key)


WHOLE_LINES = [
    ("SSD", drop_line("p4|"), missing_key("p4")),
    ("SSD-event", drop_line("e1|Ev_B|"), missing_key("e1:Ev_B")),
    ("SSD-camera", drop_line("c2|"), missing_key("c2:cam1")),
    ("SSD-video", drop_line("v2|"), missing_key("v2")),
    ("DSD", drop_line("p4|"), "ERROR: Expected probe-donor pair p4:d4 in system file. Only found in index file."),
    ("provenance", drop_line(PROVENANCE_PROBE + "|"), missing_key(PROVENANCE_PROBE)),
]


@pytest.mark.parametrize("validator, edit, line", WHOLE_LINES, ids=[w[0] for w in WHOLE_LINES])
def test_a_missing_index_key_is_mediscores_whole_line(validator, edit, line, tmp_path, capsys):
    submission = BASELINES[validator](tmp_path)
    edit(submission)
    status, output = submission.run(capsys)
    assert status == 1 and line in output.splitlines(), output


def test_a_missing_camera_probe_names_the_key_mediscore_checks(tmp_path, capsys):
    """MediScore's camera case C0: the system names another TrainCamID for a probe, so the index key
    is missing (one whole line) and the system key is unknown."""
    submission = BASELINES["SSD-camera"](tmp_path)
    replace("c2|cam1|", "c2|cam9|")(submission)
    status, output = submission.run(capsys)
    lines = output.splitlines()
    assert status == 1 and missing_key("c2:cam1") in lines
    assert any(line.startswith("ERROR: Probe c2:cam9 does not exist in the index file.") for line in lines), output
