"""A submitted run's options are untrusted: on the cluster every table they name must lie in the run's inputs."""

from __future__ import annotations

import pytest

from mfscore import tasks
from mfscore.cli.main import build_parser
from mfscore.codec import encode
from mfscore.errors import OptionError
from mfscore.services.common.planning import run_options
from mfscore.services.wire import runs_pb2
from mfscore.tasks.base import relocated


def _spec(name: str, arguments: list[str]) -> runs_pb2.RunSpec:
    """The RunSpec ``mfscore submit`` would send for ``mfscore <name> ARGS`` (paths as keys under the upload)."""
    args = build_parser().parse_args([name, *arguments])
    options = args.task_options(args).options
    inputs = tasks.get(name).inputs(options)
    return runs_pb2.RunSpec(task=name, options=encode(relocated(options, inputs, {n: n for n in inputs.roots})))


MASK = ["--refDir", "data", "-r", "ref.csv", "-x", "index.csv", "-s", "data/system.csv", "-oR", "out/x"]


def test_options_move_onto_the_fetched_tables(tmp_path):
    task, options = run_options(_spec("mask", MASK), str(tmp_path))
    assert task.name == "mask"
    assert options.ref_dir == str(tmp_path / "ref") and options.system == str(tmp_path / "ref" / "system.csv")


@pytest.mark.parametrize("flag, value", [("-r", "../../../etc/passwd"), ("-x", "../../secret.csv")])
def test_a_table_named_outside_the_inputs_is_refused(tmp_path, flag, value):
    arguments = list(MASK)
    arguments[arguments.index(flag) + 1] = value
    with pytest.raises(OptionError, match="leaves the run's uploaded inputs"):
        run_options(_spec("mask", arguments), str(tmp_path))
