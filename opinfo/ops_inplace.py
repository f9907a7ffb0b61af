"""In-place writes by function: put_along_axis, putmask, fill_diagonal, put, place.

``inplace=0``: the first array argument is written; the sweep compares it with the loop's, and
checks that a batched write into an unbatched target raises BatchingError.
"""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, FLOAT, make_array


def _perm_idx(rng, rows, n, k):
    return np.argsort(rng.random((rows, n)), axis=1)[:, :k]


def put_along_axis_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype), _perm_idx(rng, 3, 4, 2),
                       make_array(rng, (3, 2), dtype), 1), {}, "axis=1")
    yield SampleInput((make_array(rng, (3, 4), dtype), _perm_idx(rng, 3, 4, 2),
                       make_array(rng, (3, 2), dtype), -1), {}, "axis=-1")
    yield SampleInput((make_array(rng, (4, 3), dtype), _perm_idx(rng, 3, 4, 2).T.copy(),
                       make_array(rng, (1, 3), dtype), 0), {}, "axis=0, values broadcast")
    yield SampleInput((make_array(rng, (3, 4), dtype), _perm_idx(rng, 3, 4, 1),
                       make_array(rng, (), dtype), 1), {}, "0-d values")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype),
                       _perm_idx(rng, 6, 4, 3).reshape(2, 3, 3),
                       make_array(rng, (2, 3, 3), dtype), 2), {}, "3-d")
    yield SampleInput((make_array(rng, (6,), dtype), _perm_idx(rng, 1, 6, 3)[0],
                       make_array(rng, (3,), dtype), None), {}, "axis=None")
    yield SampleInput((make_array(rng, (2, 3), dtype), _perm_idx(rng, 1, 6, 2)[0] - 3,
                       make_array(rng, (), dtype), None), {}, "axis=None, n-d, negative")
    yield SampleInput((make_array(rng, (2, 3), dtype), _perm_idx(rng, 1, 6, 2)[0] + 6,
                       make_array(rng, (), dtype), None), {}, "axis=None out of bounds raises")
    yield SampleInput((make_array(rng, (3, 4), dtype), _perm_idx(rng, 3, 4, 2)[0],
                       make_array(rng, (2,), dtype), 1), {}, "rank mismatch raises")
    yield SampleInput((make_array(rng, (3, 4), dtype), _perm_idx(rng, 3, 4, 2),
                       make_array(rng, (3, 2), dtype), 2), {}, "axis out of range raises")


def putmask_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), np.bool_),
                       make_array(rng, (3, 4), dtype)), {}, "same shape")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), np.bool_),
                       make_array(rng, (), dtype)), {}, "0-d values")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), np.bool_), 1),
                      {}, "Python scalar values")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (), np.bool_),
                       make_array(rng, (), dtype)), {}, "0-d")
    yield SampleInput((make_array(rng, (2, 0), dtype), make_array(rng, (2, 0), np.bool_),
                       make_array(rng, (2, 0), dtype)), {}, "size 0")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), np.bool_),
                       make_array(rng, (5,), dtype)), {}, "cyclic values",
                      loop_reason="putmask repeats a smaller values array cyclically")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (4,), np.bool_),
                       make_array(rng, (), dtype)), {}, "mask shape mismatch raises")


def fill_diagonal_samples(rng, dtype):
    for shape in [(3, 3), (4, 3), (3, 5), (0, 2)]:
        yield SampleInput((make_array(rng, shape, dtype), make_array(rng, (), dtype)), {},
                          f"{shape}")
    yield SampleInput((make_array(rng, (3, 3), dtype), 5), {}, "Python scalar")
    yield SampleInput((make_array(rng, (5, 2), dtype), make_array(rng, (), dtype)),
                      {"wrap": True}, "wrap=True", loop_reason="fill_diagonal with wrap=True")
    yield SampleInput((make_array(rng, (2, 2, 2), dtype), make_array(rng, (), dtype)), {},
                      "3-d", loop_reason="fill_diagonal of an n-d array")
    yield SampleInput((make_array(rng, (3, 3), dtype), make_array(rng, (2,), dtype)), {},
                      "array val", loop_reason="fill_diagonal with an array of values")
    yield SampleInput((make_array(rng, (4,), dtype), make_array(rng, (), dtype)), {},
                      "1-d raises")


def put_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype), [0, 5, 11],
                       make_array(rng, (3,), dtype)), {}, "flat indices")
    yield SampleInput((make_array(rng, (3, 4), dtype), [1, 7, 2],
                       make_array(rng, (2,), dtype)), {}, "cyclic values")
    yield SampleInput((make_array(rng, (5,), dtype), [-1, 13],
                       make_array(rng, (2,), dtype)), {"mode": "wrap"}, "mode=wrap")
    yield SampleInput((make_array(rng, (5,), dtype), [9],
                       make_array(rng, (1,), dtype)), {}, "out of bounds raises")


def place_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), np.bool_),
                       make_array(rng, (3,), dtype)), {}, "mask")
    yield SampleInput((make_array(rng, (5,), dtype), make_array(rng, (5,), np.bool_),
                       make_array(rng, (1,), dtype)), {}, "one value repeated")


_PUT_WHY = "flat indices and cyclically repeated values: np.put runs per example"
_PLACE_WHY = "the count of written elements depends on each example's mask"

# Named "<op>.inplace": the placement family's entries (opinfo/ops_placement.py) cover the
# same rules with other samples; these focus on write-through semantics and every dtype family.
OPS = [
    OpInfo("put_along_axis.inplace", np.put_along_axis, put_along_axis_samples, "rule",
           dtypes=ALL, inplace=0),
    OpInfo("putmask.inplace", np.putmask, putmask_samples, "rule", dtypes=ALL, inplace=0),
    OpInfo("fill_diagonal.inplace", np.fill_diagonal, fill_diagonal_samples, "rule",
           dtypes=FLOAT + (np.int64, np.complex128), inplace=0, unbatched_self=True,
           notes="np.fill_diagonal dispatches on a only: a batched val into a plain a is a "
                 "conversion TypeError"),
    OpInfo("put.inplace", np.put, put_samples, "rule", dtypes=(np.float64, np.int64),
           inplace=0),
    OpInfo("place.inplace", np.place, place_samples, "rule", dtypes=(np.float64, np.int64),
           inplace=0),
]
