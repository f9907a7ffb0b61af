"""Shape-changing copies: tile repeat resize pad insert delete."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

S = SampleInput
F64_I32 = (np.float64, np.int32)


def _a(rng, shape, dtype=np.float64, **kw):
    return make_array(rng, shape, dtype, **kw)


def tile_samples(rng, dtype):
    yield S((_a(rng, (3,), dtype), 2), {}, "1-d int reps")
    yield S((_a(rng, (3,), dtype), (2, 2)), {}, "reps longer than rank")
    yield S((_a(rng, (2, 3), dtype), (2,)), {}, "reps shorter than rank")
    yield S((_a(rng, (2, 3), dtype), [1, 1]), {}, "all ones (a copy)")
    yield S((_a(rng, (), dtype), (2, 3)), {}, "0-d")
    yield S((_a(rng, (), dtype), ()), {}, "0-d, empty reps")
    yield S((_a(rng, (2, 0), dtype), (3, 2)), {}, "size 0")
    yield S((_a(rng, (2, 3), dtype, noncontiguous=True), (0, 2)), {}, "zero reps")
    yield S((_a(rng, (2, 3), dtype), (-1, 2)), {}, "negative reps")


def tile_reps_samples(rng, dtype):
    # the same reps in every example (the result's shape); different reps: tests/test_dispatch
    yield S((_a(rng, (2, 3), dtype), np.array([2, 1])), {}, "reps as an array")
    yield S((_a(rng, (3,), dtype), np.array(2)), {}, "reps as a 0-d array")


def repeat_samples(rng, dtype):
    yield S((_a(rng, (2, 3), dtype), 2), {}, "axis=None flattens")
    yield S((_a(rng, (2, 3), dtype), 3), {"axis": 1}, "axis 1")
    yield S((_a(rng, (2, 3), dtype), [1, 0, 2]), {"axis": -1}, "per-element list")
    yield S((_a(rng, (2, 3), dtype), [2]), {"axis": 0}, "length-1 list")
    yield S((_a(rng, (), dtype), 3), {}, "0-d")
    yield S((_a(rng, (2, 0), dtype), 2), {"axis": 0}, "size 0")
    yield S((_a(rng, (4,), dtype, noncontiguous=True), 0), {}, "zero repeats")
    yield S((_a(rng, (2, 3), dtype), [1, 2]), {"axis": 1}, "wrong length")
    yield S((_a(rng, (2, 3), dtype), -1), {}, "negative")
    yield S((_a(rng, (), dtype), 2), {"axis": 0}, "0-d with an axis")
    yield S((_a(rng, (2, 3), dtype), 2), {"axis": 2}, "axis out of range")


def repeat_array_samples(rng, dtype):
    # Every example repeats a permutation of (1, 2, 3): equal output shapes, different layouts.
    perm = rng.permutation(np.array([1, 2, 3]))
    yield S((_a(rng, (3, 2), dtype), perm), {"axis": 0}, "repeats array, equal totals",
            loop_reason="a batched repeats gives per-example output shapes")
    # 1-d examples, counts of their own with equal totals (rank computations): vectorised
    yield S((_a(rng, (4,), dtype), np.array(2)), {}, "0-d repeats array")
    yield S((_a(rng, (3,), dtype), rng.permutation(np.array([1, 2, 3]))), {},
            "per-element repeats of each example, equal totals")
    yield S((_a(rng, (3,), dtype), rng.permutation(np.array([0, 2, 4]))), {"axis": -1},
            "per-element repeats with a zero, axis=-1")
    yield S((_a(rng, (0,), dtype), np.zeros(0, dtype=np.intp)), {}, "size-0 example")
    yield S((_a(rng, (), dtype), np.array([3])), {}, "0-d example, one count")


def resize_samples(rng, dtype):
    yield S((_a(rng, (2, 3), dtype), (3, 4)), {}, "grow: repeats the data")
    yield S((_a(rng, (2, 3), dtype), (2, 2)), {}, "shrink")
    yield S((_a(rng, (5,), dtype), 12), {}, "int new_shape")
    yield S((_a(rng, (), dtype), (2, 2)), {}, "0-d")
    yield S((_a(rng, (2, 0), dtype), (2, 3)), {}, "from size 0: zeros")
    yield S((_a(rng, (2, 3), dtype, noncontiguous=True), (0, 4)), {}, "to size 0")
    yield S((_a(rng, (2, 3), dtype), ()), {}, "to 0-d")
    yield S((_a(rng, (2, 3), dtype), (2, -1)), {}, "negative raises")


def pad_samples(rng, dtype):
    x = _a(rng, (3, 4), dtype)
    yield S((x, 1), {}, "int width, constant 0")
    yield S((_a(rng, (3, 4), dtype), (1, 2)), {"constant_values": 7}, "(before, after)")
    yield S((_a(rng, (3, 4), dtype), ((1, 0), (2, 3))), {"constant_values": ((1, 2), (3, 4))},
            "per-axis widths and values")
    yield S((_a(rng, (3, 4), dtype), [[1], [2]]), {}, "per-axis (n, 1) widths")
    yield S((_a(rng, (3,), dtype), ((2, 1),)), {"constant_values": (5, 6)}, "1-d")
    yield S((_a(rng, (), dtype), 2), {}, "0-d: nothing to pad")
    yield S((_a(rng, (2, 0), dtype), 1), {"constant_values": 3}, "size 0, constant")
    for mode in ("edge", "reflect", "symmetric", "wrap"):
        yield S((_a(rng, (3, 4), dtype), ((2, 1), (0, 3))), {"mode": mode}, mode)
    yield S((_a(rng, (3, 4), dtype), 5), {"mode": "wrap"}, "wrap wider than the axis")
    yield S((_a(rng, (3, 4), dtype), 2), {"mode": "reflect", "reflect_type": "odd"},
            "reflect odd")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), 2), {"mode": "linear_ramp",
                                                              "end_values": ((1, 2), (3, 4))},
            "linear_ramp, per-axis end_values")
    for mode in ("maximum", "mean", "median", "minimum"):
        yield S((_a(rng, (3, 4), dtype), (1, 2)), {"mode": mode, "stat_length": 2}, mode)
    yield S((_a(rng, (3, 4), dtype), 1), {"mode": "mean", "stat_length": ((1, 2), (2, 1))},
            "per-axis stat_length")
    yield S((_a(rng, (3, 4), dtype), 1), {"mode": "maximum"}, "stat over the whole axis")
    yield S((_a(rng, (2, 0), dtype), 1), {"mode": "edge"}, "edge of an empty axis raises")
    yield S((_a(rng, (3, 4), dtype), -1), {}, "negative width")
    yield S((_a(rng, (3, 4), dtype), 1.5), {}, "float width")
    yield S((_a(rng, (3, 4), dtype), ((1, 2), (3, 4), (5, 6))), {}, "too many pairs")
    yield S((_a(rng, (3, 4), dtype), 1), {"mode": "edge", "constant_values": 1},
            "unsupported keyword")
    yield S((_a(rng, (3, 4), dtype), 1), {"mode": "nope"}, "unknown mode")


def pad_batched_values_samples(rng, dtype):
    """A batched ``constant_values``: every example pads with its own values."""
    yield S((_a(rng, (3, 4), dtype), ((1, 2), (2, 0)), "constant"),
            {"constant_values": _a(rng, (), dtype)}, "0-d values")
    yield S((_a(rng, (3, 4), dtype), 1), {"constant_values": _a(rng, (2,), dtype)},
            "(before, after)")
    yield S((_a(rng, (3, 4), dtype), ((1, 2), (2, 1))),
            {"constant_values": _a(rng, (2, 2), dtype)}, "per-axis, corners to the last axis")
    yield S((_a(rng, (2, 3, 2), dtype), 1), {"constant_values": _a(rng, (3, 1), dtype)},
            "per-axis (n, 1)")
    yield S((_a(rng, (4,), dtype), 2), {"constant_values": _a(rng, (1, 1), np.float64)},
            "values cast to the array's dtype")
    yield S((_a(rng, (), dtype), 2), {"constant_values": _a(rng, (), dtype)}, "0-d array")
    yield S((_a(rng, (3, 4), dtype), 1), {"constant_values": _a(rng, (3, 2), dtype)},
            "wrong value shape")
    yield S((_a(rng, (3, 4), dtype), 1, "edge"), {"constant_values": _a(rng, (), dtype)},
            "not allowed with mode edge")


def pad_empty_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype), ((1, 2), (0, 1))), {"mode": "empty"}, "empty")


def insert_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype), 2, 9), {}, "scalar index and value")
    yield S((_a(rng, (2, 3), dtype), 1, 9), {}, "axis=None flattens")
    yield S((_a(rng, (2, 3), dtype), 1, _a(rng, (2,), dtype)), {"axis": 1},
            "scalar index: one column")
    yield S((_a(rng, (2, 3), dtype), 1, _a(rng, (3, 2), dtype)), {"axis": 1},
            "scalar index: values' first axis becomes the insert axis")
    yield S((_a(rng, (2, 3), dtype), [1], _a(rng, (2, 1), dtype)), {"axis": 1},
            "[1]: like a[:, [1]] = values")
    yield S((_a(rng, (2, 3), dtype), -1, _a(rng, (3,), dtype)), {"axis": 0}, "negative index")
    yield S((_a(rng, (2, 3), dtype), 3, 0), {"axis": -1}, "at the end")
    yield S((_a(rng, (6,), dtype), [2, 2, 0, -1], _a(rng, (4,), dtype)), {},
            "several indices, repeated and negative")
    yield S((_a(rng, (6,), dtype), [1, 4], 7), {}, "several indices, one value")
    yield S((_a(rng, (2, 4), dtype), slice(1, 3), _a(rng, (2, 1), dtype)), {"axis": 1},
            "slice")
    yield S((_a(rng, (2, 3), dtype), [], _a(rng, (2, 0), dtype)), {"axis": 1},
            "no indices")
    yield S((_a(rng, (4,), dtype), [True, False, True, False], [5, 6]), {},
            "boolean list raises (NumPy reads obj.ndim)")
    yield S((_a(rng, (0,), dtype), 0, [1, 2]), {}, "into size 0")
    yield S((_a(rng, (2, 3), dtype, noncontiguous=True), (0, 3), _a(rng, (2,), np.float32)),
            {"axis": 1}, "tuple index, values of another dtype")
    yield S((_a(rng, (4,), dtype), 5, 1), {}, "index out of bounds")
    yield S((_a(rng, (2, 3), dtype), 1, _a(rng, (4,), dtype)), {"axis": 0},
            "values do not broadcast")
    yield S((_a(rng, (2, 3), dtype), [[1]], 1), {"axis": 0}, "2-d index raises")
    yield S((_a(rng, (), dtype), 0, 1), {"axis": 0}, "0-d with an axis")


def insert_array_index_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype), np.array([1, 3]), 0), {}, "index array",
            loop_reason="a batched index gives per-example positions")
    yield S((_a(rng, (4,), dtype), rng.permutation(np.array([1, 0, 1, 0], bool)), 9),
            {}, "boolean mask array, equal counts",
            loop_reason="a batched mask: per-example output shapes")


def delete_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype), 2), {}, "one index")
    yield S((_a(rng, (2, 3), dtype), 1), {}, "axis=None flattens")
    yield S((_a(rng, (2, 3), dtype), [0, 2]), {"axis": 1}, "list")
    yield S((_a(rng, (2, 3), dtype), -1), {"axis": 0}, "negative")
    yield S((_a(rng, (6,), dtype), slice(None, None, 2)), {}, "slice")
    yield S((_a(rng, (4,), dtype), [True, False, True, False]), {}, "boolean list")
    yield S((_a(rng, (2, 3), dtype), []), {"axis": 1}, "nothing")
    yield S((_a(rng, (2, 0), dtype), []), {"axis": -1}, "size 0")
    yield S((_a(rng, (3, 2), dtype, noncontiguous=True), [1, 1]), {"axis": 0},
            "repeated index")
    yield S((_a(rng, (4,), dtype), 4), {}, "out of bounds")
    yield S((_a(rng, (4,), dtype), [True, False]), {}, "boolean of the wrong length")
    yield S((_a(rng, (), dtype), 0), {"axis": 0}, "0-d with an axis")


def delete_array_index_samples(rng, dtype):
    # A permutation keeps the count equal across examples.
    yield S((_a(rng, (5,), dtype), rng.permutation(np.arange(5))[:2]), {}, "index array",
            loop_reason="a batched index gives per-example positions")


OPS = [
    OpInfo("tile", np.tile, tile_samples, "rule", dtypes=F64_I32 + (np.bool_,)),
    OpInfo("tile.batched_reps", np.tile, tile_reps_samples, "rule", covers=np.tile,
           unbatched_self=True),
    OpInfo("repeat", np.repeat, repeat_samples, "rule", dtypes=(np.float64, np.bool_)),
    # unbatched_self: np.repeat / np.pad dispatch on the array only; with it unbatched NumPy
    # meets the batched repeats / constant_values itself and refuses to convert it.
    OpInfo("repeat.batched_repeats", np.repeat, repeat_array_samples, "rule",
           covers=np.repeat, unbatched_self=True,
           notes="rule when repeats is unbatched; the loop when batched"),
    OpInfo("resize", np.resize, resize_samples, "rule", dtypes=F64_I32 + (np.bool_,)),
    OpInfo("pad", np.pad, pad_samples, "rule", dtypes=F64_I32 + (np.complex128,)),
    OpInfo("pad.batched_values", np.pad, pad_batched_values_samples, "rule", covers=np.pad,
           dtypes=F64_I32, unbatched_self=True),
    OpInfo("pad.empty", np.pad, pad_empty_samples, "rule", covers=np.pad, check_values=False),
    OpInfo("insert", np.insert, insert_samples, "rule", dtypes=F64_I32),
    OpInfo("insert.array_index", np.insert, insert_array_index_samples, "rule",
           covers=np.insert),
    OpInfo("delete", np.delete, delete_samples, "rule", dtypes=(np.float64, np.complex128)),
    OpInfo("delete.array_index", np.delete, delete_array_index_samples, "rule",
           covers=np.delete),
]
