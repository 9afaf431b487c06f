"""The codec's shortcut for lists of plain scalars against converting every item, on generated values."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mfscore import codec


@dataclass(frozen=True)
class Pair:
    left: object
    right: object


def item_by_item(value):
    """``codec.plain`` without its shortcut: every item of a list or tuple converted on its own."""
    if isinstance(value, (tuple, list)):
        return [item_by_item(v) for v in value]
    if isinstance(value, dict):
        return {str(k): item_by_item(v) for k, v in value.items()}
    if isinstance(value, Pair):
        return {"left": item_by_item(value.left), "right": item_by_item(value.right)}
    return codec.plain(value)


ITEMS = [lambda r: int(r.integers(-2**62, 2**62)) * 2**8, lambda r: float(r.normal()), lambda r: math.nan,
         lambda r: str(r.integers(1000)), lambda r: bool(r.integers(2)), lambda r: None,
         lambda r: np.int64(r.integers(100)), lambda r: np.float32(r.normal()), lambda r: np.bool_(r.integers(2)),
         lambda r: np.arange(int(r.integers(4))), lambda r: Path("a") / str(r.integers(9)),
         lambda r: Pair(int(r.integers(9)), (1, 2.5)), lambda r: (int(r.integers(9)), "x"),
         lambda r: [float(r.normal())] * int(r.integers(3))]


def generated(rng: np.random.Generator, depth: int = 0):
    """A list or tuple of items of one to three kinds (so that some are all plain scalars), maybe nested."""
    kinds = rng.choice(len(ITEMS), size=int(rng.integers(1, 4)))
    items = [ITEMS[int(rng.choice(kinds))](rng) for _ in range(int(rng.integers(0, 40)))]
    if depth < 2 and rng.random() < 0.3:
        items.append(generated(rng, depth + 1))
    return tuple(items) if rng.random() < 0.3 else items


@pytest.mark.parametrize("seed", range(300))
def test_lists_encode_as_item_by_item(seed):
    value = generated(np.random.default_rng(seed))
    expected = json.dumps(item_by_item(value), sort_keys=True, separators=(",", ":")).encode()
    assert codec.encode(value) == expected
    assert codec.encode({"x": value}) == json.dumps({"x": item_by_item(value)}, sort_keys=True,
                                                    separators=(",", ":")).encode()


def test_subclasses_of_scalars_take_the_long_way():
    """numpy's float64 is a float, and is still converted (``.item()``)."""
    assert [type(v) for v in codec.plain([np.float64(0.1), 1.5])] == [float, float]
    assert type(codec.plain([1, 2])) is list and type(codec.plain((1, 2))) is list
