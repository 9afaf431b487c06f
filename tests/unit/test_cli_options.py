"""A command's flags are made from its options types' declarations (``mfscore.cli.arguments.add_options``): every
field with a flag is a flag of its command, with the field's default, and a default changed in the core is the
default the command takes and its ``--help`` shows."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field

import pytest

import mfscore.detection.options
import mfscore.tasks.detection_options
from mfscore import tasks
from mfscore.cli.arguments import add_options, dest, numbers, options_from
from mfscore.cli.main import build_parser
from mfscore.detection.options import PlotOptions
from mfscore.options import Check, fields_of, one_of, option, spellings, validate, within
from mfscore.tasks.detection_options import Options as DetectionTaskOptions

# The fields whose flag the command defaults otherwise than the field (MediScore's command defaults, or a flag the
# command reads into the field itself), by command and the field's path from the task's options type.
COMMAND_DEFAULTS = {
    ("detection", "kind"): "manipulation",
    ("detection", "ref_dir"): ".",
    ("mask", "index"): "indexes/NC2016-manipulation-index.csv",
    ("mask", "visuals"): None,                                  # -html decides when --visuals is not given
    ("mask", "report.task"): "manipulation",                    # -t, one flag for the scoring's and the report's
    ("video-spatial", "query"): None,                           # _parameters.json records the flags as given
    ("video-spatial", "query_manipulation"): None,
    ("video-spatial", "sbin"): -10,                             # -10 for none, as the mask scorer's --sbin
    ("video-spatial", "scoring.rules.pixel_value"): -1,         # -1 for none
    ("video-spatial", "scoring.temporal_gt_only"): None,        # MediScore's optional value, any value meaning yes
    ("video-spatial", "scoring.temporal_only"): None,
    ("video-temporal", "dump"): "df_scores_probes.csv",         # the file name; -d writes it
    ("provenance-graph", "thumbnail_note"): None,               # -T DIR: a directory, noted and ignored
}


def _flagged(kind: type, prefix: str = ""):
    """(path, field) of every field with a flag of the options type ``kind`` and the types nested in it."""
    for f, hint in fields_of(kind):
        nested = hint if dataclasses.is_dataclass(hint) else None
        if nested is not None:
            yield from _flagged(nested, f"{prefix}{f.name}.")
        elif spellings(f):
            yield prefix + f.name, f


def _parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser([name])
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


@pytest.mark.parametrize("name", tasks.names())
def test_every_field_with_a_flag_is_a_flag_of_its_command_with_the_field_s_default(name):
    parser = _parser(name)
    for path, f in _flagged(tasks.get(name).options_type):
        flags = spellings(f)
        actions = [parser._option_string_actions.get(spelling) for spelling in flags]
        assert None not in actions, f"mfscore {name}: {path} declares {f.metadata['flag']}, not all of them flags"
        action = actions[0]
        if any(other is not action for other in actions) or action.dest != dest(flags):
            continue  # one field of several flags (-q/-qm/-qp), or a flag the command reads otherwise (-c/--collars)
        if (name, path) in COMMAND_DEFAULTS:
            assert action.default == COMMAND_DEFAULTS[name, path], (name, path, action.default)
        elif f.default is dataclasses.MISSING:
            assert action.required, (name, path)
        else:
            assert action.default == f.default, (name, path, action.default, f.default)


@pytest.mark.parametrize("name", tasks.names())
def test_the_command_s_own_defaults_are_still_its_own(name):
    """Each listed default differs from its field's (else it is not the command's own, and the list is stale)."""
    options_type = tasks.get(name).options_type
    declared = dict(_flagged(options_type))
    for command, path in COMMAND_DEFAULTS:
        if command == name:
            assert path in declared, (name, path)
            assert COMMAND_DEFAULTS[name, path] != declared[path].default, (name, path)


def test_a_default_changed_in_the_core_changes_the_command_and_its_help(monkeypatch):
    from mfscore.detection.options import DetectionOptions

    far_stop = next(f for f, _ in fields_of(DetectionOptions) if f.name == "far_stop")
    assert "FAR for AUC@FAR and CDR@FAR (default 0.1)" in " ".join(_parser("detection").format_help().split())
    monkeypatch.setattr(far_stop, "default", 0.25)
    parser = _parser("detection")
    assert "FAR for AUC@FAR and CDR@FAR (default 0.25)" in " ".join(parser.format_help().split())
    args = build_parser(["detection"]).parse_args(["detection", "-r", "r.csv", "-x", "x.csv", "-s", "s.csv"])
    assert args.task_options(args).options.scoring.far_stop == 0.25


@dataclass(frozen=True)
class NewPlotOptions(PlotOptions):
    """The detection task's plot options with one more option, declared as a new option is."""

    line_width: float = field(default=1.5, metadata=option(
        "--lineWidth", within(0.5, 5.0, what="a line width"), help="ROC line width (default {default})"))


@dataclass(frozen=True)
class NewDetectionOptions(DetectionTaskOptions):
    plot: NewPlotOptions = NewPlotOptions()


def test_an_option_declared_in_the_core_is_a_flag_of_its_command_with_nothing_written_in_the_cli(monkeypatch):
    assert "--lineWidth" not in _parser("detection").format_help()
    monkeypatch.setattr(mfscore.detection.options, "PlotOptions", NewPlotOptions)
    monkeypatch.setattr(mfscore.tasks.detection_options, "Options", NewDetectionOptions)
    assert "ROC line width (default 1.5)" in " ".join(_parser("detection").format_help().split())
    parser = build_parser(["detection"])
    required = ["detection", "-r", "r.csv", "-x", "x.csv", "-s", "s.csv"]
    args = parser.parse_args([*required, "--lineWidth", "2.5"])
    assert args.task_options(args).options.plot.line_width == 2.5
    args = parser.parse_args(required)
    assert args.task_options(args).options.plot.line_width == 1.5
    with pytest.raises(SystemExit):
        parser.parse_args([*required, "--lineWidth", "9"])  # its check, as any declared option's: a usage error


@dataclass(frozen=True)
class Toy:
    """A throwaway options type: one field of each kind a flag is made of."""

    path: str = field(metadata=option("-i/--in-file", path=True, help="the input"))
    level: float = field(default=0.5, metadata=option(
        "--level", within(0.0, 1.0, what="the level"), help="a level (default {default})"))
    kind: str = field(default="a", metadata=option("-k/--kind", one_of(("a", "b"), what="the kind")))
    rates: tuple[float, ...] = field(default=(0.1, 0.2), metadata=option(
        "--rates", help="comma-separated rates (default {default})"))
    names: tuple[str, ...] = field(default=(), metadata=option("--names", metavar="NAME"))
    quiet: bool = field(default=False, metadata=option("--quiet"))
    plots: bool = field(default=True, metadata=option("--noPlots"))
    count: int = field(default=3, metadata=option("--count", Check(
        lambda value: None if value > 0 else "the count must be positive", bad=(0,)), help="(default {default:,})"))

    def __post_init__(self):
        validate(self)


def _toy(**defaults) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy")
    add_options(parser, Toy, *(f.name for f in dataclasses.fields(Toy)), parse={"rates": numbers},
                unchecked=("count",), defaults=defaults)
    return parser


def test_a_toy_s_flags_are_made_from_its_declarations(capsys):
    parser = _toy()
    assert options_from(Toy, parser.parse_args(["-i", "x"])) == Toy(path="x")
    made = options_from(Toy, parser.parse_args(["--in-file", "x", "--level", "0.25", "-k", "b", "--rates", "0.3,0.4",
                                                "--names", "m", "n", "--quiet", "--noPlots", "--count", "5"]))
    assert made == Toy("x", 0.25, "b", (0.3, 0.4), ("m", "n"), True, False, 5)
    text = " ".join(parser.format_help().split())
    for shown in ("-i IN_FILE, --in-file IN_FILE the input", "--level LEVEL a level (default 0.5)", "-k {a,b}",
                  "--rates RATES comma-separated rates (default 0.1,0.2)", "--names NAME [NAME ...]",
                  "--count COUNT (default 3)"):
        assert shown in text, (shown, text)
    with pytest.raises(SystemExit) as usage:
        parser.parse_args(["-i", "x", "--level", "2"])
    assert usage.value.code == 2 and "argument --level: the level is in [0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["--level", "0.1"])  # -i is required: its field has no default
    assert parser.parse_args(["-i", "x", "--count", "0"]).count == 0  # unchecked: refused as the options are made


def test_a_toy_s_changed_default_is_its_flag_s_default_and_help():
    before = " ".join(_toy().format_help().split())
    level, count = (next(f for f, _ in fields_of(Toy) if f.name == name) for name in ("level", "count"))
    saved = level.default, count.default
    try:
        level.default, count.default = 0.75, 12345
        after = " ".join(_toy().format_help().split())
        assert _toy().parse_args(["-i", "x"]).level == 0.75
    finally:
        level.default, count.default = saved
    assert "(default 0.5)" in before and "(default 0.75)" in after and "(default 12,345)" in after
    assert "(default 0.9)" in " ".join(_toy(level=0.9).format_help().split())  # a command's own default
