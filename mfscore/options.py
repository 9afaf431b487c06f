"""Options checked where they are made: each field declares its command-line flag and its check once.

An options dataclass (a task's ``options_type`` and every dataclass inside it) declares a field as
``far_stop: float = field(default=0.1, metadata=option("--farStop", within(0.0, 1.0, what="a FAR")))``
and calls ``validate(self)`` first thing in ``__post_init__``. Whoever makes the value (the command line,
the cluster decoding a submitted run, a Python caller), its fields are checked against their annotated
types and their declared checks, and a refused value raises ``OptionError`` naming the option by its
field name and its flag::

    --farStop 5.0: a FAR is in [0, 1] (option far_stop)

``from_json(kind, data)`` makes an options value from canonical JSON (``mfscore.codec``), refusing bad
JSON, a field of the wrong JSON type, an unknown or a missing field with the same error, before the
type's own checks run. ``check_field`` applies one field's checks to one value (the command line uses
it to keep a refused flag a usage error). A check carries ``bad``: values it refuses, which the
registry tests feed to every task's options type.

A resource option (a pixel, byte or kernel-size limit) also names the server maximum it counts against,
``option("--max-pixels", within(1, HARD_MAX_PIXELS), limit="max_pixels")``: ``check_limits(options,
maxima)`` refuses a value above the operator's maximum, so a client may lower a limit but never raise it.

An option that chooses trials by the reference's columns (a query, a query partition, a manipulation query, an
index filter) is declared ``option("-q/--query", valid_queries(), selects=True)``: ``mfscore.release`` names the
ones a run sets, which a cluster refuses where a submitter receives aggregates only (an aggregate over one chosen
probe is that probe's score).

The declaration is all the command line needs to make the flag (``mfscore.cli.arguments.add_options``): its
spellings (``"-r/--inRef"``), its ``help`` (where ``{default}`` stands for the default the command shows), a
``metavar``, the documentation ``page`` the help points at, the choices of a ``one_of`` check; the field's type
and default say the rest (a flag of a bool field switches it from its default, a tuple takes several values).

Nothing here imports more than the standard library (the command line imports it before parsing).
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import os
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from mfscore.errors import MfscoreError, OptionError, QueryOptionError

MAX_SHOWN = 80  # characters of a refused value quoted in a message


def option(flag: str | None = None, check: Check | None = None, *, path: bool = False, limit: str | None = None,
           selects: bool = False, help: str | None = None, metavar: str | None = None,
           page: str | None = None) -> dict:
    """A field's metadata: its command-line flag (its spellings, '/'-separated, as messages name it), its check,
    whether it is an input path (``Task.inputs``), the server maximum it counts against (``limit``, a key of
    ``check_limits``' maxima), whether it chooses trials by the reference's columns (``selects``), and the flag's
    ``help``, ``metavar`` and documentation ``page``."""
    metadata: dict = {"flag": flag, "check": check}
    if path:
        metadata["path"] = True
    if selects:
        metadata["selects"] = True
    if limit:
        metadata["limit"] = limit
    for key, value in (("help", help), ("metavar", metavar), ("page", page)):
        if value is not None:
            metadata[key] = value
    return metadata


def spellings(field: dataclasses.Field) -> tuple[str, ...]:
    """The command-line spellings of the option ``field`` (``("-r", "--inRef")``), none without a flag."""
    flag = field.metadata.get("flag")
    return tuple(flag.split("/")) if flag else ()


class Check:
    """What a field's value must be besides its type: ``refuse(value)`` says why not, or None."""

    def __init__(self, refuse: Callable[[Any], str | None], *, bad: tuple = (), error: type = OptionError,
                 schema: dict | None = None, choices: tuple | None = None):
        self._refuse = refuse
        self.bad = bad      # values refused, for the tests
        self.error = error  # what a refused value raises: OptionError or a subclass
        self.schema = schema or {}  # the check as JSON Schema keywords, where it can say it (mfscore.options_schema)
        self.choices = choices  # every value accepted, when they can be listed (the command line offers them)

    def problem(self, value) -> tuple[Any, str] | None:
        """(the value refused, why), or None."""
        reason = self._refuse(value)
        return None if reason is None else (value, reason)


class _Each(Check):
    def __init__(self, check: Check):
        super().__init__(lambda value: None, bad=tuple((bad,) for bad in check.bad), error=check.error,
                         schema={"items": check.schema} if check.schema else None, choices=check.choices)
        self.check = check

    def problem(self, value) -> tuple[Any, str] | None:
        for item in value:
            found = self.check.problem(item)
            if found is not None:
                return found
        return None


def each(check: Check) -> Check:
    """``check`` on every item of a tuple; the message quotes the item refused."""
    return _Each(check)


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def within(low: float, high: float, *, inclusive: bool = True, what: str = "the value", spare=None) -> Check:
    """In [low, high] (or (low, high)); ``spare``: one more value accepted (an 'off' value such as -10)."""
    brackets = "[]" if inclusive else "()"
    reason = f"{what} is in {brackets[0]}{_number(low)}, {_number(high)}{brackets[1]}"
    if spare is not None:
        reason += f" (or {spare} for none)"

    def refuse(value):
        if spare is not None and value == spare:
            return None
        inside = low <= value <= high if inclusive else low < value < high
        return None if inside else reason

    step = 1 if isinstance(low, int) and isinstance(high, int) else 0.5
    below = low - step if low - step != spare else low - 2 * step
    bounds = {"minimum": low, "maximum": high} if inclusive else {"exclusiveMinimum": low, "exclusiveMaximum": high}
    schema = bounds if spare is None else {"anyOf": [bounds, {"const": spare}]}
    return Check(refuse, bad=(high + step, below) if inclusive else (high, low), schema=schema)


def at_least(low: int, *, what: str = "the value") -> Check:
    return Check(lambda value: None if value >= low else f"{what} must be at least {low}", bad=(low - 1,),
                 schema={"minimum": low})


def one_of(choices, *, what: str = "the value") -> Check:
    choices = tuple(choices)
    shown = ", ".join(str(c) for c in choices)
    numbers_only = [c for c in choices if isinstance(c, int) and not isinstance(c, bool)]
    bad = max(numbers_only) + 1 if numbers_only and len(numbers_only) == len(choices) else "no-such-choice"
    return Check(lambda value: None if value in choices else f"{what} is one of {shown}", bad=(bad,),
                 schema={"enum": list(choices)}, choices=choices)


def odd_or_zero(most: int, *, what: str = "a kernel size") -> Check:
    """An odd integer up to ``most``, or 0."""
    return Check(lambda value: None if 0 <= value <= most and (value == 0 or value % 2 == 1)
                 else f"{what} is an odd integer up to {most} (or 0 to disable), not {value}",
                 bad=(4, -3, most + 2 if most % 2 else most + 1),
                 schema={"anyOf": [{"const": 0}, {"minimum": 1, "maximum": most, "not": {"multipleOf": 2}}]})


def file_name(*, what: str = "the name") -> Check:
    """A bare file name: no directory, not '.' or '..'."""
    def refuse(value):
        if value is None or (os.path.basename(value) == value and value not in ("", ".", "..")):
            return None
        return f"{what} must be a file name inside the output directory"
    return Check(refuse, bad=("../escape.csv", ""),
                 schema={"anyOf": [{"type": "null"}, {"type": "string", "pattern": "^(?!\\.\\.?$)[^/]+$"}]})


def valid_queries(*, one: bool = False, ignore: tuple[str, ...] = ()) -> Check:
    """Every query parses (``mfscore.query``, imported on use), so a bad one stops a run before it is planned;
    ``one``: the field is one query (or None), not a tuple of them; ``ignore``: texts that are not queries ('*')."""
    def refuse(value):
        texts = [text for text in ((value,) if one else value) if text is not None and text.strip() not in ignore]
        if not texts:  # a default: no query to parse, and the parser (it imports numpy) is not imported
            return None
        from mfscore import query

        try:
            query.check(texts)
        except MfscoreError as error:
            return error.sentence()
        return None
    bad = ("Purpose==", "__import__('os')")
    return Check(refuse, bad=bad if one else tuple((text,) for text in bad), error=QueryOptionError)


# ---------------------------------------------------------------------------------------------- checking

def validate(instance) -> None:
    """Every field of the dataclass ``instance`` against its annotated type and its declared check."""
    for field, hint in fields_of(type(instance)):
        _check(field, hint, getattr(instance, field.name))


def check_field(kind: type, name: str, value) -> None:
    """The field ``name`` of the options type ``kind`` checked on ``value`` alone (its type, then its check)."""
    for field, hint in fields_of(kind):
        if field.name == name:
            _check(field, hint, value)
            return
    raise KeyError(f"{kind.__name__} has no field {name}")


def _check(field: dataclasses.Field, hint, value) -> None:
    if not conforms(value, hint):
        raise refused(field, value, f"not {describe(hint)}")
    check = field.metadata.get("check")
    if check is not None:
        found = check.problem(value)
        if found is not None:
            raise refused(field, *found, error=check.error)


def check_limits(instance, maxima: typing.Mapping[str, int]) -> None:
    """``OptionError`` for the first resource option of the options ``instance`` (nested ones included) above its
    server maximum, ``maxima[limit]`` for the ``limit`` its field declares."""
    for field, _ in fields_of(type(instance)):
        value = getattr(instance, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_limits(value, maxima)
        limit = field.metadata.get("limit")
        if limit is not None and value is not None and value > maxima[limit]:
            raise refused(field, value, f"this server allows at most {maxima[limit]}")


def refused(field: dataclasses.Field, value, reason: str, *, error: type = OptionError) -> OptionError:
    """The error naming the option ``field`` (its flag and field name) and why its ``value`` is refused."""
    flag = field.metadata.get("flag")
    shown = shown_value(value)
    if flag:
        message = f"{flag} {shown}: {reason} (option {field.name})"
    else:
        message = f"option {field.name} = {shown}: {reason}"
    return error(message, option=field.name, flag=flag, reason=reason)


def shown_value(value) -> str:
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, (tuple, list)):
        text = " ".join(shown_value(v) for v in value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = json.dumps(value) if value is None or isinstance(value, bool) else str(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."


@cache
def fields_of(kind: type) -> tuple[tuple[dataclasses.Field, Any], ...]:
    """(field, resolved type) of every init field of the dataclass ``kind``."""
    hints = typing.get_type_hints(kind)
    return tuple((f, hints[f.name]) for f in dataclasses.fields(kind) if f.init)


def _union_args(hint) -> tuple | None:
    origin = typing.get_origin(hint)
    return typing.get_args(hint) if origin in (typing.Union, types.UnionType) else None


def conforms(value, hint, *, as_json: bool = False) -> bool:
    """Whether ``value`` is of type ``hint``; ``as_json``: of its JSON form (lists for tuples, objects for dataclasses,
    integers for floats)."""
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    arms = _union_args(hint)
    if arms is not None:
        return any(conforms(value, arm, as_json=as_json) for arm in arms)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list if as_json else tuple):
            return False
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0], as_json=as_json) for v in value)
        return not args or (len(args) == len(value) and all(conforms(v, a, as_json=as_json) for v, a in zip(value, args)))
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict if as_json else hint)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def describe(hint) -> str:
    """The type ``hint`` in words, for a message: 'a number', 'a list of strings', ..."""
    arms = _union_args(hint)
    if arms is not None:
        return " or ".join(describe(arm) for arm in arms)
    if hint is None or hint is type(None):
        return "none"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if hint in words:
        return words[hint]
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s"
        return f"a list of {len(args)} values"
    if dataclasses.is_dataclass(hint):
        return f"an object ({hint.__name__})"
    return getattr(hint, "__name__", str(hint))


# ---------------------------------------------------------------------------------------------- decoding

def from_json(kind: type, data: bytes | str):
    """The options of type ``kind`` in the canonical JSON ``data``; ``OptionError`` naming the option for bad JSON,
    an unknown, missing or wrongly typed field, or a value the type refuses."""
    try:
        raw = json.loads(data)
    except (ValueError, TypeError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise OptionError(f"the options are not JSON ({error})", reason="not JSON") from None
    return _build(kind, raw, "")


def _dataclass_in(hint) -> type | None:
    """The dataclass ``hint`` is, or is with None (``X | None``)."""
    arms = _union_args(hint)
    candidates = [a for a in arms if a is not type(None)] if arms is not None else [hint]
    return candidates[0] if len(candidates) == 1 and dataclasses.is_dataclass(candidates[0]) else None


def _build(kind: type, raw, prefix: str):
    from mfscore.codec import rebuild

    if not isinstance(raw, dict):
        raise OptionError(f"the options must be a JSON object, not {shown_value(raw)}", reason="not a JSON object")
    fields = {f.name: (f, hint) for f, hint in fields_of(kind)}
    for name in raw:
        if name not in fields:
            raise OptionError(f"there is no option {prefix}{name}", option=prefix + name, reason="no such option")
    for name, (f, _) in fields.items():
        if name not in raw and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise OptionError(f"the option {prefix}{name} is missing", option=prefix + name, reason="missing")
    values = {}
    for name, value in raw.items():
        f, hint = fields[name]
        nested = _dataclass_in(hint)
        if nested is not None and isinstance(value, dict):
            values[name] = _build(nested, value, f"{prefix}{name}.")
        elif not conforms(value, hint, as_json=True):
            raise refused(f, value, f"not {describe(hint)}")
        else:
            values[name] = rebuild(hint, value)
    return kind(**values)
