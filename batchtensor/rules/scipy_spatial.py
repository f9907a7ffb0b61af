"""scipy.spatial.distance's compiled kernels as NumPy formulas on the whole batch: ``cdist`` and
``pdist`` of the common metrics, ``squareform``, ``jaccard`` and ``directed_hausdorff``.

SciPy computes these in C on float64 copies of the points (float32 and integer points too), one
pair at a time. The rules compute every pair of every example at once in float64, with the C
code's special values: ``chebyshev`` skips NaN differences (``max(d, |a - b|)`` is false for
NaN), ``cosine`` clips the cosine to [-1, 1] and gives NaN for a zero vector. A metric, keyword
or dtype the rules do not know (weights, ``out=``, a callable metric, long double) goes to the
per-example loop, which gives SciPy's result or raises SciPy's error. Loaded by
``batchtensor.foreign`` once ``scipy.spatial`` is imported.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from scipy.spatial import distance

from ._helpers import all_examples, as_array, logical_rank, require
from ._scipy import front, scipy_rule

#: the metrics with a formula here, under every name SciPy accepts for them
_NAMES = {alias: name for name, aliases in {
    "euclidean": ("euclidean", "euclid", "eu", "e"),
    "sqeuclidean": ("sqeuclidean", "sqe", "sqeuclid"),
    "cityblock": ("cityblock", "cblock", "cb", "c"),
    "chebyshev": ("chebychev", "chebyshev", "cheby", "cheb", "ch"),
    "minkowski": ("minkowski", "mi", "m", "pnorm"),
    "cosine": ("cosine", "cos"),
    "correlation": ("correlation", "co"),
}.items() for alias in aliases}


def _metric(metric: Any, kwargs: dict) -> tuple[str, float]:
    """The canonical name and Minkowski ``p`` of a metric the rules compute; the loop else."""
    name = _NAMES.get(metric.lower()) if isinstance(metric, str) else None
    require(name is not None, f"scipy.spatial.distance: metric {metric!r} (no formula here)")
    require(set(kwargs) <= ({"p"} if name == "minkowski" else set()),
            f"scipy.spatial.distance: keywords {sorted(kwargs)} with metric {name!r}")
    p = kwargs.get("p", 2.0)
    require(isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool)
            and p > 0, "scipy.spatial.distance: minkowski p not a positive number")
    return str(name), float(p)


def _points(x: Any, bdim: int | None, size: int, like: Any) -> Any:
    """One argument as float64 points, batch first: ``(B, rows, columns)``."""
    x = front(as_array(x, like), bdim, size)
    require(x.ndim == 3, "scipy.spatial.distance: points not 2-d (SciPy's error)")
    require(x.dtype.kind in "biuf" and x.dtype.itemsize <= 8,
            f"scipy.spatial.distance: {x.dtype} points")
    return x.astype(np.float64, order="C", copy=False)  # (results batch-major, C-ordered)


def _size(*pairs: tuple) -> int:
    return next(x.shape[b] for x, b in pairs if b is not None)


def _distances(name: str, u: Any, v: Any, p: float) -> Any:
    """The metric between the rows of ``u`` and ``v`` (float64, broadcast against each other)
    along the last axis, as SciPy's C kernels give it."""
    with np.errstate(all="ignore"):  # the C kernels raise no floating-point warnings
        if name in ("cosine", "correlation"):
            dot = np.sum(u * v, axis=-1)
            norms = np.sqrt(np.sum(u * u, axis=-1)) * np.sqrt(np.sum(v * v, axis=-1))
            cos = dot / norms
            return 1.0 - np.where(np.abs(cos) > 1.0, np.copysign(1.0, cos), cos)
        d = np.abs(u - v)
        if name == "minkowski" and p in (1.0, 2.0, np.inf):
            name = {1.0: "cityblock", 2.0: "euclidean", np.inf: "chebyshev"}[p]
        if name == "chebyshev":
            if d.shape[-1] == 0:
                return np.sum(d, axis=-1)
            return np.max(np.where(np.isnan(d), 0.0, d), axis=-1)
        if name == "cityblock":
            return np.sum(d, axis=-1)
        if name == "minkowski":
            return np.sum(d ** p, axis=-1) ** (1.0 / p)
        sq = np.sum(d * d, axis=-1)
        return np.sqrt(sq) if name == "euclidean" else sq


def _centred(x: Any, name: str) -> Any:
    if name != "correlation":
        return x
    require(x.shape[-1] > 0, "scipy.spatial.distance: correlation of empty vectors")
    return x - np.mean(x, axis=-1, keepdims=True)


@scipy_rule(distance.cdist)
def cdist_rule(XA, XA_bdim, XB, XB_bdim, metric="euclidean", *, out=None, **kwargs):
    name, p = _metric(metric, kwargs)
    require(out is None, "scipy.spatial.distance.cdist(out=...)")
    size = _size((XA, XA_bdim), (XB, XB_bdim))
    like = XA if XA_bdim is not None else XB
    xa, xb = _points(XA, XA_bdim, size, like), _points(XB, XB_bdim, size, like)
    require(xa.shape[2] == xb.shape[2], "cdist: columns differ (SciPy's error)")
    xa, xb = _centred(xa, name), _centred(xb, name)
    return _distances(name, xa[:, :, None, :], xb[:, None, :, :], p), 0


def _fresh(x: Any) -> Any:
    """``x`` copied batch-major, each example C-ordered (a fancy index may lay it out
    otherwise)."""
    out = np.empty_like(x, order="C")
    np.copyto(out, x)
    return out


def _pairs(m: int, like: Any) -> tuple:
    """The row indices ``(i, j)``, ``i < j``, in the order of a condensed distance matrix."""
    r = np.arange(m, like=like)
    return np.nonzero(r[:, None] < r[None, :])


@scipy_rule(distance.pdist)
def pdist_rule(X, X_bdim, metric="euclidean", *, out=None, **kwargs):
    name, p = _metric(metric, kwargs)
    require(out is None, "scipy.spatial.distance.pdist(out=...)")
    x = _centred(_points(X, X_bdim, X.shape[X_bdim], X), name)
    i, j = _pairs(x.shape[1], x)
    return _fresh(_distances(name, x[:, i, :], x[:, j, :], p)), 0


@scipy_rule(distance.squareform)
def squareform_rule(X, X_bdim, force="no", checks=True):
    nd = logical_rank(X, X_bdim)
    x = front(X, X_bdim, X.shape[X_bdim])
    require(isinstance(force, str) and force.lower() in ("no", "tomatrix", "tovector"),
            f"squareform(force={force!r})")
    require(x.dtype.kind in "biufc", f"squareform of {x.dtype} values")
    # the shapes SciPy refuses (its error, from the loop)
    require(nd in (1, 2) and force.lower() != ("tovector" if nd == 1 else "tomatrix"),
            "squareform: a shape SciPy refuses")
    if nd == 1:
        k = x.shape[1]
        d = int(np.ceil(np.sqrt(k * 2))) if k else 1
        require(d * (d - 1) == k * 2, "squareform: not a binomial coefficient (SciPy's error)")
        i, j = _pairs(d, x)
        m = np.zeros_like(x, shape=(x.shape[0], d, d), order="C")
        m[:, i, j] = x
        m[:, j, i] = x
        return m, 0
    d = x.shape[1]
    require(x.shape[2] == d, "squareform: a matrix that is not square (SciPy's error)")
    if checks:  # is_valid_dm(throw=True): symmetric with a zero diagonal, exactly
        valid = np.all((x == np.swapaxes(x, 1, 2)) & (np.diagonal(x, 0, 1, 2)[:, :, None] == 0))
        require(all_examples(valid), "squareform: not a valid distance matrix (SciPy's error)")
    i, j = _pairs(d, x)
    return _fresh(x[:, i, j]), 0


@scipy_rule(distance.jaccard)
def jaccard_rule(u, u_bdim, v, v_bdim, w=None):
    require(w is None, "jaccard with weights")
    size = _size((u, u_bdim), (v, v_bdim))
    like = u if u_bdim is not None else v
    u, v = front(as_array(u, like), u_bdim, size), front(as_array(v, like), v_bdim, size)
    require(u.ndim == 2 and v.ndim == 2 and u.dtype.kind in "biufc" and v.dtype.kind in "biufc",
            "jaccard: vectors that are not 1-d numbers (SciPy's error)")
    nonzero_u, nonzero_v = u != 0, v != 0
    unequal = np.sum(np.bitwise_xor(nonzero_u, nonzero_v), axis=-1).astype(np.float64)
    nonzero = np.sum(np.bitwise_or(nonzero_u, nonzero_v), axis=-1).astype(np.float64)
    some = nonzero != 0
    return np.where(some, unequal / np.where(some, nonzero, 1.0), 0.0), 0


@scipy_rule(distance.directed_hausdorff)
def directed_hausdorff_rule(u, u_bdim, v, v_bdim, rng=0, *, seed=None):
    # The C code visits the points in an order shuffled by ``rng``, which decides only which
    # indices it reports where distances tie: ties (to rounding) go to the loop, and so does
    # an ``rng`` whose state the call would advance.
    require(seed is None and isinstance(rng, numbers.Integral) and not isinstance(rng, bool),
            "directed_hausdorff with an rng that is not an int seed")
    size = _size((u, u_bdim), (v, v_bdim))
    like = u if u_bdim is not None else v
    a, b = _points(u, u_bdim, size, like), _points(v, v_bdim, size, like)
    require(a.shape[2] == b.shape[2] and a.shape[1] and b.shape[1],
            "directed_hausdorff: shapes the rule does not take")
    require(all_examples(np.isfinite(a)) and all_examples(np.isfinite(b)),
            "directed_hausdorff of non-finite points")
    diff = a[:, :, None, :] - b[:, None, :, :]
    sq = np.sum(diff * diff, axis=-1)  # (B, rows of u, rows of v)
    nearest = np.argmin(sq, axis=2)
    low = np.take_along_axis(sq, nearest[:, :, None], axis=2)[:, :, 0]
    far = np.argmax(low, axis=1)
    top = np.take_along_axis(low, far[:, None], axis=1)[:, 0]
    j = np.take_along_axis(nearest, far[:, None], axis=1)[:, 0]
    # no tie to rounding: the farthest row's nearest point and the farthest row itself each
    # clear of their runner-up by more than the rounding of a sum of squares
    tol = 1e-12 * (1 + a.shape[2]) * np.max(sq, axis=(1, 2)) + 1e-300
    if b.shape[1] > 1:
        row = np.take_along_axis(sq, far[:, None, None], axis=1)[:, 0, :]
        row = np.where(np.arange(b.shape[1], like=row) == j[:, None], np.inf, row)
        require(all_examples(np.min(row, axis=1) - top > tol),
                "directed_hausdorff: nearest points that tie")
    if a.shape[1] > 1:
        low = np.where(np.arange(a.shape[1], like=low) == far[:, None], -np.inf, low)
        require(all_examples(top - np.max(low, axis=1) > tol),
                "directed_hausdorff: farthest points that tie")
    return (np.sqrt(top), 0), (far.astype(np.int64), 0), (j.astype(np.int64), 0)
