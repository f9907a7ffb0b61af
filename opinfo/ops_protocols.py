"""Python protocols on a BatchedTensor: len, iter, bool, in, copy.copy/deepcopy, and the
ndarray.repeat method. They answer per example from the logical view (len, iter) or through
other ops (``in`` is ``(x == v).any()``, bool() is the examples' common truth value)."""

from __future__ import annotations

import copy
import operator

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, FLOAT, INT, make_array


def _arrays(rng, dtype):
    for shape in [(5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
        yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {}, "non-contiguous")


def _len_samples(rng, dtype):
    yield from _arrays(rng, dtype)
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d: TypeError")


def _rows(x):
    return [row for row in x]


def _all_finite(x):
    # bool() of a batched value: every example agrees here (finite data), so no error
    return 1.0 if bool(np.isfinite(x).all()) else 0.0


def _contains_samples(rng, dtype):
    # `v in x` is one Python bool, so every example (in every in_axes combination) must agree:
    # a constant planted in each x, and one no x can hold. Disagreement raises BatchingError
    # (tests/test_tensor.py).
    x = make_array(rng, (3, 4), dtype, low=-5, high=5)
    x[1, 2] = 7
    yield SampleInput((x, np.array(7, dtype)), {}, "present in every example")
    yield SampleInput((make_array(rng, (3, 4), dtype, low=-5, high=5), np.array(99, dtype)), {},
                      "absent from every example")


def _contains(x, v):
    return v in x


def _repeat_method(x, *args, **kwargs):
    return x.repeat(*args, **kwargs)


def _repeat_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5,), dtype), 2), {}, "1-d, scalar repeats")
    yield SampleInput((make_array(rng, (3, 4), dtype), [1, 0, 2]), {"axis": 0}, "per-row counts")
    yield SampleInput((make_array(rng, (3, 4), dtype), 3), {"axis": -1}, "negative axis")
    yield SampleInput((make_array(rng, (), dtype), 3), {}, "0-d")
    yield SampleInput((make_array(rng, (2, 0, 3), dtype), 2), {"axis": 2}, "size 0")
    yield SampleInput((make_array(rng, (3, 4), dtype), [1, 2]), {"axis": 0},
                      "wrong count length: ValueError")


OPS = [
    OpInfo("len()", len, _len_samples, "rule", dtypes=(np.float64,), covers=len,
           notes="the logical first axis; 0-d raises TypeError"),
    OpInfo("iter()", _rows, _arrays, "rule", dtypes=(np.float64, np.int64), covers=iter,
           notes="yields x[i] for the logical first axis"),
    OpInfo("bool()", _all_finite, _arrays, "rule", dtypes=FLOAT, covers=bool,
           notes="examples agree here; disagreement raises BatchingError (tests/test_tensor.py)"),
    OpInfo("operator.contains", _contains, _contains_samples, "decomposition",
           dtypes=(np.float64, np.int64), covers=operator.contains, unbatched_self=True,
           notes="(x == v).any(), then bool(): the examples must agree"),
    OpInfo("copy.copy", copy.copy, _arrays, "rule", dtypes=ALL, covers=copy.copy),
    OpInfo("copy.deepcopy", copy.deepcopy, _arrays, "rule", dtypes=(np.float64,),
           covers=copy.deepcopy),
    OpInfo("ndarray.repeat", _repeat_method, _repeat_samples, "rule", dtypes=FLOAT + INT,
           covers=np.repeat, unbatched_self=True),
]
