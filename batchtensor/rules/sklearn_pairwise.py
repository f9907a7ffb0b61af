"""scikit-learn's compiled pairwise kernels as NumPy formulas on the whole batch.

- ``_chi2_kernel_fast(X, Y, result)`` (behind ``additive_chi2_kernel`` and ``chi2_kernel``)
  fills ``result``, which scikit-learn made with ``np.zeros`` just before: the rule writes the
  batched kernel into it with ``np.copyto``, so an array the function made becomes batched
  (``batchtensor.buffers``; where vmap does not know the array yet, the refused write teaches
  it that ``np.zeros`` call for the next pass) and any other array meets vmap's write checks.
  As the Cython code, it takes each difference and sum in the points' precision and sums
  the terms in float64.
- ``haversine_distances`` (``DistanceMetric.get_metric("haversine").pairwise``, a method of
  a compiled class, which cannot be intercepted) with the formula of that class, in float64.
- ``pairwise_distances_argmin`` / ``pairwise_distances_argmin_min`` with the Euclidean metric
  (scikit-learn's compiled ``ArgKmin``): as ``ArgKmin`` does, the nearest row minimises
  ``|y|^2 - 2 x.y`` (float64 dot products) and its distance is ``sqrt(max(|x|^2 + that, 0))``
  (the square rounded to float32 for float32 points, as ``ArgKmin32`` keeps it).
  Where two candidates are within rounding of each other, the index could differ from
  scikit-learn's, so such a call goes to the per-example loop.

What the formulas do not cover (other metrics, keywords, dtypes, non-finite values, shapes
scikit-learn refuses) goes to the per-example loop, which gives scikit-learn's result or error.
Loaded by ``batchtensor.foreign`` once ``sklearn.metrics`` is imported (scikit-learn is
optional: never imported by ``import batchtensor``).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from sklearn import get_config  # type: ignore[import-untyped]
from sklearn.metrics import _pairwise_fast, pairwise  # type: ignore[import-untyped]

from ..plumbing import unwrap, wrap
from ._helpers import all_examples, as_array, read_only, require
from ._scipy import front, scipy_rule

_FLOATS = (np.float32, np.float64)


def _batch_size(*pairs: tuple) -> int:
    return next(x.shape[b] for x, b in pairs if b is not None)


@scipy_rule(_pairwise_fast._chi2_kernel_fast, raw=True)
def chi2_kernel_fast_rule(level, args, kwargs):
    require(len(args) == 3 and not kwargs, "_chi2_kernel_fast called with keywords")
    X, Y, result = args
    (x, x_bdim), (y, y_bdim) = unwrap(X, level), unwrap(Y, level)
    require(x_bdim is not None or y_bdim is not None, "_chi2_kernel_fast: a batched result")
    size = _batch_size((x, x_bdim), (y, y_bdim))
    like = x if x_bdim is not None else y
    x, y = front(as_array(x, like), x_bdim, size), front(as_array(y, like), y_bdim, size)
    # the fused signature's checks (all of one floating type, 2-d, writeable memory; vmap
    # hands an unmapped argument over read-only, which the loop's example is not)
    dtype = getattr(result, "dtype", None)
    require(x.dtype in _FLOATS and y.dtype == x.dtype and dtype == x.dtype
            and x.ndim == 3 and y.ndim == 3 and x.shape[2] == y.shape[2]
            and tuple(result.shape) == (x.shape[1], y.shape[1])
            and not (x_bdim is not None and read_only(x))
            and not (y_bdim is not None and read_only(y)),
            "_chi2_kernel_fast: arguments its signature refuses")
    u, v = x[:, :, None, :], y[:, None, :, :]
    diff, total = (u - v).astype(np.float64), (u + v).astype(np.float64)
    with np.errstate(all="ignore"):  # (compiled code raises no floating-point warnings)
        terms = np.where(total != 0, diff * diff / np.where(total != 0, total, 1.0), 0.0)
    kernel = (-np.sum(terms, axis=-1)).astype(x.dtype)
    # through the dispatcher: a buffer f made becomes batched; into a plain array, the error
    # that teaches vmap the maker of the array (scikit-learn's np.zeros) for the next pass
    np.copyto(result, wrap(kernel, 0, level))
    return None


@scipy_rule(pairwise.haversine_distances)
def haversine_distances_rule(X, X_bdim, Y=None, Y_bdim=None):
    size = _batch_size((X, X_bdim), (Y, Y_bdim))
    like = X if X_bdim is not None else Y
    x = front(as_array(X, like), X_bdim, size)
    y = x if Y is None else front(as_array(Y, like), Y_bdim, size)
    for p in (x, y):
        require(p.ndim == 3 and p.shape[2] == 2 and p.shape[1] > 0 and p.dtype.kind in "iuf",
                "haversine_distances: points scikit-learn refuses")
        require(all_examples(np.isfinite(p)), "haversine_distances of non-finite points")
    x, y = x.astype(np.float64, order="C", copy=False), y.astype(np.float64, order="C", copy=False)
    lat, lon = x[:, :, None, 0], x[:, :, None, 1]
    lat2, lon2 = y[:, None, :, 0], y[:, None, :, 1]
    sin_0, sin_1 = np.sin(0.5 * (lat - lat2)), np.sin(0.5 * (lon - lon2))
    rdist = sin_0 * sin_0 + np.cos(lat) * np.cos(lat2) * sin_1 * sin_1
    return 2 * np.arcsin(np.sqrt(rdist)), 0


def _usable(X: Any, Y: Any, axis: Any, metric: Any, metric_kwargs: Any) -> bool:
    """Whether scikit-learn would take ``ArgKmin``'s Euclidean path for these examples (its
    ``is_usable_for``: one floating dtype, C-contiguous examples) and the rule's formula
    applies; otherwise scikit-learn's own code runs on the batched values."""
    return (metric == "euclidean" and not metric_kwargs and axis in (0, 1)
            and all(isinstance(a, np.ndarray) and a.ndim == 2 and a.flags.c_contiguous
                    for a in (X, Y))
            and X.dtype == Y.dtype and X.dtype in _FLOATS and X.shape[1] == Y.shape[1]
            and 0 not in X.shape and 0 not in Y.shape
            and get_config().get("enable_cython_pairwise_dist", True))


def _nearest(X: Any, Y: Any, axis: int, level: Any) -> tuple:
    """``(indices, distances)`` of the nearest row of Y to each row of X, batch first."""
    (x, x_bdim), (y, y_bdim) = unwrap(X, level), unwrap(Y, level)
    size = _batch_size((x, x_bdim), (y, y_bdim))
    x, y = front(x, x_bdim, size), front(y, y_bdim, size)
    require(all_examples(np.isfinite(x)) and all_examples(np.isfinite(y)),
            "pairwise_distances_argmin of non-finite values (scikit-learn's error)")
    if axis == 0:
        x, y = y, x
    single = x.dtype == np.float32  # ArgKmin32 keeps its squared distances in float32
    x, y = x.astype(np.float64, copy=False), y.astype(np.float64, copy=False)
    xx, yy = np.sum(x * x, axis=-1), np.sum(y * y, axis=-1)
    surrogate = yy[:, None, :] - 2 * np.matmul(x, np.swapaxes(y, 1, 2))
    nearest = np.argmin(surrogate, axis=2)
    best = np.take_along_axis(surrogate, nearest[:, :, None], axis=2)[:, :, 0]
    if y.shape[1] > 1:  # the runner-up clear of the best by more than their rounding
        others = np.where(np.arange(y.shape[1], like=y) == nearest[:, :, None], np.inf,
                          surrogate)
        scale = xx + np.max(yy, axis=1)[:, None] + 1.0
        eps = np.finfo(np.float32 if single else np.float64).eps
        require(all_examples(np.min(others, axis=2) - best > 64 * eps * (x.shape[2] + 2) * scale),
                "pairwise_distances_argmin: nearest rows that tie to rounding")
    squared = np.maximum(xx + best, 0.0)
    if single:
        squared = squared.astype(np.float32)
    return (wrap(nearest.astype(np.int64), 0, level),
            wrap(np.sqrt(squared).astype(np.float64), 0, level))


def _argmin_rule(op: Any, distances: bool) -> None:
    signature = inspect.signature(op)

    @scipy_rule(op, raw=True)
    def rule(level, args, kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return op(*args, **kwargs)  # (scikit-learn's own error)
        bound.apply_defaults()
        a = bound.arguments
        if not _usable(a["X"], a["Y"], a["axis"], a["metric"], a["metric_kwargs"]):
            return op(*args, **kwargs)  # scikit-learn's code on the batched values
        indices, values = _nearest(a["X"], a["Y"], a["axis"], level)
        return (indices, values) if distances else indices

    rule.__name__ = f"{op.__name__}_rule"


_argmin_rule(pairwise.pairwise_distances_argmin_min, distances=True)
_argmin_rule(pairwise.pairwise_distances_argmin, distances=False)
