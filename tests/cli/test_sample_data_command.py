"""``mfscore sample-data TASK DIR`` writes a task's sample data and prints a command that scores it as printed.

The command runs through a parser built here from ``mfscore.cli.sample_data.add_parser`` (what ``mfscore``'s own
parser does once the command is registered), and the printed line is split as a shell would and run by
``mfscore.cli.main``. Making the parser imports no numpy or pandas: ``mfscore --help`` does not get slower.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

import pytest

from mfscore import tasks
from mfscore.cli import sample_data
from mfscore.cli.main import main
from mfscore.errors import OptionError


def _command(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mfscore")
    sample_data.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sample-data", *arguments])
    return args.run(args)


@pytest.mark.parametrize("task", tasks.names())
def test_the_printed_command_scores_the_written_data(task, tmp_path, capsys):
    data = tmp_path / "data"
    assert _command([task, str(data)]) == 0
    printed = capsys.readouterr()
    assert printed.err == f"mfscore: wrote the {task} sample data under {data}; score it with:\n"
    words = shlex.split(printed.out)
    assert printed.out.count("\n") == 1 and words[:2] == ["mfscore", task]
    assert any(data.iterdir()) and not (data / "out").exists()
    assert main([*words[1:], "--quiet"]) == 0, capsys.readouterr().err
    assert list((data / "out").rglob("*results.json"))


def test_out_names_where_the_reports_go(tmp_path, capsys):
    assert _command(["mask", str(tmp_path / "data"), "--out", str(tmp_path / "reports")]) == 0
    words = shlex.split(capsys.readouterr().out)
    assert words[-2:] == ["-oR", str(tmp_path / "reports" / "run")]


def test_a_directory_with_files_is_refused_and_left_alone(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OptionError) as refused:
        _command(["detection", str(tmp_path)])
    assert str(refused.value) == f"{tmp_path}: not an empty directory: name a new or empty one for the sample data"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and capsys.readouterr().out == ""
    with pytest.raises(SystemExit):
        _command(["no-such-task", str(tmp_path / "new")])
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("word", ["Purpose==['add']", "a b", "it's $HOME", 'say "hi"', "plain", "", "x'y\\z", "!'"])
def test_printed_words_split_back_as_they_were(word):
    assert shlex.split(sample_data._quoted(word)) == [word]


def test_double_quotes_where_they_read_better():
    assert sample_data._quoted("Purpose==['add']") == "\"Purpose==['add']\""


def test_making_the_parser_imports_nothing_heavy():
    code = ("import argparse, sys; from mfscore.cli import sample_data; "
            "sample_data.add_parser(argparse.ArgumentParser().add_subparsers()); "
            "print(sorted(m for m in ('numpy', 'pandas', 'h5py', 'cv2', 'mfscore.sample_data') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
