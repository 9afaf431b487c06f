"""One codec for every value that crosses between runners: a task's options, its jobs' work, its records
(``mfscore.records`` adds the outcome envelope).

A value is a dataclass (encoded field by field from its type hints), a numpy array, a tuple, a
dict, or a JSON scalar. A class with ``to_dict``/``from_dict`` (the record types) encodes itself.
JSON keeps floats exact (``repr``) and NaN; the encoding is canonical (sorted keys), so two equal
values have equal bytes, which is how the fold tells a repeat from a conflict.

numpy is looked up, not imported: a value can only be an array once something has imported numpy, and a run
whose values hold none (provenance filtering) starts about 0.05 s sooner without it.
"""

from __future__ import annotations

import dataclasses
import json
import types
import sys
import typing
from functools import cache
from pathlib import Path

_SCALARS = frozenset((int, float, str, bool, type(None)))  # exactly these types: plain returns them as they are


def encode(value) -> bytes:
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":")).encode()


def decode(kind, data: bytes):
    return rebuild(kind, json.loads(data))


def plain(value):
    """``value`` as JSON-able data."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return {"dtype": value.dtype.str if value.dtype != object else "object", "shape": list(value.shape),
                "data": value.ravel().tolist()}
    if isinstance(value, (tuple, list)):
        if _SCALARS.issuperset(map(type, value)):  # a record's counts: hundreds of ints, checked in C
            return list(value)
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    if np is not None and isinstance(value, np.generic):
        return value.item()
    return value


def rebuild(kind, data):
    """The value of type ``kind`` whose JSON-able data is ``data`` (the inverse of ``plain``)."""
    if data is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        return rebuild(options[0], data) if len(options) == 1 else data
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(rebuild(args[0], v) for v in data)
        return tuple(rebuild(k, v) for k, v in zip(args, data)) if args else tuple(data)
    if origin is dict:
        key_type, value_type = typing.get_args(kind)
        return {rebuild(key_type, k): rebuild(value_type, v) for k, v in data.items()}
    if origin is list:
        (item,) = typing.get_args(kind)
        return [rebuild(item, v) for v in data]
    np = sys.modules.get("numpy")  # a type hint naming np.ndarray was written by a module that imported it
    if np is not None and kind is np.ndarray:
        dtype = object if data["dtype"] == "object" else np.dtype(data["dtype"])
        return np.array(data["data"], dtype=dtype).reshape(data["shape"])
    if isinstance(kind, type) and hasattr(kind, "from_dict"):
        return kind.from_dict(data)
    if dataclasses.is_dataclass(kind):
        hints = _hints(kind)
        return kind(**{name: rebuild(hints[name], data[name]) for name in data if name in hints})
    if kind is Path:
        return Path(data)
    if kind is float:
        return float(data)
    return data


@cache
def _hints(kind) -> dict:
    return typing.get_type_hints(kind)
