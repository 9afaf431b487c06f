"""The cluster commands on a base install (no ``cluster`` extra): one sentence saying what to install.

The cluster commands come through the ``mfscore.commands`` entry point (``mfscore/cli/main.py``), which
offers them only when the cluster libraries import. Two ways a base install looks, simulated in process:
the entry point is there but ``grpc`` is not (``pip install mfscore``), or there is no entry point at all.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys

import pytest

from mfscore.cli.main import CLUSTER_COMMANDS, command_names, main

EXTRAS = {"serve": "cluster", "submit": "cluster", "report": "cluster", "cancel": "cluster", "delete": "cluster",
          "dataset": "cluster", "campaign": "cluster", "dead-letters": "cluster",
          "local-cluster": "cluster,local"}


@pytest.fixture(params=["without grpc", "without the entry point"])
def base_install(request, monkeypatch):
    if request.param == "without grpc":
        monkeypatch.setitem(sys.modules, "grpc", None)  # find_spec("grpc") is None: the extra is not installed
    else:
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda **selection: [])
    return request.param


@pytest.mark.parametrize("argv", [["submit", "mask", "--refDir", "r"], ["serve", "aggregator"], ["report", "--list"],
                                  ["local-cluster", "up"], ["submit"], ["cancel", "abc"], ["delete", "abc"],
                                  ["dataset", "list"]])
def test_a_cluster_command_says_what_to_install(base_install, argv, capsys):
    status = main(argv)
    captured = capsys.readouterr()
    command = argv[0]
    assert status == 2 and captured.out == ""
    assert captured.err == (f"mfscore: error: 'mfscore {command}' is part of the distributed mode, which this "
                            f"installation lacks: pip install 'mfscore[{EXTRAS[command]}]'\n")


def test_the_help_says_it_too(base_install, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    out = re.sub(r"-\n\s*", "-", capsys.readouterr().out)  # argparse may wrap after a hyphen (local-\ncluster)
    out = " ".join(out.split())
    assert exit.value.code == 0
    assert "The distributed mode (serve, submit, report, cancel, delete, dataset, local-cluster) is not installed: pip " \
           "install 'mfscore[cluster]'." in out
    assert not set(CLUSTER_COMMANDS) & set(command_names())


def test_an_unknown_command_is_still_argparse_s(base_install, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["submitt"])
    assert exit.value.code == 2 and "invalid choice: 'submitt'" in capsys.readouterr().err


def test_with_the_extra_the_commands_are_there(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0 and "is not installed" not in capsys.readouterr().out


def test_the_list_is_what_the_entry_point_adds(monkeypatch):
    """``CLUSTER_COMMANDS`` names exactly the commands the extra adds, with the extras they need."""
    assert CLUSTER_COMMANDS == EXTRAS
    with_extra = set(command_names())
    monkeypatch.setitem(sys.modules, "grpc", None)
    assert with_extra - set(command_names()) == set(CLUSTER_COMMANDS)
