"""scipy.spatial.distance (rules: batchtensor/rules/scipy_spatial.py): ``cdist`` / ``pdist`` of
the metrics with a formula (float, integer and boolean points, NaN and inf, size-0 axes),
``squareform`` both ways, ``jaccard`` and ``directed_hausdorff``; weights, ``out=`` and other
metrics run per example, as do points SciPy refuses (its error)."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array

try:
    from scipy.spatial import distance
except ImportError:  # scipy is an optional extra
    distance = None

_TOL = dict(rtol=1e-9, atol=1e-11, rtol32=1e-9, atol32=1e-11)  # float64 results throughout
_METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine", "correlation")


def _points(rng, shape, dtype, special=False):
    x = make_array(rng, shape, dtype)
    if special and x.dtype.kind == "f" and x.size > 2:
        x.flat[rng.integers(0, x.size)] = np.nan
        x.flat[rng.integers(0, x.size)] = np.inf
    return x


def cdist_samples(rng, dtype):
    xa, xb = _points(rng, (4, 3), dtype), _points(rng, (2, 3), dtype)
    for m in _METRICS:
        yield SampleInput((xa, xb), {"metric": m}, m)
    yield SampleInput((xa, xb), {"metric": "minkowski", "p": 3}, "minkowski p=3")
    yield SampleInput((xa, xb), {"metric": "minkowski", "p": np.inf}, "minkowski p=inf")
    yield SampleInput((_points(rng, (3, 4), dtype, True), _points(rng, (2, 4), dtype, True)),
                      {"metric": "chebyshev"}, "NaN and inf, chebyshev")
    yield SampleInput((_points(rng, (3, 4), dtype, True), _points(rng, (2, 4), dtype)), {},
                      "NaN and inf, euclidean")
    yield SampleInput((_points(rng, (0, 3), dtype), xb), {}, "no rows")
    yield SampleInput((_points(rng, (2, 0), dtype), _points(rng, (3, 0), dtype)),
                      {"metric": "cityblock"}, "no columns")
    yield SampleInput((xa, _points(rng, (2, 5), dtype)), {}, "columns differ",
                      loop_reason="SciPy's error, from the loop")
    yield SampleInput((xa, xb), {"metric": "hamming"}, "hamming", loop_reason="no formula")


def pdist_samples(rng, dtype):
    x = _points(rng, (5, 3), dtype)
    for m in _METRICS:
        yield SampleInput((x,), {"metric": m}, m)
    yield SampleInput((x,), {"metric": "minkowski", "p": 1.5}, "minkowski p=1.5")
    yield SampleInput((_points(rng, (1, 3), dtype),), {}, "one row")
    yield SampleInput((_points(rng, (4, 3), dtype, True),), {"metric": "chebyshev"},
                      "NaN and inf")
    yield SampleInput((x,), {"metric": "euclidean", "w": np.ones(3)}, "weights",
                      loop_reason="weights")


def squareform_samples(rng, dtype):
    yield SampleInput((make_array(rng, (6,), dtype),), {}, "vector to matrix")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "empty vector")
    m = make_array(rng, (4, 4), dtype)
    m = m + m.T
    np.fill_diagonal(m, 0)
    yield SampleInput((m,), {}, "matrix to vector")
    yield SampleInput((m,), {"force": "tovector", "checks": False}, "tovector, no checks")
    yield SampleInput((make_array(rng, (1, 1), dtype),), {"checks": False}, "1 x 1 matrix")
    yield SampleInput((make_array(rng, (5,), dtype),), {}, "not n choose 2",
                      loop_reason="SciPy's error, from the loop")


def jaccard_samples(rng, dtype):
    u, v = make_array(rng, (8,), dtype), make_array(rng, (8,), dtype)
    yield SampleInput((u, v), {}, "vectors")
    some = rng.uniform() < 0.5  # all zero in some examples
    yield SampleInput((u * some, v * some), {}, "all zero in some examples")


def hausdorff_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5, 2), dtype), make_array(rng, (6, 2), dtype)), {},
                      "points")
    yield SampleInput((make_array(rng, (1, 3), dtype), make_array(rng, (4, 3), dtype)),
                      {"rng": 3}, "one point, a seed")
    p = make_array(rng, (3, 2), dtype)
    yield SampleInput((p, p), {}, "the same points (ties)", loop_reason="distances tie")


OPS = []
if distance is not None:
    from .foreign import foreign_op

    FLOATS = (np.float64, np.float32)
    OPS = [foreign_op(distance, "cdist", cdist_samples, dtypes=(*FLOATS, np.int64, bool),
                      **_TOL),
           foreign_op(distance, "pdist", pdist_samples, dtypes=FLOATS, **_TOL),
           foreign_op(distance, "squareform", squareform_samples,
                      dtypes=(*FLOATS, np.int64, np.complex128)),
           foreign_op(distance, "jaccard", jaccard_samples, dtypes=(bool, np.float64)),
           foreign_op(distance, "directed_hausdorff", hausdorff_samples, dtypes=(np.float64,),
                      **_TOL)]
