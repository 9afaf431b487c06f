"""The validator never passes a submission the scorers refuse, and passes the ones they score.

Each corruption of a generated submission is given to ``mfscore validate`` and to the scorers
(``mfscore mask`` and ``mfscore detection``); whenever a scorer exits 1, the validator must too.
"""

from __future__ import annotations

import pytest

from mfscore.cli.main import main
from mfscore.sample_data.masks import generate_mask_dataset


def _lines(path):
    return path.read_text().splitlines()


CORRUPTIONS = {
    "none": lambda lines: lines,
    "score text": lambda lines: [lines[0], lines[1].replace("|0.", "|zero.", 1), *lines[2:]],
    "score nan": lambda lines: [lines[0], "|".join(v if i != 1 else "nan" for i, v in enumerate(lines[1].split("|"))),
                                *lines[2:]],
    "status": lambda lines: [lines[0], lines[1].replace("Processed", "Done"), *lines[2:]],
    "pixel value": lambda lines: [lines[0], lines[1] + "300", *lines[2:]],
    "repeated trial": lambda lines: [*lines, lines[1].replace("|0.", "|1.", 1)],
    "missing trial": lambda lines: lines[:-1],
    "unknown trial": lambda lines: [*lines, "zzz" + lines[1][lines[1].index("|"):]],
    "extra field": lambda lines: [lines[0], lines[1] + "|x", *lines[2:]],
    "escaping mask": lambda lines: [lines[0], lines[1].replace("mask/", "../../../"), *lines[2:]],
    "no score column": lambda lines: [line.split("|", 2)[0] + "|" + line.split("|", 2)[2] for line in lines],
    "comma separated": lambda lines: [line.replace("|", ",") for line in lines],
}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_validator_refuses_whatever_a_scorer_refuses(tmp_path, capsys, corruption):
    data = generate_mask_dataset(tmp_path / "d", n_probes=5, width=24, height=16, non_target_share=0.0)
    system = data.directory / data.system
    system.write_text("\n".join(CORRUPTIONS[corruption](_lines(system))) + "\n")
    common = ["--refDir", str(data.directory), "-r", data.reference, "-x", data.index]
    scorers = {
        "mask": main(["mask", *common, "-s", str(system), "-oR", str(tmp_path / "m" / "run")]),
        "detection": main(["detection", *common, "--sysDir", str(system.parent), "-s", system.name,
                           "-o", str(tmp_path / "det" / "run"), "--noPlot"]),
    }
    validator = main(["validate", "-vt", "SSD", "-s", str(system), "-x", str(data.directory / data.index)])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    if corruption == "none":
        assert validator == 0 and scorers == {"mask": 0, "detection": 0}
    else:
        assert validator == 1, f"the validator passed a submission ({corruption}); scorers: {scorers}"
