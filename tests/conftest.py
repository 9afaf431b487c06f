import sys
from pathlib import Path

# Test helper packages (conformance/, oracles) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))
