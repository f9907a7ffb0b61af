"""scikit-learn's compiled pairwise kernels (rules: batchtensor/rules/sklearn_pairwise.py):
``_chi2_kernel_fast`` reached through ``additive_chi2_kernel`` (its result buffer made inside
the function), ``haversine_distances``, and ``pairwise_distances_argmin`` /
``pairwise_distances_argmin_min`` with the Euclidean metric; other metrics, NaN and ties run
as scikit-learn's code or per example."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

try:
    from sklearn.metrics import _pairwise_fast, pairwise
except ImportError:  # scikit-learn is an optional extra
    pairwise = None

_TOL = dict(rtol=1e-9, atol=1e-11, rtol32=1e-4, atol32=1e-5)


def chi2_samples(rng, dtype):
    x = make_array(rng, (4, 3), dtype, low=0.0, high=2.0)
    y = make_array(rng, (5, 3), dtype, low=0.0, high=2.0)
    yield SampleInput((x, y), {}, "non-negative points")
    z = x.copy()
    z[:, 0] = 0
    yield SampleInput((z, y * (y > 0.5)), {}, "zeros (0/0 terms left out)")
    yield SampleInput((x,), {}, "Y=None")


def haversine_samples(rng, dtype):
    def latlon(n):
        return np.stack([rng.uniform(-1.5, 1.5, n), rng.uniform(-3, 3, n)], 1).astype(dtype)
    yield SampleInput((latlon(4), latlon(3)), {}, "points")
    yield SampleInput((latlon(3),), {}, "Y=None")
    yield SampleInput((make_array(rng, (3, 3), dtype),), {}, "three columns",
                      loop_reason="scikit-learn's error, from the loop")


def argmin_samples(rng, dtype):
    x, y = make_array(rng, (4, 3), dtype), make_array(rng, (6, 3), dtype)
    yield SampleInput((x, y), {}, "euclidean")
    yield SampleInput((x, y), {"axis": 0}, "axis=0")
    yield SampleInput((x, make_array(rng, (1, 3), dtype)), {}, "one row of Y")
    yield SampleInput((x, np.concatenate([y, y[:1]])), {}, "a repeated row: ties",
                      loop_reason="nearest rows that tie")


def _through(name):
    def op(*args, **kwargs):
        return getattr(pairwise, name)(*args, **kwargs)

    op.__name__ = op.__qualname__ = name
    op.__module__ = pairwise.__name__
    return op


OPS = []
if pairwise is not None:
    from .foreign import foreign_op

    FLOATS = (np.float64, np.float32)
    OPS = [OpInfo("sklearn.metrics._pairwise_fast._chi2_kernel_fast",
                  _through("additive_chi2_kernel"), chi2_samples, "rule", dtypes=FLOATS,
                  covers=_pairwise_fast._chi2_kernel_fast, **_TOL,
                  skip_nested="an unmapped outer argument is a read-only view during the pass, "
                              "which the kernel's typed memoryviews refuse: per example there "
                              "(tests/test_foreign_distances.py checks nested vmaps)"),
           foreign_op(pairwise, "haversine_distances", haversine_samples, dtypes=FLOATS,
                      **_TOL),
           foreign_op(pairwise, "pairwise_distances_argmin", argmin_samples, dtypes=FLOATS),
           foreign_op(pairwise, "pairwise_distances_argmin_min", argmin_samples,
                      dtypes=FLOATS, **_TOL)]
