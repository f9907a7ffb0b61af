"""scipy.stats moments along axes: ``moment``, ``skew``, ``kurtosis``, ``variation``, ``sem``
(which reduce, and take a tuple of axes: ``axis=None``, every axis of the example, becomes all
of them past the batch axis) and ``zscore`` (which keeps the shape: ``axis=None`` standardises
each example as one flat block). ``nan_policy`` and ``keepdims`` are passed on.

Per example instead (correct, slow, warned): any batched argument but the data, and
``moment(center=)`` an array. Loaded by ``batchtensor.foreign`` once ``scipy.stats`` is
imported.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..scalars import ARRAY_0D, Array0d
from ._helpers import batch_outermost, logical_rank, require
from ._scipy import call, front_axes, front_axis, scipy_rule


def _reduce(a, a_bdim, axis) -> tuple:
    """The batch-first data (each example one block, as the loop sums it) and the axes. SciPy
    reads a 0-d example as a 1-d one of one value."""
    nd = logical_rank(a, a_bdim)
    a = batch_outermost(a, a_bdim)
    if nd == 0:
        a, nd = np.expand_dims(a, 1), 1
    return a, front_axes(axis, nd)


@scipy_rule(stats.moment)
def moment_rule(a, a_bdim, order=1, axis=0, nan_policy="propagate", *, center=None,
                keepdims=False):
    require(center is None or np.ndim(center) == 0, "moment(center=) is an array")
    a, axes = _reduce(a, a_bdim, axis)
    res = call(stats, "moment")(a, order, axes, nan_policy, center=center, keepdims=keepdims)
    k = np.ndim(order)  # several orders: one leading axis of results
    return (np.ascontiguousarray(np.moveaxis(res, k, 0)) if k else res), 0


def _reduction(name: str):
    fn = call(stats, name)

    @scipy_rule(getattr(stats, name))
    def rule(a, a_bdim, axis=0, *args, **kwargs):
        a, axes = _reduce(a, a_bdim, axis)
        return fn(a, axes, *args, **kwargs), 0

    rule.__name__ = f"{name}_rule"


for _name in ("skew", "kurtosis", "variation", "sem"):
    _reduction(_name)


@scipy_rule(stats.zscore)
def zscore_rule(a, a_bdim, axis=0, ddof=0, nan_policy="propagate"):
    fn = call(stats, "zscore")
    if axis is not None:
        ax = front_axis(axis, logical_rank(a, a_bdim))
        return fn(batch_outermost(a, a_bdim), ax, ddof, nan_policy), 0
    a = batch_outermost(a, a_bdim)
    shape = a.shape
    flat = np.reshape(a, (shape[0], math.prod(shape[1:])))  # each example one row
    res = np.reshape(fn(flat, 1, ddof, nan_policy), shape)
    out = np.empty_like(a, dtype=res.dtype)  # laid out as the data, as each example's is
    np.copyto(out, res)
    return out, 0


ARRAY_0D[stats.zscore] = Array0d.ALWAYS  # a 0-d example gives a 0-d array
