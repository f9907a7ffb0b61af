"""scipy.stats moments along axes: ``moment``, ``skew``, ``kurtosis``, ``variation``, ``sem``
(which reduce, and take a tuple of axes: ``axis=None``, every axis of the example, becomes all
of them past the batch axis) and ``zscore`` (which keeps the shape: ``axis=None`` standardises
each example as one flat block). ``nan_policy`` and ``keepdims`` are passed on.

Per example instead (correct, slow, warned): any batched argument but the data, and
``moment(center=)`` an array.

The compiled kernels of SciPy's tests (``swilk``, ``_kendall_dis``, ``_weightedrankedtau``,
``_toint64``, Pythran's ``siegelslopes``) run once per example inside their rules, and the
Kolmogorov-Smirnov distribution's element-by-element ``kolmogn`` / ``kolmognp`` /
``kolmogni`` once on the whole batch. Loaded by ``batchtensor.foreign`` once ``scipy.stats``
is imported.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from scipy.stats import (_continuous_distns, _ksstats, _morestats, _stats_mstats_common,
                         _stats_py)

from ..plumbing import innermost, scan_level
from ..registry import batch_rule
from ..scalars import ARRAY_0D, Array0d
from ..tensor import BatchedTensor
from ._helpers import (align_front, batch_outermost, batch_size_of, batched_as, levels_of,
                       logical_rank, logical_shape, plain_value, require, truthy)
from ._kernels import (copy_c, each_example, examples, interleaved, kernel_call,
                       loop_c_contiguous, stacked)
from ._scipy import call, front_axes, front_axis, scipy_rule, writes_into


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


# ---- compiled kernels, once per example ---------------------------------------------------------
# SciPy's Python code calls them with one example's 1-d arrays and gets Python scalars back
# (rules/_kernels.py); ``batchtensor.foreign`` intercepts each under the name the calling
# module bound it to (``CALLED_AS``).
_swilk = _morestats.swilk
_kendall_dis = _stats_py._kendall_dis
_weightedrankedtau = _stats_py._weightedrankedtau
_toint64 = _stats_py._toint64
_siegelslopes = _stats_mstats_common.siegelslopes_pythran
_kolmogn, _kolmognp, _kolmogni = _ksstats.kolmogn, _ksstats.kolmognp, _ksstats.kolmogni


def _size(*pairs) -> int:
    return batch_size_of(pairs[::2], pairs[1::2])


def _like(*pairs):
    return next(v for v, b in zip(pairs[::2], pairs[1::2]) if b is not None)


@scipy_rule(_swilk)
def swilk_rule(x, x_bdim, a, a_bdim, init=False, n1=-1):
    """Without ``init`` the kernel writes the coefficients into ``a``: values that depend on
    the lengths alone, so an ``a`` that is not batched gets the same values from every
    example, as in the loop; a batched one each example's (copied back where the kernel
    wrote into a contiguous copy)."""
    size = _size(x, x_bdim, a, a_bdim)
    if not truthy(init):
        writes_into(a)
    targets = examples(a, a_bdim, size)
    copied = interleaved(a, a_bdim)
    passed = [copy_c(t) for t in targets] if copied else targets
    res = each_example(_swilk, examples(x, x_bdim, size, contiguous=True), passed,
                       [init] * size, [n1] * size)
    if copied:
        for t, p in zip(targets, passed):
            np.copyto(t, p)
    return stacked(res, _like(x, x_bdim, a, a_bdim), (np.float64, np.float64, np.int64))


@scipy_rule(_kendall_dis)
def kendall_dis_rule(x, x_bdim, y, y_bdim):
    size = _size(x, x_bdim, y, y_bdim)
    res = each_example(_kendall_dis, examples(x, x_bdim, size), examples(y, y_bdim, size))
    return stacked(res, _like(x, x_bdim, y, y_bdim), (np.int64,))[0]


@scipy_rule(_weightedrankedtau)
def weightedrankedtau_rule(x, x_bdim, y, y_bdim, rank, rank_bdim, weigher, additive):
    size = _size(x, x_bdim, y, y_bdim, rank, rank_bdim)
    res = each_example(_weightedrankedtau, examples(x, x_bdim, size), examples(y, y_bdim, size),
                       examples(rank, rank_bdim, size), [weigher] * size, [additive] * size)
    return stacked(res, _like(x, x_bdim, y, y_bdim, rank, rank_bdim), (np.float64,))[0]


@scipy_rule(_toint64)
def toint64_rule(x, x_bdim):
    """Ranks (NaN lowest) of each example: an int64 array of its length."""
    size = x.shape[x_bdim]
    res = each_example(_toint64, examples(x, x_bdim, size))
    return stacked(res, x, (np.int64,))[0] if size else \
        (np.empty((0, *logical_shape(x, x_bdim)), dtype=np.int64, like=x), 0)


@scipy_rule(_siegelslopes)
def siegelslopes_rule(y, y_bdim, x, x_bdim, method, /):
    size = _size(y, y_bdim, x, x_bdim)
    res = each_example(_siegelslopes, examples(y, y_bdim, size, contiguous=True),
                       examples(x, x_bdim, size, contiguous=True), [method] * size)
    return stacked(res, _like(y, y_bdim, x, x_bdim), (np.float64, np.float64))


# ---- the Kolmogorov-Smirnov distribution: elementwise Python loops (np.nditer) ---------------
def _elementwise(fn, values: list, bdims: list, dtypes: tuple = ()) -> tuple:
    """``fn`` (a Python loop over the broadcast elements, each computed alone) on the whole
    batch at once: every element is computed as in its example. ``np.nditer`` lays out each
    example's result as its inputs lie (order K): C order where each is C-contiguous, as the
    batch-first result here; other layouts go to the loop. ``dtypes``: the dtype ``fn``'s
    iterator asks of each array (``op_dtypes``, without buffering: another dtype raises, or
    not, by the example's shape), which the loop answers for any other."""
    require(all(dt is None or not hasattr(v, "dtype") or v.dtype == dt
                for v, dt in zip(values, dtypes)), f"{fn.__name__} of another dtype")
    ranks = [logical_rank(v, b) if b is not None else np.ndim(v) for v, b in zip(values, bdims)]
    require(all(r <= 1 or loop_c_contiguous(v, b) for v, b, r in zip(values, bdims, ranks)),
            f"{fn.__name__} of inputs of several axes that are not C-contiguous")
    aligned = align_front(values, bdims, max(ranks))
    if scan_level(aligned) is not None:
        # an outer level takes the call, and sees this level's batch as an axis of its
        # examples: hand it C-ordered blocks, whose results it lays out as they are here
        aligned = [np.copy(v, order="C") if type(v) is BatchedTensor else v for v in aligned]
    res = kernel_call(fn, *aligned)
    if type(res) is np.ndarray and not res.flags.c_contiguous:
        res = copy_c(res)
    return res, 0


@scipy_rule(_kolmogn)
def kolmogn_rule(n, n_bdim, x, x_bdim, cdf=True, cdf_bdim=None):
    return _elementwise(_kolmogn, [n, x, cdf], [n_bdim, x_bdim, cdf_bdim],
                        (None, np.float64, np.bool_))


@scipy_rule(_kolmognp)
def kolmognp_rule(n, n_bdim, x, x_bdim):
    return _elementwise(_kolmognp, [n, x], [n_bdim, x_bdim])


@scipy_rule(_kolmogni)
def kolmogni_rule(n, n_bdim, q, q_bdim, cdf=True, cdf_bdim=None):
    return _elementwise(_kolmogni, [n, q, cdf], [n_bdim, q_bdim, cdf_bdim])


for _op in (_kolmogn, _kolmognp, _kolmogni):
    ARRAY_0D[_op] = Array0d.ALWAYS  # np.nditer's allocated operand: a 0-d array per example

# ---- _cdf_distance (wasserstein_distance, energy_distance) -------------------------------------
_cdf_distance = _stats_py._cdf_distance


@batch_rule(_cdf_distance, raw=True)
def cdf_distance_rule(level, args, kwargs):
    """SciPy's Python code runs on batched values as it is, but where one distribution is
    plain and the other batched, ``u_values[u_sorter].searchsorted(all_values[:-1])`` is a
    plain array's method given a batched argument, which NumPy converts. So the plain
    arguments become broadcast views batched where the others are first: ``_cdf_distance``
    only reads them and returns a new value."""
    p, *arrays = args
    batched = next((v for v in (*arrays, *kwargs.values()) if type(v) is BatchedTensor), None)
    if batched is None:
        return _cdf_distance(*args, **kwargs)
    levels = levels_of([*arrays, *kwargs.values()])
    like = innermost(batched)
    arrays = [batched_as(v, levels, like) if v is not None and plain_value(v, False) else v
              for v in arrays]
    kwargs = {k: batched_as(v, levels, like) if v is not None and plain_value(v, False) else v
              for k, v in kwargs.items()}
    return _cdf_distance(p, *arrays, **kwargs)


#: (module, name, kernel): ``batchtensor.foreign`` intercepts the kernel under that name there
CALLED_AS = [(_stats_py, "_cdf_distance", _cdf_distance),
             (_morestats, "swilk", _swilk),
             (_stats_py, "_kendall_dis", _kendall_dis),
             (_stats_py, "_weightedrankedtau", _weightedrankedtau),
             (_stats_py, "_toint64", _toint64),
             (_stats_mstats_common, "siegelslopes_pythran", _siegelslopes),
             *((_continuous_distns, f.__name__, f) for f in (_kolmogn, _kolmognp, _kolmogni))]
