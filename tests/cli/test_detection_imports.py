"""A detection run imports what it uses when it uses it: without figures, no matplotlib or scipy
(about a second of start-up on every such run)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mfscore.sample_data.detection import generate_detection_dataset

PROBE = """
import json, sys
from mfscore.cli.main import main
status = main(sys.argv[1:])
print(json.dumps([status, sorted(m for m in ("matplotlib", "scipy") if m in sys.modules)]))
"""


@pytest.mark.parametrize("flags, heavy", [(["--noPlot"], []), (["--noPlot", "--ci", "--semafor"], ["scipy"]),
                                          ([], ["matplotlib", "scipy"])])
def test_modules_a_detection_run_imports(tmp_path, flags, heavy):
    data = generate_detection_dataset(tmp_path / "data", 200)
    arguments = ["detection", "--refDir", str(data.directory), "-r", data.reference, "-x", data.index,
                 "--sysDir", str(data.directory), "-s", data.system, "-o", str(tmp_path / "out" / "run"), *flags]
    done = subprocess.run([sys.executable, "-c", PROBE, *arguments], capture_output=True, text=True, check=True)
    status, imported = json.loads(done.stdout.splitlines()[-1])
    assert status == 0 and imported == heavy, done.stderr
    assert (tmp_path / "out" / "run_all_ROC.png").exists() == ("matplotlib" in heavy)
