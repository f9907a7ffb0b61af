"""numpy.ma: masked arrays made inside the function (batchtensor/masked.py).

Each op builds its masked arrays from data and a mask drawn per example, so the examples' masks
differ: some mask nothing, some a part, some everything. It returns its results as ``(data,
mask)`` pairs, the data filled with 0 where masked (numpy.ma leaves the data under a mask
unspecified: the loop's ``np.ma.masked`` holds 0, a batch's masked element what the computation
left there), so the sweep compares values and masks. ``nomask`` samples use ``np.ma.asarray``,
whose examples have no mask at all.

Nested vmaps are not swept: a masked batch is vectorised at one vmap level, and the inner level
of a nested vmap runs per example there (tests/test_masked.py checks its values).
"""

from __future__ import annotations

import operator

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

MA = np.ma.MaskedArray
FLOATS = (np.float64, np.float32)


def _mask(rng, shape):
    """A mask whose density differs per example: nothing, a quarter, half or all masked."""
    p = rng.choice([0.0, 0.25, 0.5, 1.0])
    return np.asarray(rng.random(shape) < p)


def _data(rng, shape, dtype, positive=False):
    if positive:
        return make_array(rng, shape, dtype, low=0.1, high=4.0)
    return make_array(rng, shape, dtype)


def _out(r):
    """A result as new arrays (data, 0 where masked; mask); pytrees of them alike. (New, so
    that the sweep's writes into the outputs test the op, not these helpers: ``filled`` and
    ``getmaskarray`` return views of some examples' masked arrays; ``ma.filled`` and
    ``ma.getmaskarray`` test those.)"""
    if type(r) in (tuple, list):  # (isinstance of a reduction's result whose examples are
        return tuple(_out(x) for x in r)  # np.ma.masked in some and scalars in others reruns)
    mask = np.ma.getmaskarray(r)
    # (np.array: NumPy's mask of a 0-d result may be a NumPy bool scalar, immutable)
    return np.where(mask, 0, np.ma.getdata(r)), np.array(mask, copy=True)


def _masked(x, m):
    return np.ma.array(x, mask=m)


# ---- samples ----------------------------------------------------------------------------------
_SHAPES = [((6,), "1-d"), ((3, 4), "2-d"), ((), "0-d"), ((0,), "size 0"),
           ((2, 0, 3), "a size-0 axis")]


_SHARED = ("the data is not batched, only the mask: every example's masked array is over "
           "the same data, which a write would change for all of them (SharedWriteError)")


def _unary_samples(positive=False, shapes=_SHAPES, vmap_error=None):
    def samples(rng, dtype):
        for shape, name in shapes:
            yield SampleInput((_data(rng, shape, dtype, positive), _mask(rng, shape)), {}, name,
                              vmap_error=vmap_error)
    return samples


def _binary_samples(rng, dtype, vmap_error=None):
    def one(args, name):
        return SampleInput(args, {}, name, vmap_error=vmap_error)
    yield one((_data(rng, (6,), dtype), _mask(rng, (6,)), _data(rng, (6,), dtype),
               _mask(rng, (6,))), "1-d")
    yield one((_data(rng, (3, 4), dtype), _mask(rng, (3, 4)), _data(rng, (4,), dtype),
               _mask(rng, (4,))), "broadcasting")
    yield one((_data(rng, (), dtype), _mask(rng, ()), _data(rng, (2, 3), dtype),
               _mask(rng, (2, 3))), "0-d and 2-d")
    yield one((_data(rng, (0, 2), dtype), _mask(rng, (0, 2)), _data(rng, (2,), dtype),
               _mask(rng, (2,))), "size 0")


def _same_shape_samples(rng, dtype):
    """Two masked arrays of one shape (of two shapes, numpy.ma's allclose masks one with the
    other's mask or raises: once per example, tests/test_masked.py)."""
    for shape, name in _SHAPES:
        x = _data(rng, shape, dtype)
        yield SampleInput((x, _mask(rng, shape), np.where(rng.random(shape) < 0.5, x,
                                                          _data(rng, shape, dtype)),
                           _mask(rng, shape)), {}, name)


_PLAIN_LEFT = ("a plain masked array on the left of a batched one: numpy.ma's own operator "
               "runs, which asks whether anything is masked (a ControlFlowError with "
               "fallback='error', groups otherwise: tests/test_masked.py)")


def _operator_samples(rng, dtype):
    return _binary_samples(rng, dtype, vmap_error=_PLAIN_LEFT)


def _reduction_samples(tuple_axes=True, keepdims=True):
    def samples(rng, dtype):
        x = lambda shape: (_data(rng, shape, dtype), _mask(rng, shape))  # noqa: E731
        yield SampleInput(x((6,)), {}, "1-d")
        yield SampleInput(x((3, 4)), {}, "2-d, every axis")
        yield SampleInput(x((3, 4)), {"axis": 1}, "axis=1")
        yield SampleInput(x((3, 4)), {"axis": -2}, "axis=-2")
        yield SampleInput(x(()), {}, "0-d")
        if tuple_axes:
            yield SampleInput(x((2, 3, 4)), {"axis": (0, 2)}, "tuple axis")
        if keepdims:
            yield SampleInput(x((3, 4)), {"axis": 0, "keepdims": True}, "keepdims")
        yield SampleInput(x((3, 0)), {"axis": 1}, "over a size-0 axis")
    return samples


def _nomask_samples(rng, dtype):
    yield SampleInput((_data(rng, (6,), dtype), _mask(rng, (6,))), {"nomask": True},
                      "nomask: np.ma.asarray")
    yield SampleInput((_data(rng, (3, 4), dtype), _mask(rng, (3, 4))), {"nomask": True},
                      "nomask, 2-d")


def _with_nomask(samples):
    def both(rng, dtype):
        yield from samples(rng, dtype)
        yield from _nomask_samples(rng, dtype)
    return both


def _made(x, m, nomask=False):
    return np.ma.asarray(x) if nomask else _masked(x, m)


# ---- op builders --------------------------------------------------------------------------------
def _method(name, **fixed):
    """``MaskedArray.<name>(**kwargs)`` of the sample's masked array."""
    def op(x, m, nomask=False, **kwargs):
        return _out(getattr(_made(x, m, nomask), name)(**fixed, **kwargs))
    return op


def _function(fn, **fixed):
    """``fn(masked array, **kwargs)``; a numpy.ma function looked up in ``np.ma`` when it
    runs (``np.ma.log``, as user code reaches it)."""
    name = getattr(fn, "__name__", None)
    looked_up = getattr(np.ma, name, None) is fn if name else False

    def op(x, m, nomask=False, **kwargs):
        f = getattr(np.ma, name) if looked_up else fn
        return _out(f(_made(x, m, nomask), **fixed, **kwargs))
    return op


def _binary(fn):
    name = getattr(fn, "__name__", None)
    looked_up = getattr(np.ma, name, None) is fn if name else False

    def op(x, m, y, n):
        f = getattr(np.ma, name) if looked_up else fn
        return _out(f(_masked(x, m), _masked(y, n)))
    return op


def _entry(name, op, samples, covers, dtypes=FLOATS, **kw):
    return OpInfo(name, op, samples, "rule", dtypes=dtypes, covers=covers, **kw)


OPS: list[OpInfo] = []

# constructors and masks by value: the result is the masked array itself
_CONSTRUCTORS = {
    "array": lambda x, m: np.ma.array(x, mask=m),
    "masked_array": lambda x, m: np.ma.masked_array(x, mask=m),
    "asarray": lambda x, m: np.ma.asarray(x),
    "asanyarray": lambda x, m: np.ma.asanyarray(x),
    "masked_invalid": lambda x, m: np.ma.masked_invalid(np.where(m, np.nan, x)),
    "masked_where": lambda x, m: np.ma.masked_where(m, x),
    "masked_equal": lambda x, m: np.ma.masked_equal(np.where(m, 0, x), 0),
    "masked_not_equal": lambda x, m: np.ma.masked_not_equal(np.where(m, x, 1), 1),
    "masked_greater": lambda x, m: np.ma.masked_greater(x, 0.5),
    "masked_greater_equal": lambda x, m: np.ma.masked_greater_equal(x, 0.5),
    "masked_less": lambda x, m: np.ma.masked_less(x, -0.5),
    "masked_less_equal": lambda x, m: np.ma.masked_less_equal(x, -0.5),
    "masked_inside": lambda x, m: np.ma.masked_inside(x, -0.5, 0.5),
    "masked_outside": lambda x, m: np.ma.masked_outside(x, -0.5, 0.5),
    "masked_values": lambda x, m: np.ma.masked_values(np.where(m, 1.5, x), 1.5),
    "fix_invalid": lambda x, m: np.ma.fix_invalid(np.where(m, np.inf, x), fill_value=-1.0),
    "atleast_1d": lambda x, m: np.ma.atleast_1d(_masked(x, m)),
    "atleast_2d": lambda x, m: np.ma.atleast_2d(_masked(x, m)),
    "atleast_3d": lambda x, m: np.ma.atleast_3d(_masked(x, m)),
}
for _name, _fn in _CONSTRUCTORS.items():
    _covers = np.ma.core.MaskedArray.__new__ if _name == "masked_array" else getattr(
        np.ma, _name)
    OPS.append(_entry(f"ma.{_name}", lambda x, m, _fn=_fn: _out(_fn(x, m)), _unary_samples(),
                      _covers))

# queries
OPS += [
    _entry("ma.getmaskarray", lambda x, m, nomask=False: np.ma.getmaskarray(_made(x, m, nomask)),
           _with_nomask(_unary_samples()), np.ma.getmaskarray),
    _entry("ma.getdata", lambda x, m, nomask=False: np.ma.getdata(_made(x, m, nomask)),
           _with_nomask(_unary_samples()), np.ma.getdata),
    _entry("ma.is_masked", lambda x, m: np.ma.is_masked(_masked(x, m)), _unary_samples(),
           np.ma.is_masked),
    _entry("ma.filled", lambda x, m, nomask=False: np.ma.filled(_made(x, m, nomask), -2.0),
           _with_nomask(_unary_samples()), np.ma.filled),
    _entry("ma.count", _function(np.ma.count), _reduction_samples(), MA.count),
    _entry("ma.compressed.sum", lambda x, m: _out(_masked(x, m).compressed().sum()),
           _unary_samples(), np.ma.MaskedArray.compressed, rtol32=1e-4,
           skip_nested="a ragged selection is of one level's examples: in a nested vmap, "
                       "compressed() of examples that keep different counts runs once per "
                       "example of the inner level (tests/test_masked.py checks its values)"),
    _entry("ma.harden_mask", lambda x, m: _out(_set_masked(_masked(x, m).harden_mask())),
           _unary_samples(shapes=_SHAPES[:2], vmap_error=_SHARED), operator.setitem),
]


def _set_masked(a):
    a[..., :1] = 7.0  # a hard mask keeps masked elements masked
    return a


# elementwise: numpy.ma's functions, NumPy's ufuncs and the operators
_UNARY = {"log": True, "sqrt": False, "exp": False, "sin": False, "absolute": False,
          "negative": False, "arctanh": False, "log10": True}
for _name, _positive in _UNARY.items():
    _fn = getattr(np.ma, _name)
    OPS.append(_entry(f"ma.{_name}", _function(_fn), _unary_samples(positive=_positive), _fn))
for _name in ("add", "subtract", "multiply", "divide", "power", "greater", "equal",
              "maximum", "minimum", "hypot"):
    _fn = getattr(np.ma, _name)
    OPS.append(_entry(f"ma.{_name}", _binary(_fn), _binary_samples, _fn))
OPS += [
    _entry("ma.where", lambda x, m, y, n: _out(np.ma.where(_masked(x, m) > 0, _masked(x, m),
                                                          _masked(y, n))),
           _binary_samples, np.ma.where),
    _entry("ufunc log of a masked array", _function(np.log), _unary_samples(positive=False),
           np.log),
    _entry("ufunc add of masked arrays", _binary(np.add), _binary_samples, np.add),
]
for _name, _op in {"+": (operator.add, np.ma.add), "-": (operator.sub, np.ma.subtract),
                   "*": (operator.mul, np.ma.multiply), "/": (operator.truediv, np.ma.true_divide),
                   "**": (operator.pow, np.ma.power), "<": (operator.lt, operator.lt),
                   "==": (operator.eq, operator.eq)}.items():
    OPS.append(_entry(f"ma operator {_name}", _binary(_op[0]), _operator_samples, _op[1]))

# reductions: methods, numpy.ma's functions, NumPy's functions
for _name in ("sum", "prod", "mean", "var", "std", "min", "max", "ptp", "all", "any"):
    OPS.append(_entry(f"ma.MaskedArray.{_name}", _method(_name),
                      _with_nomask(_reduction_samples()), getattr(MA, _name),
                      rtol32=1e-4))
for _name in ("argmin", "argmax", "cumsum", "cumprod"):
    OPS.append(_entry(f"ma.MaskedArray.{_name}", _method(_name),
                      _with_nomask(_reduction_samples(tuple_axes=False, keepdims=False)),
                      getattr(MA, _name), rtol32=1e-4))
OPS += [
    _entry("ma.sum", _function(np.ma.sum), _reduction_samples(), MA.sum),
    _entry("ma.std ddof=1", _method("std", ddof=1), _reduction_samples(), MA.std,
           rtol32=1e-4),
    _entry("np.mean of a masked array", _function(np.mean), _reduction_samples(), MA.mean,
           rtol32=1e-4),
    _entry("ma.median", _function(np.ma.median), _with_nomask(_reduction_samples(
        tuple_axes=False)), np.ma.median),
    _entry("ma.average", _function(np.ma.average), _reduction_samples(tuple_axes=False,
                                                                      keepdims=False),
           np.ma.average, rtol32=1e-4),
    _entry("ma.average weights", lambda x, m, w: _out(np.ma.average(_masked(x, m), axis=-1,
                                                                    weights=w,
                                                                    returned=True)),
           lambda rng, dtype: iter([SampleInput((_data(rng, (3, 4), dtype), _mask(rng, (3, 4)),
                                                 _data(rng, (4,), dtype, positive=True)), {},
                                                "1-d weights along the axis")]),
           np.ma.average, rtol32=1e-4),
    _entry("ma.add.reduce", lambda x, m: _out(np.ma.add.reduce(_masked(x, m), axis=0)),
           _unary_samples(shapes=_SHAPES[:2]), np.ma.add.reduce),
    _entry("ma.minimum.reduce", lambda x, m: _out(np.ma.minimum.reduce(_masked(x, m), axis=0)),
           _unary_samples(shapes=_SHAPES[:2]), np.ma.minimum.reduce),
]

# shape, order and indexing
OPS += [
    _entry("ma.MaskedArray.reshape", lambda x, m: _out(_masked(x, m).reshape(-1, 2)),
           _unary_samples(shapes=[((6,), "1-d"), ((3, 4), "2-d")]), MA.reshape),
    _entry("ma.MaskedArray.ravel", _method("ravel"), _unary_samples(), MA.ravel),
    _entry("ma.MaskedArray.transpose", _method("transpose"), _unary_samples(), MA.transpose),
    _entry("ma.MaskedArray.swapaxes", lambda x, m: _out(_masked(x, m).swapaxes(0, -1)),
           _unary_samples(shapes=_SHAPES[:2] + _SHAPES[4:]), MA.swapaxes),
    _entry("ma.MaskedArray.squeeze", lambda x, m: _out(_masked(x, m)[None].squeeze(0)),
           _unary_samples(), MA.squeeze),
    _entry("ma.sort", _function(np.ma.sort), _unary_samples(shapes=_SHAPES[:2]), MA.sort),
    _entry("ma.MaskedArray.argsort", _method("argsort", axis=-1),
           _unary_samples(shapes=_SHAPES[:2]), MA.argsort),
    _entry("ma getitem", lambda x, m: _out((_masked(x, m)[1], _masked(x, m)[1:, ...])),
           _unary_samples(shapes=[((6,), "1-d"), ((3, 4), "2-d")]), operator.getitem),
    _entry("ma setitem masked", lambda x, m: _out(_set(_masked(x, m), slice(0, 2),
                                                       np.ma.masked)),
           _unary_samples(shapes=[((6,), "1-d"), ((3, 4), "2-d")], vmap_error=_SHARED),
           operator.setitem),
    _entry("ma setitem by a batched mask", lambda x, m: _out(_set(_masked(x, m), x > 0, 0.0)),
           _unary_samples(shapes=[((6,), "1-d"), ((3, 4), "2-d")], vmap_error=_SHARED),
           operator.setitem),
]


# products, covariances, joining: numpy.ma's own algorithms on the batch
_MATRICES = [((3, 4), "2-d"), ((2, 5), "2-d, wide"), ((1, 4), "one row"), ((3, 0), "size 0")]
OPS += [
    _entry("ma.dot", lambda x, m: _out(np.ma.dot(_masked(x, m), _masked(x, m).T)),
           _unary_samples(shapes=_MATRICES + [((6,), "1-d")]), np.ma.dot, rtol32=1e-4),
    _entry("ma.cov", _function(np.ma.cov), _unary_samples(shapes=_MATRICES[:3] + [
        ((6,), "1-d")]), np.ma.cov, rtol32=1e-4),
    _entry("ma.cov rowvar=False, bias", _function(np.ma.cov, rowvar=False, bias=True),
           _unary_samples(shapes=_MATRICES[:2]), np.ma.cov, rtol32=1e-4),
    _entry("ma.corrcoef", _function(np.ma.corrcoef), _unary_samples(shapes=_MATRICES[:2]),
           np.ma.corrcoef, rtol32=1e-4),
    _entry("ma.MaskedArray.diagonal", _method("diagonal"), _unary_samples(shapes=_MATRICES),
           MA.diagonal),
    _entry("ma.concatenate", lambda x, m: _out(np.ma.concatenate([_masked(x, m), x], axis=-1)),
           _unary_samples(shapes=_MATRICES + [((6,), "1-d")]), np.ma.concatenate),
]
OPS += [
    _entry("ma.allclose", lambda x, m, y, n: np.ma.allclose(_masked(x, m), _masked(y, n)),
           _same_shape_samples, np.ma.allclose),
    _entry("ma.allclose of itself", lambda x, m: np.ma.allclose(_masked(x, m), x + 1e-9),
           _unary_samples(), np.ma.allclose),
    _entry("ma **= in place", lambda x, m: _out(_ipow(_masked(x, m))),
           _unary_samples(vmap_error=_SHARED), MA.__ipow__),
]
for _name in ("stack", "hstack", "vstack", "column_stack", "dstack"):
    _fn = getattr(np.ma, _name)
    OPS.append(_entry(f"ma.{_name}", lambda x, m, _fn=_fn: _out(_fn([_masked(x, m), x])),
                      _unary_samples(shapes=_SHAPES[:3] + _SHAPES[4:]), _fn))


def _ipow(a):
    b = a  # another name of the same array: it sees the write
    a **= 2
    return b


def _set(a, key, value):
    a[key] = value
    return a


# numpy.ma.extras: apply_along_axis (func1d on the batch of each slice position's slices),
# mask_rowcols / mask_rows / mask_cols, rows selected by a batched boolean mask
def _along(func1d, axis):
    return lambda x, m: _out(np.ma.apply_along_axis(func1d, axis, _masked(x, m)))


_ALONG_SHAPES = [((6,), "1-d"), ((3, 4), "2-d"), ((2, 3, 4), "3-d")]


def _along_samples(rng, dtype):
    for shape, name in _ALONG_SHAPES:
        yield SampleInput((_data(rng, shape, dtype), _mask(rng, shape)), {}, name)


def _along_axis_samples(rng, dtype):
    """The axis as a keyword of the op (``_along_axis``): 0, -1 and a middle axis; numpy.ma's
    errors: an axis out of range, no slice to take (a size-0 axis other than ``axis``)."""
    x = lambda shape: (_data(rng, shape, dtype), _mask(rng, shape))  # noqa: E731
    yield SampleInput(x((3, 4)), {"axis": 0}, "2-d, axis=0")
    yield SampleInput(x((3, 4)), {"axis": -1}, "2-d, axis=-1")
    yield SampleInput(x((2, 3, 4)), {"axis": 1}, "3-d, a middle axis")
    yield SampleInput(x((0,)), {"axis": 0}, "1-d of size 0")
    yield SampleInput(x((3, 4)), {"axis": 2}, "axis out of range (AxisError)")
    yield SampleInput(x((0, 4)), {"axis": 1}, "no slice to take (IndexError)")


def _along_axis(x, m, axis):
    return _out(np.ma.apply_along_axis(lambda r: r * 2.0 + 1.0, axis, _masked(x, m)))


def _rowcols_samples(rng, dtype):
    """Every example with a masked element (a fresh mask each), or none with one (the
    masked array itself): where some examples have one and others not, numpy.ma copies the
    mask for some and shares it for others, which runs per example (tests/test_stats_glue.py)."""
    for shape, name in [((3, 4), "2-d"), ((1, 5), "one row"), ((4, 1), "one column")]:
        m = rng.random(shape) < 0.2
        m.flat[rng.integers(m.size)] = True
        yield SampleInput((_data(rng, shape, dtype), m), {}, name)
        yield SampleInput((_data(rng, shape, dtype), np.zeros(shape, bool)), {},
                          name + ", nothing masked")
    yield SampleInput((_data(rng, (3, 4), dtype), _mask(rng, (3, 4))), {"nomask": True},
                      "nomask")
    yield SampleInput((_data(rng, (6,), dtype), np.ones(6, bool)), {}, "1-d (numpy.ma's error)")


def _rowcols(axis):
    return lambda x, m, nomask=False: _out(np.ma.mask_rowcols(_made(x, m, nomask), axis))


def _rows_kept(x, m):
    """Two rows of each example, chosen by its data: ``x[keep]`` and ``x[keep, :]``."""
    keep = np.argsort(x.reshape(len(x), -1)[:, 0], kind="stable") < 2
    a = _masked(x, m)
    return _out((a[keep], a[keep, ...] if a.ndim > 1 else a[keep], a[~keep]))


OPS += [
    _entry("ma.apply_along_axis scalar", _along(lambda r: r.count(), 0), _along_samples,
           np.ma.apply_along_axis),
    _entry("ma.apply_along_axis masked slices", _along(lambda r: r * 2.0, -1), _along_samples,
           np.ma.apply_along_axis),
    _entry("ma.apply_along_axis plain slices", _along(lambda r: np.sort(r.filled(0.0)), 0),
           _along_samples, np.ma.apply_along_axis),
    _entry("ma.apply_along_axis axis", _along_axis, _along_axis_samples,
           np.ma.apply_along_axis),
    _entry("ma.mask_rowcols", _rowcols(None), _rowcols_samples, np.ma.mask_rowcols),
    _entry("ma.mask_rowcols axis=0", _rowcols(0), _rowcols_samples, np.ma.mask_rowcols),
    _entry("ma.mask_rowcols axis=-1", _rowcols(-1), _rowcols_samples, np.ma.mask_rowcols),
    _entry("ma.mask_rows", lambda x, m: _out(np.ma.mask_rows(_masked(x, m))),
           _rowcols_samples, np.ma.mask_rows),
    _entry("ma.mask_cols", lambda x, m: _out(np.ma.mask_cols(_masked(x, m))),
           _rowcols_samples, np.ma.mask_cols),
    _entry("ma getitem by a batched row mask", _rows_kept,
           _unary_samples(shapes=[((6,), "1-d"), ((4, 3), "2-d")]), operator.getitem),
]


def _selected(y, ym, k):
    """A masked array indexed by rows chosen from ``k``: a boolean mask that keeps two and an
    index array (with ``y`` unbatched, numpy.ma's own ``__getitem__`` meets the batched key)."""
    a = _masked(y, ym)
    return _out((a[np.argsort(k, kind="stable") < 2], a[np.argsort(k, kind="stable")[:3]]))


def _selected_samples(rng, dtype):
    for shape, name in [((5,), "1-d"), ((5, 3), "2-d")]:
        yield SampleInput((_data(rng, shape, dtype), _mask(rng, shape),
                           _data(rng, (5,), dtype)), {}, name)


OPS.append(_entry("ma getitem by a batched key", _selected, _selected_samples,
                  operator.getitem))
