"""probit: the stdlib quantile on distinct values, against scipy's ndtri."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from mfscore.detection.probit import probit


def test_probit_matches_ndtri_over_the_unit_interval_and_its_tails():
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.random(5000), np.round(rng.random(3000), 3), 10.0 ** -rng.uniform(1, 12, 500),
                        1 - 10.0 ** -rng.uniform(1, 12, 500), [1e-5, 0.5, 1 - 1e-5]])
    p = p[(p > 0) & (p < 1)]
    np.testing.assert_allclose(probit(p), ndtri(p), rtol=1e-12, atol=1e-12)


def test_probit_keeps_the_shape_and_repeats():
    p = np.array([[0.1, 0.9], [0.1, 0.5]])
    out = probit(p)
    assert out.shape == (2, 2) and out.dtype == np.float64
    assert out[0, 0] == out[1, 0] and out[1, 1] == 0.0
