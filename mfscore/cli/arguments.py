"""The commands' flags made from the options types' declarations, and the argument types they share.

A task's options type declares each option once (``mfscore.options.option``): its spellings, help and check, with
the field's type and default. ``add_options`` makes those fields' flags; ``options_from`` makes the options type of
the parsed flags. Argparse parses; the options types check the values (``mfscore.options``), wherever the options
are made. A command's module adds by hand only what is no option: where the reports go, how they are shown,
flags MediScore accepts and ignores, and flags that make one field of several (``--sysDir`` with ``-s``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from mfscore.cli.documentation import see
from mfscore.errors import OptionError
from mfscore.limits import DEFAULT_MAX_FINDINGS, HARD_MAX_FINDINGS
from mfscore.options import check_field, conforms, fields_of, spellings


@dataclass(frozen=True)
class TaskRun:
    """A command's flags as a run of its task: the options, where the reports go, how many processes score
    (None: the runner's default, see ``score_plan``), and whether to close with MediScore's ``-v`` line
    (``done in N s; Ending``)."""

    options: object
    out_root: str
    processes: int | None = None
    verbose: bool = False


def number(text: str) -> float:
    """An argparse type for a number."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def numbers(text: str) -> tuple[float, ...]:
    """An argparse type for comma-separated numbers."""
    return tuple(number(part) for part in text.split(",") if part.strip())


def integer(text: str) -> int:
    """An argparse type for an integer."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


class checked:  # noqa: N801  (used as an argparse type, like int)
    """An argparse type: the text ``parse``d, then refused as the options type refuses the value of its field.

    ``field`` is ``"module:Class.field"``, imported when the flag is parsed (never for ``--help``). The
    range lives in the options type alone (``mfscore.options``); this keeps a flag argparse refused before
    the options type declared its check a usage error (status 2, the reason after the flag).
    """

    def __init__(self, parse: Callable[[str], object], field: str):
        self.parse = parse
        self.field = field

    def resolve(self) -> tuple[type, str]:
        module, _, qualified = self.field.partition(":")
        kind, _, name = qualified.rpartition(".")
        return getattr(importlib.import_module(module), kind), name

    def __call__(self, text: str):
        value = self.parse(text)
        try:
            check_field(*self.resolve(), value)
        except OptionError as error:
            raise argparse.ArgumentTypeError(error.reason) from None
        return value

    def __repr__(self) -> str:  # argparse names the type in some messages
        return getattr(self.parse, "__name__", "value")


PARSED = {int: integer, float: number}  # what a value checked as it is parsed is read with (its own messages)


def dest(flag_spellings: tuple[str, ...]) -> str:
    """Where argparse keeps a flag's value: its first long spelling (else its first), as argparse names it."""
    long = [spelling for spelling in flag_spellings if spelling.startswith("--")]
    return (long or list(flag_spellings))[0].lstrip("-").replace("-", "_")


def _shown(default) -> object:
    """A default as a help text shows it: a list of values as the comma-separated text it is given as."""
    return ",".join(map(str, default)) if isinstance(default, tuple) else default


def _plain(hint) -> type:
    """The type of an optional field's values (``int`` of ``int | None``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return next(arm for arm in typing.get_args(hint) if arm is not type(None))
    return hint


def add_options(container, kind: type, *names: str, defaults: Mapping[str, object] | None = None,
                helps: Mapping[str, str] | None = None, parse: Mapping[str, Callable] | None = None,
                unchecked: Collection[str] = ()) -> None:
    """The flags of the fields ``names`` of the options type ``kind``, added in that order to ``container`` (a parser,
    or a group of one), each as its field declares it (``mfscore.options.option``).

    A flag keeps its value where argparse would (``dest``), so that one flag may give its value to fields of several
    types (``options_from``). Its default is the field's, or the command's own in ``defaults`` (a field without
    either is a required flag); ``{default}`` in its help is that default. ``helps`` gives the command's own help
    of a field several commands share; ``parse``, how a value is read instead of as its field's type (a tuple from
    one comma-separated argument, say). A bool field's flag switches it from its default; a tuple field's takes one
    value or more; a ``one_of`` check's values are the flag's choices. Any other check is applied as the value is
    parsed (``checked``: a refused value is a usage error), but on a flag taking several values and on the fields in
    ``unchecked``, whose refused values the options type reports as the options are made (exit status 1).
    """
    defaults, helps, parse = defaults or {}, helps or {}, parse or {}
    declared = {field.name: (field, hint) for field, hint in fields_of(kind)}
    for name in names:
        field, hint = declared[name]
        default = defaults.get(name, field.default)
        arguments = {"dest": dest(spellings(field)),
                     **_value(kind, field, hint, default, parse.get(name), checks=name not in unchecked)}
        if field.metadata.get("metavar"):
            arguments["metavar"] = field.metadata["metavar"]
        text = helps.get(name, field.metadata.get("help"))
        if text is not None:
            text = text.format(default=_shown(default))
            if field.metadata.get("page"):
                text += f" ({see(container, field.metadata['page'])})"
            arguments["help"] = text
        container.add_argument(*spellings(field), **arguments)


def add_other_options(parser, kind: type) -> None:
    """The flags of every field of the options type ``kind``, and of the options types nested in it, that the command
    has not added yet (``add_options``), in declaration order: a command ends with it, so an option declared in the
    core is a flag of its command with nothing written here."""
    present = parser._option_string_actions
    for field, hint in fields_of(kind):
        if dataclasses.is_dataclass(hint):
            add_other_options(parser, hint)
        elif spellings(field) and not any(spelling in present for spelling in spellings(field)):
            add_options(parser, kind, field.name)


def _value(kind: type, field: dataclasses.Field, hint, default, read: Callable | None, *, checks: bool) -> dict:
    """How the flag of ``field`` takes its value (``add_argument``'s keywords), as ``add_options`` says."""
    value_type = _plain(hint)
    if value_type is bool:
        return {"action": "store_false" if default is True else "store_true"}
    arguments: dict = {"required": True} if default is dataclasses.MISSING else {"default": default}
    if read is None and typing.get_origin(value_type) is tuple:
        arguments["nargs"] = "+"
        value_type = typing.get_args(value_type)[0]
    check = field.metadata.get("check")
    if check is not None and check.choices is not None:
        arguments["choices"] = check.choices
    elif check is not None and checks and "nargs" not in arguments:
        read = checked(read or PARSED.get(value_type, value_type),
                       f"{kind.__module__}:{kind.__qualname__}.{field.name}")
    read = read or value_type
    if read is not str:
        arguments["type"] = read
    return arguments


def options_from(kind: type, args: argparse.Namespace, **overrides):
    """The options ``kind`` of the parsed ``args``: each field with a flag takes its flag's value (a list as a tuple,
    a path as text; a flag left unset, None, leaves a field that cannot be None at its default), ``overrides`` the
    fields made otherwise (a nested options type, a field made of several flags)."""
    values = {}
    for field, hint in fields_of(kind):
        flags = spellings(field)
        if field.name in overrides or not flags or not hasattr(args, dest(flags)):
            continue
        value = getattr(args, dest(flags))
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        if value is not None or conforms(None, hint):
            values[field.name] = value
    return kind(**values, **overrides)


def add_max_findings_argument(p: argparse.ArgumentParser) -> None:
    """``--max-findings``: how many findings either validator's report lists (the others are counted)."""
    p.add_argument("--max-findings", type=int, default=DEFAULT_MAX_FINDINGS,
                   help=f"findings listed; the others are counted (default {DEFAULT_MAX_FINDINGS}, at most "
                        f"{HARD_MAX_FINDINGS})")


def add_results_arguments(p: argparse.ArgumentParser) -> None:
    """The flags every scorer has for how its results are shown (docs/results.md)."""
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true",
                       help="print the results and the run's provenance as JSON on stdout (every other line goes "
                            "to stderr)")
    shown.add_argument("--quiet", action="store_true", help="no summary table and no progress bar")
    p.add_argument("--html", dest="html_page", action="store_true",
                   help="after the run, write one self-contained HTML page of it beside the results "
                        "(<prefix>_mfscore_report.html, as 'mfscore report-html' does; MediScore's -html, -H and -R "
                        "keep their meaning)")
