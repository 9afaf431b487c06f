"""The standard normal quantile (probit) of an array, without scipy.

The standard library's ``NormalDist.inv_cdf`` (Wichura's AS241, accurate to about 1e-16) is applied
once per distinct value: a ROC's rates repeat, and importing scipy for this alone costs a DET plot
more time than computing it.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

_QUANTILE = np.frompyfunc(NormalDist().inv_cdf, 1, 1)


def probit(p) -> np.ndarray:
    """Φ⁻¹(p) elementwise for p in (0, 1), as float64."""
    values = np.asarray(p, dtype=np.float64)
    distinct, where = np.unique(values, return_inverse=True)
    return _QUANTILE(distinct).astype(np.float64)[where].reshape(values.shape)
