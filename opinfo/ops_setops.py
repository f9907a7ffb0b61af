"""Set operations and data-dependent shapes: nonzero argwhere flatnonzero unique unique_all
unique_counts unique_inverse unique_values isin intersect1d setdiff1d setxor1d union1d
trim_zeros.

The sweep stacks the per-example results, so every sample is built so that all examples have
the same output size (a fixed number of nonzeros / distinct values / common values) while the
values and positions differ; examples whose sizes differ are tested in
tests/test_data_dependent.py (a clear error naming the op).
"""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

HASH_ORDER = "np.unique(sorted=False) orders integer/complex values by a hash table"


def _nonzero_values(rng, shape, dtype):
    """Random values none of which is zero."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.ones(shape, bool)
    mag = make_array(rng, shape, dtype, low=1, high=9)
    if dt.kind == "u":
        return mag
    sign = np.where(rng.random(shape) < 0.5, -1, 1).astype(dt)
    return (mag * sign).astype(dt)


def with_zeros(rng, shape, dtype, nzero: int):
    """Nonzero random values with exactly ``nzero`` zeros at random places."""
    a = _nonzero_values(rng, shape, dtype)
    if a.size:
        a.flat[rng.permutation(a.size)[:nzero]] = 0
    return a


def distinct(rng, k: int, dtype, pool: int = 40):
    """``k`` distinct random values of ``dtype`` (no zeros, so trim tests can use them)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([True, False][:k])
    vals = rng.permutation(pool)[:k] + 1
    if dt.kind == "f":
        return (vals * 0.25 * np.where(rng.random(k) < 0.5, -1, 1)).astype(dt)
    if dt.kind == "c":
        return (vals * 0.5 + 1j * rng.integers(-3, 3, k)).astype(dt)
    if dt.kind == "i":
        return (vals * np.where(rng.random(k) < 0.5, -1, 1)).astype(dt)
    return vals.astype(dt)


def with_repeats(rng, values, n: int, shape=None):
    """``n`` draws of ``values`` in random order, each value at least once."""
    out = np.concatenate([values, rng.choice(values, n - len(values))]) if n else values[:0]
    out = out[rng.permutation(len(out))]
    return out.reshape(shape if shape is not None else (n,))


def with_nans(rng, values, nnan: int):
    out = np.concatenate([values, np.full(nnan, np.nan, values.dtype)])
    return out[rng.permutation(len(out))]


# ---- nonzero, argwhere, flatnonzero --------------------------------------------------------------
def nonzero_samples(rng, dtype):
    for shape, nz in [((6,), 2), ((3, 4), 5), ((2, 3, 4), 7), ((4,), 0), ((4,), 3), ((2, 0), 0)]:
        if nz == 0 and np.dtype(dtype) == np.bool_ and np.prod(shape):
            continue  # all True: every example would be the same
        yield SampleInput((with_zeros(rng, shape, dtype, nz),), {}, f"{shape}, {nz} zeros")
    a = np.zeros((3, 8), dtype)
    a[:, ::2] = with_zeros(rng, (3, 4), dtype, 6)
    yield SampleInput((a[:, ::2],), {}, "non-contiguous")
    if np.dtype(dtype).kind == "f":
        a = with_zeros(rng, (5,), dtype, 1)
        a[a != 0] = np.nan
        yield SampleInput((a,), {}, "NaN is nonzero")


def nonzero_0d_samples(rng, dtype):
    yield from nonzero_samples(rng, dtype)
    if np.dtype(dtype) == np.bool_:
        return  # a random 0-d bool has 0 or 1 nonzeros: see tests/test_data_dependent.py
    yield SampleInput((np.asarray(_nonzero_values(rng, (), dtype) * make_array(rng, (), dtype)),),
                      {}, "0-d")


# ---- unique --------------------------------------------------------------------------------------
def _unique_inputs(rng, dtype):
    yield "1-d", with_repeats(rng, distinct(rng, 3, dtype), 8)
    yield "2-d", with_repeats(rng, distinct(rng, 2, dtype), 6, (2, 3))
    yield "0-d", make_array(rng, (), dtype)
    yield "size-0", distinct(rng, 0, dtype)
    yield "all distinct", with_repeats(rng, distinct(rng, 5, dtype), 5)


def unique_samples(rng, dtype):
    kind = np.dtype(dtype).kind
    for name, x in _unique_inputs(rng, dtype):
        yield SampleInput((x,), {}, name)
        yield SampleInput((x,), {"return_index": True, "return_inverse": True,
                                 "return_counts": True}, f"{name}, every output")
    x = with_repeats(rng, distinct(rng, 4, dtype), 9)
    yield SampleInput((x,), {"return_inverse": True}, "return_inverse")
    yield SampleInput((x,), {"return_counts": True}, "return_counts")
    yield SampleInput((x,), {"return_index": True}, "return_index (first occurrence)")
    yield SampleInput((x,), {"axis": 0}, "1-d with axis=0")
    yield SampleInput((x,), {"axis": -2}, "axis out of range")
    yield SampleInput((x,), {"sorted": False},
                      "sorted=False", loop_reason=HASH_ORDER if kind in "iuc" else None)
    if kind == "f":
        y = with_nans(rng, distinct(rng, 3, dtype), 2)
        yield SampleInput((y,), {}, "NaNs collapse (equal_nan=True)")
        yield SampleInput((y,), {"equal_nan": False, "return_counts": True}, "equal_nan=False")
        yield SampleInput((y,), {"return_inverse": True, "return_index": True}, "NaN inverse")
    rows = distinct(rng, 3, dtype)
    if kind != "b":
        yield SampleInput((np.stack([rows, rows[::-1], rows]),), {"axis": 0},
                          "axis=0 of a 2-d example", loop_reason="np.unique(axis=) of rank > 1")


def unique_fn_samples(rng, dtype):
    kind = np.dtype(dtype).kind
    for name, x in _unique_inputs(rng, dtype):
        yield SampleInput((x,), {}, name)
    if kind == "f":
        yield SampleInput((with_nans(rng, distinct(rng, 3, dtype), 2),), {},
                          "NaNs stay apart (equal_nan=False)")


def unique_values_samples(rng, dtype):
    reason = HASH_ORDER if np.dtype(dtype).kind in "iuc" else None
    for s in unique_fn_samples(rng, dtype):
        s.loop_reason = reason
        yield s


# ---- isin and the set operations ----------------------------------------------------------------
def fixed_values(k: int, dtype, offset: int = 0):
    """``k`` distinct values of ``dtype``, the same in every example (set operations pair
    example i of one argument with example j of the other: their output sizes must not depend
    on the pairing)."""
    vals = np.arange(offset + 1, offset + k + 1)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([True, False][offset:offset + k])
    if dt.kind == "f":
        return (vals * 0.75 - 4).astype(dt)
    if dt.kind == "c":
        return (vals * 0.5 - 1j * vals).astype(dt)
    if dt.kind == "i":
        return (vals * 3 - 10).astype(dt)
    return vals.astype(dt)


def with_multiplicity(rng, values, counts):
    """``values`` repeated ``counts`` times each, in random order (a fixed multiset)."""
    out = np.repeat(values, counts)
    return out[rng.permutation(len(out))]


def set_pair(rng, dtype, k1, k2, common, n1, n2, shape1=None):
    """ar1 with k1 distinct values, ar2 with k2, ``common`` of them shared; n1/n2 elements in
    random order and multiplicity."""
    vals = fixed_values(k1 + k2 - common, dtype)
    a = with_repeats(rng, vals[:k1], n1, shape1)
    b = with_repeats(rng, vals[k1 - common:], n2)
    return a, b


def isin_samples(rng, dtype):
    a, b = set_pair(rng, dtype, 4, 3, 2, 12, 5, (3, 4))
    yield SampleInput((a, b), {}, "2-d element")
    yield SampleInput((a, b), {"invert": True}, "invert")
    a, b = set_pair(rng, dtype, 5, 6, 3, 5, 20)
    yield SampleInput((a, b), {"assume_unique": True}, "assume_unique, unique element")
    a, b = set_pair(rng, dtype, 2, 3, 1, 6, 30)
    yield SampleInput((a, b), {"assume_unique": True}, "assume_unique with repeats",
                      loop_reason="np.isin(assume_unique=True) with repeated elements")
    yield SampleInput((a, b), {"kind": "sort"}, "kind=sort")
    yield SampleInput((a, b), {"kind": "bad"}, "bad kind (ValueError)")
    yield SampleInput((distinct(rng, 1, dtype).reshape(()), b), {}, "0-d element")
    yield SampleInput((a, b[:0]), {}, "empty test_elements")
    yield SampleInput((a[:0], b), {}, "empty element")
    if np.dtype(dtype).kind == "f":
        yield SampleInput((with_nans(rng, a, 2), with_nans(rng, b, 1)), {}, "NaN is in nothing")
        yield SampleInput((a, b.astype(np.int64)), {}, "mixed dtypes (float64 common)")


def isin_table_samples(rng, dtype):
    a, b = set_pair(rng, dtype, 4, 3, 2, 10, 6)
    yield SampleInput((a, b), {"kind": "table"}, "kind=table",
                      loop_reason="np.isin(kind='table')")


def setop_samples(assume_unique_ok=True):
    def gen(rng, dtype):
        a, b = set_pair(rng, dtype, 4, 5, 2, 9, 11)
        yield SampleInput((a, b), {}, "repeats")
        a, b = set_pair(rng, dtype, 3, 2, 1, 6, 4, (2, 3))
        yield SampleInput((a, b), {}, "2-d ar1")
        a, b = set_pair(rng, dtype, 3, 3, 3, 5, 4)
        yield SampleInput((a, b), {}, "same sets")
        a, b = set_pair(rng, dtype, 3, 2, 0, 3, 2)
        yield SampleInput((a, b), {}, "disjoint")
        yield SampleInput((a[:0], b), {}, "empty ar1")
        yield SampleInput((a, b[:0]), {}, "empty ar2")
        yield SampleInput((fixed_values(1, dtype).reshape(()), b), {}, "0-d ar1")
        if assume_unique_ok:
            a, b = set_pair(rng, dtype, 5, 4, 2, 5, 4)
            yield SampleInput((a, b), {"assume_unique": True}, "assume_unique")
        if np.dtype(dtype).kind == "f":
            a, b = set_pair(rng, dtype, 3, 3, 1, 6, 5)
            yield SampleInput((with_nans(rng, a, 2), with_nans(rng, b, 1)), {}, "NaNs")
            yield SampleInput((with_nans(rng, a, 1), b), {}, "NaN in ar1 only")
    return gen


def intersect_extra(rng, dtype):
    yield from setop_samples()(rng, dtype)
    a, b = set_pair(rng, dtype, 4, 5, 2, 9, 11)
    yield SampleInput((a, b), {"return_indices": True}, "return_indices")
    a, b = set_pair(rng, dtype, 4, 5, 3, 4, 5)
    yield SampleInput((a, b), {"assume_unique": True, "return_indices": True},
                      "assume_unique, return_indices")


def setdiff_extra(rng, dtype):
    yield from setop_samples()(rng, dtype)
    vals = fixed_values(5, dtype)
    a, b = with_multiplicity(rng, vals[:3], [2, 1, 3]), with_repeats(rng, vals[2:], 4)
    yield SampleInput((a, b), {"assume_unique": True}, "assume_unique with repeats in ar1",
                      loop_reason="np.setdiff1d(assume_unique=True) with repeated elements")


def setxor_extra(rng, dtype):
    yield from setop_samples()(rng, dtype)
    vals = fixed_values(5, dtype)
    a, b = with_multiplicity(rng, vals[:3], [2, 1, 3]), with_multiplicity(rng, vals[2:], [1, 2, 1])
    yield SampleInput((a, b), {"assume_unique": True}, "assume_unique broken (NumPy's answer)")


# ---- trim_zeros ----------------------------------------------------------------------------------
def padded(rng, dtype, before, size, after):
    return np.concatenate([np.zeros(before, dtype), _nonzero_values(rng, (size,), dtype),
                           np.zeros(after, dtype)])


def block(rng, dtype, shape, bshape):
    """A nonzero block of ``bshape`` at a random place in zeros of ``shape``."""
    a = np.zeros(shape, dtype)
    at = tuple(rng.integers(0, s - b + 1) for s, b in zip(shape, bshape))
    a[tuple(slice(o, o + b) for o, b in zip(at, bshape))] = _nonzero_values(rng, bshape, dtype)
    return a


TRIM_OFFSETS = ("NumPy returns views of filt at each example's own offset: no batched array can "
                "be those views, and a copy would differ silently (docs/semantics.md)")


def trim_samples(rng, dtype):
    yield SampleInput((padded(rng, dtype, 2, 4, 3),), {}, "1-d fb")
    yield SampleInput((padded(rng, dtype, 2, 4, 3),), {"trim": "f"}, "trim=f")
    yield SampleInput((padded(rng, dtype, 2, 4, 3),), {"trim": "B"}, "trim=B")
    yield SampleInput((padded(rng, dtype, 0, 3, 0),), {}, "nothing to trim")
    yield SampleInput((block(rng, dtype, (9,), (4,)),), {}, "offsets differ, length same",
                      vmap_error=TRIM_OFFSETS)
    yield SampleInput((block(rng, dtype, (5, 6), (2, 3)),), {}, "2-d, offsets differ",
                      vmap_error=TRIM_OFFSETS)
    yield SampleInput((block(rng, dtype, (5, 6), (2, 3)),), {"axis": -1}, "2-d axis=-1",
                      vmap_error=TRIM_OFFSETS)
    yield SampleInput((block(rng, dtype, (3, 4, 5), (2, 2, 3)),), {"axis": (0, 2)},
                      "3-d axis=(0, 2)", vmap_error=TRIM_OFFSETS)
    yield SampleInput((np.pad(_nonzero_values(rng, (2, 3), dtype), ((1, 2), (2, 1))),), {},
                      "2-d, the same offsets in every example (a view)")
    yield SampleInput((block(rng, dtype, (5, 6), (2, 3)),), {"axis": ()}, "axis=()")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d: unmodified")
    yield SampleInput((padded(rng, dtype, 1, 2, 1),), {"trim": "x"}, "bad trim (ValueError)")
    yield SampleInput((padded(rng, dtype, 1, 2, 1),), {"axis": 1}, "axis out of range")


INT_FLOAT = (np.int64, np.float64)
OPS = [
    OpInfo("nonzero", np.nonzero, nonzero_0d_samples, "rule",
           dtypes=(np.float64, np.int32, np.bool_, np.complex128)),
    OpInfo("ndarray.nonzero", lambda x: x.nonzero(), nonzero_samples, "rule",
           dtypes=(np.float64,), covers=np.nonzero, unbatched_self=True),
    OpInfo("argwhere", np.argwhere, nonzero_0d_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("flatnonzero", np.flatnonzero, nonzero_0d_samples, "rule",
           dtypes=(np.int64, np.float32)),
    OpInfo("unique", np.unique, unique_samples, "rule",
           dtypes=(np.float64, np.int64, np.complex128, np.bool_)),
    OpInfo("unique_values", np.unique_values, unique_values_samples, "rule",
           dtypes=(np.float32, np.int16)),
    OpInfo("unique_counts", np.unique_counts, unique_fn_samples, "rule", dtypes=INT_FLOAT),
    OpInfo("unique_inverse", np.unique_inverse, unique_fn_samples, "rule", dtypes=INT_FLOAT),
    OpInfo("unique_all", np.unique_all, unique_fn_samples, "rule", dtypes=INT_FLOAT),
    OpInfo("isin", np.isin, isin_samples, "rule", dtypes=(np.int64, np.float64, np.complex64)),
    OpInfo("isin.table", np.isin, isin_table_samples, "rule", dtypes=(np.int64,)),
    OpInfo("intersect1d", np.intersect1d, intersect_extra, "rule", dtypes=INT_FLOAT),
    OpInfo("setdiff1d", np.setdiff1d, setdiff_extra, "rule", dtypes=(np.int32, np.float64)),
    OpInfo("setxor1d", np.setxor1d, setxor_extra, "rule", dtypes=(np.uint8, np.float64)),
    OpInfo("union1d", np.union1d, setop_samples(False), "rule",
           dtypes=(np.int64, np.float32, np.complex128)),
    OpInfo("trim_zeros", np.trim_zeros, trim_samples, "rule",
           dtypes=(np.float64, np.int8, np.complex64)),
]
