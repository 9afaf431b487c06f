"""Start-up of the ``mfscore`` command, as a ratio to ``python -c "import numpy"`` measured in the same run.

Every figure is a whole command (interpreter start, imports, argument parsing, the help text), run
in alternation with the floor, the median of ``--repeat`` runs each. The commands are every
sub-command the parser has: the registered tasks, the validators and the cluster commands. Goal
(issue: one task protocol): ``--version``, ``--help`` and ``<command> --help`` within 1.5x of the floor.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mfscore.cli.main import command_names

PYTHON = sys.executable
MFSCORE = str(Path(PYTHON).with_name("mfscore"))
FLOOR = [PYTHON, "-c", "import numpy"]
COMMANDS = {
    "--version": [MFSCORE, "--version"],
    "--help": [MFSCORE, "--help"],
    # every sub-command: the registered tasks', the validators', the cluster's (mfscore.cli.main.command_names)
    **{f"{name} --help": [MFSCORE, name, "--help"] for name in command_names()},
}


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    floor, times = [], {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, command in COMMANDS.items():
            floor.append(seconds(FLOOR))
            times[name].append(seconds(command))
    base = statistics.median(floor)
    print(f"floor: python -c 'import numpy'  {base * 1000:6.0f} ms (median of {len(floor)})")
    worst = 0.0
    for name, runs in times.items():
        ratio = statistics.median(runs) / base
        worst = max(worst, ratio)
        print(f"mfscore {name:28s} {statistics.median(runs) * 1000:6.0f} ms  {ratio:4.2f}x the floor")
    print(f"worst: {worst:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
