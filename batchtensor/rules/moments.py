"""Moments: average cov corrcoef.

Split from statistics.py by subject: the weighted mean of the examples (average) and their
weighted covariance, with the correlation coefficients made from it (cov, corrcoef). Quantiles,
histograms and differences have their own modules (quantiles.py, histograms.py,
differences.py); ``reduced_axes`` and ``small`` come from quantiles.py.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..registry import batch_rule
from ._helpers import (all_examples, any_example, batch_outermost, batch_size_of, dry_run,
                       ensure_bdim, logical_rank, logical_shape)
from .quantiles import reduced_axes, small


# ---- average, cov, corrcoef ---------------------------------------------------------------------
def _full_weights(w, x, laxes, argname: str = "weights"):
    """Batch-first weights broadcast to the batch-first ``x``; a 1-d example of weights lies
    along the one reduced axis (NumPy's rule)."""
    if w.ndim != x.ndim:
        shape = [1] * x.ndim
        shape[0], shape[laxes[0] + 1] = w.shape[0], w.shape[1]
        w = np.reshape(w, tuple(shape))
    return np.broadcast_to(w, x.shape)


@batch_rule(np.average)
def average_rule(a, a_bdim, axis=None, weights=None, weights_bdim=None, returned=False, *,
                 keepdims=np._NoValue):
    nd = logical_rank(a, a_bdim)
    laxes = reduced_axes(axis, nd)
    n = batch_size_of((a, weights), (a_bdim, weights_bdim))
    x = batch_outermost(ensure_bdim(a, a_bdim, n), 0)
    kw = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is not None:
        # NumPy's shape checks on one example (ones: no division by zero)
        dry_run(np.average, small(x.shape[1:]), x.dtype, axis=axis,
                weights=np.ones(small(logical_shape(weights, weights_bdim))))
        kw["weights"] = _full_weights(ensure_bdim(weights, weights_bdim, n), x, laxes)
    if not n:  # NumPy divides by the result's size: take shape and dtype from one example
        x = np.zeros((1,) + x.shape[1:], dtype=x.dtype, like=x)
        if "weights" in kw:
            kw["weights"] = np.ones((1,) + kw["weights"].shape[1:], kw["weights"].dtype,
                                    like=kw["weights"])
    res = np.average(x, axis=tuple(d + 1 for d in laxes), returned=returned, **kw)
    if not n:
        res = tuple(r[:0] for r in res) if returned else res[:0]
    return ((res[0], 0), (res[1], 0)) if returned else (res, 0)


def _as_variables(v, bdim, n, rowvar: bool, name: str):
    """One example's ``m``/``y`` as (B, variables, observations), as np.cov reads it."""
    nd = logical_rank(v, bdim)
    if nd > 2:
        raise ValueError(f"{name} has more than 2 dimensions")
    x = ensure_bdim(v, bdim, n)
    if nd < 2:  # np.array(m, ndmin=2)
        x = np.reshape(x, (n, 1, x.shape[1] if nd else 1))
    return x


def _check_obs_weights(w, bdim, n, nobs: int, name: str, frequency: bool):
    if logical_rank(w, bdim) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    w = ensure_bdim(w, bdim, n).astype(np.float64)
    if w.shape[1] != nobs:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if frequency and not all_examples(w == np.around(w)):
        raise TypeError("fweights must be integer")
    if any_example(w < 0):
        raise ValueError(f"{name} cannot be negative")
    return w


def _batched_cov(m, m_bdim, y, y_bdim, rowvar, bias, ddof, fweights, fweights_bdim, aweights,
                 aweights_bdim, dtype):
    """np.cov per example; returns (B, V, V) before NumPy's final squeeze."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    n = batch_size_of((m, y, fweights, aweights), (m_bdim, y_bdim, fweights_bdim, aweights_bdim))
    if dtype is None:
        dts = [m.dtype] + ([y.dtype] if y is not None else [])
        dtype = np.result_type(*dts, np.float64)
    mnd = logical_rank(m, m_bdim)
    X = _as_variables(m, m_bdim, n, rowvar, "m").astype(dtype)
    if not rowvar and mnd != 1:
        X = np.swapaxes(X, 1, 2)
    if X.shape[1] == 0:
        return None, n
    if y is not None:
        Y = _as_variables(y, y_bdim, n, rowvar, "y").astype(dtype)
        if not rowvar and Y.shape[1] != 1:
            Y = np.swapaxes(Y, 1, 2)
        X = np.concatenate((X, Y), axis=1)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    nobs = X.shape[2]
    w = None
    if fweights is not None:
        w = _check_obs_weights(fweights, fweights_bdim, n, nobs, "fweights", True)
    aw = None
    if aweights is not None:
        aw = _check_obs_weights(aweights, aweights_bdim, n, nobs, "aweights", False)
        w = aw if w is None else w * aw
    if w is None:
        avg = np.mean(X, axis=2)
        fact = nobs - ddof
        bad = fact <= 0
        fact = 0.0 if bad else fact
    else:
        avg, w_sum = np.average(X, axis=2, weights=np.broadcast_to(w[:, None, :], X.shape),
                                returned=True)
        w_sum = w_sum[:, 0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aw, axis=1) / w_sum
        bad = bool(np.any(fact <= 0))
        fact = np.reshape(np.where(fact <= 0, 0.0, fact), (n, 1, 1))
    if bad:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=5)
    X = X - avg[:, :, None]
    X_T = np.swapaxes(X if w is None else X * w[:, None, :], 1, 2)
    c = np.matmul(X, np.conj(X_T))
    c *= np.true_divide(1, fact)  # in place, as NumPy: c keeps its dtype
    return c, n


def _squeeze_cov(c):
    return (c[:, 0, 0], 0) if c.shape[1] == 1 else (c, 0)


def _empty_cov(m, n):
    return np.zeros((n, 0, 0), dtype=np.float64, like=m), 0


@batch_rule(np.cov)
def cov_rule(m, m_bdim, y=None, y_bdim=None, rowvar=True, bias=False, ddof=None,
             fweights=None, fweights_bdim=None, aweights=None, aweights_bdim=None, *,
             dtype=None):
    c, n = _batched_cov(m, m_bdim, y, y_bdim, rowvar, bias, ddof, fweights, fweights_bdim,
                        aweights, aweights_bdim, dtype)
    return _empty_cov(m, n) if c is None else _squeeze_cov(c)


@batch_rule(np.corrcoef)
def corrcoef_rule(x, x_bdim, y=None, y_bdim=None, rowvar=True, *, dtype=None):
    c, n = _batched_cov(x, x_bdim, y, y_bdim, rowvar, False, None, None, None, None, None,
                        dtype)
    if c is None:
        c = np.zeros((n, 0, 0), dtype=np.float64, like=x)
        return c / c, 0  # NumPy divides the empty covariance too (keeps its dtype)
    if c.shape[1] == 1:  # a scalar covariance: nan if 0/nan/inf, else 1
        c = c[:, 0, 0]
        return c / c, 0
    d = np.diagonal(c, axis1=1, axis2=2)
    stddev = np.sqrt(np.real(d))
    c = c / stddev[:, :, None]
    c = c / stddev[:, None, :]
    if c.dtype.kind == "c":
        re, im = np.clip(np.real(c), -1, 1), np.clip(np.imag(c), -1, 1)
        c = np.copy(c)
        c.real, c.imag = re, im
        return c, 0
    return np.clip(c, -1, 1), 0
