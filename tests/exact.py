"""Exact comparison of metric values, shared by the tests."""

import math


def identical(a, b) -> bool:
    """Same Python type and value, NaN equal to NaN (MediScore's int ``0`` differs from ``0.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b
