"""Type and metadata queries: result_type, can_cast, min_scalar_type, common_type,
shares_memory, may_share_memory. They return dtypes / bools for the logical array; the ops
below turn a dtype answer into a 0-d array of that dtype so that vmap can return it (the sweep
then compares the dtypes)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array


def _dtype_answer(query):
    def op(*args, **kwargs):
        return np.zeros((), query(*args, **kwargs))

    op.__name__ = query.__name__
    return op


def result_type_samples(rng, dtype):
    x = make_array(rng, (3,), dtype)
    yield SampleInput((x, make_array(rng, (2, 3), np.float32)), {}, "two arrays")
    yield SampleInput((make_array(rng, (), dtype), 1.5), {}, "0-d with a Python float (weak)")
    yield SampleInput((make_array(rng, (4,), dtype), 7), {}, "Python int (weak)")
    yield SampleInput((make_array(rng, (2,), dtype), np.float16, np.dtype(np.int8)), {},
                      "dtypes")
    yield SampleInput((make_array(rng, (0, 2), dtype), make_array(rng, (), np.complex64)), {},
                      "size-0 and 0-d complex")
    yield SampleInput((make_array(rng, (3,), dtype), "not a dtype"), {}, "bad dtype (TypeError)")


def can_cast_samples(rng, dtype):
    for to in (np.int8, np.float32, np.float64, np.complex64):
        yield SampleInput((make_array(rng, (3,), dtype), to), {}, f"to {np.dtype(to)}")
    yield SampleInput((make_array(rng, (), dtype), np.int16), {"casting": "same_kind"},
                      "same_kind")
    yield SampleInput((make_array(rng, (2,), dtype), np.uint8), {"casting": "unsafe"}, "unsafe")
    yield SampleInput((make_array(rng, (2,), dtype), 300), {}, "to a Python int (TypeError)")


def min_scalar_type_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype),), {}, "1-d: the dtype")
    yield SampleInput((make_array(rng, (0, 2), dtype),), {}, "size-0: the dtype")
    # 0-d: value-based. Every example here has the same answer (see tests/test_data_dependent.py
    # for examples that disagree).
    kind = np.dtype(dtype).kind
    if kind in "ui":
        yield SampleInput((make_array(rng, (), dtype, low=0, high=100),), {}, "0-d in [0, 100)")
    elif kind == "f":
        yield SampleInput((make_array(rng, (), dtype, low=-50, high=50),), {}, "0-d float")
    else:
        yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")


def common_type_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype),), {}, "one array")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (2, 2), np.float32)), {},
                      "with float32")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (2,), np.int8),
                       make_array(rng, (0,), np.complex64)), {}, "three arrays")
    yield SampleInput((make_array(rng, (2,), dtype), make_array(rng, (2,), np.bool_)), {},
                      "bool (TypeError)")


def overlap_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5,), dtype),), {}, "1-d")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "2-d")
    yield SampleInput((make_array(rng, (4, 3), dtype, noncontiguous=True),), {}, "non-contiguous")


def two_array_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5,), dtype), make_array(rng, (5,), dtype)), {},
                      "separate arrays")
    yield SampleInput((make_array(rng, (2, 3), dtype), make_array(rng, (), dtype)), {},
                      "separate arrays, 0-d")
    yield SampleInput((make_array(rng, (0,), dtype), make_array(rng, (3,), dtype)), {},
                      "size-0")


def _with_view(query, pair, name):
    def op(x):
        return query(*pair(x))

    op.__name__ = f"{query.__name__}({name})"
    return op


def _with_max_work(query):
    def op(x, y):
        return query(x, y, max_work=100)

    op.__name__ = f"{query.__name__}(max_work=100)"
    return op


_META = (np.int8, np.float64)
OPS = [
    OpInfo("result_type", _dtype_answer(np.result_type), result_type_samples, "rule",
           dtypes=(np.int8, np.uint16, np.float32, np.bool_), covers=np.result_type),
    OpInfo("can_cast", np.can_cast, can_cast_samples, "rule",
           dtypes=(np.int16, np.float32, np.complex128)),
    OpInfo("min_scalar_type", _dtype_answer(np.min_scalar_type), min_scalar_type_samples, "rule",
           dtypes=(np.int64, np.uint8, np.float64, np.complex128), covers=np.min_scalar_type),
    OpInfo("common_type", _dtype_answer(np.common_type), common_type_samples, "rule",
           dtypes=(np.int32, np.float16, np.complex64), covers=np.common_type),
]
for _q in (np.shares_memory, np.may_share_memory):
    _n = _q.__name__
    OPS += [
        OpInfo(_n, _q, two_array_samples, "rule", dtypes=_META),
        OpInfo(f"{_n}.max_work", _with_max_work(_q), two_array_samples, "rule",
               dtypes=(np.float64,), covers=_q),
        OpInfo(f"{_n}.self", _with_view(_q, lambda x: (x, x), "x, x"), overlap_samples, "rule",
               dtypes=_META, covers=_q),
        OpInfo(f"{_n}.slice", _with_view(_q, lambda x: (x, x[1:]), "x, x[1:]"), overlap_samples,
               "rule", dtypes=_META, covers=_q),
        OpInfo(f"{_n}.interleaved", _with_view(_q, lambda x: (x[::2], x[1::2]), "x[::2], x[1::2]"),
               overlap_samples, "rule", dtypes=_META, covers=_q),
        OpInfo(f"{_n}.copy", _with_view(_q, lambda x: (x, x.copy()), "x, x.copy()"),
               overlap_samples, "rule", dtypes=_META, covers=_q),
    ]
