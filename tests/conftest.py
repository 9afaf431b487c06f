import sys
from pathlib import Path

# Runs draw their figures in the test process: with matplotlib loaded, no run starts a figure worker
# (tests/unit/test_figure_process.py and tests/cli/test_detection_imports.py test the worker itself).
import matplotlib  # noqa: F401

# Test helper packages (conformance/, oracles) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The conformance scoreboard, printed at the end of a run that ran conformance tests (by the pytest-xdist controller
# too, from its workers' counts).
pytest_plugins = ["conformance.scoreboard"]
