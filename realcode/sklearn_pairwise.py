"""scikit-learn's kernels and distances (``sklearn.metrics.pairwise``)."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import normal, positive

P = "sklearn.metrics.pairwise"
FLOATS = (np.float64, np.float32)
#: (rows of X, rows of Y, features); one feature and one row are the edge shapes
SIZES = ((4, 5, 3), (1, 2, 1))


def xy(rng, dt, size):
    n, m, d = size
    return normal(rng, dt, (n, d)), normal(rng, dt, (m, d))


def xy_positive(rng, dt, size):
    n, m, d = size
    return positive(rng, dt, (n, d)), positive(rng, dt, (m, d))


def xy_paired(rng, dt, size):
    n, _, d = size
    return normal(rng, dt, (n, d)), normal(rng, dt, (n, d))


def latlon(rng, dt, size):
    n, m, _ = size
    def draw(k):
        return np.stack([rng.uniform(-1.5, 1.5, k), rng.uniform(-3, 3, k)], axis=1).astype(dt)
    return draw(n), draw(m)


def xy_nan(rng, dt, size):
    x, y = xy(rng, dt, size)
    x[0, 0] = np.nan  # a missing coordinate in a different place per example is data
    y[rng.integers(0, y.shape[0]), rng.integers(0, y.shape[1])] = np.nan
    return x, y


def _k(attr, gen=xy, label="", sizes=SIZES, **kw):
    return Entry(P, attr, gen, dtypes=FLOATS, sizes=sizes, kwargs=kw, label=label)


ENTRIES = [
    _k("linear_kernel"),
    _k("polynomial_kernel", degree=2, coef0=0.5),
    _k("rbf_kernel", gamma=0.5),
    _k("sigmoid_kernel", gamma=0.3),
    _k("laplacian_kernel", gamma=0.5),
    _k("chi2_kernel", gen=xy_positive, gamma=0.5),
    _k("additive_chi2_kernel", gen=xy_positive),
    _k("cosine_similarity"),
    _k("cosine_distances"),
    _k("euclidean_distances"),
    _k("euclidean_distances", label="squared", squared=True),
    _k("manhattan_distances"),
    _k("haversine_distances", gen=latlon),
    _k("nan_euclidean_distances", gen=xy_nan, sizes=((4, 5, 3),)),
    _k("paired_euclidean_distances", gen=xy_paired),
    _k("paired_manhattan_distances", gen=xy_paired),
    _k("paired_cosine_distances", gen=xy_paired),
    _k("paired_distances", gen=xy_paired, metric="cityblock"),
    _k("pairwise_distances", metric="euclidean"),
    _k("pairwise_distances", label="chebyshev", metric="chebyshev"),
    _k("pairwise_kernels", metric="rbf", gamma=0.5),
    # one shape only: each call of these costs ~70 ms (scikit-learn's compiled reduction)
    _k("pairwise_distances_argmin", sizes=SIZES[:1]),
    _k("pairwise_distances_argmin_min", sizes=SIZES[:1]),
]
