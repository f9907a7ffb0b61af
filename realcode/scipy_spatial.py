"""SciPy's distances (``scipy.spatial.distance``): between two vectors, and between the rows
of point sets."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import normal, positive

D = "scipy.spatial.distance"
FLOATS = (np.float64, np.float32)
SIZES = (6, 1)


def two(rng, dt, size):
    return normal(rng, dt, size), normal(rng, dt, size)


def two_positive(rng, dt, size):
    return positive(rng, dt, size), positive(rng, dt, size)


def two_probabilities(rng, dt, size):
    return tuple(rng.dirichlet(np.ones(size)).astype(dt) for _ in range(2))


def two_boolean(rng, dt, size):
    u = rng.uniform(size=size) < 0.5
    v = rng.uniform(size=size) < 0.5
    u[0], v[0] = True, True  # never two all-False vectors (0/0 for some metrics)
    return u.astype(dt), v.astype(dt)


def two_and_weights(rng, dt, size):
    return two(rng, dt, size) + (positive(rng, dt, size, 0.5, 2.0),)


def two_and_variances(rng, dt, size):
    return two(rng, dt, size) + (positive(rng, dt, size, 0.5, 2.0),)


def two_and_inverse_covariance(rng, dt, size):
    a = rng.standard_normal((size, size))
    return two(rng, dt, size) + (np.linalg.inv(a @ a.T + size * np.eye(size)).astype(dt),)


def points(rng, dt, size):
    n, d = size
    return (normal(rng, dt, (n, d)),)


def two_point_sets(rng, dt, size):
    n, d = size
    return normal(rng, dt, (n, d)), normal(rng, dt, (n + 1, d))


def condensed(rng, dt, size):
    n = size
    return (positive(rng, dt, n * (n - 1) // 2),)


def _d(attr, gen=two, label="", sizes=SIZES, dtypes=FLOATS, shared=None, **kw):
    return Entry(D, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label,
                 shared=shared)


BOOLEAN = (bool, np.float64)
ENTRIES = [
    _d("braycurtis", two_positive),
    _d("canberra", two_positive),
    _d("chebyshev"),
    _d("cityblock"),
    _d("correlation", sizes=(6,)),
    _d("cosine"),
    _d("euclidean"),
    _d("euclidean", two_and_weights, label="weighted", sizes=(6,), shared=(2,)),
    _d("sqeuclidean"),
    _d("minkowski", p=3),
    _d("seuclidean", two_and_variances, sizes=(6,), shared=(2,)),
    _d("mahalanobis", two_and_inverse_covariance, sizes=(4,), shared=(2,)),
    _d("jensenshannon", two_probabilities, sizes=(6,)),
    _d("dice", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("hamming", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("jaccard", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("rogerstanimoto", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("russellrao", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("sokalsneath", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("yule", two_boolean, dtypes=BOOLEAN, sizes=(8,)),
    _d("pdist", points, sizes=((5, 3), (2, 1))),
    _d("pdist", points, label="cityblock", sizes=((5, 3),), metric="cityblock"),
    _d("cdist", two_point_sets, sizes=((4, 3), (1, 2))),
    _d("cdist", two_point_sets, label="cosine", sizes=((4, 3),), metric="cosine"),
    _d("squareform", condensed, sizes=(5,)),
    _d("directed_hausdorff", two_point_sets, sizes=((5, 2),), dtypes=(np.float64,)),
]
