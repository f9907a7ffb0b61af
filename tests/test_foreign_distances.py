"""The distance kernels' rules (batchtensor/rules/scipy_spatial.py, sklearn_pairwise.py)
against the per-example loop: the real library functions, called unchanged, with batch sizes
0, 1 and 3, in_axes 0 and -1, unmapped arguments, nested vmaps, several dtypes, NaN and inf,
ties that go to the loop, and the rule (not a rerun) serving each call."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.registry import record_paths
from loop_reference import assert_same, loop_vmap

pytest.importorskip("scipy")
from scipy.spatial import distance  # noqa: E402

RNG = np.random.default_rng(7)


def per_example(f, *args):
    """A call the rules hand to the per-example loop: fallback="error" refuses it, and the
    default path gives the loop's result."""
    with pytest.raises(bt.BatchingError), bt.config(fallback="error"):
        bt.vmap(f)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(*args)
    assert_same(got, loop_vmap(f)(*args))


def strict(f, *args, in_axes=0, rtol=None):
    """vmap with fallback="error" (the rule serves it) against the loop; with batch size 0,
    against one example's result (shape and dtype)."""
    if any(np.shape(a)[0] == 0 for a, ax in zip(args, np.broadcast_to(
            np.array(in_axes, dtype=object), (len(args),))) if ax == 0):
        with bt.config(fallback="error"):
            got = bt.vmap(f, in_axes)(*args)
        one = f(*(np.zeros_like(a, shape=a.shape[1:]) + 1 if ax == 0 else a
                  for a, ax in zip(args, np.broadcast_to(np.array(in_axes, dtype=object),
                                                         (len(args),)))))
        for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, one))):
            assert g.shape == (0, *np.shape(w)) and g.dtype == np.asarray(w).dtype
        return got
    want = loop_vmap(f, in_axes)(*args)
    with bt.config(fallback="error"):
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, want, rtol)
    return got


def nested(f, *args):
    want = loop_vmap(loop_vmap(f))(*args)
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(f))(*args)
    assert_same(got, want)


def points(shape, dtype=np.float64, special=False):
    x = (RNG.normal(size=shape) * 3).astype(dtype)
    if special and x.size > 3:
        x.flat[RNG.choice(x.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
    return x


METRICS = [("euclidean", {}), ("sqeuclidean", {}), ("cityblock", {}), ("chebyshev", {}),
           ("cosine", {}), ("correlation", {}), ("minkowski", {"p": 3}),
           ("minkowski", {"p": 0.5}), ("minkowski", {"p": np.inf}), ("cb", {}), ("COS", {})]


@pytest.mark.parametrize("metric,kw", METRICS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, bool])
def test_cdist_and_pdist(metric, kw, dtype):
    xa, xb = points((3, 5, 4), dtype), points((3, 2, 4), dtype)
    strict(lambda a, b: distance.cdist(a, b, metric, **kw), xa, xb)
    strict(lambda a: distance.pdist(a, metric, **kw), xa)
    strict(functools.partial(distance.cdist, metric=metric, **kw), xa, xb[0],
           in_axes=(0, None))
    strict(lambda a, b: distance.cdist(a, b, metric, **kw), np.moveaxis(xa, 0, -1),
           np.moveaxis(xb, 0, -1), in_axes=-1)
    nested(lambda a: distance.pdist(a, metric, **kw), points((2, 3, 4, 2), dtype))


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev", "cosine",
                                    "minkowski"])
def test_nan_and_inf_where_the_c_code_puts_them(metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the loop's own, for correlation)
        strict(lambda a, b: distance.cdist(a, b, metric), points((4, 5, 3), special=True),
               points((4, 3, 3), special=True))
        strict(lambda a: distance.pdist(a, metric), points((4, 5, 3), special=True))


@pytest.mark.parametrize("shape", [(0, 4, 3), (1, 4, 3), (3, 0, 3), (3, 4, 0), (3, 1, 2)])
def test_cdist_pdist_edge_shapes(shape):
    strict(lambda a: distance.cdist(a, a[:2], "cityblock"), points(shape))
    strict(distance.pdist, points(shape))


def test_other_metrics_and_weights_run_per_example():
    xa = points((3, 4, 3))
    w = np.array([1.0, 2.0, 0.5])
    for f in (lambda a: distance.cdist(a, a, "hamming"),
              lambda a: distance.cdist(a, a, "euclidean", w=w),
              lambda a: distance.pdist(a, lambda u, v: float(np.sum(u - v)))):
        per_example(f, xa)


def test_errors_are_scipys():
    with pytest.raises(ValueError, match="same number of columns"):
        bt.vmap(lambda a: distance.cdist(a, a[:, :2]))(points((2, 3, 3)))
    with pytest.raises(ValueError, match="binomial coefficient"):
        bt.vmap(distance.squareform)(points((2, 5)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_squareform_both_ways(dtype):
    v = points((3, 10), dtype) if dtype is not np.complex128 else points((3, 10)) * 1j
    m = strict(distance.squareform, v)
    strict(distance.squareform, m)
    strict(lambda x: distance.squareform(x, checks=False, force="tovector"), m)
    strict(distance.squareform, np.zeros((2, 0), dtype))
    strict(distance.squareform, np.zeros((1, 1, 1), dtype))
    nested(distance.squareform, points((2, 3, 6), dtype).real.astype(dtype))
    got = strict(distance.squareform, v[:0])
    assert got.shape == (0, 5, 5)


def test_squareform_of_an_invalid_matrix_raises_per_example():
    m = np.stack([distance.squareform(x) for x in points((3, 6))])
    m[1, 0, 1] += 1  # not symmetric in one example
    with pytest.raises(ValueError, match="symmetric"):
        bt.vmap(distance.squareform)(m)
    strict(lambda x: distance.squareform(x, checks=False), m)


@pytest.mark.parametrize("dtype", [bool, np.float64, np.int64])
def test_jaccard(dtype):
    u = (RNG.uniform(size=(5, 8)) < 0.4).astype(dtype)
    v = (RNG.uniform(size=(5, 8)) < 0.4).astype(dtype)
    u[0], v[0] = 0, 0  # 0 / 0 is 0
    strict(distance.jaccard, u, v)
    strict(distance.jaccard, u, v[1], in_axes=(0, None))
    strict(distance.jaccard, u.T, v.T, in_axes=-1)
    strict(distance.jaccard, u[:0], v[:0])
    nested(distance.jaccard, u.reshape(5, 1, 8), v.reshape(5, 1, 8))


def test_directed_hausdorff():
    u, v = points((4, 6, 2)), points((4, 7, 2))
    strict(distance.directed_hausdorff, u, v)
    strict(lambda a, b: distance.directed_hausdorff(a, b, rng=5), u, v[0], in_axes=(0, None))
    strict(distance.directed_hausdorff, u[:1, :1], v[:1])
    strict(distance.directed_hausdorff, np.moveaxis(u, 0, -1), np.moveaxis(v, 0, -1),
           in_axes=-1)
    nested(distance.directed_hausdorff, points((2, 2, 5, 3)), points((2, 2, 4, 3)))


def test_directed_hausdorff_ties_and_generators_run_per_example():
    u = points((3, 5, 2))
    for f, args in ((distance.directed_hausdorff, (u, u)),  # every distance 0: ties
                    (lambda a: distance.directed_hausdorff(a, a[::-1] + 1,
                                                           np.random.default_rng(0)), (u,))):
        per_example(f, *args)


def test_the_rules_serve_the_calls():
    with record_paths() as paths, bt.config(fallback="error"):
        bt.vmap(lambda a: distance.squareform(distance.pdist(a, "cosine")))(points((2, 4, 3)))
    assert {(getattr(op, "__name__", ""), p) for op, p in paths} >= {
        ("pdist", "rule"), ("squareform", "rule")}


# ---- scikit-learn ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pairwise():
    return pytest.importorskip("sklearn.metrics.pairwise")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chi2_kernels_write_into_the_buffer_sklearn_makes(pairwise, dtype):
    x = RNG.uniform(0, 2, size=(3, 4, 3)).astype(dtype)
    y = RNG.uniform(0, 2, size=(3, 5, 3)).astype(dtype)
    x[:, 0, 0] = y[:, 0, 0] = 0  # 0 / 0 terms are left out
    strict(pairwise.additive_chi2_kernel, x, y)
    strict(functools.partial(pairwise.chi2_kernel, gamma=0.3), x, y[0], in_axes=(0, None))
    strict(pairwise.additive_chi2_kernel, np.moveaxis(x, 0, -1), in_axes=-1)
    nested(pairwise.chi2_kernel, x.reshape(3, 1, 4, 3))
    # called from another module: the refused write teaches vmap sklearn's np.zeros
    strict(lambda a: pairwise.additive_chi2_kernel(a, a[:2]) * 2, x)


def test_chi2_kernel_fast_into_a_shared_array_raises(pairwise):
    from sklearn.metrics import _pairwise_fast

    out = np.zeros((4, 4))
    with pytest.raises(bt.SharedWriteError):
        bt.vmap(lambda a: pairwise._chi2_kernel_fast(a, a, out), fallback="error")(
            RNG.uniform(size=(3, 4, 2)))
    assert not out.any()
    res = bt.vmap(lambda a: (_pairwise_fast._chi2_kernel_fast, a)[1])(np.ones((2, 1)))
    assert res.shape == (2, 1)


def test_chi2_kernel_of_read_only_points_raises_as_the_loop(pairwise):
    x = np.broadcast_to(RNG.uniform(size=(4, 3)), (3, 4, 3))
    with pytest.raises(ValueError, match="read-only"):
        loop_vmap(pairwise.additive_chi2_kernel)(x)
    with pytest.raises(ValueError, match="read-only"), warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(pairwise.additive_chi2_kernel)(x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_haversine_distances(pairwise, dtype):
    def latlon(*shape):
        return np.stack([RNG.uniform(-1.5, 1.5, shape), RNG.uniform(-3, 3, shape)],
                        -1).astype(dtype)

    x, y = latlon(3, 4), latlon(3, 2)
    strict(pairwise.haversine_distances, x, y)
    strict(pairwise.haversine_distances, x)
    strict(pairwise.haversine_distances, x, y[0], in_axes=(0, None))
    strict(pairwise.haversine_distances, np.moveaxis(x, 0, -1), in_axes=-1)
    strict(pairwise.haversine_distances, x[:0])
    nested(pairwise.haversine_distances, latlon(2, 3, 4))
    with pytest.raises(ValueError, match="2 dimensions"), warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(pairwise.haversine_distances)(points((2, 3, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["pairwise_distances_argmin", "pairwise_distances_argmin_min"])
def test_argmin(pairwise, name, dtype):
    f = getattr(pairwise, name)
    x, y = points((3, 5, 4), dtype), points((3, 6, 4), dtype)
    strict(f, x, y)
    strict(functools.partial(f, axis=0), x, y)
    strict(f, x, y[0], in_axes=(0, None))
    strict(f, x[:1], y[:1])
    strict(f, x[:0], y[:0])
    # examples that are not C-contiguous take scikit-learn's other path (its dtype too),
    # whose float32 distances vmap computes in another order
    strict(f, np.moveaxis(x, 0, -1), np.moveaxis(y, 0, -1), in_axes=-1,
           rtol=1e-6 if dtype == np.float32 else None)
    nested(f, points((2, 2, 4, 3), dtype), points((2, 2, 5, 3), dtype))


def test_argmin_ties_run_per_example(pairwise):
    x = points((3, 4, 2))
    y = np.concatenate([x, x[:, :1]], axis=1)  # a repeated row: a tie at distance 0
    per_example(pairwise.pairwise_distances_argmin_min, x, y)
    g = functools.partial(pairwise.pairwise_distances_argmin_min, metric="cityblock")
    assert_same(bt.vmap(g)(x, y[:, :-1]), loop_vmap(g)(x, y[:, :-1]))
